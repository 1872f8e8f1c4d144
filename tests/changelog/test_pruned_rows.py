"""Index pruning invents no changes: pruned rows read by reconcile and backfill are unchanged rows.

Rows are watched into the changelog, pruned by ``prune_index`` (timestamp mode: the commit
timestamp set to NULL; processed mode: the Processed flag set, the shard column NULL), then
reconciled or backfilled and the job run again: the changelog gains nothing and the current
state stays as it was, while a pruned row that really changed afterwards is still recorded.

Talks to Spanner only through the official client (runs against the emulator too).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.cloud import spanner

from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import wait_until
from watcher import TableWatcher
from watcher.changelog import Changelog
from watcher.changelog.snapshots.backfill import Backfill
from watcher.changelog.snapshots.reconcile import Reconcile
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.model import MIN_TIMESTAMP
from watcher.schema_tools import ddl
from watcher.schema_tools.ddl import ShardSource
from watcher.schema_tools.pruning import PruneSpec, prune_index
from watcher.staging.sink import StagingSink

pytestmark = pytest.mark.usefixtures("each_engine")

REPO = Path(__file__).resolve().parents[2]
BASE = "CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) " \
       "PRIMARY KEY (Id)"
OLD, NEW = 50, 5  # rows written first (pruned later), and rows written after them (kept in the index)
FAR_FUTURE = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
MODES = {"timestamp": None, "processed": "Processed"}


def _setup(processed: str | None) -> ddl.ShardedPolling:
    return ddl.sharded_polling("Items", [ShardSource("Name", not_null=True)], shards=3, commit_timestamp_column="Ts",
                               processed_column=processed)


def _database(make_database, processed: str | None):
    setup = _setup(processed)
    return make_database([BASE, *setup.statements]), setup


def _write(db, ids, name="n{}"):
    with db.batch() as batch:
        batch.insert_or_update("Items", ("Id", "Name", "Ts"), [(i, name.format(i), spanner.COMMIT_TIMESTAMP) for i in ids])
    return batch.committed


def _dml(db, sql):
    db.run_in_transaction(lambda tx: tx.execute_update(sql))


def _watch(db, setup, dirs, repo, expected):
    """Watch until ``expected`` records are staged; the watcher's checkpoint ends at the newest row."""
    sink = StagingSink(dirs["staging"], fsync=False)
    watcher = TableWatcher(db, "Items", poll_interval=0.05, checkpoints=repo, initial_timestamp=MIN_TIMESTAMP, **setup.watcher_options())
    sink.attach(watcher)
    with watcher:
        wait_until(lambda: sink.records_written >= expected, timeout=30)
    assert sink.records_written == expected


def _job(spark, dirs):
    return Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()


def _changelog(spark):
    rows = spark.sql("SELECT keys, mod_type, read_method, new_values, old_values FROM changelog").collect()
    return sorted((int(json.loads(r.keys)["Id"]), r.mod_type, r.read_method, json.loads(r.new_values),
                   json.loads(r.old_values)) for r in rows)


def _state(spark):
    rows = spark.sql("SELECT keys, new_values, commit_timestamp, change_id FROM current_state").collect()
    return sorted((int(json.loads(r.keys)["Id"]), r.new_values, r.commit_timestamp, r.change_id) for r in rows)


def _shards(job, setup):
    return job.shards(setup.shard_column.name, list(setup.shard_provider.values), per_partition=2)


def _watched_and_pruned(spark, make_database, dirs, mode):
    """55 rows watched and in the changelog, the first 50 of them pruned; returns (db, setup, state)."""
    db, setup = _database(make_database, MODES[mode])
    _write(db, range(OLD))
    _write(db, range(OLD, OLD + NEW))
    repo = InMemoryCommitTimestampRepository()
    _watch(db, setup, dirs, repo, OLD + NEW)
    assert _job(spark, dirs).changes_written == OLD + NEW
    spec = PruneSpec("Items", dt.timedelta(0), commit_timestamp_column="Ts", processed_column=MODES[mode])
    result = prune_index(db, spec, repo, now=FAR_FUTURE)  # the cutoff: the checkpoint, the newest row's commit
    assert result.rows >= OLD  # partitioned DML reports a lower bound
    with db.snapshot() as snap:
        pruned = "Ts IS NULL" if mode == "timestamp" else "Processed AND ShardId IS NULL AND Ts IS NOT NULL"
        assert list(snap.execute_sql(f"SELECT COUNT(*) FROM Items WHERE {pruned}")) == [[OLD]]
    return db, setup, _state(spark)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_reconcile_and_backfill_invent_nothing_for_pruned_rows(spark, make_database, dirs, mode):
    db, setup, state = _watched_and_pruned(spark, make_database, dirs, mode)
    changelog = _changelog(spark)

    # Timestamp mode: the pruned rows are compared by their values; processed mode keeps their commit timestamps.
    pruned = OLD if mode == "timestamp" else 0
    result = _shards(Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]), setup).run()
    assert (result.deletes, result.restaged, result.rows, result.unchanged) == (0, 0, OLD + NEW, pruned)
    assert _job(spark, dirs).changes_written == 0
    assert _changelog(spark) == changelog and _state(spark) == state

    backfill = _shards(Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]), setup)
    done = backfill.run()
    assert (done.rows, done.staged, done.unchanged) == (OLD + NEW, 0, pruned)
    assert _job(spark, dirs).changes_written == 0
    assert _changelog(spark) == changelog and _state(spark) == state


def test_a_pruned_row_changed_afterwards_is_recorded(spark, make_database, dirs):
    db, setup, state = _watched_and_pruned(spark, make_database, dirs, "timestamp")
    # Writes that leave the commit timestamp NULL: the watchers cannot see them, reconcile must.
    _dml(db, "UPDATE Items SET Name = 'changed' WHERE Id = 3")
    with db.batch() as batch:
        batch.delete("Items", spanner.KeySet(keys=[[4]]))
    reconcile = Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"])
    result = _shards(reconcile, setup).run()
    assert (result.deletes, result.restaged) == (1, 1)
    _job(spark, dirs)
    recorded = [c for c in _changelog(spark) if c[2] == "reconcile"]
    assert [(key, mod) for key, mod, *_ in recorded] == [(3, "UPDATE"), (4, "DELETE")]
    assert recorded[0][3]["Name"] == "changed" and recorded[0][3]["Ts"] is None
    old = recorded[0][4]  # the previous values of the changed columns: the name, its shard, the pruned timestamp
    assert old["Name"] == "n3" and set(old) == {"Name", "ShardId", "Ts"} and old["Ts"] is not None
    after = {key: row for key, *row in _state(spark)}
    assert set(after) == {k for k, *_ in state} - {4}
    assert {k: after[k] for k, *_ in state if k not in (3, 4)} == {k: row for k, *row in state if k not in (3, 4)}
    # Reconciled again: the recorded row now matches the state, nothing else is pending.
    again = _shards(Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]), setup).run()
    assert (again.deletes, again.restaged) == (0, 0)

    # A backfill records the same kind of change too (as a backfill row; the job classifies it).
    _dml(db, "UPDATE Items SET Name = 'changed again' WHERE Id = 5")
    _shards(Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]), setup).run()
    assert _job(spark, dirs).changes_written == 1
    backfilled = [c for c in _changelog(spark) if c[2] == "backfill"]
    assert [(key, mod, new["Name"]) for key, mod, _, new, _ in backfilled] == [(5, "UPDATE", "changed again")]


def test_a_processed_row_written_again_is_recorded(spark, make_database, dirs):
    """Processed mode: a write with a new commit timestamp that leaves the flag set is out of the index, not lost."""
    db, setup, state = _watched_and_pruned(spark, make_database, dirs, "processed")
    _write(db, [7], name="changed {}")
    result = _shards(Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]), setup).run()
    assert (result.deletes, result.restaged) == (0, 1)
    _job(spark, dirs)
    recorded = [c for c in _changelog(spark) if c[2] == "reconcile"]
    assert [(key, mod, new["Name"]) for key, mod, _, new, _ in recorded] == [(7, "UPDATE", "changed 7")]


def test_cli_reconcile_run_job_invents_nothing(spark, make_database, dirs):
    db, _, state = _watched_and_pruned(spark, make_database, dirs, "timestamp")
    changelog = _changelog(spark)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    argv = [sys.executable, "-m", "watcher", "reconcile", "--table", "Items", "--staging", dirs["staging"],
            "--warehouse", dirs["warehouse"], "--shard-column", "ShardId", "--shard-values=-2..2", "--run-job", "--json",
            "--project", PROJECT, "--instance", INSTANCE, "--database", db.database_id]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert (result["deletes"], result["restaged"], result["rows"]) == (0, 0, OLD + NEW)
    assert _job(spark, dirs).changes_written == 0  # the command's job runs applied everything: nothing new
    assert _changelog(spark) == changelog and _state(spark) == state
