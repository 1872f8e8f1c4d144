"""The changelog's rules as data: their SQL rendering (the Spark job's) and their Python rendering
(the driver engine's) give the same answer on the same rows."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random

import pytest

from watcher.changelog.input import staged, staging_reader
from watcher.changelog.rules import classify, dedup, grouping

#: Texts that order as timestamps do, and one beyond ASCII (Spark compares UTF-8 bytes, Python code points).
_TEXTS = (None, "2024-05-01T00:00:00.000000000Z", "2024-05-01T00:00:00.000000001Z", "2024-05-01T00:00:00.é")
_SAMPLES = {"in_mod_type": (None, "INSERT", "UPDATE", "DELETE"), "_is_late": (None, True, False),
            "_soft_deleted": (None, True, False), "_prev_ts": _TEXTS, "_prev_deleted": (None, True, False),
            "_complete_ts": _TEXTS, "commit_timestamp": _TEXTS}
_TYPES = {"in_mod_type": "string", "_is_late": "boolean", "_soft_deleted": "boolean", "_prev_ts": "string",
          "_prev_deleted": "boolean", "_complete_ts": "string", "commit_timestamp": "string"}


def test_the_mod_type_rules_in_sql_and_in_python_classify_every_combination_alike(spark):
    columns = classify.rule_columns()
    assert set(columns) == set(_SAMPLES)  # a rule reading a new column needs samples of it here
    rows = list(itertools.product(*(_SAMPLES[name] for name in columns)))
    frame = spark.createDataFrame(rows, ", ".join(f"{name} {_TYPES[name]}" for name in columns))
    got = frame.selectExpr(*columns, f"{classify.mod_type_sql()} AS by_sql").collect()
    assert len(got) == len(rows)
    by_python = classify.mod_type_function()
    differ = [(r.asDict(), by_python(**{name: r[name] for name in columns})) for r in got
              if r.by_sql != by_python(**{name: r[name] for name in columns})]
    assert differ == []
    assert {r.by_sql for r in got} == set(classify.MOD_TYPES)  # every outcome is reached


def test_the_rules_table_of_the_docs_is_the_rules():
    assert classify.rules_table() in (classify.__doc__ or "")
    assert [rule.result for rule in classify.RULES] == [
        "in_mod_type", "UPSERT", "DELETE", "UPDATE", "INSERT", "INSERT", "UPSERT"]


def test_a_check_of_an_unknown_op_or_not_a_column_names_it():
    with pytest.raises(ValueError, match="'_prev_ts': unknown op 'newer'"):
        classify.Check("_prev_ts", "newer")
    with pytest.raises(ValueError, match="'x; y' is not a column name"):
        classify.Check("commit_timestamp", "after", "x; y")


#: Characters a table name or a key's text may hold: quotes, backslashes, controls, beyond ASCII and the BMP.
_CHARS = "aZ09_ \"'\\\x00\x1f\x7féß€表😀\U0010ffff"


def _text(rng: random.Random, most: int = 8) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randrange(most + 1)))


def _keys(rng: random.Random) -> str:
    parts = {_text(rng, 4) or "Id": rng.choice([None, rng.randrange(-10**20, 10**20), _text(rng), 1.5, True])
             for _ in range(rng.randrange(1, 4))}
    return json.dumps(parts, ensure_ascii=rng.random() < 0.3, separators=(",", ":"))


def _timestamp(rng: random.Random) -> str:
    seconds, fraction = divmod(rng.randrange(0, 253402300800 * 10**9), 10**9)
    return f"{dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


def _change(rng: random.Random) -> tuple:
    version_seq = rng.choice([None, None, 0, 1, -1, 2**63 - 1, -2**63, rng.randrange(-2**63, 2**63)])
    row = [_text(rng), _keys(rng), _timestamp(rng), version_seq]
    if rng.random() < 0.05:  # a null part is left out by both
        row[rng.randrange(3)] = None
    return tuple(row)


def test_the_change_id_in_sql_and_in_python_is_the_same_for_random_changes(spark):
    rng = random.Random(20240501)
    changes = [_change(rng) for _ in range(3000)]
    frame = spark.createDataFrame(changes, "table_name string, keys string, commit_timestamp string, version_seq bigint")
    got = frame.selectExpr("*", f"{dedup.change_id_sql()} AS by_sql").collect()
    assert len(got) == len(changes)
    differ = [(tuple(r)[:4], r.by_sql, dedup.change_id(*tuple(r)[:4])) for r in got
              if r.by_sql != dedup.change_id(*tuple(r)[:4])]
    assert differ == []
    assert len({r.by_sql for r in got}) == len(changes)  # distinct changes, distinct ids


def test_a_change_without_a_version_sequence_keeps_the_id_of_format_one_input():
    assert dedup.change_id("T", '{"Id":"1"}', "2024-05-01T00:00:00.000000000Z") == "e8c5cc5645b7096cb0304acff4f71b0f"
    assert dedup.change_id("T", '{"Id":"1"}', "2024-05-01T00:00:00.000000000Z", 0) != "e8c5cc5645b7096cb0304acff4f71b0f"
    with pytest.raises(ValueError, match="3 values for the 4 parts table_name, keys, commit_timestamp, version_seq"):
        dedup.CHANGE_ID.python(("T", "{}", "x"))


def test_the_transaction_groups_in_sql_and_in_python_are_the_same(spark):
    rng = random.Random(7)
    rows = [(_timestamp(rng), rng.choice([None, _text(rng, 12), str(rng.randrange(10**30))])) for _ in range(500)]
    frame = spark.createDataFrame(rows, "commit_timestamp string, server_transaction_id string")
    got = frame.selectExpr("*", f"{grouping.GROUP_SQL} AS by_commit", f"{grouping.transaction_group_sql()} AS by_sql").collect()
    assert [r.by_commit for r in got] == [grouping.commit_group(r.commit_timestamp) for r in got]
    python = [grouping.TRANSACTION_GROUP.python((r.server_transaction_id,)) or grouping.commit_group(r.commit_timestamp)
              for r in got]
    assert [r.by_sql for r in got] == python
    assert 0 < sum(r.server_transaction_id is None for r in got) < len(got)


def test_a_record_lacking_a_field_is_bad_to_the_job_exactly_where_the_driver_finds_it_lacks_a_required_one(spark):
    names = [f.name for f in staging_reader.read_schema().fields]
    base = dict.fromkeys(names) | {"v": 1, "batch_id": "b", "seq": 0, "table": "T", "key_columns": ["Id"],
                                   "keys": '["1"]', "commit_timestamp": "2024-05-01T00:00:00.000000000Z",
                                   "values": '{"Id":"1"}', "types": '{"Id":"INT64"}'}
    records = [base] + [base | {name: None} for name in names]
    frame = spark.createDataFrame([tuple(r[n] for n in names) for r in records], staging_reader.read_schema())
    got = frame.selectExpr("CAST(NULL AS string) AS _corrupt_line", "*").selectExpr(
        f"{staging_reader.bad_record_sql()} AS bad").collect()
    assert [r.bad for r in got] == [staged.lacks_required(r) for r in records]
    assert sum(r.bad for r in got) == len(staged.REQUIRED)
