"""Change-stream rows -> records -> Changes, and record values -> the client's Python types (pure, no server)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1 import StructType, Type, TypeCode
from google.cloud.spanner_v1.data_types import JsonObject

from watcher.capture.change_streams import records, values
from watcher.errors import PollError

TS = DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, nanosecond=123456000, tzinfo=dt.UTC)


# --- values: one test per type -----------------------------------------------------------------------------

@pytest.mark.parametrize("json_type, name", [
    ({"code": "INT64"}, "INT64"),
    ({"code": "STRING"}, "STRING"),
    ('{"code":"BYTES"}', "BYTES"),
    ({"code": "ARRAY", "array_element_type": {"code": "INT64"}}, "ARRAY<INT64>"),
    ({"code": "ARRAY", "array_element_type": {"code": "TIMESTAMP"}}, "ARRAY<TIMESTAMP>"),
    ({"code": "NUMERIC", "type_annotation": "PG_NUMERIC"}, "NUMERIC"),
    ({"code": "JSON", "type_annotation": "PG_JSONB"}, "JSON"),
])
def test_json_column_types_map_to_the_codec_type_names(json_type, name):
    assert values.type_name(json_type) == name


@pytest.mark.parametrize("type_text, encoded, expected", [
    ("INT64", "9007199254740993", 9007199254740993),          # beyond 2**53: exact
    ("INT64", "-9223372036854775808", -2**63),
    ("FLOAT64", 1.5, 1.5),
    ("FLOAT64", 3, 3.0),
    ("FLOAT64", "Infinity", math.inf),
    ("FLOAT64", "-Infinity", -math.inf),
    ("FLOAT32", 0.25, 0.25),
    ("NUMERIC", "123456789012345678901234567890.123456789", decimal.Decimal("123456789012345678901234567890.123456789")),
    ("BOOL", True, True),
    ("STRING", "héllo", "héllo"),
    ("BYTES", "AAH/", b"\x00\x01\xff"),
    ("DATE", "2024-02-29", dt.date(2024, 2, 29)),
    ("ARRAY<INT64>", ["1", None, "-2"], [1, None, -2]),
    ("ARRAY<BYTES>", ["aGk=", None], [b"hi", None]),
    ("ARRAY<STRING>", [], []),
    ("STRING", None, None),
])
def test_values_decode_to_the_types_the_client_gives(type_text, encoded, expected):
    got = values.decode(type_text, encoded)
    assert got == expected and type(got) is type(expected)


def test_nan_decodes_to_a_float_nan():
    assert math.isnan(values.decode("FLOAT64", "NaN"))


def test_timestamps_keep_nanoseconds():
    got = values.decode("TIMESTAMP", "2024-05-01T10:00:00.123456789Z")
    assert isinstance(got, DatetimeWithNanoseconds) and got.nanosecond == 123456789
    assert values.decode("ARRAY<TIMESTAMP>", ["1970-01-01T00:00:00Z"]) == [dt.datetime(1970, 1, 1, tzinfo=dt.UTC)]


@pytest.mark.parametrize("encoded, serialized", [
    ('{"b":[1,2],"a":"x"}', '{"a":"x","b":[1,2]}'),
    ("[1,2]", "[1,2]"),
    ({"a": 1}, '{"a":1}'),
])
def test_json_columns_decode_to_the_clients_json_object(encoded, serialized):
    got = values.decode("JSON", encoded)
    assert isinstance(got, JsonObject) and got.serialize() == serialized


def test_an_unknown_type_and_an_unlisted_column_are_errors_naming_them():
    with pytest.raises(PollError, match="unsupported type PROTO"):
        values.decode("PROTO", "x")
    with pytest.raises(PollError, match="table Singers .* column Nick"):
        values.decode_values({"SingerId": "INT64"}, {"Nick": "x"}, "Singers")


# --- records ---------------------------------------------------------------------------------------------------

COLUMN_TYPES = [  # listed in table order; the key (AlbumId, SingerId) is in the other order
    ["SingerId", JsonObject({"code": "INT64"}), True, 2],
    ["AlbumId", JsonObject({"code": "INT64"}), True, 1],
    ["Title", JsonObject({"code": "STRING"}), False, 3],
    ["Cover", JsonObject({"code": "BYTES"}), False, 4],
]


def data_record(mod_type="UPDATE", mods=None, capture="OLD_AND_NEW_VALUES", tag="app"):
    mods = mods if mods is not None else [[JsonObject({"SingerId": "1", "AlbumId": "7"}),
                                           JsonObject({"Title": "New"}), JsonObject({"Title": "Old"})]]
    return [TS, "00000003", "tx-1", True, "Albums", COLUMN_TYPES, mods, mod_type, capture, 5, 2, tag, False]


def row_of(*change_records):
    return [list(change_records)]


def test_a_data_change_record_gives_one_change_per_mod_with_every_field():
    mods = [[JsonObject({"SingerId": "1", "AlbumId": "7"}), JsonObject({"Title": "A", "Cover": "AAE="}), JsonObject({})],
            [JsonObject({"SingerId": "2", "AlbumId": "8"}), JsonObject({"Title": None, "Cover": None}), JsonObject(None)]]
    [rec] = records.parse_row(row_of([[data_record("INSERT", mods)], [], []]))
    assert isinstance(rec, records.DataChangeRecord)
    assert rec.key_columns == ("AlbumId", "SingerId")
    first, second = rec.changes("tok")
    assert first.keys == (7, 1) and second.keys == (8, 2)
    assert first.row == {"SingerId": 1, "AlbumId": 7, "Title": "A", "Cover": b"\x00\x01"}
    assert second.row == {"SingerId": 2, "AlbumId": 8, "Title": None, "Cover": None}
    assert (first.table, first.mod_type, first.commit_timestamp, first.old_values) == ("Albums", "INSERT", TS, {})
    assert (first.server_transaction_id, first.record_sequence, first.mod_index, second.mod_index) == ("tx-1", "00000003", 0, 1)
    assert (first.number_of_records_in_transaction, first.number_of_partitions_in_transaction) == (5, 2)
    assert (first.transaction_tag, first.is_system_transaction, first.partition_token) == ("app", False, "tok")
    assert first.value_capture_type == "OLD_AND_NEW_VALUES"
    assert first.column_types == {"SingerId": "INT64", "AlbumId": "INT64", "Title": "STRING", "Cover": "BYTES"}
    assert first.commit_timestamp.nanosecond == 123456000


def test_an_update_carries_new_and_old_values_and_a_delete_only_its_key():
    [update] = records.parse_row(row_of([[data_record("UPDATE")], [], []]))
    [change] = update.changes()
    assert change.row == {"SingerId": 1, "AlbumId": 7, "Title": "New"} and change.old_values == {"Title": "Old"}
    delete_mods = [[JsonObject({"SingerId": "1", "AlbumId": "7"}), JsonObject({}),
                    JsonObject({"Title": "Old", "Cover": None})]]
    [delete] = records.parse_row(row_of([[data_record("DELETE", delete_mods)], [], []]))
    [gone] = delete.changes()
    assert gone.row == {"SingerId": 1, "AlbumId": 7} and gone.keys == (7, 1)
    assert gone.old_values == {"Title": "Old", "Cover": None} and gone.mod_type == "DELETE"


def test_record_json_may_arrive_as_text():
    mods = [['{"SingerId":"1","AlbumId":"7"}', '{"Title":"T"}', "{}"]]
    cts = [[n, json.dumps({"code": t}), pk, pos] for n, t, pk, pos in
           [("SingerId", "INT64", True, 1), ("AlbumId", "INT64", True, 2), ("Title", "STRING", False, 3)]]
    raw = [TS, "00000000", "tx", True, "Albums", cts, mods, "INSERT", "NEW_ROW", 1, 1, "", False]
    [change] = records.parse_row(row_of([[raw], [], []]))[0].changes()
    assert change.keys == (1, 7) and change.row["Title"] == "T" and change.value_capture_type == "NEW_ROW"


def test_a_mod_without_its_key_columns_is_an_error_naming_the_table():
    mods = [[JsonObject({"SingerId": "1"}), JsonObject({}), JsonObject({})]]
    [rec] = records.parse_row(row_of([[data_record("INSERT", mods)], [], []]))
    with pytest.raises(PollError, match="Albums lacks key column.*AlbumId"):
        rec.changes()


def test_heartbeat_and_child_partitions_records():
    later = TS + dt.timedelta(seconds=1)
    parsed = records.parse_row(row_of([[], [[TS]], []], [[], [], [[later, "00000001", [["c1", ["p1"]], ["c2", ["p1", "p2"]]]]]]))
    assert parsed == [records.HeartbeatRecord(TS), records.ChildPartitionsRecord(
        later, "00000001", (records.ChildPartition("c1", ("p1",)), records.ChildPartition("c2", ("p1", "p2"))))]
    first_query = records.parse_row(row_of([[], [], [[TS, "00000000", [["c1", []]]]]]))
    assert first_query[0].children == (records.ChildPartition("c1", ()),)


def _struct(*fields):
    return Type(code=TypeCode.STRUCT, struct_type=StructType(fields=list(fields)))


def _field(name, type_):
    return StructType.Field(name=name, type_=type_)


def _array(type_):
    return Type(code=TypeCode.ARRAY, array_element_type=type_)


def test_fields_are_read_by_the_names_the_result_metadata_gives():
    """A server that orders the ChangeRecord fields differently (or adds one) is still read right."""
    ts, s = Type(code=TypeCode.TIMESTAMP), Type(code=TypeCode.STRING)
    child = _struct(_field("parent_partition_tokens", _array(s)), _field("token", s))
    change_record = _struct(
        _field("child_partitions_record", _array(_struct(_field("record_sequence", s), _field("start_timestamp", ts),
                                                         _field("child_partitions", _array(child))))),
        _field("heartbeat_record", _array(_struct(_field("timestamp", ts)))),
        _field("partition_event_record", _array(_struct(_field("x", s)))),
        _field("data_change_record", _array(_struct(_field("commit_timestamp", ts)))))
    layout = records.layout_of([_field("ChangeRecord", _array(change_record))])
    assert layout["ChangeRecord"][0] == "child_partitions_record"
    assert layout["child_partitions"] == ("parent_partition_tokens", "token")
    row = [[[[["00000002", TS, [[["a", "b"], "ab"]]]], [], [], []]]]
    [rec] = records.parse_row(row, layout)
    assert rec == records.ChildPartitionsRecord(TS, "00000002", (records.ChildPartition("ab", ("a", "b")),))


def test_a_record_of_the_wrong_shape_is_an_error_naming_the_struct():
    with pytest.raises(PollError, match="heartbeat_record has 2 fields, expected 1"):
        records.parse_row(row_of([[], [[TS, "x"]], []]))
