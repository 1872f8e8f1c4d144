"""Old values of updates whose values the entry split finds hard, through the real job.

An update's old values are the previous row's values of the columns both rows hold whose
value changed (watcher.changelog.rules.old_values): taken from each row's JSON text split into its
entries where that split is exact (or by the package's JVM function, or on the driver, both of which split the same way) (here: every update, as both rows hold the same columns; JSON
documents are staged as strings), from maps otherwise. They must be what the rows' own
``new_values`` say, within a run and across runs (the previous row then comes from the current
state).
"""

from __future__ import annotations

import itertools
import json

import pytest

from watcher.changelog import Changelog

TYPES = {"Id": "INT64", "S": "STRING(MAX)", "Tags": "ARRAY<STRING(MAX)>", "Doc": "JSON", "N": "FLOAT64", "B": "BOOL"}
#: Text that looks like JSON structure: separators, quotes, escapes, brackets, non-ASCII, a line break.
HARD = ['a","b', 'x":"y', 'q\\"', "back\\slash", "[1,2]", '{"k":1}', "é ü 日本", "line\nbreak", "", ",", '"', ":"]
DOCS = ['{"a":[1,{"b":"c,d"}]}', '"plain"', "1", '[["x"],"y"]', '{"a":[1,{"b":"c,d"}]}', "null"]
KEYS = 6
VERSIONS = 8


def _row(key: int, version: int) -> dict:
    """Version ``version`` of key ``key``: each version changes a different mix of columns."""
    hard = itertools.cycle(HARD)
    for _ in range(key * 3 + version):
        next(hard)
    return {"Id": key,
            "S": next(hard) if version % 2 == 0 or key % 3 == 0 else "same",
            "Tags": [next(hard), next(hard)] if version % 3 != 1 else ["fixed", 'with","comma'],
            "Doc": DOCS[(key + version // 2) % len(DOCS)],
            "N": float(version // 3) + 0.25,
            "B": (key + version) % 4 == 0}


@pytest.mark.parametrize("engine", ["spark, jvm function", "spark, sql"])
def test_old_values_are_the_changed_columns_of_the_previous_row_whatever_the_values_hold(spark, stager, dirs, monkeypatch,
                                                                                          engine):
    # Spark with the JVM function, where it can be had, or its SQL
    monkeypatch.setenv("SPANNER_WATCHER_JVM_FUNCTIONS", "off" if engine.endswith("sql") else "on")
    for versions in (range(0, 5), range(5, VERSIONS)):  # the second run finds the previous rows in the state
        pairs = [(key, v) for v in versions for key in range(KEYS)]
        stager.stage("Hard", [_row(key, v) for key, v in pairs], types=TYPES, key_columns=["Id"],
                     commits=[1_000 * v + key for key, v in pairs])
        result = Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).engine("spark").run()
        assert result.engine == "spark", result.engine_note
    got = spark.sql("SELECT keys, mod_type, new_values, old_values FROM changelog WHERE table_name = 'Hard' "
                    "ORDER BY keys, commit_timestamp").collect()
    assert len(got) == KEYS * VERSIONS
    updates = 0
    for previous, row in itertools.pairwise(got):
        if row.keys != previous.keys:
            continue
        assert row.mod_type == "UPDATE", row
        before, after = json.loads(previous.new_values), json.loads(row.new_values)
        expected = {c: v for c, v in before.items() if c in after and after[c] != v}
        assert expected, (previous, row)  # every version changes something
        assert json.loads(row.old_values) == expected, (row.keys, previous.new_values, row.new_values)
        updates += 1
    assert updates == KEYS * (VERSIONS - 1)
