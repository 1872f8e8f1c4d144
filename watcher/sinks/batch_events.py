"""The messages of one batch, with what its changes share worked out once.

A batch holds one table's changes of one poll or stream read: they share the key columns and,
nearly always, one set of column types (the result set's) and one set of columns. A
:class:`BatchEvents` looks a column's typed-JSON encoder up once per such set
(:func:`watcher.codec.encoder_of`, the codec's own table, as the staging record's
:func:`~watcher.staging.contract.encode_row` does per value), writes a commit timestamp's text
once where a column holds the commit timestamp itself, and builds the Debezium ``source``
fields that name the database and stream once per batch (:func:`.debezium.source_fields`). It
hands :func:`.debezium.envelope` and :func:`.events.message` only the fields of the staging
record they read, not the whole record.

Every message is the one :func:`.events.event` makes of the change's staging record, byte for
byte (the tests compare both over every column type). A change the short way cannot take is
made by :func:`.events.event` from its staging record, which also names any problem as
staging does: a column without a type, or a value its type refuses, and every change of the
``record`` format (its value is the whole staging record).

Example:
    >>> import datetime as dt
    >>> from watcher.capture.table_info import TableInfo
    >>> from watcher.model import TableId
    >>> from watcher.sinks.topics import SourceNames
    >>> info = TableInfo(TableId("T"), "Ts", ("Id",), {"Id": "INT64", "Ts": "TIMESTAMP"})
    >>> at = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    >>> build = BatchEvents(info, "debezium", events.Origin(SourceNames(), None, "db"), 0, watcher_id="w", batch_id="b")
    >>> m = build.event(Change("T", (2**62,), {"Id": 2**62, "Ts": at}, at), 0)
    >>> m.key, m.value[:59]
    (b'{"table":"T","key":["4611686018427387904"]}', b'{"before":null,"after":{"Id":"4611686018427387904","Ts":"20')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..codec import encoder_of, timestamp_text
from ..model import Change
from ..staging import contract
from . import compact_json, debezium, events

if TYPE_CHECKING:
    from ..capture.table_info import TableInfo

__all__ = ["BatchEvents"]

#: The encoder of TIMESTAMP columns (a value that is the commit timestamp itself takes its text).
_TIMESTAMP = encoder_of("TIMESTAMP")


class _Columns:
    """How one set of columns of one set of types is encoded: (column, encoder, is a timestamp) in row order,
    the key columns' encoders, and whether a typed-JSON value of them may be a float."""

    __slots__ = ("encoders", "floats", "key_encoders")

    def __init__(self, types: Mapping[str, str], columns: tuple[str, ...], key_columns: list[str]) -> None:
        encoders: list[tuple[str, Callable[[Any], Any], bool]] = []
        for column in columns:
            encode = encoder_of(types[column])
            encoders.append((column, encode, encode is _TIMESTAMP))
        self.encoders = encoders
        self.key_encoders = [encoder_of(types[k]) for k in key_columns]
        # All the types, not only the row's: where no float is there both JSON writers give the same bytes.
        self.floats = compact_json.may_hold_floats(types)


class BatchEvents:
    """The messages of one batch of ``table``'s changes, one :meth:`event` per change in order (see the module)."""

    def __init__(self, table: TableInfo, event_format: str, origin: events.Origin, now_nanos: int, *,
                 watcher_id: str | None, batch_id: str) -> None:
        self.table = table
        self.event_format = event_format
        self.origin = origin
        self.now_nanos = now_nanos
        self.watcher_id = watcher_id
        self.batch_id = batch_id
        self.key_columns = list(table.key_columns)
        self._short = event_format == "debezium"
        self._shared = debezium.source_fields(origin.names, server_name=origin.server_name, stream=origin.stream)
        #: Column plans by (id of the types mapping, the row's columns); the mappings kept so that ids stay theirs.
        self._plans: dict[tuple[int, tuple[str, ...]], _Columns | None] = {}
        self._types_kept: list[Mapping[str, str]] = []

    def event(self, change: Change, seq: int) -> events.Event:
        """The message of ``change``, the ``seq``-th of the batch."""
        if not self._short:
            return self._from_record(change, seq)
        types = change.column_types or self.table.column_types
        plan = self._columns(types, change.row)
        if plan is None:
            return self._from_record(change, seq)
        commit = change.commit_timestamp
        commit_text = commit if isinstance(commit, str) else timestamp_text(commit)
        row = change.row
        values: dict[str, Any] = {}
        try:
            for column, encode, is_timestamp in plan.encoders:
                value = row[column]
                values[column] = (None if value is None else commit_text if is_timestamp and value is commit
                                  else encode(value))
            keys = [None if v is None else encode(v) for encode, v in zip(plan.key_encoders, change.keys, strict=True)]
            old = (contract.stream_info(change, types).old_values  # type: ignore[union-attr]
                   if change.server_transaction_id is not None else None)
        except Exception:  # noqa: BLE001 - the staging record refuses it too, and raises as staging does
            return self._from_record(change, seq)
        record = {"table": change.table, "key_columns": self.key_columns, "keys": keys, "types": types,
                  "commit_timestamp": commit_text, "mod_type": change.mod_type, "values": values,
                  "old_values": old, "version_seq": change.version_seq}
        value = debezium.envelope(change, record, self.origin.names, server_name=self.origin.server_name,
                                  stream=self.origin.stream, now_nanos=self.now_nanos, shared=self._shared)
        floats = plan.floats or (change.shard is not None and compact_json.may_hold_floats({}, change.shard))
        return events.message(record, value, self.event_format, floats)

    def _columns(self, types: Mapping[str, str], row: Mapping[str, Any]) -> _Columns | None:
        columns = tuple(row)
        key = (id(types), columns)
        try:
            return self._plans[key]
        except KeyError:
            pass
        try:
            plan: _Columns | None = _Columns(types, columns, self.key_columns)
        except (KeyError, TypeError):  # a column without a type, or a type without a typed-JSON form
            plan = None
        self._types_kept.append(types)
        self._plans[key] = plan
        return plan

    def _from_record(self, change: Change, seq: int) -> events.Event:
        record = events.staging_record(change, self.key_columns, self.table.column_types, watcher_id=self.watcher_id,
                                       batch_id=self.batch_id, seq=seq)
        return events.event(change, record, self.event_format, self.origin, self.now_nanos)
