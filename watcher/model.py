"""The watcher's data: table ids, changes, checkpoints and watermarks.

Timestamps are ``DatetimeWithNanoseconds`` (what the Spanner client returns), so a
commit timestamp keeps its full precision end to end.

Example:
    >>> from google.api_core.datetime_helpers import DatetimeWithNanoseconds as DT
    >>> ts = DT(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.timezone.utc)
    >>> Checkpoint(ts, key=(7,)).to_text()
    '{"v": 1, "ts": "2024-05-01T10:00:00.123456789Z", "key": [7]}'
    >>> Checkpoint.from_text(Checkpoint(ts, key=(7,)).to_text()) == Checkpoint(ts, key=(7,))
    True
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast, get_args

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from .errors import PollError

#: The format version of persisted checkpoint details (see Checkpoint.to_text).
CHECKPOINT_FORMAT = 1

#: What a change did (``Change.mod_type``), spelled as Spanner's change streams, the history tables
#: and the staged files spell it: plain strings, so nothing is converted on the way in or out.
ModType = Literal["INSERT", "UPDATE", "DELETE"]
MOD_TYPES: tuple[ModType, ...] = get_args(ModType)
#: What a change's row and old values hold (``Change.value_capture_type``): a change stream's
#: value capture type, or for a history table NEW_ROW (every column) or NEW_VALUES (only the key
#: and the columns written: a partial update).
ValueCaptureType = Literal["NEW_ROW", "NEW_VALUES", "OLD_AND_NEW_VALUES", "NEW_ROW_AND_OLD_VALUES"]
VALUE_CAPTURE_TYPES: tuple[ValueCaptureType, ...] = get_args(ValueCaptureType)
NEW_ROW: Final = "NEW_ROW"
NEW_VALUES: Final = "NEW_VALUES"

_Name = TypeVar("_Name", bound=str)


def _one_of(value: object, allowed: tuple[_Name, ...], what: str, where: str) -> _Name:
    if value not in allowed:
        raise PollError(f"{where}: {what} {value!r} is not one of {', '.join(allowed)}")
    return cast(_Name, value)


def as_mod_type(value: object, where: str) -> ModType:
    """``value`` (read from a change source) as a :data:`ModType`; PollError naming ``where`` otherwise.

    >>> as_mod_type("UPDATE", "history table Singers_History")
    'UPDATE'
    >>> as_mod_type("MOD_TYPE_UNSPECIFIED", "change stream record of table Singers")
    Traceback (most recent call last):
    ...
    watcher.errors.PollError: change stream record of table Singers: mod type 'MOD_TYPE_UNSPECIFIED' is not one of INSERT, UPDATE, DELETE
    """
    return _one_of(value, MOD_TYPES, "mod type", where)


def as_value_capture_type(value: object, where: str) -> ValueCaptureType:
    """``value`` (read from a change source) as a :data:`ValueCaptureType`; PollError naming ``where`` otherwise.

    >>> as_value_capture_type("OLD_AND_NEW_VALUES", "change stream record of table Singers")
    'OLD_AND_NEW_VALUES'
    """
    return _one_of(value, VALUE_CAPTURE_TYPES, "value capture type", where)

EPOCH = DatetimeWithNanoseconds(1970, 1, 1, tzinfo=dt.UTC)
#: The smallest TIMESTAMP Spanner stores: start here to replay a whole table.
MIN_TIMESTAMP = DatetimeWithNanoseconds(1, 1, 1, tzinfo=dt.UTC)


def as_nanos_timestamp(value: dt.datetime) -> DatetimeWithNanoseconds:
    """Any aware datetime as DatetimeWithNanoseconds (naive ones are taken as UTC)."""
    if isinstance(value, DatetimeWithNanoseconds):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return DatetimeWithNanoseconds(value.year, value.month, value.day, value.hour, value.minute, value.second,
                                   value.microsecond, tzinfo=value.tzinfo).astimezone(dt.UTC)


def timestamp_nanos(ts: dt.datetime) -> int:
    """Nanoseconds since the epoch (exact for DatetimeWithNanoseconds).

    >>> timestamp_nanos(from_nanos(1_700_000_000_123_456_789))
    1700000000123456789
    """
    ts = as_nanos_timestamp(ts)
    micros = (ts - EPOCH) // dt.timedelta(microseconds=1)
    return micros * 1000 + getattr(ts, "nanosecond", 0) % 1000


def nanos_of_second(ts: dt.datetime) -> int:
    """The fraction of the second in nanoseconds. (A DatetimeWithNanoseconds built from a
    microsecond argument reports nanosecond 0, so the microseconds are trusted then.)"""
    nanos = getattr(ts, "nanosecond", 0)
    return nanos if nanos // 1000 == ts.microsecond else ts.microsecond * 1000


def rfc3339_nanos(ts: dt.datetime) -> str:
    """RFC 3339 in UTC with all nine fractional digits (and a four-digit year): sorts as text in time order.

    >>> rfc3339_nanos(MIN_TIMESTAMP)
    '0001-01-01T00:00:00.000000000Z'
    """
    ts = as_nanos_timestamp(ts)
    nanos = nanos_of_second(ts)
    if ts.utcoffset():
        ts = ts.astimezone(dt.UTC)  # DatetimeWithNanoseconds.astimezone drops the nanoseconds: kept above
    return f"{ts.year:04d}-{ts.month:02d}-{ts.day:02d}T{ts.hour:02d}:{ts.minute:02d}:{ts.second:02d}.{nanos:09d}Z"


def from_nanos(nanos: int) -> DatetimeWithNanoseconds:
    seconds, frac = divmod(nanos, 1_000_000_000)
    base = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return DatetimeWithNanoseconds(base.year, base.month, base.day, base.hour, base.minute, base.second,
                                   nanosecond=frac, tzinfo=dt.UTC)


@dataclass(frozen=True)
class TableId:
    """A table, as Spanner names it (catalog and schema are '' for the default schema)."""

    table: str
    catalog: str = ""
    schema: str = ""

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}" if self.schema else self.table

    @property
    def sql(self) -> str:
        """The back-quoted name for SQL."""
        from .sqlnames import quote_identifier

        return (quote_identifier(self.schema) + "." if self.schema else "") + quote_identifier(self.table)


@dataclass(frozen=True)
class Change:
    """One row version seen by a watcher.

    ``row`` maps every column to its value, typed as the Spanner client types it (int,
    float, Decimal, bytes, str, date, DatetimeWithNanoseconds, JsonObject, lists).
    ``keys`` is the primary key in key order. ``shard`` is the shard value of the poll loop
    that saw the change (None without a shard provider). For a DELETE (history tables
    and change streams), ``row`` holds just the key columns. ``column_types`` maps each column of ``row``
    to its Spanner type name as the result set it was read from said (``INT64``,
    ``STRING``, ``ARRAY<BYTES>``; :mod:`watcher.codec`'s form), so a column added or
    changed while watching is typed from the first row read after the change; empty
    when the source did not say (then a staging sink needs the table's types).
    """

    table: str
    keys: tuple[Any, ...]
    row: Mapping[str, Any]
    commit_timestamp: DatetimeWithNanoseconds
    shard: Any = None
    read_timestamp: DatetimeWithNanoseconds | None = None
    #: INSERT, UPDATE or DELETE where the source knows it (history tables); None when polling
    #: rows, which cannot tell an insert from an update.
    mod_type: ModType | None = None
    #: Not part of equality: two reads of one row version are the same change.
    column_types: Mapping[str, str] = field(default_factory=dict, compare=False)
    #: Order among the versions of this key at this commit timestamp, where a source logs
    #: several (history tables' Seq); None when a commit timestamp has one version of a key.
    version_seq: int | None = None
    #: "NEW_VALUES" when ``row`` holds only the key and the written columns (a partial update
    #: logged in a history table); None or "NEW_ROW" when it holds every column. Change
    #: streams say theirs: NEW_ROW and NEW_ROW_AND_OLD_VALUES give every column in ``row``,
    #: NEW_VALUES and OLD_AND_NEW_VALUES only the key and the columns the mod changed.
    value_capture_type: ValueCaptureType | None = None
    #: Change streams only (None otherwise): the values before the mod, of the columns the
    #: stream reports (OLD_AND_NEW_VALUES: changed columns; NEW_ROW_AND_OLD_VALUES: changed
    #: columns; a DELETE: every column the stream tracks), typed like ``row``.
    old_values: Mapping[str, Any] | None = field(default=None, compare=False)
    #: Change streams only: Spanner's id of the transaction that made the change. With
    #: ``record_sequence`` and ``mod_index`` it is the change's identity, so a change
    #: delivered twice (after a crash) is removed downstream.
    server_transaction_id: str | None = None
    #: Change streams only: the data change record's sequence within its transaction.
    record_sequence: str | None = None
    #: Change streams only: the position of this mod among the mods of its record.
    mod_index: int | None = None
    #: Change streams only: the transaction's record and partition counts, its tag
    #: (the request's transaction_tag, "" when none) and whether Spanner itself ran it.
    number_of_records_in_transaction: int | None = field(default=None, compare=False)
    number_of_partitions_in_transaction: int | None = field(default=None, compare=False)
    transaction_tag: str | None = field(default=None, compare=False)
    is_system_transaction: bool | None = field(default=None, compare=False)
    #: Change streams only: the partition the record was read from (two reads of one
    #: change from different partitions are still one change, so not compared).
    partition_token: str | None = field(default=None, compare=False)
    #: Change streams only: the watcher's watermark as this change's batch was delivered: every
    #: change of the stream committed at or before it came in this batch or an earlier one.
    stream_watermark: DatetimeWithNanoseconds | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Checkpoint:
    """Where a poll loop stands: everything before ``commit_timestamp`` is delivered, and at
    ``commit_timestamp`` every row up to and including primary key ``key`` (all of them
    when ``key`` is None). The key is what makes resuming inside a large group of rows that
    share one commit timestamp exact.
    """

    commit_timestamp: DatetimeWithNanoseconds
    key: tuple[Any, ...] | None = None

    def to_text(self) -> str:
        """The position as versioned JSON (key values encoded by type), for storage."""
        payload: dict[str, Any] = {"v": CHECKPOINT_FORMAT, "ts": rfc3339_nanos(self.commit_timestamp)}
        if self.key is not None:
            payload["key"] = [_encode_key_part(v) for v in self.key]
        return json.dumps(payload)

    @staticmethod
    def from_text(text: str) -> Checkpoint:
        payload = json.loads(text)
        if payload.get("v", 1) > CHECKPOINT_FORMAT:
            raise ValueError(f"checkpoint written by a newer spanner-watcher (format {payload['v']})")
        ts = DatetimeWithNanoseconds.from_rfc3339(payload["ts"])
        key = payload.get("key")
        return Checkpoint(ts, tuple(_decode_key_part(v) for v in key) if key is not None else None)


def _encode_key_part(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, (int, float, str)):
        return v
    if isinstance(v, bytes):
        return {"bytes": base64.b64encode(v).decode()}
    if isinstance(v, DatetimeWithNanoseconds):
        return {"timestamp": rfc3339_nanos(v)}
    if isinstance(v, dt.datetime):
        return {"timestamp": rfc3339_nanos(v)}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, decimal.Decimal):
        return {"numeric": str(v)}
    raise TypeError(f"cannot store a key part of type {type(v).__name__}")


def _decode_key_part(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (kind, text), = v.items()
    if kind == "bytes":
        return base64.b64decode(text)
    if kind == "timestamp":
        return DatetimeWithNanoseconds.from_rfc3339(text)
    if kind == "date":
        return dt.date.fromisoformat(text)
    if kind == "numeric":
        return decimal.Decimal(text)
    raise ValueError(f"unknown key part encoding {kind!r}")


@dataclass(frozen=True)
class Watermark:
    """Every change committed at or before ``timestamp`` has been delivered (for one poll loop)."""

    timestamp: DatetimeWithNanoseconds


@dataclass
class PollStats:
    """Figures of one poll loop, for ``stats()`` and the Prometheus endpoint."""

    polls: int = 0
    rows: int = 0
    last_poll_at: dt.datetime | None = None
    last_poll_seconds: float = 0.0
    last_poll_rows: int = 0
    failures: int = 0
    retries: int = 0
    watermark: DatetimeWithNanoseconds | None = None
    last_commit_timestamp: DatetimeWithNanoseconds | None = None
    using_with_query: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
