"""What the watcher reads about a change stream before it starts: that it exists, its retention, its tables.

Read from INFORMATION_SCHEMA (``CHANGE_STREAMS``, ``CHANGE_STREAM_OPTIONS``,
``CHANGE_STREAM_TABLES``) with the client, as on Spanner and the official emulator.

Example::

    info = describe_stream(database, "SingersStream")
    info.name, info.retention_period, info.tables      # ('SingersStream', '1d', ('Singers',))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.cloud.spanner_v1 import param_types

from ...errors import ChangeStreamNotFoundError

#: Spanner's retention period of a change stream whose options do not set one.
DEFAULT_RETENTION = "1d"

_STREAM_SQL = ("SELECT CHANGE_STREAM_NAME, ALL FROM INFORMATION_SCHEMA.CHANGE_STREAMS "
               "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' "
               "AND UPPER(CHANGE_STREAM_NAME) = UPPER(@name)")
_OPTIONS_SQL = ("SELECT OPTION_NAME, OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS "
                "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' AND CHANGE_STREAM_NAME = @name")
_TABLES_SQL = ("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
               "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' AND CHANGE_STREAM_NAME = @name "
               "ORDER BY TABLE_NAME")
_ALL_TABLES_SQL = ("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' "
                   "ORDER BY TABLE_NAME")


@dataclass(frozen=True)
class StreamInfo:
    """A change stream: its name as the schema spells it, its retention period and the tables it tracks."""

    name: str
    retention_period: str
    tables: tuple[str, ...]
    all_tables: bool


def _rows(snap: Any, sql: str, name: str) -> list[list[Any]]:
    return list(snap.execute_sql(sql, params={"name": name}, param_types={"name": param_types.STRING}))


def describe_stream(database: Any, stream: str) -> StreamInfo:
    """The stream ``stream`` (any case), or ChangeStreamNotFoundError naming it."""
    with database.snapshot(multi_use=True) as snap:
        found = _rows(snap, _STREAM_SQL, stream)
        if not found:
            raise ChangeStreamNotFoundError(stream, database.name)
        name, all_tables = found[0][0], bool(found[0][1])
        options = {str(k).lower(): v for k, v in _rows(snap, _OPTIONS_SQL, name)}
        if all_tables:
            tables = [r[0] for r in snap.execute_sql(_ALL_TABLES_SQL)]
        else:
            tables = [r[0] for r in _rows(snap, _TABLES_SQL, name)]
    return StreamInfo(name, str(options.get("retention_period") or DEFAULT_RETENTION), tuple(tables), all_tables)
