"""The records of a ``MUTABLE_KEY_RANGE`` stream as ``google.spanner.v1.ChangeStreamRecord`` messages.

A row of such a stream's read function holds one column, ``ChangeRecord``, of type
``PROTO<google.spanner.v1.ChangeStreamRecord>``: the serialized message (its wire form is
base64, as for any PROTO value), encoded here by field number (:mod:`.proto_wire`). A data
change record lists its columns once (``column_metadata``, each with its
``google.spanner.v1.Type``) and each mod names its values by index into that list; a value
is a ``google.protobuf.Value`` holding the JSON value the original format writes (INT64 and
NUMERIC as strings, FLOAT64 as a number, BYTES base64, TIMESTAMP RFC 3339). Mod and value
capture types are enums.

Example:
    >>> heartbeat(1_500_000_000).hex()   # heartbeat_record (2) { timestamp (1) { seconds 1, nanos 5e8 } }
    '120a0a0808011080cab5ee01'
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from ..datamodel.types import TypeCode
from .proto_wire import json_value, message, timestamp

#: The full name of the message, as the result's column type names it.
FQN = "google.spanner.v1.ChangeStreamRecord"
#: google.spanner.v1.ChangeStreamRecord.DataChangeRecord's enums.
MOD_TYPES = {"INSERT": 10, "UPDATE": 20, "DELETE": 30}
VALUE_CAPTURE_TYPES = {"OLD_AND_NEW_VALUES": 10, "NEW_VALUES": 20, "NEW_ROW": 30, "NEW_ROW_AND_OLD_VALUES": 40}
#: The oneof ``record``'s field numbers.
_DATA_CHANGE, _HEARTBEAT, _PARTITION_START, _PARTITION_END, _PARTITION_EVENT = 1, 2, 3, 4, 5


def _type(item: dict[str, Any]) -> bytes:
    """A ``google.spanner.v1.Type`` from a column type's JSON (code, array_element_type, proto_type_fqn)."""
    element = item.get("array_element_type")
    return message([(1, TypeCode[item["code"]].value), (2, _type(element) if element else None),
                    (5, item.get("proto_type_fqn") or None)])


@functools.lru_cache(maxsize=1024)
def _column_type(type_json: str) -> bytes:
    return _type(json.loads(type_json))


def data_change(commit_nanos: int, record_sequence: str, txn: str, last_in_partition: bool, table: str,
                column_types: Sequence[Sequence[Any]], mods: Sequence[Sequence[dict[str, Any]]], mod_type: str,
                value_capture_type: str, records_in_txn: int, partitions_in_txn: int, tag: str, system: bool) -> bytes:
    """A serialized data change record; ``column_types`` as (name, type JSON, is key, position), ``mods`` as
    (keys, new values, old values) dicts of JSON values."""
    index = {c[0]: i for i, c in enumerate(column_types)}
    metadata = [(6, message([(1, name), (2, _column_type(type_json)), (3, bool(is_key) or None), (4, int(position))]))
                for name, type_json, is_key, position in column_types]

    def mod_values(number: int, values: dict[str, Any]) -> list[tuple[int, bytes]]:
        return [(number, message([(1, index[name] or None), (2, json_value(v))])) for name, v in values.items()]

    encoded_mods = [(7, message([*mod_values(1, keys), *mod_values(2, old), *mod_values(3, new)]))
                    for keys, new, old in mods]
    record = message([(1, timestamp(commit_nanos)), (2, record_sequence), (3, txn), (4, last_in_partition or None),
                      (5, table), *metadata, *encoded_mods, (8, MOD_TYPES[mod_type]),
                      (9, VALUE_CAPTURE_TYPES[value_capture_type]), (10, records_in_txn), (11, partitions_in_txn),
                      (12, tag or None), (13, system or None)])
    return message([(_DATA_CHANGE, record)])


def heartbeat(ts: int) -> bytes:
    return message([(_HEARTBEAT, message([(1, timestamp(ts))]))])


def partition_start(ts: int, record_sequence: str, tokens: Sequence[str]) -> bytes:
    return message([(_PARTITION_START, message([(1, timestamp(ts)), (2, record_sequence), *((3, t) for t in tokens)]))])


def partition_end(ts: int, record_sequence: str, token: str) -> bytes:
    return message([(_PARTITION_END, message([(1, timestamp(ts)), (2, record_sequence), (3, token)]))])


def partition_event(ts: int, record_sequence: str, token: str, *, moved_in_from: Sequence[str] = (),
                    moved_out_to: Sequence[str] = ()) -> bytes:
    moves = [*((4, message([(1, s)])) for s in moved_in_from), *((5, message([(1, d)])) for d in moved_out_to)]
    return message([(_PARTITION_EVENT, message([(1, timestamp(ts)), (2, record_sequence), (3, token), *moves]))])
