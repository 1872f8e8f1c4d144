"""Exports and exact types: every Spanner type survives staging -> changelog -> each export."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math

import pytest

from watcher.changelog import Changelog
from watcher.changelog.exports import bigquery, datastream
from watcher.changelog.exports.bigquery import compare_sequence_numbers, parse_sequence_number
from watcher.codec import decode_value
from watcher.errors import ChangelogError
from watcher.model import from_nanos

TYPES = {
    "Id": "INT64", "Name": "STRING(MAX)", "Big": "INT64", "F": "FLOAT64", "Nan": "FLOAT64", "Inf": "FLOAT64",
    "Num": "NUMERIC", "Flag": "BOOL", "Raw": "BYTES(MAX)", "Day": "DATE", "At": "TIMESTAMP", "Doc": "JSON",
    "Ints": "ARRAY<INT64>", "Strs": "ARRAY<STRING(MAX)>", "Floats": "ARRAY<FLOAT64>", "Nothing": "STRING(MAX)",
}
KEYS = ["Id", "Name"]
ROW = {
    "Id": 2**62 + 1, "Name": 'é "quoted"\n\\ tab\t', "Big": -(2**63), "F": 1e-07, "Nan": math.nan, "Inf": -math.inf,
    "Num": decimal.Decimal("-12345678901234567890123456789.123456789"), "Flag": True, "Raw": b"\x00\xff\x10bytes",
    "Day": dt.date(1, 1, 1), "At": from_nanos(1_714_557_600_123_456_789), "Doc": '{"a":[1,2.5,null],"b":"x"}',
    "Ints": [1, None, 2**63 - 1], "Strs": ["a", None, ""], "Floats": [0.1, math.inf, math.nan], "Nothing": None,
}


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b) or (isinstance(a, dt.datetime) and a == b)


def decoded(obj: dict) -> dict:
    return {c: decode_value(TYPES[c], v) for c, v in obj.items() if c in TYPES}


@pytest.fixture
def typed_changelog(spark, stager, dirs):
    stager.stage("AllTypes", [ROW, {**ROW, "F": 2.5}], types=TYPES, key_columns=KEYS, commits=[10, 20])
    Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    return spark.table("changelog").orderBy("commit_timestamp")


def test_every_type_round_trips_into_keys_new_values_and_exports(spark, typed_changelog):
    rows = typed_changelog.collect()
    new_values = json.loads(rows[0].new_values)
    assert list(new_values) == list(TYPES)
    for column, value in decoded(new_values).items():
        assert same(value, ROW[column]), column
    assert decoded(json.loads(rows[0].old_values)) == {}
    assert json.loads(rows[1].old_values) == {"F": 1e-07}
    keys = json.loads(rows[0].keys)
    assert list(keys) == KEYS and same(decoded(keys)["Id"], ROW["Id"]) and decoded(keys)["Name"] == ROW["Name"]
    assert base64.b64decode(new_values["Raw"]) == ROW["Raw"]
    assert rows[0].commit_timestamp == "2024-05-01T10:00:00.000000010Z"

    bq = bigquery.bigquery_rows(typed_changelog).orderBy("commit_timestamp").collect()
    row = json.loads(bq[0].row)
    assert row.pop("_CHANGE_TYPE") == "UPSERT" and row.pop("_CHANGE_SEQUENCE_NUMBER") == bq[0]._CHANGE_SEQUENCE_NUMBER
    assert all(same(v, ROW[c]) for c, v in decoded(row).items()) and list(row) == list(TYPES)

    events = datastream.datastream_events(typed_changelog).collect()
    payload = json.loads(events[0].event)["payload"]
    assert all(same(v, ROW[c]) for c, v in decoded(payload).items()) and list(payload) == list(TYPES)


@pytest.mark.parametrize("older, newer", [("77", "7B"), ("FFF/B", "FFF/ABC"), ("BA/FFFFFFFF", "ABC"), ("ABC", "FFF/ABC")])
def test_seed_004_comparison_examples(older, newer):
    assert compare_sequence_numbers(older, newer) == -1 and compare_sequence_numbers(newer, older) == 1
    assert compare_sequence_numbers(newer.lower(), newer) == 0


@pytest.mark.parametrize("text", ["", "G", "1/2/3/4/5", "12345678901234567", "1//2"])
def test_malformed_sequence_numbers_are_rejected(text):
    with pytest.raises(ChangelogError, match="_CHANGE_SEQUENCE_NUMBER"):
        parse_sequence_number(text)


def test_sequence_numbers_order_each_keys_changes(spark, stager, dirs):
    types = {"Id": "INT64", "V": "STRING(MAX)"}
    # Same key at nanosecond-apart commits, plus a group where record_sequence breaks the tie across keys.
    stager.stage("T", [{"Id": 1, "V": "a"}, {"Id": 2, "V": "b"}, {"Id": 1, "V": "c"}, {"Id": 1, "V": "d"}],
                 types=types, key_columns=["Id"], commits=[10, 10, 11, 999_999_999_999])
    stager.stage("T", [{"Id": 1, "V": "x"}], types=types, key_columns=["Id"], commits=[1_000_000_000_000],
                 mod_types=["DELETE"])
    Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    rows = bigquery.bigquery_rows(spark.table("changelog")).where("keys = '{\"Id\":\"1\"}'").collect()
    in_commit_order = [r._CHANGE_SEQUENCE_NUMBER for r in sorted(rows, key=lambda r: r.commit_timestamp)]
    import functools
    by_bigquery = sorted(in_commit_order, key=functools.cmp_to_key(compare_sequence_numbers))
    assert by_bigquery == in_commit_order and len(set(in_commit_order)) == 4
    assert [r._CHANGE_TYPE for r in sorted(rows, key=lambda r: r.commit_timestamp)] == ["UPSERT"] * 3 + ["DELETE"]
    first = sorted(rows, key=lambda r: r.commit_timestamp)[0]._CHANGE_SEQUENCE_NUMBER
    assert parse_sequence_number(first)[0] == 1_714_557_600_000_000_010


def test_datastream_event_fields(spark, stager, dirs):
    types = {"Id": "INT64", "V": "STRING(MAX)"}
    stager.stage("T", [{"Id": 1, "V": "a"}, {"Id": 1, "V": "b"}], types=types, key_columns=["Id"], commits=[10, 20])
    Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    changelog = spark.table("changelog")
    first = [json.loads(r.event) for r in datastream.datastream_events(changelog, "my-stream").collect()]
    again = [json.loads(r.event) for r in datastream.datastream_events(changelog, "my-stream").collect()]
    assert first == again  # deterministic uuids
    events = sorted(first, key=lambda e: e["sort_keys"])
    e = events[1]
    assert list(e) == ["stream_name", "read_method", "object", "schema_key", "uuid", "read_timestamp",
                       "source_timestamp", "sort_keys", "source_metadata", "payload"]
    assert e["stream_name"] == "my-stream" and e["read_method"] == "spanner-cdc" and e["object"] == "T"
    assert e["source_timestamp"] == "2024-05-01T10:00:00.000000020Z" and e["sort_keys"] == [e["source_timestamp"], 0]
    assert e["read_timestamp"] == "2024-05-01T10:00:00.000001020Z"
    assert len(e["uuid"]) == 36 and e["uuid"].replace("-", "") == changelog.where("mod_type = 'UPDATE'").first().change_id
    assert e["schema_key"] == events[0]["schema_key"] and len(e["schema_key"]) == 16
    meta = e["source_metadata"]
    assert (meta["change_type"], meta["is_deleted"], meta["primary_keys"], meta["table"]) == ("UPDATE", False, ["Id"], "T")
    assert e["payload"] == {"Id": "1", "V": "b"} and events[0]["source_metadata"]["change_type"] == "UPSERT"


def test_exports_write_json_lines_per_table(spark, typed_changelog, tmp_path):
    bigquery.write(typed_changelog, str(tmp_path / "bq"))
    datastream.write(typed_changelog, str(tmp_path / "ds"))
    bq_lines = [json.loads(line) for f in (tmp_path / "bq" / "table_name=AllTypes").glob("part-*") for line in open(f)]
    ds_lines = [json.loads(line) for f in (tmp_path / "ds" / "object=AllTypes").glob("part-*") for line in open(f)]
    assert len(bq_lines) == 2 and len(ds_lines) == 2
