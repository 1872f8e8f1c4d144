"""The warehouse's Delta tables: a run's commits happen once across crashes, and every engine reads them.

A run killed right after any of its commits (runs, changelog, current_state, watermarks) and
started again leaves each table equal to the ground truth (tests/changelog/delta_run_child.py
writes with delta-rs); Spark's writes and MERGE committed as a run are skipped when repeated;
Spark, delta-rs and DuckDB read the same committed rows, not the files a killed write left.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from watcher.changelog.spark.session import temporary_conf
from watcher.changelog.tables import layout, readers
from watcher.changelog.tables.ledger import Ledger

from . import delta_run_child

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("delta_run_child.py")


def _stage(staging: Path, name: str, changes: list[tuple[str, int, str, int]]) -> list[dict]:
    """A staged batch of ``(table, key, commit timestamp, value)`` changes."""
    rows = [{"table": t, "key": k, "commit": c, "values": {"id": k, "v": v}} for t, k, c, v in changes]
    staging.mkdir(parents=True, exist_ok=True)
    (staging / name).write_text(json.dumps(rows))
    return rows


def _run(warehouse: Path, staging: Path, kill_after: str = "") -> int:
    """A run: in this process, or with ``kill_after`` in a child that SIGKILLs itself."""
    if not kill_after:
        delta_run_child.main(str(warehouse), staging)
        return 0
    argv = [sys.executable, str(CHILD), str(warehouse), str(staging), kill_after]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, -9), done.stderr[-2000:]
    return done.returncode


def _commit(second: int, nanos: int) -> str:
    return f"2024-05-01T00:00:{second:02d}.{nanos:09d}Z"


def _batches(staging: Path) -> list[dict]:
    base = [("Singers", k, _commit(1, 100 + k), k) for k in range(5)] + [("Albums", 1, _commit(1, 100), 7)]
    # two changes of one key at one timestamp's second, nanoseconds apart; a key of the other table with the same id
    later = [("Singers", 1, _commit(2, 1), 10), ("Singers", 1, _commit(2, 2), 11), ("Albums", 1, _commit(3, 0), 8)]
    more = [("Singers", k, _commit(4, 999_999_999), 20 + k) for k in range(3, 7)]
    return _stage(staging, "b1", base) + _stage(staging, "b2", later) + _stage(staging, "b3", more)


def _truth(changes: list[dict]) -> tuple[collections.Counter, dict, dict]:
    ids = collections.Counter((c["table"], c["key"], c["commit"]) for c in changes)
    state, marks = {}, {}
    for c in sorted(changes, key=lambda c: c["commit"]):
        state[(c["table"], c["key"])] = c["values"]["v"]
        marks[c["table"]] = c["commit"]
    return ids, state, marks


def _text(when: dt.datetime, nanos: int) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"


def _tables(warehouse: Path) -> tuple[collections.Counter, dict, dict]:
    changelog = readers.delta_rs_rows(str(warehouse / "changelog"))
    ids = collections.Counter((r["table_name"], json.loads(r["keys"])["id"], _text(r["commit_timestamp"], r["commit_nanos"]))
                              for r in changelog)
    state = {(r["table_name"], json.loads(r["keys"])["id"]): json.loads(r["new_values"])["v"]
             for r in readers.delta_rs_rows(str(warehouse / "current_state"))}
    marks = {r["table_name"]: _text(r["watermark"], r["watermark_nanos"]) for r in readers.delta_rs_rows(str(warehouse / "watermarks"))}
    return ids, state, marks


@pytest.mark.parametrize("kill_after", [spec.name for spec in layout.COMMIT_ORDER])
def test_a_run_killed_after_any_commit_is_finished_once(tmp_path, kill_after):
    warehouse, staging = tmp_path / "warehouse", tmp_path / "staging"
    changes = _batches(staging)
    (staging / "b2").rename(tmp_path / "b2")
    (staging / "b3").rename(tmp_path / "b3")
    assert _run(warehouse, staging) == 0                      # run 1: b1
    (tmp_path / "b2").rename(staging / "b2")
    assert _run(warehouse, staging, kill_after) == -9         # run 2 (b2) killed after one commit
    (tmp_path / "b3").rename(staging / "b3")                  # staged while run 2 was down: not part of it
    assert _run(warehouse, staging) == 0                      # finishes run 2
    assert _run(warehouse, staging) == 0                      # run 3: b3

    assert _tables(warehouse) == _truth(changes)
    runs = sorted((r["run_version"], r["batches"]) for r in readers.delta_rs_rows(str(warehouse / "runs")))
    assert runs == [(1, ["b1"]), (2, ["b2"]), (3, ["b3"])]
    assert Ledger(warehouse).open_run() is None
    assert {spec.name: Ledger(warehouse).held_version(spec.name) for spec in layout.COMMIT_ORDER} == \
        {spec.name: 3 for spec in layout.COMMIT_ORDER}


def test_a_run_is_not_begun_while_one_is_open(tmp_path):
    ledger = Ledger(tmp_path)
    run = ledger.begin(["b1"])
    with pytest.raises(Exception, match=r"run 1 is not complete \(tables left: changelog, current_state, watermarks\)"):
        ledger.begin(["b2"])
    assert ledger.open_run() == run


def _complete_run(ledger: Ledger, batch: str) -> int:
    run = ledger.begin([batch])
    for table in run.pending():
        ledger.commit_empty(run, table)
    return run.version


def test_a_warehouse_put_back_from_a_copy_is_read_as_the_copy_holds_it(tmp_path):
    # One process, as a streaming query or a notebook: its tables are kept open across runs.
    warehouse, backup = tmp_path / "warehouse", tmp_path / "backup"
    ledger = Ledger(warehouse)
    ledger.create_tables()
    assert _complete_run(ledger, "b1") == 1
    shutil.copytree(warehouse, backup)
    assert _complete_run(ledger, "b2") == 2
    # Put back as `cp -a backup/. warehouse/` does after the newer files are removed: each file
    # written over in place, with its inode and modification time as they were.
    for path in sorted(warehouse.rglob("*"), reverse=True):
        if not (backup / path.relative_to(warehouse)).exists():
            path.rmdir() if path.is_dir() else path.unlink()
    shutil.copytree(backup, warehouse, dirs_exist_ok=True)
    again = Ledger(warehouse)
    assert again.open_run() is None
    assert {spec.name: again.held_version(spec.name) for spec in layout.COMMIT_ORDER} == \
        {spec.name: 1 for spec in layout.COMMIT_ORDER}
    assert sorted(again.consumed_batches()) == ["b1"]
    assert _complete_run(again, "b3") == 2


def _spark_rows(spark, run: int, keys: range, value: str):
    return spark.createDataFrame([{"table_name": "Singers", "keys": json.dumps({"id": k}), "new_values": value,
                                   "run_version": run, "commit_nanos": 5} for k in keys]) \
        .selectExpr("table_name", "keys", "new_values", "CAST(run_version AS BIGINT) AS run_version",
                    "CAST(commit_nanos AS INT) AS commit_nanos", "DATE'2024-05-01' AS commit_date")


def test_spark_writes_committed_as_a_run_are_skipped_when_repeated(spark, tmp_path):
    ledger = Ledger(tmp_path)
    ledger.create_tables()
    run = ledger.begin(["b1"])
    target = ledger.uri("changelog")
    columns = ["table_name", "keys", "new_values", "run_version", "commit_nanos"]
    for _ in range(2):  # the second is a crashed run's repeat
        (_spark_rows(spark, run.version, range(3), "a").write.format("delta").mode("append")
         .options(**ledger.writer_options(run)).save(target))
    assert spark.read.format("delta").load(target).select(*columns).count() == 3
    _spark_rows(spark, run.version, range(2), "s").drop("commit_date").write.format("delta").mode("append").save(ledger.uri("current_state"))
    for _ in range(2):
        with temporary_conf(spark, ledger.sql_settings(run)):
            spark.sql(f"MERGE INTO delta.`{ledger.uri('current_state')}` t USING delta.`{target}` s "
                      "ON t.keys = s.keys WHEN MATCHED THEN UPDATE SET new_values = concat(t.new_values, s.new_values) "
                      "WHEN NOT MATCHED THEN INSERT (table_name, keys, new_values, run_version) "
                      "VALUES (s.table_name, s.keys, s.new_values, s.run_version)")
    got = sorted((r.keys, r.new_values) for r in spark.read.format("delta").load(ledger.uri("current_state")).collect())
    assert got == [('{"id": 0}', "sa"), ('{"id": 1}', "sa"), ('{"id": 2}', "a")]
    assert ledger.run(run.version).pending() == ("watermarks",)
    assert spark.conf.get("spark.databricks.delta.write.txnVersion", None) is None  # the settings were put back


def _long_key(n: int) -> str:
    # Longer than the statistics Delta keeps of a text (they are cut, and the cut bound moved on),
    # with a shared prefix and a letter outside ASCII.
    return json.dumps({"name": "é" + "x" * 80, "id": n}, ensure_ascii=False)


@pytest.mark.parametrize("writer", ["delta-rs", "spark"])
def test_keys_looked_up_by_file_statistics_find_what_a_scan_finds(spark, tmp_path, writer):
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    folder = str(tmp_path / "state")
    batches = [[("a b/c", _long_key(n), f"v{n}") for n in range(first, first + 5)] for first in (0, 5, 10)]
    batches.append([("Albums", _long_key(n), f"album {n}") for n in range(3)])  # the same keys in another partition
    batches.append([("a b/c", json.dumps({"id": n}), f"short {n}") for n in (20, 21, 22)])  # kept whole in the statistics
    for rows in batches:
        table = pa.table({"table_name": [r[0] for r in rows], "keys": [r[1] for r in rows], "new_values": [r[2] for r in rows]})
        if writer == "spark":
            spark.createDataFrame(table.to_pylist()).write.format("delta").mode("append").partitionBy("table_name").save(folder)
        else:
            write_deltalake(folder, table, partition_by=["table_name"], mode="append")
    # An update rewrites a file: the rows of the file it replaced are not read.
    spark.sql(f"UPDATE delta.`{folder}` SET new_values = 'changed' WHERE keys = '{_long_key(6)}'")
    found = DeltaTable(folder)
    every = readers.arrow_table(found).to_pylist()
    assert len(found.file_uris()) >= 4
    for wanted in ([_long_key(0)], [_long_key(4), _long_key(5)], [_long_key(6)], [_long_key(14), _long_key(99)],
                   [_long_key(99), _long_key(-1), _long_key(0)[:-3]], [_long_key(n) for n in range(15)],
                   [json.dumps({"id": 20})], [json.dumps({"id": 22})], [json.dumps({"id": 2})]):
        for tables in (["a b/c"], ["a b/c", "Albums"]):
            got = readers.rows_holding(found, "keys", wanted, partitions={"table_name": tables},
                                       columns=["keys", "new_values", "table_name"]).to_pylist()
            expected = [{"keys": r["keys"], "new_values": r["new_values"], "table_name": r["table_name"]}
                        for r in every if r["keys"] in wanted and r["table_name"] in tables]
            assert sorted(got, key=str) == sorted(expected, key=str), (wanted, tables)
    assert readers.rows_holding(found, "keys", [_long_key(6)], partitions={"table_name": ["a b/c"]},
                                columns=["new_values"]).to_pylist() == [{"new_values": "changed"}]


def test_every_engine_reads_the_committed_rows_only(spark, tmp_path):
    warehouse, staging = tmp_path / "warehouse", tmp_path / "staging"
    changes = _batches(staging)
    assert _run(warehouse, staging, "changelog") == -9 and _run(warehouse, staging) == 0
    changelog = warehouse / "changelog"
    # a killed write leaves data files no commit names: copies of a committed file, as one would be
    committed = next(changelog.rglob("*.parquet"))
    shutil.copy(committed, committed.with_name("part-00000-killed-writer.parquet"))
    expected = sorted((c["table"], json.dumps({"id": c["key"]})) for c in changes)

    by_spark = spark.read.format("delta").load(str(changelog))
    by_sql = spark.sql(f"SELECT table_name, keys FROM delta.`{changelog}`")
    by_duckdb = readers.duckdb_connection().execute(f"SELECT table_name, keys FROM delta_scan('{changelog}')").fetchall()
    assert sorted((r.table_name, r["keys"]) for r in by_spark.collect()) == expected
    assert sorted((r.table_name, r["keys"]) for r in by_sql.collect()) == expected
    assert sorted(by_duckdb) == expected
    assert sorted((r["table_name"], r["keys"]) for r in readers.delta_rs_rows(str(changelog))) == expected
    assert spark.read.parquet(str(changelog)).count() > len(expected)  # what a reader of the bare files would see

    types = dict(by_spark.dtypes)
    assert (types["commit_timestamp"], types["commit_nanos"], types["commit_date"]) == ("timestamp", "int", "date")
    nanos = readers.duckdb_connection().execute(
        f"SELECT max(commit_nanos) FROM delta_scan('{changelog}') WHERE table_name = 'Singers'").fetchone()[0]
    assert nanos == 999_999_999
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
            .load(str(warehouse / "current_state")).where("_change_type = 'insert'"))
    assert feed.count() == len({(c["table"], c["key"]) for c in changes})
