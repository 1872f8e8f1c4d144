"""The ``spanner_watcher`` Structured Streaming source and its changelog writer, end to end.

Writers commit rows through the official client while a streaming query runs; the changelog
must then hold exactly the row versions written (each once), also across a SIGKILL of the
query's process in the middle of a micro-batch and a restart from its checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from watcher.changelog import register_views, streaming
from watcher.changelog.streaming.options import StreamOptions
from watcher.codec import timestamp_text
from watcher.errors import ConfigurationError

DDL = ["""CREATE TABLE Events (
    Id INT64 NOT NULL, Payload STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    ShardId INT64 AS (MOD(Id, 3)) STORED) PRIMARY KEY (Id)"""]
#: Small enough that micro-batches cut through the large groups of rows sharing one commit timestamp
#: (FIRST_GROUP rows: a third per shard), large enough for few micro-batches on a loaded machine.
OPTIONS = {"shard_column": "ShardId", "shards": "[0, 1, 2]", "limit": "40", "shards_per_partition": "2"}
FIRST_GROUP = 150
DRIVER = Path(__file__).with_name("streaming_driver.py")
WAIT = 300.0  # seconds: Spark on a loaded 2-core machine is slow to start


def _path(db) -> str:
    return db.name  # projects/<p>/instances/<i>/databases/<d>


class Writers:
    """Commits groups of new rows (one commit timestamp per group) and remembers every version written."""

    def __init__(self, db) -> None:
        self.db = db
        self.written: dict[tuple[int, str], str] = {}  # (Id, commit timestamp) -> Payload
        self._next = 0

    def insert(self, count: int) -> None:
        ids = list(range(self._next, self._next + count))
        self._next += count
        self._commit([(i, f"p{i}") for i in ids])

    def update(self, ids: list[int]) -> None:
        self._commit([(i, f"u{i}") for i in ids])

    def _commit(self, rows: list[tuple[int, str]]) -> None:
        from google.cloud import spanner

        with self.db.batch() as batch:
            batch.insert_or_update("Events", ("Id", "Payload", "Ts"), [(i, p, spanner.COMMIT_TIMESTAMP) for i, p in rows])
        ts = timestamp_text(batch.committed)
        for i, payload in rows:
            self.written[(i, ts)] = payload

    def run(self, groups: int, pause: float = 0.05) -> None:
        for n in range(groups):
            self.insert(1 + (n * 7) % 15)  # 1..15 rows per commit timestamp
            time.sleep(pause)


def _changelog(spark, warehouse) -> list[tuple[int, str, str, str, dict]]:
    register_views(spark, str(warehouse))
    rows = spark.sql("SELECT keys, commit_timestamp, mod_type, new_values, old_values FROM changelog").collect()
    return [(int(json.loads(r.keys)["Id"]), r.commit_timestamp, r.mod_type, json.loads(r.new_values)["Payload"],
             json.loads(r.old_values)) for r in rows]


def _wait_for(predicate, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


# --- no Spark ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    ({"table": "T"}, "option database is missing"),
    ({"database": "projects/p/instances/i/databases/d"}, "option table"),
    ({"database": "projects/p/x", "table": "T"}, "option database must be projects/"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "shards": "[1]"}, "shard_column and shards"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "shard_column": "S", "shards": "1"},
     "JSON list"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "limit": "0"}, "option limit"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "start": "later"}, "start must be"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(ConfigurationError, match=message):
        StreamOptions.parse(options, environ={})


def test_tables_and_emulator_host_are_read_from_the_options():
    o = StreamOptions.parse({"project": "p", "instance": "i", "database_id": "d", "tables": "A, B",
                             "Emulator_Host": "127.0.0.1:1"}, environ={"SPANNER_EMULATOR_HOST": "ignored:2"})
    assert (o.location.project, o.location.database, o.location.emulator_host, o.tables) == ("p", "d", "127.0.0.1:1", ("A", "B"))
    assert StreamOptions.parse({"database": "projects/p/instances/i/databases/d", "tables": "*"}, environ={}).tables == ()


# --- Spark and Spanner -------------------------------------------------------------------------------------

def test_changelog_equals_what_the_writers_committed(spark, make_database, tmp_path):
    db = make_database(DDL)
    writers = Writers(db)
    writers.insert(FIRST_GROUP)  # before the query starts: one group larger than the limit
    streaming.register(spark)
    reader = spark.readStream.format("spanner_watcher").option("database", _path(db)).option("table", "Events")
    for name, value in OPTIONS.items():
        reader = reader.option(name, value)
    writer = streaming.changelog_writer(str(tmp_path / "warehouse"))
    query = (reader.load().writeStream.foreachBatch(writer).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        thread = threading.Thread(target=writers.run, args=(25,))
        thread.start()
        thread.join()
        _wait_for(lambda: writer.stats()["changes_written"] >= len(writers.written) or not query.isActive,
                  "the inserts to reach the changelog")
        assert query.exception() is None
        # Every row seen: update some once; their new versions must come as updates with the old values.
        updated = [0, 5, 13]
        writers.update(updated)
        _wait_for(lambda: writer.stats()["changes_written"] >= len(writers.written) or not query.isActive,
                  "the updates to reach the changelog")
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    rows = _changelog(spark, tmp_path / "warehouse")
    assert sorted((i, ts) for i, ts, *_ in rows) == sorted(writers.written)  # each version once, none missing
    assert all(writers.written[(i, ts)] == payload for i, ts, _, payload, _ in rows)
    updates = {i: old for i, _, mod, _, old in rows if mod == "UPDATE"}
    assert updates == {i: {"Payload": f"p{i}", "Ts": updates[i]["Ts"]} for i in updated}
    first = writer.batches()[0]
    assert first.records == 3 * 40, "the first micro-batch takes `limit` rows of each shard's group of 50"
    stats = writer.stats()
    assert stats["changes_written"] == len(writers.written) and stats["freshness_rows"] == len(writers.written)
    assert 0 < stats["freshness"]["p50"] <= stats["freshness"]["p99"] <= stats["freshness"]["p100"] < WAIT
    progress = writer.progress(query)
    assert progress["freshness"] == stats["freshness"] and "numInputRows" in progress


def _start_driver(db, tmp_path: Path) -> subprocess.Popen:
    args = [sys.executable, str(DRIVER), "--database", _path(db), "--table", "Events",
            "--warehouse", str(tmp_path / "warehouse"), "--checkpoint", str(tmp_path / "checkpoint"),
            "--stop-file", str(tmp_path / "stop"), *[f"--option={k}={v}" for k, v in OPTIONS.items()]]
    log = open(tmp_path / "driver.log", "ab")  # noqa: SIM115 - the child writes it until it ends
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True)


def _mid_batch(warehouse: Path) -> bool:
    """A changelog run has claimed its version but not committed it (the writer is inside a micro-batch)."""
    attempts = {p.name for p in (warehouse / "_state" / "attempts").glob("*")}
    committed = {p.name[:-5] for p in (warehouse / "_state" / "manifest").glob("*.json")}
    return bool(committed) and bool(attempts - committed)


def test_query_killed_mid_batch_resumes_from_its_checkpoint(spark, make_database, tmp_path):
    db = make_database(DDL)
    writers = Writers(db)
    warehouse = tmp_path / "warehouse"
    driver = _start_driver(db, tmp_path)
    try:
        writers.insert(FIRST_GROUP)
        _wait_for(lambda: (warehouse / "_state" / "manifest").exists() or driver.poll() is not None,
                  "the first micro-batch")
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        thread = threading.Thread(target=writers.run, args=(40, 0.1))
        thread.start()
        _wait_for(lambda: _mid_batch(warehouse) or driver.poll() is not None, "a micro-batch in progress")
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
        thread.join()
        writers.insert(5)  # committed while no query runs
        driver = _start_driver(db, tmp_path)
        (tmp_path / "stop").touch()
        assert driver.wait(WAIT) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    rows = _changelog(spark, warehouse)
    keys = [(i, ts) for i, ts, *_ in rows]
    assert len(keys) == len(set(keys)), "a change was written twice"
    assert sorted(keys) == sorted(writers.written), "a change was lost"
