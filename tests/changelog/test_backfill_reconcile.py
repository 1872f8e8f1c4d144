"""Backfill, reconcile and the Spanner-table export on the local Spanner with Spark.

Talks to Spanner only through the official client (runs against the emulator too).
"""

from __future__ import annotations

import argparse
import json

import pytest
from google.cloud import spanner

from tests.watcher.core_support import wait_until
from watcher import TableWatcher
from watcher.capture.shards import FixedShardProvider
from watcher.changelog import Changelog, read_markers
from watcher.changelog.exports import FORMATS
from watcher.changelog.exports.spanner_table import create_table_ddl, parse_target, write_to_database
from watcher.changelog.io.fs import HadoopFS
from watcher.changelog.snapshots import spanner_source
from watcher.changelog.snapshots.backfill import Backfill
from watcher.changelog.snapshots.reconcile import Reconcile
from watcher.changelog.snapshots.spanner_source import hash_partitions, shard_partitions
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.cli.commands.snapshot_options import shard_values
from watcher.cli.main import build_parser
from watcher.codec import timestamp_text
from watcher.errors import ConfigurationError
from watcher.model import TableId, from_nanos, timestamp_nanos
from watcher.staging.sink import StagingSink

DDL = ["""CREATE TABLE Items (
    Id INT64 NOT NULL, Name STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    ShardId INT64 AS (MOD(Id, 3)) STORED) PRIMARY KEY (Id)"""]
SHARDS = [0, 1]  # shard 2 and NULL-free rows of other values land in the "rest" partition


def _write(db, rows, columns=("Id", "Name", "Ts")):
    with db.batch() as batch:
        batch.insert_or_update("Items", columns, rows)
    return batch.committed


def _changes(spark):
    rows = spark.sql("SELECT keys, mod_type, read_method, commit_timestamp, old_values FROM changelog "
                     "ORDER BY commit_timestamp, keys").collect()
    return [(int(json.loads(r.keys)["Id"]), r.mod_type, r.read_method, r.commit_timestamp, json.loads(r.old_values))
            for r in rows]


def _job(spark, dirs):
    return Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()


# --- no Spark, no Spanner ----------------------------------------------------------------------------------

def test_partitions_cover_the_whole_table():
    parts = shard_partitions("ShardId", [-1, 0, 1, 2, 3], per_partition=2)
    assert [p.params["shards"] for p in parts] == [[-1, 0], [1, 2], [3], [-1, 0, 1, 2, 3]]
    assert "IS NULL OR" in parts[-1].where and "NOT IN UNNEST" in parts[-1].where
    assert len(hash_partitions("Id", "INT64", 3)) == 3
    assert [p.where for p in hash_partitions("At", "TIMESTAMP", 3)] == [""]  # no hash: one partition
    with pytest.raises(ConfigurationError):
        shard_partitions("ShardId", [])


def test_command_options_and_registration():
    assert shard_values("-1..1") == [-1, 0, 1] and shard_values("[\"a\"]") == ["a"]
    with pytest.raises(argparse.ArgumentTypeError):
        shard_values("3..1")
    parser = build_parser()
    args = parser.parse_args(["backfill", "--table", "T", "--staging", "s", "--warehouse", "w",
                              "--shard-column", "ShardId", "--shard-values", "0..2", "--checkpoint-shard", "[0, 1, 2]"])
    assert args.shard_values == [0, 1, 2] and args.checkpoint_shard == [[0, 1, 2]]
    assert parser.parse_args(["reconcile", "--table", "T", "--staging", "s", "--warehouse", "w"]).command == "reconcile"
    assert "spanner" in FORMATS
    assert parse_target("projects/p/instances/i/databases/d") == ("p", "i", "d", "SpannerWatcherChangelog")
    ddl = create_table_ddl("H")
    assert ddl.endswith("PRIMARY KEY (`KeyHash`, `TableName`, `Keys`, `CommitTimestamp`)")
    with pytest.raises(ConfigurationError):
        parse_target("not/a/database")


# --- with Spark and the local Spanner ----------------------------------------------------------------------

@pytest.mark.usefixtures("each_engine")
def test_backfill_then_watch_classifies_exactly(spark, make_database, dirs):
    db = make_database(DDL)
    _write(db, [(i, f"n{i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 8)])
    _write(db, [(50, "no commit timestamp")], columns=("Id", "Name"))
    repo = InMemoryCommitTimestampRepository()
    result = (Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"])
              .shards("ShardId", SHARDS, per_partition=1).checkpoints(repo, [SHARDS]).run())
    assert result.rows == 8 and result.partitions == 3
    assert result.read_at_timestamp == 3  # every partition read at R
    assert read_markers(HadoopFS(spark, dirs["warehouse"])) == {"Items": result.read_timestamp}
    stored = repo.get(TableId("Items"), SHARDS)
    assert timestamp_text(from_nanos(timestamp_nanos(stored.commit_timestamp))) == result.read_timestamp
    assert result.checkpoints_set == [SHARDS]

    # The watcher continues at R: it stages only what comes after the snapshot.
    sink = StagingSink(dirs["staging"], fsync=False)
    watcher = TableWatcher(db, "Items", shard_provider=FixedShardProvider("ShardId", SHARDS), poll_interval=0.05,
                           checkpoints=repo)
    sink.attach(watcher)
    with watcher:
        _write(db, [(9, "new", spanner.COMMIT_TIMESTAMP), (3, "n3 again", spanner.COMMIT_TIMESTAMP)])
        wait_until(lambda: sink.records_written >= 2, timeout=20)
    assert sink.records_written == 2
    _job(spark, dirs)
    by_key: dict[int, list] = {}
    for key, mod, method, _, _ in _changes(spark):
        by_key.setdefault(key, []).append((mod, method))
    assert by_key[9] == [("INSERT", "cdc")]  # first seen after R: the snapshot proves it is new
    assert by_key[3] == [("UPSERT", "backfill"), ("UPDATE", "cdc")]
    assert by_key[50] == [("UPSERT", "backfill")]
    commits = {k: c for k, _, _, c, _ in _changes(spark)}
    assert commits[50] == result.read_timestamp  # no commit timestamp: recorded at R
    assert commits[9] > result.read_timestamp


@pytest.mark.usefixtures("each_engine")
@pytest.mark.parametrize("mode", ["auto", "shared"])  # old modes: still accepted, and read at R like "timestamp"
def test_backfill_reads_at_r_even_after_later_commits(spark, make_database, dirs, monkeypatch, mode):
    db = make_database(DDL)
    _write(db, [(i, f"n{i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 5)])
    original = spanner_source.snapshot_lines

    def commit_then_read(spark_, plan, parts):  # writers commit after R, before the tasks read
        _write(db, [(100, "after R", spanner.COMMIT_TIMESTAMP), (1, "changed after R", spanner.COMMIT_TIMESTAMP)])
        with db.batch() as batch:
            batch.delete("Items", spanner.KeySet(keys=[[2]]))
        return original(spark_, plan, parts)

    monkeypatch.setattr(spanner_source, "snapshot_lines", commit_then_read)
    result = (Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]).partitions(2)
              .read_mode(mode).run())
    # Every partition read at R, on the embedded server as on Spanner: nothing committed after R is in the snapshot.
    assert (result.rows, result.read_at_timestamp) == (4, 2)
    _job(spark, dirs)
    assert sorted(k for k, *_ in _changes(spark)) == [1, 2, 3, 4]
    names = {int(json.loads(r.keys)["Id"]): json.loads(r.new_values)["Name"]
             for r in spark.sql("SELECT keys, new_values FROM changelog").collect()}
    assert names == {1: "n1", 2: "n2", 3: "n3", 4: "n4"}  # row 1 as it was at R, row 2 not yet deleted


@pytest.mark.usefixtures("each_engine")
def test_reconcile_records_hard_deletes_and_exports_to_spanner(spark, make_database, dirs):
    db = make_database(DDL)
    _write(db, [(i, f"n{i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 6)])
    Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    _job(spark, dirs)
    with db.batch() as batch:
        batch.delete("Items", spanner.KeySet(keys=[[2], [4]]))
    _write(db, [(7, "unseen by any watcher", spanner.COMMIT_TIMESTAMP)])
    result = Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    assert (result.deletes, result.restaged, result.rows) == (2, 1, 4)
    assert not result.marker_written  # the backfill's marker stays
    _job(spark, dirs)
    recorded = [c for c in _changes(spark) if c[2] == "reconcile"]
    assert [(k, m) for k, m, *_ in recorded] == [(7, "INSERT"), (2, "DELETE"), (4, "DELETE")]
    for key, mod, _, commit, old in recorded:
        if mod == "DELETE":
            assert commit == result.read_timestamp and old["Name"] == f"n{key}"  # detected at R; the row it removed
    state = sorted(int(json.loads(r.keys)["Id"]) for r in spark.sql("SELECT keys FROM current_state").collect())
    assert state == [1, 3, 5, 7]
    again = Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    assert (again.deletes, again.restaged) == (0, 0)

    changelog = spark.table("changelog")
    total = changelog.count()
    assert write_to_database(changelog, db, "ItemsHistory", batch_rows=3) == total
    assert write_to_database(changelog, db, "ItemsHistory") == total  # again: same keys, rewritten
    with db.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT Keys, ModType, ChangeType, ReadMethod, CommitTimestamp, ExportedAt "
                                     "FROM ItemsHistory WHERE TableName = 'Items' ORDER BY Keys, CommitTimestamp"))
    assert len(rows) == total
    history_of_2 = [(r[1], r[2], r[3]) for r in rows if json.loads(r[0]) == {"Id": "2"}]
    assert history_of_2 == [("UPSERT", "UPSERT", "backfill"), ("DELETE", "DELETE", "reconcile")]
    assert all(r[5] is not None for r in rows)


PG_DDL = ['CREATE TABLE "Items" ("Code" varchar NOT NULL, "Name" varchar, "Ts" spanner.commit_timestamp, '
          '"ShardId" bigint GENERATED ALWAYS AS (mod(spanner.farm_fingerprint("Code"), 3)) STORED, PRIMARY KEY ("Code"))']


@pytest.mark.usefixtures("each_engine")
def test_backfill_and_reconcile_read_a_postgresql_database(spark, make_database, dirs):
    """The snapshot's partitions are written in the database's dialect: shard values with = ANY($1), a string
    key hashed with spanner.farm_fingerprint, names double-quoted."""
    from google.cloud.spanner_admin_database_v1 import DatabaseDialect

    db = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    db.update_ddl(PG_DDL).result(120)

    def write(codes, name="n"):
        with db.batch() as batch:
            batch.insert_or_update("Items", ("Code", "Name", "Ts"), [(c, f"{name}{c}", spanner.COMMIT_TIMESTAMP) for c in codes])

    def recorded(method):
        rows = spark.sql(f"SELECT keys, mod_type FROM changelog WHERE read_method = '{method}' "
                         "ORDER BY commit_timestamp, keys").collect()
        return [(json.loads(r.keys)["Code"], r.mod_type) for r in rows]

    write(["c1", "c2", "c3", "c4", "c5"])
    backfill = (Backfill(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"])
                .shards("ShardId", [0, 1], per_partition=1).run())
    assert (backfill.rows, backfill.partitions, backfill.read_at_timestamp) == (5, 3, 3)
    _job(spark, dirs)
    assert sorted(recorded("backfill")) == [(f"c{i}", "UPSERT") for i in range(1, 6)]

    with db.batch() as batch:
        batch.delete("Items", spanner.KeySet(keys=[["c2"], ["c4"]]))
    write(["c7"], name="unseen")
    reconcile = Reconcile(spark, db).table("Items").staging(dirs["staging"]).warehouse(dirs["warehouse"]).partitions(2).run()
    assert (reconcile.deletes, reconcile.restaged, reconcile.rows, reconcile.partitions) == (2, 1, 4, 2)
    _job(spark, dirs)
    assert recorded("reconcile") == [("c7", "INSERT"), ("c2", "DELETE"), ("c4", "DELETE")]
