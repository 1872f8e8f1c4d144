"""The JVM old-values function (watcher/changelog/spark/jvm) against the SQL it stands in for.

Where a session has the function, updates' old values on the fast path come from it instead
of the entries columns (watcher.changelog.rules.old_values). It must give the same text as that SQL
for every pair of texts, including those the split refuses (then both say "not the fast
path"), and the job must write the same changelog with it and without it. Without a JDK the
job takes the SQL path and says why, once.
"""

from __future__ import annotations

import json
import logging
import os
import random

import pytest

from tests.changelog.support import Stager, ts
from watcher.changelog import Changelog
from watcher.changelog.rules.old_values import (
    FAST_SQL,
    SAME_COLUMNS_SQL,
    column_names_sql,
    entries_ok_sql,
    entries_sql,
    jvm_fast_sql,
    trusted_names_sql,
)
from watcher.changelog.spark.jvm import jar, registry
from watcher.changelog.tables import frames
from watcher.model import Change

needs_jdk = pytest.mark.skipif(
    jar.find_javac() is None and not (jar.cache_dir() / jar.jar_name(jar.source_digest())).is_file(),
    reason="no JDK to build the JVM function (and no jar of these sources built before)")

#: Values that look like JSON structure, escapes, non-ASCII text and line breaks.
HARD = ['a","b', 'x":"y', 'q\\"', "back\\slash", "[1,2]", '{"k":1}', "é ü 日本", "line\nbreak", "", ",", '"', ":",
        "\u2028", "tab\there", "}", "]", "😀", "😀😀x"]


def _value(rng: random.Random):
    kind = rng.randrange(20)
    if kind < 4:
        return rng.choice(HARD)
    if kind < 7:
        return [rng.choice(HARD) for _ in range(rng.randrange(4))]
    if kind < 10:
        return rng.randrange(-5, 5)
    if kind < 12:
        return rng.choice([True, False, None, 1.5, -0.0, 1e300])
    if kind == 12:
        return [{"k": rng.choice(HARD)}]  # braces inside an array: the pattern takes them
    if kind == 13:
        return [[1], "x"]  # a nested array: the pattern refuses it
    if kind == 14:
        return {"nested": rng.choice(HARD)}  # an object value: refused
    return rng.choice(["v", "w", str(rng.randrange(3))])


def _text(row: dict) -> str:
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def _pairs(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """(previous, new) row texts: mostly same columns with some values changed, and every way of
    leaving the fast path (other columns, order, names with escapes, broken or odd text)."""
    rng = random.Random(seed)
    names = ["Id", "S", "T", "a,b", "é", "x:y", "q\\\"", "n", ":a", ":", "a,", "😀"]
    out = []
    for _ in range(count):
        columns = rng.sample(names, rng.randrange(0, 6))
        previous = {c: _value(rng) for c in columns}
        new = {c: (_value(rng) if rng.random() < 0.5 else v) for c, v in previous.items()}
        shape = rng.randrange(12)
        if shape == 0 and new:
            new.pop(rng.choice(list(new)))  # a column dropped
        elif shape == 1:
            new["added"] = _value(rng)
        elif shape == 2:
            new = dict(reversed(list(new.items())))  # other order
        a, b = _text(previous), _text(new)
        damage = rng.randrange(16)
        if damage == 0 and len(b) > 2:
            b = b[:-2] + b[-1]  # a broken text
        elif damage == 1:
            a = a.replace(":", ": ", 1)  # not compact
        elif damage == 2 and len(a) > 2:
            a = a[:-1] + ',"Id":1}' if a != "{}" else '{"Id":1,"Id":1}'  # a repeated entry
        elif damage == 3:
            b = b.replace('\\"', '\\\n', 1)  # a backslash before a line break
        elif damage == 5:
            b = b.replace("😀", "\\😀", 1)  # a backslash before a character outside the BMP
        elif damage == 4:
            a, b = a.replace("{", "{\"z\":\"\\\u2028\",", 1), b.replace("{", "{\"z\":\"\\\u2028\",", 1)
        out.append((a, b))
    out += [('{":a":1}', '{":b":2}'), ('{"a,":1}', '{"a":1,":b":2}'), ('{":\\x":1}', '{":\\x":2}'),
            ("{}", "{}"), ('{"a":1}', '{"a":1}'), ('{"a":1,"a":1,"b":2}', '{"a":2,"a":2,"b":2}'),
            ('{"a":"x\\\\"}', '{"a":"y"}'), ('{"a":[]}', '{"a":[""]}'), ('{"a":tru e}', '{"a":1}'), ("", "{}"),
            ("{", "{"), ('{"a"}', '{"a"}'), ('{"a":}', '{"a":1}'), ('{"a":1,}', '{"a":2,}'), ('{"a":"\\', '{"a":1}')]
    return out


@needs_jdk
def test_the_jvm_function_gives_the_sql_fast_paths_old_values_for_every_pair_of_texts(spark):
    function = registry.old_values_function(spark)
    assert function == registry.OLD_VALUES
    pairs = _pairs(4000)
    rows = spark.createDataFrame(pairs, "_prev_json string, _json string")
    for prefix in ("", "_prev"):
        rows = rows.selectExpr("*", f"{entries_sql(prefix + '_json')} AS {prefix}_entries")
        rows = rows.selectExpr("*", f"{entries_ok_sql(prefix + '_entries', prefix + '_json')} AS {prefix}_entries_ok",
                               f"{trusted_names_sql(column_names_sql(prefix + '_entries'))} AS {prefix}_columns")
    rows = rows.selectExpr("_prev_json", "_json", f"CASE WHEN coalesce({SAME_COLUMNS_SQL}, FALSE) THEN {FAST_SQL} END AS by_sql",
                           f"{jvm_fast_sql(function)} AS by_jvm")
    got = rows.collect()
    assert len(got) == len(pairs)
    differ = [(r._prev_json, r._json, r.by_sql, r.by_jvm) for r in got if r.by_sql != r.by_jvm]
    assert differ == []
    fast = sum(r.by_sql is not None for r in got)
    assert 0.3 * len(got) < fast < 0.85 * len(got)  # both outcomes are well exercised
    assert sum(r.by_sql not in (None, "{}") for r in got) > 0.1 * len(got)


TYPES = {"Id": "INT64", "S": "STRING(MAX)", "Tags": "ARRAY<STRING(MAX)>", "Doc": "JSON", "N": "FLOAT64"}


def _stage_history(stager: Stager, rng: random.Random, first: int, count: int) -> None:
    """Versions of six keys: whole rows and partial ones (NEW_VALUES), a column added and then
    dropped between versions, deletes and re-inserts, values that look like JSON structure."""
    changes = []
    for step in range(first, first + count):
        key = step % 6
        columns = ["Id", "S", "Tags", "Doc"] + (["N"] if 4 <= step // 6 < 8 else [])
        row = {"Id": key, "S": rng.choice(HARD + ["same"] * 4), "Tags": [rng.choice(HARD), "fixed"],
               "Doc": rng.choice(['{"a":[1,{"b":"c,d"}]}', '"plain"', "1"]), "N": float(step % 3)}
        row = {c: row[c] for c in columns}
        capture = None
        if step % 5 == 2:
            row, capture = {"Id": key, "S": rng.choice(HARD)}, "NEW_VALUES"
        mod = "DELETE" if step % 11 == 7 else None
        types = {c: TYPES[c] for c in row}
        changes.append(Change("Docs", (key,), row, ts(1_000 * step + key), None, ts(1_000 * (first + count) + 10),
                              mod_type=mod, column_types=types, value_capture_type=capture))
    for change in changes:
        stager.sink.write([change], change.column_types, ["Id"], mod_types=[change.mod_type])


def _changelog(spark, warehouse: str) -> list[tuple]:
    return sorted(tuple(r) for r in frames.read(spark, warehouse, "changelog").select(
        "change_id", "keys", "mod_type", "commit_timestamp", "new_values", "old_values", "column_types").collect())


@needs_jdk
def test_the_job_writes_the_same_changelog_with_and_without_the_jvm_function(spark, tmp_path, monkeypatch):
    got = {}
    for mode in ("on", "off"):
        monkeypatch.setenv("SPANNER_WATCHER_JVM_FUNCTIONS", mode)
        # "on" takes the function, "off" the SQL path
        assert registry.old_values_function(spark) == (registry.OLD_VALUES if mode == "on" else None)
        rng, warehouse = random.Random(3), str(tmp_path / f"warehouse-{mode}")
        stager = Stager(tmp_path / f"staging-{mode}")
        for first, count in ((0, 40), (40, 50)):  # the second run finds previous rows in the current state
            _stage_history(stager, rng, first, count)
            result = Changelog(spark).staging(str(tmp_path / f"staging-{mode}")).warehouse(warehouse).views(False).run()
            assert result.committed and result.quarantined == []
            assert result.old_values_by == ("jvm" if mode == "on" else "sql")
        got[mode] = _changelog(spark, warehouse)
    assert len(got["on"]) == 90
    assert got["on"] == got["off"]
    old = [json.loads(r[5]) for r in got["on"] if r[2] == "UPDATE"]
    assert sum(bool(o) for o in old) > 20  # updates with old values, of both paths (a column added, dropped)


def test_without_a_jdk_the_job_takes_the_sql_path_and_says_why(spark, tmp_path, monkeypatch, caplog):
    session = spark.newSession()  # no function registered in it yet
    monkeypatch.setenv("SPANNER_WATCHER_JVM_FUNCTIONS", "on")
    monkeypatch.setenv("SPANNER_WATCHER_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                if not os.path.exists(os.path.join(p, "javac"))))
    for name, fresh in (("_warned", set()), ("_failed", set()), ("_build_failure", None)):
        monkeypatch.setattr(registry, name, fresh)  # this process's memory of failures, restored afterwards
    stager = Stager(tmp_path / "staging")
    _stage_history(stager, random.Random(3), 0, 30)
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        for _ in range(2):
            assert registry.old_values_function(session) is None
        result = Changelog(session).staging(str(tmp_path / "staging")).warehouse(str(tmp_path / "w")).views(False).run()
    assert result.committed and result.changes_written == 30 and result.old_values_by == "sql"
    warnings = [r.getMessage() for r in caplog.records if r.name == registry.__name__]
    assert len(warnings) == 1 and "javac was not found" in warnings[0] and "SQL path" in warnings[0]
    assert not session.catalog.functionExists(registry.OLD_VALUES)
    monkeypatch.setenv("SPANNER_WATCHER_JVM_FUNCTIONS", "off")
    reference = str(tmp_path / "w-off")
    Changelog(spark).staging(str(tmp_path / "staging")).warehouse(reference).views(False).run()
    assert _changelog(spark, str(tmp_path / "w")) == _changelog(spark, reference)


def test_a_build_sweeps_only_the_stale_half_written_jars_of_dead_builds(tmp_path):
    stale, fresh, done = (tmp_path / "a.jar.1.partial", tmp_path / "b.jar.2.partial", tmp_path / "c.jar")
    for path in (stale, fresh, done):
        path.write_bytes(b"PK")
    os.utime(stale, (1_000_000, 1_000_000))
    os.utime(done, (1_000_000, 1_000_000))
    assert jar.sweep_partials(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jar.2.partial", "c.jar"]


def test_a_jar_folder_that_others_may_write_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant a jar here, and it would run in the driver and on executors
    monkeypatch.setenv("SPANNER_WATCHER_CACHE", str(shared))
    with pytest.raises(jar.JarUnavailable, match="writable by others"):
        jar.jar_path()
    assert list(shared.iterdir()) == []  # nothing built there either
