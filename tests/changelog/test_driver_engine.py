"""The driver engine (watcher/changelog/engines/driver/engine.py) against the Spark engine it stands in for.

A small run is classified on the driver and written with delta-rs when the engine can be sure of
writing exactly Spark's rows. These tests hold it to that: its JSON texts against Spark's reader,
its old values against the job's SQL fast path, and whole runs (generated input through the real
StagingSink, several runs each) written by both engines into two warehouses and compared row for
row: every Delta table with its schema, the views, the reports; runs the engine declines go to
Spark, also compared.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.changelog.engine_inputs import HARD, report, stage_run, tables_of, views_of
from tests.changelog.support import Stager, ts
from tests.changelog.test_jvm_old_values import _pairs
from watcher.changelog import Changelog
from watcher.changelog.engines.driver.old_values import fast_old_values
from watcher.changelog.input import Ineligible, spark_json, staged, staging_reader
from watcher.changelog.io.arrow_fs import ArrowFS
from watcher.changelog.rules import completeness
from watcher.changelog.rules.old_values import (
    FAST_SQL,
    SAME_COLUMNS_SQL,
    column_names_sql,
    entries_ok_sql,
    entries_sql,
    trusted_names_sql,
)
from watcher.changelog.rules.typed_json import quote_sql, staged_keys_sql
from watcher.changelog.spark.session import temporary_conf
from watcher.errors import ChangelogError, ConfigurationError
from watcher.model import rfc3339_nanos


def test_the_python_fast_path_gives_the_sql_fast_paths_old_values_for_every_pair_of_texts(spark):
    pairs = _pairs(4000, seed=11)
    rows = spark.createDataFrame(pairs, "_prev_json string, _json string")
    for prefix in ("", "_prev"):
        rows = rows.selectExpr("*", f"{entries_sql(prefix + '_json')} AS {prefix}_entries")
        rows = rows.selectExpr("*", f"{entries_ok_sql(prefix + '_entries', prefix + '_json')} AS {prefix}_entries_ok",
                               f"{trusted_names_sql(column_names_sql(prefix + '_entries'))} AS {prefix}_columns")
    got = rows.selectExpr("_prev_json", "_json",
                          f"CASE WHEN coalesce({SAME_COLUMNS_SQL}, FALSE) THEN {FAST_SQL} END AS by_sql").collect()
    assert len(got) == len(pairs)
    differ = [(r._prev_json, r._json, r.by_sql, fast_old_values(r._prev_json, r._json)) for r in got
              if r.by_sql != fast_old_values(r._prev_json, r._json)]
    assert differ == []
    fast = sum(r.by_sql is not None for r in got)
    assert 0.3 * len(got) < fast < 0.85 * len(got)  # both outcomes are well exercised


#: Floats on both sides of the range where Java's and Python's texts agree.
FLOATS = [0.0, -0.0, 1.5, -2.25, 0.001, 0.00099, 1e-3, 9999999.0, 1e7, 123456.789, 0.1, 1 / 3, 2.0 ** 60, 5e-324,
          1.7976931348623157e308, 100.0, 1e22, 12345678.9]


def _json_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12 if depth < 2 else 8)
    if kind < 3:
        return rng.choice(HARD)
    if kind == 3:
        return rng.choice(FLOATS) * rng.choice([1, -1])
    if kind == 4:
        return rng.choice([0, -1, 7, 2**53 + 1, -(2**63), 10**30])
    if kind == 5:
        return rng.choice([True, False, None])
    if kind in (6, 7):
        return "".join(rng.choice(HARD) for _ in range(rng.randrange(3)))
    if kind < 10:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(HARD) + str(n): _json_value(rng, depth + 1) for n in range(rng.randrange(4))}


def _spelled(value, rng: random.Random) -> str:
    """A JSON text of ``value`` as a writer might spell it: escaped or not, with or without spaces."""
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))
    return text.replace("1.5", "1.50").replace("100.0", "1E2") if rng.random() < 0.3 else text


def test_json_texts_are_what_sparks_reader_keeps_wherever_the_engine_takes_them(spark, tmp_path):
    rng = random.Random(5)
    values = [{f"c{n}": _json_value(rng) for n in range(rng.randrange(1, 5))} for _ in range(3000)]
    lines = [f'{{"n":{n},"values":{_spelled(v, rng)}}}' for n, v in enumerate(values)]
    (tmp_path / "lines.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    # Read as the job reads batch files: Spark's JSON reader, the values kept as their text.
    with temporary_conf(spark, staging_reader.READ_SETTINGS):
        got = spark.read.schema("n INT, values STRING").json(str(tmp_path / "lines.jsonl")).orderBy("n").collect()
    assert len(got) == len(lines)
    taken = refused = 0
    for line, row in zip(lines, got, strict=True):
        try:
            parsed = staged.PARSER.decode(line)["values"]
        except ValueError:  # a float the engine does not take: the run would go to Spark
            refused += 1
            continue
        mine = spark_json.fast_copied(parsed)
        assert mine == spark_json.copied(parsed), line
        if mine is None:
            refused += 1
            continue
        taken += 1
        assert mine == row["values"], line
    assert taken > 0.5 * len(lines) and refused > 0.05 * len(lines)


def test_keys_and_quoted_names_are_what_the_jobs_sql_renders(spark):
    rng = random.Random(9)
    kinds = ["INT64", "STRING(MAX)", "BOOL", "FLOAT64", "TIMESTAMP", "BYTES(MAX)", "NUMERIC", "ARRAY<INT64>", "DATE"]
    cases = []
    for _ in range(1500):
        columns = [rng.choice(HARD[:9]) + str(n) for n in range(rng.randrange(1, 4))]
        keys = [rng.choice([None, rng.choice(HARD), "12", True, 1.5, -7, [1, "a"], "NaN", "Infinity"])
                for _ in range(len(columns) - (rng.random() < 0.1))]
        types = {c: rng.choice(kinds) for c in columns if rng.random() < 0.9}
        cases.append((columns, keys, types))
    rows = [(json.dumps(c), json.dumps(k), json.dumps(t)) for c, k, t in cases]
    frame = spark.createDataFrame(rows, "c string, k string, t string").selectExpr(
        "from_json(c, 'array<string>') AS key_columns", "from_json(concat('{\"k\":', k, '}'), 'k STRING').k AS keys",
        "from_json(concat('{\"t\":', t, '}'), 't STRING').t AS types")
    got = frame.selectExpr(f"{staged_keys_sql('key_columns', 'keys', 'types')} AS rendered",
                           f"{quote_sql('key_columns[0]')} AS quoted").collect()
    taken = 0
    for (columns, keys, types), row in zip(cases, got, strict=True):
        assert spark_json.quoted(columns[0]) == row.quoted
        keys_text = spark_json.copied(keys)
        try:
            mine = staged.keys_json(columns, keys, keys_text, types, "test") if keys_text is not None else None
        except Ineligible:
            mine = None
        if mine is not None:
            taken += 1
            assert mine == row.rendered, (columns, keys, types)
    assert taken > 0.5 * len(cases)


def test_a_types_object_reads_as_its_own_text_whatever_was_read_before_it():
    # The parser remembers the texts of types objects (a batch repeats one): never another object's,
    # also where Python's equality would mix them up (1 == True == 1.0) or the names come in another order.
    rng = random.Random(11)
    kinds = ["INT64", "1", 1, True, 1.0, None, ["INT64"], {"n": 1}, "STRING(MAX)", "ß", ""]
    for _ in range(3000):
        names = rng.sample(["Id", "Name", "Ünï", "a\"b"], rng.randrange(1, 4))
        types = {name: rng.choice(kinds) for name in names}
        line = (f'{{"v":1,"batch_id":"b","seq":0,"table":"T","key_columns":["Id"],"keys":["1"],'
                f'"commit_timestamp":"2024-05-01T00:00:00.000000001Z","values":{{"Id":"1"}},'
                f'"types":{json.dumps(types, ensure_ascii=rng.random() < 0.5)}}}')
        try:
            row = staged.parse_line(line, "table=T/b.jsonl", "test")
        except Ineligible:
            assert spark_json.fast_copied(types) is None
            continue
        assert row.types_json == spark_json.fast_copied(types) == spark_json.copied(types), types


def test_staged_lines_read_as_the_jobs_reader_and_normalize_read_them(spark, tmp_path):
    from watcher.changelog.engines.spark.engine import pipeline

    stager = Stager(tmp_path / "staging")
    rng = random.Random(3)
    for n in range(6):
        stage_run(stager, rng, n, tables=("Alpha", "Beta"), odd=n == 5)
    folder = ArrowFS(str(tmp_path / "staging"))
    files = folder.glob("table=*/*.jsonl")
    frame = pipeline.normalize(staging_reader.read_batches(spark, files), {})
    with temporary_conf(spark, staging_reader.READ_SETTINGS):
        spark_rows = {(r.batch, r.seq): r for r in frame.collect()}
    checked = lines = 0
    for entry in files:
        name = staging_reader.batch_name(entry.uri)
        for n, line in enumerate(folder.read_text(entry.uri).split("\n")[:-1]):  # not splitlines: \u2028 is no line end
            lines += 1
            try:
                mine = staged.parse_line(line, name, "test")
            except Ineligible:
                continue
            theirs = spark_rows[(name, n)]
            checked += 1
            assert (mine.table, mine.keys, mine.json, mine.types_json, mine.commit_timestamp, mine.read_timestamp,
                    mine.shard, mine.watcher_id, mine.read_method, mine.in_mod_type, mine.batch_id, mine.seq, mine.v,
                    mine.key_columns) == (
                theirs.table_name, theirs.keys, theirs._json, theirs._types_json, theirs.commit_timestamp,
                theirs.read_timestamp, theirs.shard, theirs.watcher_id, theirs.read_method, theirs.in_mod_type,
                theirs.batch_id, theirs.seq, theirs.v, list(theirs.key_columns))
            assert not theirs._bad
    assert 0.6 * lines < checked < lines  # most lines taken; some refused (floats Java writes otherwise)


# --- whole runs through both engines -------------------------------------------------------------


def _job(spark, tmp_path, warehouse: str, engine: str = "auto") -> Changelog:
    return Changelog(spark).staging(str(tmp_path / "staging")).warehouse(str(tmp_path / warehouse)).engine(engine)


def test_runs_on_the_driver_write_what_spark_writes(spark, tmp_path):
    rng = random.Random(1)
    stager = Stager(tmp_path / "staging")
    engines: dict[str, list[str]] = {"driver": [], "spark": []}
    for run in range(7):
        stage_run(stager, rng, run)
        if run == 3:
            for warehouse in ("on", "off"):  # Alpha complete from a snapshot: first sightings are INSERTs
                completeness.write_marker(ArrowFS(str(tmp_path / warehouse)), "Alpha", rfc3339_nanos(ts(run * 1_000_000 - 1)))
        on = _job(spark, tmp_path, "on").run()
        off = _job(spark, tmp_path, "off", "spark").run()
        assert off.engine == "spark"
        engines[on.engine].append(on.engine_note)
        assert report(on) == report(off), run
        assert tables_of(str(tmp_path / "on")) == tables_of(str(tmp_path / "off")), run
    assert views_of(spark, str(tmp_path / "on")) == views_of(spark, str(tmp_path / "off"))
    assert len(engines["driver"]) >= 2, engines  # both engines were exercised
    assert engines["spark"], engines


def test_a_plain_run_is_the_drivers_and_the_setting_keeps_it_on_spark(spark, tmp_path, monkeypatch):
    rng = random.Random(4)
    stager = Stager(tmp_path / "staging")
    stage_run(stager, rng, 0, quirks=False)
    first = _job(spark, tmp_path, "w").run()
    assert (first.engine, first.old_values_by, first.engine_note) == ("driver", "python", "")
    stage_run(stager, rng, 1, quirks=False)
    monkeypatch.setenv("SPANNER_WATCHER_ENGINE", "spark")
    second = Changelog(spark).staging(str(tmp_path / "staging")).warehouse(str(tmp_path / "w")).run()
    assert second.engine == "spark" and second.changes_written > 0
    monkeypatch.setenv("SPANNER_WATCHER_ENGINE", "fast")
    with pytest.raises(ConfigurationError, match="SPANNER_WATCHER_ENGINE"):
        Changelog(spark)


def test_a_run_the_driver_declines_is_sparks_and_says_why(spark, tmp_path):
    stager = Stager(tmp_path / "staging")
    stage_run(stager, random.Random(6), 0, quirks=False)
    result = _job(spark, tmp_path, "w").soft_delete_column("Alpha", "On").run()
    assert result.engine == "spark"
    assert "driver engine declined: a soft-delete column (Alpha)" in result.engine_note
    stage_run(stager, random.Random(7), 1, quirks=False)
    with pytest.raises(ChangelogError, match="soft-delete column"):
        _job(spark, tmp_path, "w", "driver").soft_delete_column("Alpha", "On").run()


def test_a_driver_run_that_dies_while_writing_is_finished_by_the_next(spark, tmp_path, monkeypatch):
    import deltalake

    rng = random.Random(8)
    stager = Stager(tmp_path / "staging")
    stage_run(stager, rng, 0, quirks=False)
    _job(spark, tmp_path, "off", "spark").run()
    assert _job(spark, tmp_path, "on").run().engine == "driver"
    stage_run(stager, rng, 5, quirks=False)
    real = deltalake.DeltaTable.merge

    def disk_gone(self, *args, **kwargs):  # the state's MERGE fails: the run's changelog part is committed
        raise OSError("disk gone")

    monkeypatch.setattr(deltalake.DeltaTable, "merge", disk_gone)
    with pytest.raises(OSError, match="disk gone"):
        _job(spark, tmp_path, "on").run()
    monkeypatch.setattr(deltalake.DeltaTable, "merge", real)
    again = _job(spark, tmp_path, "on").run()
    _job(spark, tmp_path, "off", "spark").run()
    assert again.committed and again.engine == "driver" and "finished run 2" in again.engine_note
    assert tables_of(str(tmp_path / "on")) == tables_of(str(tmp_path / "off"))


def test_a_run_of_new_keys_appends_the_state_and_a_run_touching_one_merges(spark, tmp_path):
    """With none of a run's keys in the state the driver appends its state rows (no MERGE): every
    table and the state's change data feed are those of Spark's engine, which MERGEs."""
    from deltalake import DeltaTable

    from tests.changelog.support import SINGERS_TYPES, singer

    stager = Stager(tmp_path / "staging")
    operations, feeds = [], {}
    for n, (ids, commits) in enumerate([((1, 2), (10, 20)), ((3, 4), (30, 40)), ((1, 5), (50, 60))]):
        stager.stage("Singers", [singer(i, f"v{n}") for i in ids], types=SINGERS_TYPES, key_columns=["SingerId"],
                     commits=list(commits))
        assert _job(spark, tmp_path, "on", "driver").run().engine == "driver"
        assert _job(spark, tmp_path, "off", "spark").run().engine == "spark"
        operations.append(DeltaTable(str(tmp_path / "on" / "current_state")).history(1)[0]["operation"])
    assert operations == ["WRITE", "WRITE", "MERGE"]
    assert tables_of(str(tmp_path / "on")) == tables_of(str(tmp_path / "off"))
    for side in ("on", "off"):
        feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
                .load(str(tmp_path / side / "current_state")).collect())
        feeds[side] = sorted((r["keys"], r["_change_type"], r["new_values"]) for r in feed)
    assert feeds["on"] == feeds["off"]
    assert [t for k, t, _ in feeds["on"] if k == '{"SingerId":"1"}'] == ["insert", "update_postimage", "update_preimage"]


def _line(**fields) -> str:
    record = {"v": 1, "batch_id": "b1", "seq": 0, "table": "Odd", "key_columns": ["Id"], "keys": ["1"],
              "commit_timestamp": "2024-05-01T00:00:00.000000001Z", "read_timestamp": "2024-05-01T00:00:01.000000000Z",
              "shard": None, "watcher_id": "w", "read_method": "cdc", "mod_type": None,
              "values": {"Id": "1", "N": 1}, "types": {"Id": "INT64", "N": "INT64"}, **fields}
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


ODD_LINES = {
    "an empty read method": _line(read_method=""),  # kept as "" (not "cdc"), as SQL's coalesce keeps it
    "non-ASCII digits in the commit timestamp": _line(commit_timestamp="2024-05-01T00:00:00.\u0661\u0662\u0663456789Z"),
    "non-ASCII digits in the read timestamp": _line(read_timestamp="2024-05-01T00:00:01.\u0660\u0660\u0660000000Z"),
    "a number longer than Spark's reader takes": _line(values={"Id": "1", "N": 10 ** 1200}),
    "an integer of 999 digits": _line(values={"Id": "1", "N": 10 ** 998}),
}


@pytest.mark.parametrize("case", sorted(ODD_LINES))
def test_odd_lines_end_where_spark_puts_them(spark, tmp_path, case):
    """Lines at the edges of what the two JSON readers take: the run's outcome is the same either way."""
    import sys

    sys.set_int_max_str_digits(0)  # the test's own json.dumps of a long integer
    results = {}
    for engine in ("auto", "spark"):  # each its own staging folder: a quarantined batch file is moved
        folder = tmp_path / f"staging-{engine}" / "table=Odd"
        folder.mkdir(parents=True)
        (folder / "b1.jsonl").write_text(ODD_LINES[case] + "\n", encoding="utf-8")
        results[engine] = (Changelog(spark).staging(str(folder.parent)).warehouse(str(tmp_path / engine))
                           .engine(engine).run())
    assert report(results["auto"]) == report(results["spark"])
    assert [q.reason for q in results["auto"].quarantined] == [q.reason for q in results["spark"].quarantined]
    assert tables_of(str(tmp_path / "auto")) == tables_of(str(tmp_path / "spark"))
