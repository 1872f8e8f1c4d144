"""Rows of a ``MUTABLE_KEY_RANGE`` stream as plain records.

Such a stream's read function returns one column, ``ChangeRecord``, holding a
``google.spanner.v1.ChangeStreamRecord`` protobuf; the client hands back its bytes (a PROTO
column is decoded only when the query names a message class, which a stream read does not
need). Each message holds one of: a data change record (read into the same
:class:`~.records.DataChangeRecord` as the original format: values by column index become
values by column name), a heartbeat, a partition start record (new partitions to read from
its start), a partition end record (the partition's last) or a partition event record (key
ranges moved in from source partitions or out to destination partitions).

Within one timestamp a partition's records are processed in ``record_sequence`` order
(:func:`sequence_order`), whatever their type.

Example:
    >>> from google.cloud.spanner_v1.types import ChangeStreamRecord
    >>> msg = ChangeStreamRecord.pb()()
    >>> msg.partition_event_record.commit_timestamp.FromNanoseconds(5)
    >>> msg.partition_event_record.move_in_events.add().source_partition_token = "p1"
    >>> [(r.sources, r.destinations) for r in parse_row([msg.SerializeToString()])]
    [(('p1',), ())]
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.cloud.spanner_v1.types import ChangeStreamRecord, TypeAnnotationCode, TypeCode

from ...errors import PollError
from ...model import as_mod_type, as_value_capture_type, from_nanos, timestamp_nanos
from . import values
from .records import ColumnType, DataChangeRecord, HeartbeatRecord, Mod

PB = ChangeStreamRecord.pb()
_MOD_TYPES = {v: k for k, v in PB.DataChangeRecord.ModType.items()}
_CAPTURE_TYPES = {v: k for k, v in PB.DataChangeRecord.ValueCaptureType.items()}
_TYPE_CODES = {c.value: name for name, c in TypeCode.__members__.items()}


@dataclass(frozen=True)
class PartitionStartRecord:
    """New partitions (``tokens``), to be read from ``start_timestamp``."""

    start_timestamp: dt.datetime
    record_sequence: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class PartitionEndRecord:
    """The partition ended at ``end_timestamp``: nothing follows."""

    end_timestamp: dt.datetime
    record_sequence: str
    token: str


@dataclass(frozen=True)
class PartitionEventRecord:
    """Key ranges moved at ``commit_timestamp`` into the partition from ``sources``, or out of it to ``destinations``."""

    commit_timestamp: dt.datetime
    record_sequence: str
    token: str
    sources: tuple[str, ...]
    destinations: tuple[str, ...]


KeyRangeRecord = DataChangeRecord | HeartbeatRecord | PartitionStartRecord | PartitionEndRecord | PartitionEventRecord


def _ts(pb_timestamp: Any) -> dt.datetime:
    return from_nanos(pb_timestamp.seconds * 1_000_000_000 + pb_timestamp.nanos)


def _type_json(t: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"code": _TYPE_CODES.get(t.code, str(t.code))}
    if t.HasField("array_element_type"):
        out["array_element_type"] = _type_json(t.array_element_type)
    if t.type_annotation:
        out["type_annotation"] = TypeAnnotationCode(t.type_annotation).name
    return out


def _value(v: Any) -> Any:
    """A ``google.protobuf.Value`` as the JSON value it holds."""
    kind = v.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    if kind == "struct_value":
        return {k: _value(x) for k, x in v.struct_value.fields.items()}
    return getattr(v, kind)


def _data_change(d: Any) -> DataChangeRecord:
    names = [c.name for c in d.column_metadata]

    def by_name(items: Sequence[Any]) -> dict[str, Any]:
        try:
            return {names[i.column_metadata_index]: _value(i.value) for i in items}
        except IndexError:
            raise PollError(f"change stream record of table {d.table} names a column index beyond its "
                            f"{len(names)} columns") from None

    column_types = tuple(ColumnType(c.name, values.type_name(_type_json(c.type_)), c.is_primary_key, c.ordinal_position)
                         for c in d.column_metadata)
    return DataChangeRecord(
        commit_timestamp=_ts(d.commit_timestamp), record_sequence=d.record_sequence,
        server_transaction_id=d.server_transaction_id,
        is_last_record_in_transaction_in_partition=d.is_last_record_in_transaction_in_partition, table_name=d.table,
        column_types=column_types,
        mods=tuple(Mod(by_name(m.keys), by_name(m.new_values), by_name(m.old_values)) for m in d.mods),
        mod_type=as_mod_type(_MOD_TYPES.get(d.mod_type, d.mod_type), f"change stream record of table {d.table}"),
        value_capture_type=as_value_capture_type(_CAPTURE_TYPES.get(d.value_capture_type, d.value_capture_type),
                                                 f"change stream record of table {d.table}"),
        number_of_records_in_transaction=d.number_of_records_in_transaction,
        number_of_partitions_in_transaction=d.number_of_partitions_in_transaction,
        transaction_tag=d.transaction_tag, is_system_transaction=d.is_system_transaction)


def parse_message(data: bytes) -> KeyRangeRecord:
    """The record of one serialized ChangeStreamRecord."""
    msg = PB.FromString(data)
    kind = msg.WhichOneof("record")
    if kind == "data_change_record":
        return _data_change(msg.data_change_record)
    if kind == "heartbeat_record":
        return HeartbeatRecord(_ts(msg.heartbeat_record.timestamp))
    if kind == "partition_start_record":
        r = msg.partition_start_record
        return PartitionStartRecord(_ts(r.start_timestamp), r.record_sequence, tuple(r.partition_tokens))
    if kind == "partition_end_record":
        e = msg.partition_end_record
        return PartitionEndRecord(_ts(e.end_timestamp), e.record_sequence, e.partition_token)
    if kind == "partition_event_record":
        p = msg.partition_event_record
        return PartitionEventRecord(_ts(p.commit_timestamp), p.record_sequence, p.partition_token,
                                    tuple(m.source_partition_token for m in p.move_in_events),
                                    tuple(m.destination_partition_token for m in p.move_out_events))
    raise PollError(f"change stream record of an unknown kind ({kind or 'none set'})")


def parse_row(row: Sequence[Any]) -> list[KeyRangeRecord]:
    """The record of one result row (its ChangeRecord column: the message's bytes, or their base64 text)."""
    data = row[0]
    if isinstance(data, str):
        data = base64.b64decode(data)
    return [parse_message(bytes(data))]


def parse_bytes_row(row: Sequence[Any]) -> list[KeyRangeRecord]:
    """The record of one row of PostgreSQL's ``read_proto_bytes_<stream>``: a BYTES column, which the
    client hands over as its base64 text (bytes), as it does every BYTES value."""
    return [parse_message(base64.b64decode(row[0]))]


def timestamp_of(record: KeyRangeRecord) -> dt.datetime:
    """The timestamp a record stands at in its partition."""
    if isinstance(record, DataChangeRecord | PartitionEventRecord):
        return record.commit_timestamp
    if isinstance(record, PartitionStartRecord):
        return record.start_timestamp
    if isinstance(record, PartitionEndRecord):
        return record.end_timestamp
    return record.timestamp


def sequence_order(records: Sequence[KeyRangeRecord]) -> list[KeyRangeRecord]:
    """``records`` (as they arrived) in (timestamp, record_sequence) order; a stable sort, so
    records already in order stay as they are (a heartbeat's timestamp is never another record's)."""
    def key(r: KeyRangeRecord) -> tuple[Any, int]:
        sequence = getattr(r, "record_sequence", "")
        ts = timestamp_of(r)  # in nanoseconds: datetimes compare to the microsecond only
        return timestamp_nanos(ts) if isinstance(ts, dt.datetime) else ts, int(sequence) if sequence.isdigit() else -1
    return sorted(records, key=key)
