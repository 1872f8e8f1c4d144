"""Change-stream result rows as plain records, and data change records as :class:`~watcher.model.Change`.

A row of ``SELECT ChangeRecord FROM READ_<stream>(...)`` holds one column, an array of
ChangeRecord structs; each holds exactly one non-empty list among
``data_change_record``, ``heartbeat_record`` and ``child_partitions_record``. The client
decodes a STRUCT as a list in field order; fields are looked up by the names the result
metadata gives (:func:`layout_of`), so a server that adds or reorders fields is still read
right. Pure functions: no client calls, no clock.

Example:
    >>> import datetime as dt
    >>> ts = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    >>> row = [[[[], [[ts]], []]]]                      # one ChangeRecord holding a heartbeat
    >>> parse_row(row)
    [HeartbeatRecord(timestamp=DatetimeWithNanoseconds(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))]
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import PollError
from ...model import Change, ModType, ValueCaptureType, as_mod_type, as_nanos_timestamp, as_value_capture_type
from . import values

#: Struct name -> its field names in the documented order (used when the metadata does not say).
DEFAULT_LAYOUT: dict[str, tuple[str, ...]] = {
    "ChangeRecord": ("data_change_record", "heartbeat_record", "child_partitions_record"),
    "data_change_record": ("commit_timestamp", "record_sequence", "server_transaction_id",
                           "is_last_record_in_transaction_in_partition", "table_name", "column_types", "mods",
                           "mod_type", "value_capture_type", "number_of_records_in_transaction",
                           "number_of_partitions_in_transaction", "transaction_tag", "is_system_transaction"),
    "column_types": ("name", "type", "is_primary_key", "ordinal_position"),
    "mods": ("keys", "new_values", "old_values"),
    "heartbeat_record": ("timestamp",),
    "child_partitions_record": ("start_timestamp", "record_sequence", "child_partitions"),
    "child_partitions": ("token", "parent_partition_tokens"),
}

Layout = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class ColumnType:
    """One column of a data change record: its codec type name and place in the primary key."""

    name: str
    type: str
    is_primary_key: bool
    ordinal_position: int


@dataclass(frozen=True)
class Mod:
    """One changed row: JSON objects of the key, the new values and the old values (column -> JSON value)."""

    keys: Mapping[str, Any]
    new_values: Mapping[str, Any]
    old_values: Mapping[str, Any]


@dataclass(frozen=True)
class DataChangeRecord:
    """The mods of one table and one mod type within one transaction, as one partition returned them."""

    commit_timestamp: dt.datetime
    record_sequence: str
    server_transaction_id: str
    is_last_record_in_transaction_in_partition: bool
    table_name: str
    column_types: tuple[ColumnType, ...]
    mods: tuple[Mod, ...]
    mod_type: ModType
    value_capture_type: ValueCaptureType
    number_of_records_in_transaction: int
    number_of_partitions_in_transaction: int
    transaction_tag: str
    is_system_transaction: bool

    @property
    def record_id(self) -> str:
        """The record's identity within the stream: server transaction id and record sequence."""
        return f"{self.server_transaction_id}/{self.record_sequence}"

    @functools.cached_property
    def key_columns(self) -> tuple[str, ...]:
        """The primary key columns in key order (column_types' ordinal positions); computed once per record."""
        return tuple(c.name for c in sorted((c for c in self.column_types if c.is_primary_key),
                                            key=lambda c: c.ordinal_position))

    def types(self) -> dict[str, str]:
        """Column -> codec type name, for every column the record lists (one dict per record: do not change it)."""
        return self._types

    @functools.cached_property
    def _types(self) -> dict[str, str]:
        return {c.name: c.type for c in self.column_types}

    def changes(self, partition_token: str | None = None, read_timestamp: Any = None,
                stream_watermark: Any = None) -> list[Change]:
        """One Change per mod (see :func:`to_change`)."""
        return [to_change(self, i, partition_token, read_timestamp, stream_watermark) for i in range(len(self.mods))]


@dataclass(frozen=True)
class HeartbeatRecord:
    """Every record of the partition up to ``timestamp`` has been returned."""

    timestamp: dt.datetime


@dataclass(frozen=True)
class ChildPartition:
    token: str
    parents: tuple[str, ...]


@dataclass(frozen=True)
class ChildPartitionsRecord:
    """Partitions that continue the stream from ``start_timestamp`` (after a split or a merge)."""

    start_timestamp: dt.datetime
    record_sequence: str
    children: tuple[ChildPartition, ...]


Record = DataChangeRecord | HeartbeatRecord | ChildPartitionsRecord


def layout_of(fields: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """Struct name -> field names, read from a result set's metadata (``results.fields``).

    The top-level column's struct is filed as ``ChangeRecord``; nested ones under their field
    name. Structs the metadata does not describe keep :data:`DEFAULT_LAYOUT`.
    """
    layout = dict(DEFAULT_LAYOUT)

    def walk(name: str, spanner_type: Any) -> None:
        while spanner_type is not None and spanner_type.array_element_type and spanner_type.array_element_type.code:
            spanner_type = spanner_type.array_element_type
        struct = getattr(spanner_type, "struct_type", None)
        if struct is None or not struct.fields:
            return
        layout[name] = tuple(f.name for f in struct.fields)
        for f in struct.fields:
            walk(f.name, f.type_)

    for field in fields[:1]:
        walk("ChangeRecord", field.type_)
    return layout


def _named(values_: Sequence[Any], names: tuple[str, ...], struct: str) -> dict[str, Any]:
    if len(values_) != len(names):
        raise PollError(f"change stream {struct} has {len(values_)} fields, expected {len(names)} ({', '.join(names)})")
    return dict(zip(names, values_, strict=True))


def _json_object(value: Any) -> dict[str, Any]:
    """A JSON object as the client returns it (JsonObject, text or dict) as a plain dict; NULL as {}."""
    if value is None:
        return {}
    if isinstance(value, dict):  # the client's JsonObject of an object is a dict of plain values already:
        return value             # serializing and parsing it again cost more than the rest of a change
    serialize = getattr(value, "serialize", None)
    if callable(serialize):
        text = serialize()
        return {} if text is None else json.loads(text)
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value)


def _data_change_record(raw: Sequence[Any], layout: Layout) -> DataChangeRecord:
    r = _named(raw, layout["data_change_record"], "data_change_record")
    column_types = []
    for ct in r["column_types"] or []:
        c = _named(ct, layout["column_types"], "column_types")
        column_types.append(ColumnType(c["name"], values.type_name(_json_object(c["type"])), bool(c["is_primary_key"]),
                                       int(c["ordinal_position"])))
    mods = []
    for m in r["mods"] or []:
        d = _named(m, layout["mods"], "mods")
        mods.append(Mod(_json_object(d["keys"]), _json_object(d["new_values"]), _json_object(d["old_values"])))
    return DataChangeRecord(
        commit_timestamp=as_nanos_timestamp(r["commit_timestamp"]), record_sequence=str(r["record_sequence"]),
        server_transaction_id=str(r["server_transaction_id"]),
        is_last_record_in_transaction_in_partition=bool(r["is_last_record_in_transaction_in_partition"]),
        table_name=str(r["table_name"]), column_types=tuple(column_types), mods=tuple(mods),
        mod_type=as_mod_type(r["mod_type"], f"change stream record of table {r['table_name']}"),
        value_capture_type=as_value_capture_type(r["value_capture_type"], f"change stream record of table {r['table_name']}"),
        number_of_records_in_transaction=int(r["number_of_records_in_transaction"]),
        number_of_partitions_in_transaction=int(r["number_of_partitions_in_transaction"]),
        transaction_tag=r.get("transaction_tag") or "", is_system_transaction=bool(r.get("is_system_transaction")))


def _child_partitions_record(raw: Sequence[Any], layout: Layout) -> ChildPartitionsRecord:
    r = _named(raw, layout["child_partitions_record"], "child_partitions_record")
    children = []
    for c in r["child_partitions"] or []:
        d = _named(c, layout["child_partitions"], "child_partitions")
        children.append(ChildPartition(str(d["token"]), tuple(d["parent_partition_tokens"] or ())))
    return ChildPartitionsRecord(as_nanos_timestamp(r["start_timestamp"]), str(r["record_sequence"]), tuple(children))


def parse_change_record(raw: Sequence[Any], layout: Layout = DEFAULT_LAYOUT) -> list[Record]:
    """The records of one ChangeRecord struct (normally exactly one)."""
    top = _named(raw, layout["ChangeRecord"], "ChangeRecord")
    out: list[Record] = [_data_change_record(d, layout) for d in top.get("data_change_record") or []]
    out += [HeartbeatRecord(as_nanos_timestamp(_named(h, layout["heartbeat_record"], "heartbeat_record")["timestamp"]))
            for h in top.get("heartbeat_record") or []]
    out += [_child_partitions_record(c, layout) for c in top.get("child_partitions_record") or []]
    return out


def parse_row(row: Sequence[Any], layout: Layout = DEFAULT_LAYOUT) -> list[Record]:
    """The records of one result row (its ChangeRecord column: an array of ChangeRecord structs)."""
    return [record for raw in row[0] or [] for record in parse_change_record(raw, layout)]


def to_change(record: DataChangeRecord, mod_index: int, partition_token: str | None = None,
              read_timestamp: Any = None, stream_watermark: Any = None) -> Change:
    """The Change of mod ``mod_index`` of ``record``: values typed as the client types them.

    ``row`` holds the key and the new values (only the key for a DELETE); ``old_values`` what
    the stream's value capture type gives (``{}`` when it gives none); ``keys`` the key in
    primary-key order; ``read_timestamp`` when the watcher read it; ``stream_watermark`` its
    watermark once the change's batch is delivered.
    """
    mod = record.mods[mod_index]
    types, table = record.types(), record.table_name
    keys = values.decode_values(types, mod.keys, table)
    missing = [k for k in record.key_columns if k not in keys]
    if missing:
        raise PollError(f"change stream record of table {table} lacks key column(s) {', '.join(missing)}")
    row = dict(keys)
    if record.mod_type != "DELETE":
        row.update(values.decode_values(types, mod.new_values, table))
    return Change(
        table=table, keys=tuple(keys[k] for k in record.key_columns), row=row,
        commit_timestamp=as_nanos_timestamp(record.commit_timestamp), mod_type=record.mod_type, column_types=types,
        read_timestamp=as_nanos_timestamp(read_timestamp) if read_timestamp is not None else None,
        value_capture_type=record.value_capture_type, old_values=values.decode_values(types, mod.old_values, table),
        server_transaction_id=record.server_transaction_id, record_sequence=record.record_sequence,
        mod_index=mod_index, number_of_records_in_transaction=record.number_of_records_in_transaction,
        number_of_partitions_in_transaction=record.number_of_partitions_in_transaction,
        transaction_tag=record.transaction_tag, is_system_transaction=record.is_system_transaction,
        partition_token=partition_token, stream_watermark=stream_watermark)
