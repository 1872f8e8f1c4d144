"""What the watcher reads about a change stream before it starts: that it exists, its retention, its tables.

Read from INFORMATION_SCHEMA (``CHANGE_STREAMS``, ``CHANGE_STREAM_OPTIONS``,
``CHANGE_STREAM_TABLES``) with the client, as on Spanner and the official emulator.

Example::

    info = describe_stream(database, "SingersStream")
    info.name, info.retention_period, info.tables      # ('SingersStream', '1d', ('Singers',))
    info.partition_mode                                # 'IMMUTABLE_KEY_RANGE' unless the options say otherwise
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc

from ...dialects import Dialect, dialect_of
from ...dialects.change_streams import is_for_all, stream_query
from ...errors import CallbackError, ChangeStreamNotFoundError, ChangeStreamRetentionError, PollError
from ...request_settings import RequestSettings, settings_or_default
from ..table_info import TableInfo, describe

log = logging.getLogger(__name__)

#: Spanner's retention period of a change stream whose options do not set one.
DEFAULT_RETENTION = "1d"
#: The record formats (``partition_mode``): the original records, and the protobuf ChangeStreamRecord of
#: partitions that key ranges move between. A stream whose options do not set one has the first.
IMMUTABLE_KEY_RANGE, MUTABLE_KEY_RANGE = "IMMUTABLE_KEY_RANGE", "MUTABLE_KEY_RANGE"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def retention_seconds(text: str) -> int | None:
    """Seconds of a retention period as Spanner spells it (``"36h"``, ``"7d"``); None when unreadable.

    >>> retention_seconds("36h"), retention_seconds("1d"), retention_seconds("90m"), retention_seconds("soon")
    (129600, 86400, 5400, None)
    """
    text = text.strip().lower()
    number, unit = text[:-1], text[-1:]
    if unit not in _UNITS or not number.isdigit():
        return None
    return int(number) * _UNITS[unit]


@dataclass(frozen=True)
class StreamInfo:
    """A change stream: its name as the schema spells it, its retention period, the tables it tracks
    and its partition mode (the record format its read function returns)."""

    name: str
    retention_period: str
    tables: tuple[str, ...]
    all_tables: bool
    partition_mode: str = IMMUTABLE_KEY_RANGE

    @property
    def mutable_key_range(self) -> bool:
        """True when the stream returns ChangeStreamRecord protobufs (``partition_mode = 'MUTABLE_KEY_RANGE'``)."""
        return self.partition_mode == MUTABLE_KEY_RANGE

    def check_start(self, start: Any, now: Any) -> None:
        """ChangeStreamRetentionError when a read from ``start`` would be before the retention period at ``now``."""
        seconds = retention_seconds(self.retention_period)
        if seconds is not None and start < now - dt.timedelta(seconds=seconds):
            raise ChangeStreamRetentionError(self.name, self.retention_period, start,
                                             f"the oldest readable commit timestamp is about {seconds} s before {now}")


def _rows(snap: Any, dialect: Dialect, kind: str, name: str, options: dict[str, Any]) -> list[list[Any]]:
    statement = stream_query(dialect, kind, name)
    return list(snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                 request_options=options))


def describe_stream(database: Any, stream: str, *, request_settings: RequestSettings | None = None) -> StreamInfo:
    """The stream ``stream`` (any case), or ChangeStreamNotFoundError naming it; read in the database's dialect."""
    tagged = settings_or_default(request_settings).request_options(with_priority=False)
    dialect = dialect_of(database)
    with database.snapshot(multi_use=True) as snap:
        found = _rows(snap, dialect, "stream", stream, tagged)
        if not found:
            raise ChangeStreamNotFoundError(stream, f"database {database.name} has no change stream of that name")
        name, all_tables = found[0][0], is_for_all(dialect, found[0][1])
        try:  # what follows only informs messages and table_infos(): a server without these views still works
            options = {str(k).lower(): v for k, v in _rows(snap, dialect, "options", name, tagged)}
            tables = [r[0] for r in _rows(snap, dialect, "all_tables" if all_tables else "tables", name, tagged)]
        except gexc.GoogleAPICallError as exc:
            log.info("change stream %s: options or tables not readable from INFORMATION_SCHEMA: %s", name, exc)
            options, tables = {}, []
    mode = str(options.get("partition_mode") or IMMUTABLE_KEY_RANGE).upper()
    return StreamInfo(name, str(options.get("retention_period") or DEFAULT_RETENTION), tuple(tables), all_tables, mode)


def describe_tables(database: Any, info: StreamInfo, *,
                    request_settings: RequestSettings | None = None) -> dict[str, TableInfo]:
    """Key columns and column types of the stream's tables (a table dropped meanwhile is left out:
    the watcher learns a table from its records too)."""
    found = {}
    for table in info.tables:
        try:
            found[table] = describe(database, table, request_settings=request_settings)
        except Exception as exc:  # noqa: BLE001 - see above
            log.debug("change stream %s: table %s not described: %s", info.name, table, exc)
    return found


def server_now(database: Any, *, request_settings: RequestSettings | None = None) -> Any:
    """The database's clock (CURRENT_TIMESTAMP() of a strong read): where a new watcher starts."""
    options = settings_or_default(request_settings).request_options(with_priority=False)
    with database.snapshot() as snap:
        return list(snap.execute_sql(dialect_of(database).current_timestamp_sql, request_options=options))[0][0]


def read_error(info: StreamInfo, exc: BaseException, at: Any) -> BaseException:
    """The library error for a failed read of ``info``'s stream from ``at``: OUT_OF_RANGE names the
    stream and its retention; the read function not found (the stream dropped) names the stream."""
    if isinstance(exc, gexc.OutOfRange):
        return ChangeStreamRetentionError(info.name, info.retention_period, at, str(exc.message))
    if isinstance(exc, gexc.InvalidArgument) and f"READ_{info.name}".upper() in str(exc.message).upper().replace("READ_JSON_", "READ_"):
        return ChangeStreamNotFoundError(info.name, f"it was dropped while being read: {exc.message}")
    if isinstance(exc, CallbackError | PollError):
        return exc
    return PollError(f"reading change stream {info.name} failed: {exc}")
