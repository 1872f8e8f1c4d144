"""Change-stream rows of a PostgreSQL database (``spanner.read_json_<stream>``): one jsonb record per row,
read into the same records as GoogleSQL's ChangeRecord structs (:mod:`.records`).

A row holds one JSON object with one of ``data_change_record``, ``heartbeat_record`` and
``child_partitions_record``; their fields have the names the structs' fields have, timestamps are
RFC 3339 texts and column types are JSON objects (``{"code": "INT64"}``). Pure functions.

Example:
    >>> parse_row([{"heartbeat_record": {"timestamp": "2024-01-01T00:00:00.000000001Z"}}])[0].timestamp.nanosecond
    1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from ...errors import PollError
from ...model import as_mod_type, as_nanos_timestamp, as_value_capture_type
from . import values
from .records import (
    ChildPartition,
    ChildPartitionsRecord,
    ColumnType,
    DataChangeRecord,
    HeartbeatRecord,
    Mod,
    Record,
    _json_object,
)


def _timestamp(value: Any) -> DatetimeWithNanoseconds:
    if isinstance(value, str):
        return DatetimeWithNanoseconds.from_rfc3339(value)
    return as_nanos_timestamp(value)


def _data_change_record(r: Mapping[str, Any]) -> DataChangeRecord:
    table = str(r.get("table_name"))
    column_types = tuple(ColumnType(str(c["name"]), values.type_name(_json_object(c["type"])), bool(c["is_primary_key"]),
                                    int(c["ordinal_position"])) for c in r.get("column_types") or [])
    mods = tuple(Mod(_json_object(m.get("keys")), _json_object(m.get("new_values")), _json_object(m.get("old_values")))
                 for m in r.get("mods") or [])
    return DataChangeRecord(
        commit_timestamp=_timestamp(r["commit_timestamp"]), record_sequence=str(r["record_sequence"]),
        server_transaction_id=str(r["server_transaction_id"]),
        is_last_record_in_transaction_in_partition=bool(r.get("is_last_record_in_transaction_in_partition")),
        table_name=table, column_types=column_types, mods=mods,
        mod_type=as_mod_type(r["mod_type"], f"change stream record of table {table}"),
        value_capture_type=as_value_capture_type(r["value_capture_type"], f"change stream record of table {table}"),
        number_of_records_in_transaction=int(r["number_of_records_in_transaction"]),
        number_of_partitions_in_transaction=int(r["number_of_partitions_in_transaction"]),
        transaction_tag=r.get("transaction_tag") or "", is_system_transaction=bool(r.get("is_system_transaction")))


def _child_partitions_record(r: Mapping[str, Any]) -> ChildPartitionsRecord:
    children = tuple(ChildPartition(str(c["token"]), tuple(c.get("parent_partition_tokens") or ()))
                     for c in r.get("child_partitions") or [])
    return ChildPartitionsRecord(_timestamp(r["start_timestamp"]), str(r["record_sequence"]), children)


def _heartbeat_record(r: Mapping[str, Any]) -> HeartbeatRecord:
    return HeartbeatRecord(_timestamp(r["timestamp"]))


#: Each record kind's key in the JSON object and how it is read.
_KINDS: dict[str, Callable[[Mapping[str, Any]], Record]] = {
    "data_change_record": _data_change_record,
    "heartbeat_record": _heartbeat_record,
    "child_partitions_record": _child_partitions_record,
}


def parse_record(record: Any) -> list[Record]:
    """The records of one jsonb ChangeRecord (normally exactly one); a PollError names what is missing.

    >>> parse_record({"child_partitions_record": {"start_timestamp": "2024-01-01T00:00:00Z", "record_sequence": "1",
    ...               "child_partitions": [{"token": "t", "parent_partition_tokens": ["p"]}]}})[0].children
    (ChildPartition(token='t', parents=('p',)),)
    """
    obj = _json_object(record)
    found = [parse(obj[kind]) for kind, parse in _KINDS.items() if obj.get(kind)]
    if not found and obj:
        raise PollError(f"change stream record with none of {', '.join(_KINDS)}: {sorted(obj)}")
    return found


def parse_row(row: Sequence[Any]) -> list[Record]:
    """The records of one result row (its one jsonb column)."""
    return parse_record(row[0])
