"""The changelog's rules as data: their SQL rendering (the Spark job's) and their Python rendering
(the driver engine's) give the same answer on the same rows."""

from __future__ import annotations

import itertools

import pytest

from watcher.changelog import classify

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
