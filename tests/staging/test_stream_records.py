"""Staging format 3: a change read from a change stream, record by record and line by line.

The exact bytes are pinned (golden lines), as for format 1: a staging folder written today
must read the same way tomorrow. Older formats keep their exact bytes (test_contract.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from watcher.changelog.rules import records
from watcher.model import Change, from_nanos
from watcher.staging import contract
from watcher.staging.sink import StagingSink

T0 = 1_714_557_600_123_456_789  # 2024-05-01T10:00:00.123456789Z
TYPES = {"SingerId": "INT64", "Name": "STRING", "Photo": "BYTES"}
STREAM = {"server_transaction_id": "tx-1", "record_sequence": "00000002", "number_of_records_in_transaction": 3,
          "number_of_partitions_in_transaction": 1, "transaction_tag": "app", "is_system_transaction": False,
          "partition_token": "p-1"}

#: An UPDATE of one column, as a stream of capture type OLD_AND_NEW_VALUES gives it.
GOLDEN_UPDATE = (
    '{"v":3,"batch_id":"20240501T100000.123456789Z-00ff","seq":0,"table":"Singers","key_columns":["SingerId"],'
    '"keys":["7"],"commit_timestamp":"2024-05-01T10:00:00.123456789Z","read_timestamp":null,"shard":null,'
    '"watcher_id":"w1","read_method":"change_stream","mod_type":"UPDATE","values":{"SingerId":"7","Name":"Zoë"},'
    '"types":{"SingerId":"INT64","Name":"STRING"},"version_seq":null,"value_capture_type":"OLD_AND_NEW_VALUES",'
    '"old_values":{"Name":"Zoe"},"server_transaction_id":"tx-1","record_sequence":"00000002","mod_index":1,'
    '"number_of_records_in_transaction":3,"number_of_partitions_in_transaction":1,"transaction_tag":"app",'
    '"is_system_transaction":false,"partition_token":"p-1"}'
)
#: A DELETE as NEW_ROW gives it: the key only, no old values (null, not {}).
GOLDEN_DELETE = (
    '{"v":3,"batch_id":"20240501T100000.123456789Z-00ff","seq":1,"table":"Singers","key_columns":["SingerId"],'
    '"keys":["7"],"commit_timestamp":"2024-05-01T10:00:00.123456789Z","read_timestamp":null,"shard":null,'
    '"watcher_id":"w1","read_method":"change_stream","mod_type":"DELETE","values":{"SingerId":"7"},'
    '"types":{"SingerId":"INT64"},"version_seq":null,"value_capture_type":"NEW_ROW","old_values":null,'
    '"server_transaction_id":"tx-1","record_sequence":"00000002","mod_index":0,'
    '"number_of_records_in_transaction":3,"number_of_partitions_in_transaction":1,"transaction_tag":"app",'
    '"is_system_transaction":false,"partition_token":"p-1"}'
)


def stream_change(mod_type: str, row: dict[str, Any], old: dict[str, Any] | None, capture: str,
                  mod_index: int, **overrides: Any) -> Change:
    fields: dict[str, Any] = {**STREAM, "mod_index": mod_index, **overrides}
    return Change("Singers", (row["SingerId"],), row, from_nanos(T0), mod_type=mod_type, column_types=TYPES,
                  value_capture_type=capture, old_values=old, **fields)


def line(change: Change, seq: int = 0) -> str:
    rec = contract.change_record(change, batch_id="20240501T100000.123456789Z-00ff", seq=seq, types={},
                                 key_columns=["SingerId"], watcher_id="w1", mod_type=change.mod_type)
    return contract.to_line(rec)


def test_golden_lines_are_what_stream_changes_stage_as():
    assert line(stream_change("UPDATE", {"SingerId": 7, "Name": "Zoë"}, {"Name": "Zoe"}, "OLD_AND_NEW_VALUES", 1)) \
        == GOLDEN_UPDATE
    assert line(stream_change("DELETE", {"SingerId": 7}, None, "NEW_ROW", 0), seq=1) == GOLDEN_DELETE


@pytest.mark.parametrize("golden", [GOLDEN_UPDATE, GOLDEN_DELETE])
def test_golden_lines_read_back_in_format_3_field_order(golden):
    rec = json.loads(golden)
    assert tuple(rec) == contract.STREAM_RECORD_FIELDS
    assert rec["v"] == contract.STREAM_FORMAT <= contract.READ_FORMAT
    assert contract.to_line(rec) == golden


def test_format_3_is_format_2_plus_the_stream_fields_each_with_a_kind_and_a_meaning():
    assert contract.STREAM_RECORD_FIELDS[:len(contract.VERSIONS_RECORD_FIELDS)] == contract.VERSIONS_RECORD_FIELDS
    assert [f.name for f in contract.STREAM_FIELDS] == [
        "old_values", "server_transaction_id", "record_sequence", "mod_index", "number_of_records_in_transaction",
        "number_of_partitions_in_transaction", "transaction_tag", "is_system_transaction", "partition_token"]
    assert contract.STREAM_REQUIRED_FIELDS == ("server_transaction_id", "record_sequence", "mod_index")
    for field in contract.STREAM_FIELDS:
        assert field.kind in contract.KINDS and field.meaning.strip(), field
    # The changelog job reads every field of every format (format 4 adds the stream watermark after them).
    assert records.names(records.STAGING_READ_FIELDS) == list(contract.WATERMARK_RECORD_FIELDS)
    assert contract.WATERMARK_RECORD_FIELDS[:len(contract.STREAM_RECORD_FIELDS)] == contract.STREAM_RECORD_FIELDS


def test_a_stream_change_with_its_watchers_watermark_is_format_4_and_one_without_stays_format_3():
    marked = stream_change("UPDATE", {"SingerId": 7, "Name": "Zoë"}, {"Name": "Zoe"}, "OLD_AND_NEW_VALUES", 1,
                           stream_watermark=from_nanos(T0 - 1))
    rec = json.loads(line(marked))
    assert rec["v"] == contract.WATERMARK_FORMAT == contract.READ_FORMAT
    assert tuple(rec) == contract.WATERMARK_RECORD_FIELDS
    assert rec["stream_watermark"] == "2024-05-01T10:00:00.123456788Z"
    assert {k: v for k, v in rec.items() if k not in ("v", "stream_watermark")} == \
        {k: v for k, v in json.loads(GOLDEN_UPDATE).items() if k != "v"}
    # Not part of the change's identity: the same version with another watermark is the same change.
    assert marked == stream_change("UPDATE", {"SingerId": 7, "Name": "Zoë"}, {"Name": "Zoe"}, "OLD_AND_NEW_VALUES", 1)


def test_a_delete_is_typed_for_its_old_values_too():
    old = {"Name": "Bo", "Photo": b"\x00hi"}
    rec = json.loads(line(stream_change("DELETE", {"SingerId": 2}, old, "OLD_AND_NEW_VALUES", 0)))
    assert rec["values"] == {"SingerId": "2"}
    assert rec["old_values"] == {"Name": "Bo", "Photo": "AGhp"}
    assert rec["types"] == {"SingerId": "INT64", "Name": "STRING", "Photo": "BYTES"}


def test_an_insert_keeps_empty_old_values_and_a_system_transaction_says_so():
    change = stream_change("INSERT", {"SingerId": 1, "Name": "A"}, {}, "NEW_ROW_AND_OLD_VALUES", 0,
                           transaction_tag="", is_system_transaction=True)
    rec = json.loads(line(change))
    assert (rec["old_values"], rec["transaction_tag"], rec["is_system_transaction"]) == ({}, "", True)


def test_a_stream_change_without_its_identity_is_refused():
    change = stream_change("INSERT", {"SingerId": 1}, {}, "OLD_AND_NEW_VALUES", 0, record_sequence=None)
    with pytest.raises(ValueError, match="needs record_sequence and mod_index"):
        line(change)


def test_a_stream_record_needs_a_stream_capture_type():
    with pytest.raises(ValueError, match="change-stream record's value_capture_type"):
        line(stream_change("INSERT", {"SingerId": 1}, {}, None, 0))  # type: ignore[arg-type]


def test_polled_and_history_changes_still_stage_in_their_own_formats():
    polled = Change("Singers", (1,), {"SingerId": 1}, from_nanos(T0), column_types=TYPES)
    history = Change("Singers", (1,), {"SingerId": 1}, from_nanos(T0), mod_type="UPDATE", column_types=TYPES,
                     version_seq=0, value_capture_type="NEW_VALUES")
    assert json.loads(line(polled))["v"] == contract.STAGING_FORMAT
    assert tuple(json.loads(line(history))) == contract.VERSIONS_RECORD_FIELDS


def test_the_sink_stages_stream_changes_as_change_stream_records(tmp_path):
    sink = StagingSink(tmp_path, watcher_id="w", fsync=False)
    changes = [stream_change("INSERT", {"SingerId": 7, "Name": "A"}, {}, "OLD_AND_NEW_VALUES", 0),
               stream_change("UPDATE", {"SingerId": 7, "Name": "B"}, {"Name": "A"}, "OLD_AND_NEW_VALUES", 1)]
    path = sink.write(changes, {}, ["SingerId"])
    assert path is not None
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [(r["v"], r["read_method"], r["mod_type"], r["mod_index"], r["old_values"]) for r in recs] == [
        (3, "change_stream", "INSERT", 0, {}), (3, "change_stream", "UPDATE", 1, {"Name": "A"})]
    assert {r["server_transaction_id"] for r in recs} == {"tx-1"}
