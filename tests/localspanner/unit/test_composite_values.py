"""Nested ARRAY/STRUCT values built in Python reach the client as it decodes them.

A table function such as READ_<stream> returns ``ARRAY<STRUCT<... ARRAY<STRUCT<...>> ...>>``
built in Python, not by SQL; this checks that such a value, given as dicts, tuples and
lists of stored values, is encoded on the wire exactly as google-cloud-spanner parses it.
"""

from __future__ import annotations

import datetime

from google.cloud.spanner_v1._helpers import _parse_value_pb
from google.protobuf import struct_pb2

from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.frontend import wire
from watcher.localspanner.frontend.converters import type_to_pb


def _struct(*fields: tuple[str, T.SpannerType]) -> T.SpannerType:
    return T.SpannerType(T.TypeCode.STRUCT, fields=fields)


MOD = _struct(("keys", T.JSON), ("new_values", T.JSON), ("old_values", T.JSON))
RECORD = _struct(("commit_timestamp", T.TIMESTAMP), ("record_sequence", T.STRING), ("mods", T.array_of(MOD)),
                 ("is_system_transaction", T.BOOL), ("number_of_records_in_transaction", T.INT64))
CHANGE_RECORD = T.array_of(_struct(("data_change_record", T.array_of(RECORD)),
                                   ("heartbeat_record", T.array_of(_struct(("timestamp", T.TIMESTAMP),))),
                                   ("payload", T.BYTES)))


def _client_decodes(t: T.SpannerType, wire_value: object) -> object:
    value_pb = struct_pb2.Value.FromString(wire.value_body(wire_value))
    return _parse_value_pb(value_pb, type_to_pb(t), "ChangeRecord")


def test_nested_python_value_is_decoded_by_the_client_in_field_order():
    ts = 1_714_557_600_123_456_000  # 2024-05-01T10:00:00.123456Z, as int nanoseconds
    python_value = [
        {"data_change_record": [(ts, "00000001", [{"keys": '{"K":"1"}', "new_values": '{"V":"a"}', "old_values": "{}"}],
                                 0, 1)],
         "heartbeat_record": [], "payload": b"\x00\xff"},
        {"data_change_record": [], "heartbeat_record": [{"timestamp": ts}], "payload": None},
    ]
    decoded = _client_decodes(CHANGE_RECORD, values.stored_to_wire(CHANGE_RECORD, python_value))
    when = datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=datetime.UTC)
    first, second = decoded
    record = first[0][0]
    assert record[0] == when and record[1] == "00000001" and record[3] is False and record[4] == 1
    assert record[2] == [[{"K": "1"}, {"V": "a"}, {}]]
    assert first[1] == [] and first[2] == b"AP8="  # BYTES reach the user as base64 text, as for columns
    assert second == [[], [[when]], None]


def test_stored_json_text_and_python_containers_encode_alike():
    wire_value = ["7", [["x", True]]]
    t = _struct(("n", T.INT64), ("items", T.array_of(_struct(("s", T.STRING), ("b", T.BOOL)))))
    stored = values.wire_to_stored(t, wire_value)
    assert isinstance(stored, str)
    assert values.stored_to_wire(t, stored) == wire_value
    assert values.stored_to_wire(t, (7, [("x", 1)])) == wire_value
    assert values.stored_to_wire(t, {"items": [{"s": "x", "b": True}], "n": 7}) == wire_value
