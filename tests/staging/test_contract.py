"""The staging contract: records, lines and names, tested as the pure functions they are.

Existing staging folders and warehouses must keep reading, so the exact bytes of a record
are pinned here; every writer (the sink, backfill/reconcile) and the changelog's Spark
schema are checked against the one field list.
"""

from __future__ import annotations

import datetime as dt
import decimal
import fnmatch
import json
import math
import uuid
from typing import Any

import pytest
from google.cloud.spanner_v1 import Interval

from watcher.changelog.rules import records
from watcher.changelog.snapshots import spanner_source
from watcher.codec import decode_value
from watcher.errors import UnknownColumnTypeError
from watcher.model import Change, from_nanos
from watcher.staging import contract
from watcher.staging.sink import StagingSink

T0 = 1_714_557_600_123_456_789  # 2024-05-01T10:00:00.123456789Z in nanoseconds
COMMIT = from_nanos(T0)
READ = from_nanos(T0 + 876_543_211)

#: (Spanner type, value as the client returns it, its typed JSON in a staged record).
VALUE_KINDS: list[tuple[str, Any, Any]] = [
    ("INT64", 2**62 + 1, "4611686018427387905"),
    ("INT64", -(2**63), "-9223372036854775808"),
    ("FLOAT64", 0.1, 0.1),
    ("FLOAT64", math.nan, "NaN"),
    ("FLOAT64", math.inf, "Infinity"),
    ("FLOAT64", -math.inf, "-Infinity"),
    ("NUMERIC", decimal.Decimal("12345678901234567890.123456789"), "12345678901234567890.123456789"),
    ("NUMERIC", decimal.Decimal("1.50"), "1.50"),
    ("BOOL", False, False),
    ("STRING(MAX)", "Zoë ✓ \"quoted\"\n", "Zoë ✓ \"quoted\"\n"),
    ("BYTES(MAX)", b"\x00\xffhi", "AP9oaQ=="),
    ("DATE", dt.date(1, 1, 1), "0001-01-01"),
    ("TIMESTAMP", COMMIT, "2024-05-01T10:00:00.123456789Z"),
    ("JSON", {"b": 1, "a": [1, None]}, '{"a":[1,null],"b":1}'),
    ("ARRAY<INT64>", [1, None, 2**62], ["1", None, "4611686018427387904"]),
    ("ARRAY<BYTES(MAX)>", [b"hi", None], ["aGk=", None]),
    ("ARRAY<TIMESTAMP>", [COMMIT], ["2024-05-01T10:00:00.123456789Z"]),
    ("ARRAY<STRING(MAX)>", [], []),
    ("STRING(MAX)", None, None),
    ("ARRAY<INT64>", None, None),
    ("FLOAT32", 0.10000000149011612, 0.10000000149011612),
    ("FLOAT32", -math.inf, "-Infinity"),
    ("UUID", uuid.UUID("7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b"), "7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b"),
    ("INTERVAL", Interval(months=14, days=3, nanos=4_500_000_000), "P1Y2M3DT4.500S"),
    ("INTERVAL", Interval(nanos=-1), "PT-0.000000001S"),
    ("ARRAY<UUID>", [uuid.UUID(int=1), None], ["00000000-0000-0000-0000-000000000001", None]),
    ("ARRAY<FLOAT32>", [1.5, math.nan], [1.5, "NaN"]),
    ("ARRAY<INTERVAL>", [Interval(days=1)], ["P1D"]),
]

#: One record as every staging format 1 writer writes it: byte for byte what existing folders hold.
GOLDEN_LINE = (
    '{"v":1,"batch_id":"20240501T100000.123456789Z-00ff","seq":0,"table":"My-Table.x","key_columns":["Id"],'
    '"keys":["4611686018427387905"],"commit_timestamp":"2024-05-01T10:00:00.123456789Z",'
    '"read_timestamp":"2024-05-01T10:00:01.000000000Z","shard":[1,"a"],"watcher_id":"w1","read_method":"cdc",'
    '"mod_type":null,"values":{"Id":"4611686018427387905","Name":"Zoë ✓","F":"NaN","B":"AGhp"},'
    '"types":{"Id":"INT64","Name":"STRING(MAX)","F":"FLOAT64","B":"BYTES(MAX)"}}'
)
GOLDEN_TYPES = {"Id": "INT64", "Name": "STRING(MAX)", "F": "FLOAT64", "B": "BYTES(MAX)"}
GOLDEN_ROW = {"Id": 2**62 + 1, "Name": "Zoë ✓", "F": math.nan, "B": b"\x00hi"}


def _change(row: dict[str, Any], keys: tuple[Any, ...], shard: Any = None, read: Any = READ) -> Change:
    return Change("T", keys, row, COMMIT, shard, read)


# --- fields and format version ---------------------------------------------------------------


def test_field_list_is_the_format_1_layout_in_order():
    assert contract.STAGING_FORMAT == 1
    assert contract.RECORD_FIELDS == ("v", "batch_id", "seq", "table", "key_columns", "keys", "commit_timestamp",
                                      "read_timestamp", "shard", "watcher_id", "read_method", "mod_type", "values",
                                      "types")
    assert len(set(contract.RECORD_FIELDS)) == len(contract.RECORD_FIELDS)


def test_every_field_has_a_known_kind_and_a_meaning():
    for field in contract.FIELDS:
        assert field.kind in contract.KINDS, field
        assert field.meaning.strip(), field


def test_required_fields_are_those_a_reader_rejects_when_null():
    assert contract.REQUIRED_FIELDS == ("v", "batch_id", "seq", "table", "key_columns", "keys", "commit_timestamp",
                                        "values", "types")


# --- record building -------------------------------------------------------------------------


@pytest.mark.parametrize(("spanner_type", "value", "encoded"), VALUE_KINDS,
                         ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(VALUE_KINDS)])
def test_change_record_encodes_every_value_kind(spanner_type, value, encoded):
    types = {"Id": "INT64", "C": spanner_type}
    rec = contract.change_record(_change({"Id": 7, "C": value}, (7,)), batch_id="b", seq=0, types=types,
                                 key_columns=["Id"], watcher_id="w")
    assert rec["values"] == {"Id": "7", "C": encoded}
    assert json.loads(contract.to_line(rec))["values"]["C"] == encoded  # survives the line as JSON


@pytest.mark.parametrize(("spanner_type", "value", "encoded"),
                         [k for k in VALUE_KINDS if not k[0].startswith(("ARRAY", "JSON", "FLOAT")) and k[1] is not None])
def test_keys_of_every_key_kind_are_typed_json_in_key_order(spanner_type, value, encoded):
    types = {"A": spanner_type, "B": "INT64"}
    rec = contract.change_record(_change({"B": 1, "A": value}, (value, 1)), batch_id="b", seq=0, types=types,
                                 key_columns=["A", "B"], watcher_id="w")
    assert rec["key_columns"] == ["A", "B"]
    assert rec["keys"] == [encoded, "1"]


@pytest.mark.parametrize(("spanner_type", "value", "encoded"),
                         [k for k in VALUE_KINDS if k[0].startswith(("FLOAT32", "UUID", "INTERVAL", "ARRAY<UUID", "ARRAY<INTERVAL"))])
def test_new_type_values_decode_back_to_what_the_client_returned(spanner_type, value, encoded):
    line = contract.to_line(contract.change_record(_change({"Id": 7, "C": value}, (7,)), batch_id="b", seq=0,
                                                   types={"Id": "INT64", "C": spanner_type}, key_columns=["Id"],
                                                   watcher_id="w"))
    assert decode_value(spanner_type, json.loads(line)["values"]["C"]) == value


def test_a_column_without_a_type_is_an_error_naming_table_and_column():
    # Staging it as text (the old STRING fallback) would corrupt BYTES, FLOAT64 or ARRAY values silently.
    with pytest.raises(UnknownColumnTypeError, match="column X of table Singers"):
        contract.encode_row({}, {"X": 12, "Y": None}, "Singers")


def test_a_value_the_codec_cannot_encode_is_an_error_naming_table_and_column():
    with pytest.raises(UnknownColumnTypeError, match="column P of table T: its value"):
        contract.change_record(_change({"Id": 1, "P": b"x"}, (1,)), batch_id="b", seq=0,
                               types={"Id": "INT64", "P": "PROTO"}, key_columns=["Id"], watcher_id="w")


def test_a_change_is_typed_by_its_own_column_types_not_the_given_ones():
    change = Change("T", (1,), {"Id": 1, "B": b"\x00hi"}, dt.datetime(2024, 5, 1, tzinfo=dt.UTC),
                    column_types={"Id": "INT64", "B": "BYTES"})
    rec = contract.change_record(change, batch_id="b", seq=0, types={"Id": "INT64"}, key_columns=["Id"], watcher_id="w")
    assert rec["values"] == {"Id": "1", "B": "AGhp"}
    assert rec["types"] == {"Id": "INT64", "B": "BYTES"}


def test_a_key_column_without_a_type_is_an_error():
    with pytest.raises(KeyError):
        contract.encode_keys({}, ["Id"], [1])


def test_record_fields_come_in_contract_order_with_the_format_version():
    rec = contract.record(batch_id="b", seq=3, table="T", key_columns=("Id",), keys=("1",), values={"Id": "1"},
                          types={"Id": "INT64"}, commit_timestamp="2024-05-01T10:00:00.000000001Z")
    assert tuple(rec) == contract.RECORD_FIELDS
    assert rec["v"] == contract.STAGING_FORMAT
    assert (rec["read_timestamp"], rec["shard"], rec["watcher_id"], rec["read_method"], rec["mod_type"]) == \
        (None, None, None, "cdc", None)
    assert isinstance(rec["key_columns"], list) and isinstance(rec["keys"], list)


def test_record_takes_timestamps_as_datetimes_or_text_alike():
    common: dict[str, Any] = {"batch_id": "b", "seq": 0, "table": "T", "key_columns": ["Id"], "keys": ["1"],
                              "values": {}, "types": {"Id": "INT64"}}
    as_dt = contract.record(**common, commit_timestamp=COMMIT, read_timestamp=READ)
    as_text = contract.record(**common, commit_timestamp="2024-05-01T10:00:00.123456789Z",
                              read_timestamp="2024-05-01T10:00:01.000000000Z")
    assert as_dt == as_text
    other_zone = dt.datetime(2024, 5, 1, 3, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=-7)))
    assert contract.record(**common, commit_timestamp=other_zone)["commit_timestamp"] == "2024-05-01T10:00:00.123456000Z"


def test_record_does_not_keep_references_to_the_callers_objects():
    keys, values, types = ["1"], {"Id": "1"}, {"Id": "INT64"}
    rec = contract.record(batch_id="b", seq=0, table="T", key_columns=["Id"], keys=keys, values=values,
                          types=types, commit_timestamp=COMMIT)
    keys.append("2")
    values.clear()
    types.clear()
    assert rec["keys"] == ["1"] and rec["values"] == {"Id": "1"} and rec["types"] == {"Id": "INT64"}


@pytest.mark.parametrize(("shard", "label"), [
    (None, None), (True, True), (-18, -18), (2.5, 2.5), ("eu", "eu"),
    ((1, "a"), [1, "a"]), ([[1, 2], (3,)], [[1, 2], [3]]), (b"x", "b'x'"), (dt.date(2024, 5, 1), "2024-05-01"),
])
def test_shard_label_is_json_for_every_shard_kind(shard, label):
    assert contract.shard_label(shard) == label
    rec = contract.change_record(_change({"Id": 1}, (1,), shard=shard), batch_id="b", seq=0,
                                 types={"Id": "INT64"}, key_columns=["Id"], watcher_id="w")
    assert json.loads(contract.to_line(rec))["shard"] == label


def test_every_written_field_has_the_json_form_of_its_kind():
    is_kind = {
        "int32": lambda v: isinstance(v, int) and not isinstance(v, bool) and -2**31 <= v < 2**31,
        "int64": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "timestamp": lambda v: isinstance(v, str) and fnmatch.fnmatch(v, "????-??-??T??:??:??.?????????Z"),
        "string[]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "typed[]": lambda v: isinstance(v, list),
        "json": lambda v: True,
        "typed{}": lambda v: isinstance(v, dict),
        "string{}": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "bool": lambda v: isinstance(v, bool),
    }
    assert set(is_kind) == set(contract.KINDS)
    types = {"Id": "INT64"} | {f"C{i}": t for i, (t, _, _) in enumerate(VALUE_KINDS)}
    row = {"Id": 1} | {f"C{i}": v for i, (_, v, _) in enumerate(VALUE_KINDS)}
    rec = json.loads(contract.to_line(contract.change_record(
        _change(row, (1,), shard=(1, "a")), batch_id="b", seq=0, types=types, key_columns=["Id"], watcher_id="w",
        mod_type="UPDATE")))
    for field in contract.FIELDS:
        value = rec[field.name]
        assert (value is None and not field.required) or is_kind[field.kind](value), (field, value)


# --- lines and batch text: byte compatibility --------------------------------------------------


def test_golden_line_is_what_a_change_stages_as():
    change = Change("My-Table.x", (2**62 + 1,), GOLDEN_ROW, COMMIT, [1, "a"], from_nanos(T0 - 123_456_789 + 10**9))
    rec = contract.change_record(change, batch_id="20240501T100000.123456789Z-00ff", seq=0, types=GOLDEN_TYPES,
                                 key_columns=["Id"], watcher_id="w1")
    assert contract.to_line(rec) == GOLDEN_LINE


def test_golden_line_reads_back_into_the_same_record():
    rec = json.loads(GOLDEN_LINE)
    assert tuple(rec) == contract.RECORD_FIELDS
    assert contract.to_line(rec) == GOLDEN_LINE


def test_batch_text_is_one_line_per_record_each_ending_in_a_newline():
    recs = [json.loads(GOLDEN_LINE) | {"seq": i} for i in range(3)]
    text = contract.batch_text(recs)
    assert text.endswith("\n") and text.count("\n") == 3
    assert [json.loads(line)["seq"] for line in text.splitlines()] == [0, 1, 2]
    assert "Zoë ✓" in text  # UTF-8 kept, not \\u-escaped: the bytes existing files hold
    assert contract.batch_text([]) == ""


# --- naming ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "folder"), [
    ("Singers", "table=Singers"), ("snake_case_1", "table=snake_case_1"), ("sales.Orders", "table=sales_Orders"),
    ("My-Table x", "table=My_Table_x"), ("Zoë", "table=Zo_"), ("a/b", "table=a_b"), ("", "table="),
])
def test_table_folder_escapes_every_character_outside_word_characters(table, folder):
    assert contract.table_folder(table) == folder


TABLES = ["Singers", "sales.Orders", "Zoë-1"]
BATCH_IDS = [contract.batch_id(COMMIT), contract.snapshot_batch_prefix("2024-05-01T10:00:00.000000000Z", "backfill")
             + "-p00000", contract.task_batch_id("x", 99_999, "r"), "a-00-00000"]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("batch", BATCH_IDS)
def test_staged_name_round_trips_through_uris(table, batch):
    name = contract.staged_name(table, batch)
    assert fnmatch.fnmatch(name, contract.BATCH_GLOB)
    for where in ("", "/data/staging/", "file:/tmp/s/", "s3a://bucket/a/table=old/s/", "hdfs://nn:8020/s/"):
        assert contract.batch_name(where + name) == name
        assert contract.split_batch_name(where + name) == (contract.table_folder(table), batch)


@pytest.mark.parametrize("name", ["table=T/b.json", "T/b.jsonl", "b.jsonl", "table=T/", "table=T/.b.tmp"])
def test_split_batch_name_refuses_what_is_not_a_batch_file(name):
    with pytest.raises(ValueError, match="not a staging batch file name"):
        contract.split_batch_name(name)


def test_temporary_files_are_never_listed_as_batches():
    temp = f"{contract.table_folder('T')}/{contract.temp_name('b-1')}"
    assert not fnmatch.fnmatch(temp, contract.BATCH_GLOB)


@pytest.mark.parametrize("batch", BATCH_IDS)
def test_every_batch_id_a_writer_makes_is_file_name_safe(batch):
    assert contract.is_batch_id(batch)


@pytest.mark.parametrize("bad", ["", "a/b", "a b", "table=x", "é"])
def test_is_batch_id_rejects_what_cannot_be_a_file_name(bad):
    assert not contract.is_batch_id(bad)


def test_sink_batch_ids_begin_with_the_first_commit_and_are_unique():
    ids = {contract.batch_id(COMMIT) for _ in range(100)}
    assert len(ids) == 100
    assert all(i.startswith("20240501T100000.123456789Z-") for i in ids)
    assert contract.batch_id("2024-05-01T10:00:00.123456789Z", "u") == "20240501T100000.123456789Z-u"


def test_compact_timestamps_sort_like_the_timestamps():
    stamps = [from_nanos(T0 + d) for d in (-10**18, -1, 0, 1, 10**9, 86_400 * 10**9 * 400)]
    compact = [contract.compact_timestamp(t) for t in stamps]
    assert compact == sorted(compact)
    assert all(contract.is_batch_id(c) for c in compact)


def test_snapshot_batch_ids_name_the_read_timestamp_the_method_and_the_task():
    prefix = contract.snapshot_batch_prefix("2024-05-01T10:00:00.000000000Z", "reconcile")
    assert prefix.startswith("20240501T100000.000000000Z-reconcile-") and len(prefix.rsplit("-", 1)[1]) == 12
    assert contract.task_batch_id(prefix, 7) == f"{prefix}-p00007"
    assert contract.task_batch_id(prefix, 7, "r") == f"{prefix}-r00007"
    assert contract.snapshot_batch_prefix("2024-05-01T10:00:00.000000000Z", "reconcile") != prefix


# --- every user of the contract agrees with it ------------------------------------------------


def test_the_changelogs_staged_input_schema_is_the_contracts_field_list():
    assert records.names(records.STAGING_FIELDS) == list(contract.RECORD_FIELDS)
    assert set(records.STAGING_SPARK_TYPES) == set(contract.KINDS)
    assert records.schema_ddl(records.STAGING_FIELDS).split(", ")[:3] == ["v INT", "batch_id STRING", "seq BIGINT"]
    assert [doc for _, _, doc in records.STAGING_FIELDS] == [f.meaning for f in contract.FIELDS]


def test_backfill_and_the_sink_stage_the_same_row_identically():
    types = {"Id": "INT64", "Name": "STRING(MAX)", "T": "TIMESTAMP"}
    row = {"Id": 2**62 + 1, "Name": "x", "T": COMMIT}
    plan = spanner_source.ReadPlan(spanner_source.SpannerLocation("p", "i", "d"), "T", ("Id",), "T", types,
                                   "2024-05-01T10:00:01.000000000Z", "backfill", "w", "prefix")
    backfilled = json.loads(spanner_source.record_line(plan, "b", 4, row,
                                                       commit_timestamp="2024-05-01T10:00:00.123456789Z"))
    watched = contract.change_record(_change(row, (row["Id"],)), batch_id="b", seq=4, types=types,
                                     key_columns=["Id"], watcher_id="w", read_method="backfill")
    assert backfilled == watched
    assert list(backfilled) == list(contract.RECORD_FIELDS)


def test_a_sink_batch_file_holds_the_contracts_invariants(tmp_path):
    sink = StagingSink(tmp_path, watcher_id="w", fsync=False)
    changes = [Change("sales.Orders", (i,), {"Id": i}, from_nanos(T0 + i), None, READ) for i in range(5)]
    path = sink.write(changes, {"Id": "INT64"}, ["Id"])
    assert path is not None
    folder, batch = contract.split_batch_name(path.as_posix())
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert folder == contract.table_folder("sales.Orders") and path.parent.name == folder
    assert [r["seq"] for r in recs] == list(range(5))
    assert {r["batch_id"] for r in recs} == {batch} and {r["table"] for r in recs} == {"sales.Orders"}
    assert batch.startswith(contract.compact_timestamp(changes[0].commit_timestamp))
    assert all(tuple(r) == contract.RECORD_FIELDS and r["v"] == contract.STAGING_FORMAT for r in recs)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left behind
