"""The changelog against a ground truth.

A seeded random history of inserts, updates, soft deletes and hard deletes over three
tables is written to the local Spanner while a DatabaseWatcher stages what it polls; one
table has rows from before watching and is backfilled first. Then the changelog job,
reconcile of the tables with hard deletes, the job again, and the exports. Everything is
checked against the history the test kept, allowing what polling implies (it sees
rows, not a log): versions overwritten between two polls may coalesce, so every recorded
version must be a real one, in commit order, the last one per key must be the final
state, and every key that ends deleted must end with a DELETE.

Run with unique commit timestamps and with shared ones (the embedded server's switch: several
transactions per commit timestamp, as Spanner allows). Talks to Spanner only through the
official client (runs against the emulator too; the shared run is skipped there).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import threading
import time
from typing import Any

import pytest
from google.cloud import spanner

from tests.conftest import AND_AUTO
from tests.watcher.core_support import wait_until
from watcher import DatabaseWatcher
from watcher.capture.shards import FixedShardProvider
from watcher.changelog import Changelog
from watcher.changelog.exports.bigquery import bigquery_rows, parse_sequence_number
from watcher.changelog.exports.datastream import datastream_events
from watcher.changelog.exports.spanner_table import write_to_database
from watcher.changelog.snapshots.backfill import Backfill
from watcher.changelog.snapshots.reconcile import Reconcile
from watcher.checkpoints import SpannerCommitTimestampRepository
from watcher.codec import decode_value, timestamp_text
from watcher.model import MIN_TIMESTAMP
from watcher.staging.sink import StagingSink

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("soft-delete columns")]

SEED = 20240501
TRANSACTIONS = 70
EVENT_SHARDS = [0, 1, 2]
DDL = [
    """CREATE TABLE Accounts (Id INT64 NOT NULL, Name STRING(MAX), Balance NUMERIC, Deleted BOOL,
       Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)""",
    """CREATE TABLE Orders (OrderId STRING(36) NOT NULL, Line INT64 NOT NULL, Qty INT64, Price FLOAT64,
       Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (OrderId, Line)""",
    """CREATE TABLE Events (Id INT64 NOT NULL, Kind STRING(MAX), Day DATE,
       Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true), ShardId INT64 AS (MOD(Id, 3)) STORED) PRIMARY KEY (Id)""",
]
KEYS = {"Accounts": ("Id",), "Orders": ("OrderId", "Line"), "Events": ("Id",)}
WRITTEN = {"Accounts": ("Id", "Name", "Balance", "Deleted", "Ts"), "Orders": ("OrderId", "Line", "Qty", "Price", "Ts"),
           "Events": ("Id", "Kind", "Day", "Ts")}
TYPES = {
    "Accounts": {"Id": "INT64", "Name": "STRING(MAX)", "Balance": "NUMERIC", "Deleted": "BOOL", "Ts": "TIMESTAMP"},
    "Orders": {"OrderId": "STRING(36)", "Line": "INT64", "Qty": "INT64", "Price": "FLOAT64", "Ts": "TIMESTAMP"},
    "Events": {"Id": "INT64", "Kind": "STRING(MAX)", "Day": "DATE", "Ts": "TIMESTAMP", "ShardId": "INT64"},
}
SOFT_DELETE = {"Accounts": "Deleted"}
HARD_DELETES = ("Orders", "Events")


class Truth:
    """Every version the history wrote: (table, key) -> [(commit text, row or None for a hard delete)]."""

    def __init__(self) -> None:
        self.versions: dict[tuple[str, tuple], list[tuple[str, dict[str, Any] | None]]] = {}

    def record(self, commit: str, writes: list[tuple[str, tuple, dict[str, Any] | None]]) -> None:
        for table, key, row in writes:
            if row is not None:
                row = {**row, "Ts": commit}
                if table == "Events":
                    row["ShardId"] = row["Id"] % 3
            self.versions.setdefault((table, key), []).append((commit, row))

    def live(self, table: str) -> list[tuple]:
        return [k for (t, k), v in self.versions.items() if t == table and v[-1][1] is not None]

    def final(self, table: str, key: tuple) -> dict[str, Any] | None:
        return self.versions[(table, key)][-1][1]


class History:
    """The seeded random writer: one small transaction at a time, sometimes over several tables."""

    def __init__(self, db: Any, truth: Truth, rng: random.Random) -> None:
        self.db, self.truth, self.rng = db, truth, rng
        self.next_id = {"Accounts": 1, "Orders": 1, "Events": 1000}
        self.commits: list[str] = []  # one per transaction

    def _new_row(self, table: str) -> tuple[tuple, dict[str, Any]]:
        n, self.next_id[table] = self.next_id[table], self.next_id[table] + 1
        if table == "Accounts":
            return (n,), {"Id": n, "Name": f"a{n}", "Balance": decimal.Decimal(n) / 4, "Deleted": False}
        if table == "Orders":
            return (f"o-{n // 3}", n % 3), {"OrderId": f"o-{n // 3}", "Line": n % 3, "Qty": 1, "Price": n * 1.25}
        return (n,), {"Id": n, "Kind": "created", "Day": dt.date(2024, 1, 1) + dt.timedelta(days=n % 300)}

    def _changed(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        row = {c: v for c, v in row.items() if c in WRITTEN[table]}
        if table == "Accounts":
            row["Balance"] = row["Balance"] + decimal.Decimal("0.01") * self.rng.randint(1, 99)
            row["Name"] = self.rng.choice(["x", "y", "z"]) + row["Name"][-3:]
            row["Deleted"] = self.rng.random() >= 0.3 if row["Deleted"] else False  # most soft-deleted rows stay so
        elif table == "Orders":
            row["Qty"] = row["Qty"] + self.rng.randint(1, 5)
        else:
            row["Kind"] = self.rng.choice(["updated", "moved", "closed"])
        return row

    def transaction(self) -> None:
        writes: list[tuple[str, tuple, dict[str, Any] | None]] = []
        for table in self.rng.sample(list(KEYS), self.rng.choice([1, 1, 1, 2])):
            live = self.truth.live(table)
            roll = self.rng.random()
            if not live or roll < 0.35:
                key, row = self._new_row(table)
            elif table == "Accounts" and roll < 0.5:
                key = self.rng.choice(live)
                row = {**self._changed(table, self.truth.final(table, key)), "Deleted": True}
            elif table in HARD_DELETES and roll < 0.55:
                key, row = self.rng.choice(live), None
            else:
                key = self.rng.choice(live)
                row = self._changed(table, self.truth.final(table, key))
            writes.append((table, key, row))
        with self.db.batch() as batch:
            for table, key, row in writes:
                if row is None:
                    batch.delete(table, spanner.KeySet(keys=[list(key)]))
                else:
                    columns = WRITTEN[table]
                    batch.insert_or_update(table, columns, [[row.get(c, spanner.COMMIT_TIMESTAMP) if c != "Ts"
                                                            else spanner.COMMIT_TIMESTAMP for c in columns]])
        self.truth.record(timestamp_text(batch.committed), writes)
        self.commits.append(timestamp_text(batch.committed))


def _decoded(table: str, values_json: str) -> dict[str, Any]:
    values = json.loads(values_json)
    return {c: (v if c == "Ts" else decode_value(TYPES[table][c], v)) for c, v in values.items()}


def _key_of(table: str, keys_json: str) -> tuple:
    keys = json.loads(keys_json)
    return tuple(decode_value(TYPES[table][c], keys[c]) for c in KEYS[table])


def _soft_deleted(table: str, row: dict[str, Any] | None) -> bool:
    return row is not None and table in SOFT_DELETE and bool(row.get(SOFT_DELETE[table]))


@AND_AUTO
def test_changelog_state_and_exports_match_the_truth(spark, make_database, tmp_path, commit_timestamps):
    started = time.monotonic()
    db = make_database(DDL)
    staging, warehouse = str(tmp_path / "staging"), str(tmp_path / "warehouse")
    rng = random.Random(SEED)
    truth = Truth()
    history = History(db, truth, rng)

    # Events has rows from before anyone watched: backfilled, and its watchers start at R.
    with db.batch() as batch:
        pre = [history._new_row("Events") for _ in range(12)]
        batch.insert("Events", WRITTEN["Events"], [[*[r[c] for c in WRITTEN["Events"][:-1]], spanner.COMMIT_TIMESTAMP]
                                                   for _, r in pre])
    truth.record(timestamp_text(batch.committed), [("Events", k, r) for k, r in pre])
    checkpoints = SpannerCommitTimestampRepository(db)
    backfill = (Backfill(spark, db).table("Events").staging(staging).warehouse(warehouse)
                .shards("ShardId", EVENT_SHARDS, per_partition=2).checkpoints(checkpoints, [EVENT_SHARDS]).run())
    assert backfill.rows == 12

    sink = StagingSink(staging, fsync=False)
    watcher = DatabaseWatcher(db, include=list(KEYS), checkpoints=checkpoints, poll_interval=0.02,
                              initial_timestamp=MIN_TIMESTAMP, limit=7,
                              shard_provider={"Events": FixedShardProvider("ShardId", EVENT_SHARDS)})
    seen: dict[str, str] = {}
    lock = threading.Lock()

    def note(changes: list) -> None:
        with lock:
            for c in changes:
                seen[c.table] = max(seen.get(c.table, ""), timestamp_text(c.commit_timestamp))

    sink.attach(watcher)
    watcher.add_batch_callback(note)
    with watcher:
        for _ in range(TRANSACTIONS):
            history.transaction()
            time.sleep(rng.choice([0, 0, 0.005, 0.03]))  # some versions coalesce, some do not
        last = {t: max(c for (tt, _), v in truth.versions.items() if tt == t for c, row in v if row is not None)
                for t in KEYS}
        wait_until(lambda: all(seen.get(t, "") >= last[t] for t in KEYS), timeout=30)
    if commit_timestamps == "shared":  # some transactions did share a commit timestamp (a transaction group)
        assert len(set(history.commits)) < len(history.commits)

    def job() -> Any:
        run = Changelog(spark).staging(staging).warehouse(warehouse)
        for table, column in SOFT_DELETE.items():
            run.soft_delete_column(table, column)
        return run.run()

    assert job().quarantined == []
    reconciled = {t: Reconcile(spark, db).table(t).staging(staging).warehouse(warehouse).run() for t in HARD_DELETES}
    job()
    records = spark.table("changelog").select("table_name", "keys").distinct().collect()
    recorded_keys = {(r.table_name, _key_of(r.table_name, r.keys)) for r in records}
    for table, result in reconciled.items():  # every hard delete of a key the changelog had seen live
        hard_deleted = [k for (t, k), v in truth.versions.items() if t == table and v[-1][1] is None
                        and (t, k) in recorded_keys]
        assert result.deletes == len(hard_deleted), table
    assert {t: r.restaged for t, r in reconciled.items()} == {t: 0 for t in HARD_DELETES}  # nothing was missed

    changelog = spark.table("changelog").cache()
    records = changelog.select("table_name", "keys", "mod_type", "new_values", "commit_timestamp", "read_method",
                               "change_id").orderBy("commit_timestamp", "record_sequence").collect()
    assert len({r.change_id for r in records}) == len(records)  # nothing twice
    by_key: dict[tuple[str, tuple], list] = {}
    for r in records:
        by_key.setdefault((r.table_name, _key_of(r.table_name, r.keys)), []).append(r)
    # Every key is in the changelog, unless it was inserted and hard-deleted between two polls.
    assert set(by_key) <= set(truth.versions)
    unseen = set(truth.versions) - set(by_key)
    assert all(truth.versions[k][-1][1] is None for k in unseen), unseen
    assert len(unseen) <= len(truth.versions) // 5

    for (table, key), recorded in by_key.items():
        versions = truth.versions[(table, key)]
        real = {commit: row for commit, row in versions}
        complete_from = backfill.read_timestamp if table == "Events" else None
        previous_deleted = None
        for i, r in enumerate(recorded):
            where = f"{table} {key} record {i} ({r.mod_type} at {r.commit_timestamp}, {r.read_method})"
            if r.read_method == "reconcile" and r.mod_type == "DELETE":
                # Detected at R: the key's last real version before R is a hard delete.
                before = [row for commit, row in versions if commit <= r.commit_timestamp]
                assert before and before[-1] is None, where
                expected = "DELETE"
            else:
                assert r.commit_timestamp in real and real[r.commit_timestamp] is not None, where  # a real version
                row = real[r.commit_timestamp]
                assert _decoded(table, r.new_values) == row, where  # exactly that version
                if _soft_deleted(table, row):
                    expected = "DELETE"
                elif previous_deleted is None:
                    expected = "INSERT" if complete_from and r.commit_timestamp > complete_from else "UPSERT"
                else:
                    expected = "INSERT" if previous_deleted else "UPDATE"
            assert r.mod_type == expected, where
            previous_deleted = r.mod_type == "DELETE"
        final = versions[-1][1]
        last = recorded[-1]
        if final is None or _soft_deleted(table, final):
            assert last.mod_type == "DELETE", f"{table} {key} ends deleted"
        else:
            assert last.mod_type != "DELETE" and _decoded(table, last.new_values) == final, f"{table} {key} final"

    # The current state holds exactly the live rows.
    live = {(t, k): row for (t, k), v in truth.versions.items() for row in [v[-1][1]]
            if row is not None and not _soft_deleted(t, row)}
    state = {(r.table_name, _key_of(r.table_name, r.keys)): _decoded(r.table_name, r.new_values)
             for r in spark.sql("SELECT table_name, keys, new_values FROM current_state").collect()}
    assert state == live

    # BigQuery CDC rows, applied in _CHANGE_SEQUENCE_NUMBER order per key, give the live rows.
    applied: dict[tuple[str, tuple], tuple[tuple, dict | None]] = {}
    for r in bigquery_rows(changelog).collect():
        key, seq = (r.table_name, _key_of(r.table_name, r.keys)), parse_sequence_number(r._CHANGE_SEQUENCE_NUMBER)
        row = json.loads(r.row)
        assert row.pop("_CHANGE_TYPE") == r._CHANGE_TYPE and row.pop("_CHANGE_SEQUENCE_NUMBER")
        if key not in applied or seq > applied[key][0]:
            applied[key] = (seq, None if r._CHANGE_TYPE == "DELETE" else row)
    bq_live = {k: _decoded(k[0], json.dumps(row)) for k, (_, row) in applied.items() if row is not None}
    assert bq_live == live

    # Datastream events: unique uuids, the latest per key (by sort_keys) is the final state.
    latest: dict[tuple[str, tuple], tuple[list, dict]] = {}
    uuids = set()
    for r in datastream_events(changelog).collect():
        event = json.loads(r.event)
        uuids.add(event["uuid"])
        key = (event["object"], _key_of(event["object"], json.dumps({c: event["payload"][c] for c in KEYS[event["object"]]})))
        if key not in latest or event["sort_keys"] > latest[key][0]:
            latest[key] = (event["sort_keys"], event)
    assert len(uuids) == len(records)
    ds_live = {k: _decoded(k[0], json.dumps(e["payload"])) for k, (_, e) in latest.items()
               if not e["source_metadata"]["is_deleted"]}
    assert ds_live == live

    # The changelog table inside Spanner: one row per change, the same history per key, idempotent.
    assert write_to_database(changelog, db, "ChangelogHistory") == len(records)
    assert write_to_database(changelog, db, "ChangelogHistory") == len(records)
    with db.snapshot() as snap:
        exported = list(snap.execute_sql("SELECT TableName, Keys, ChangeId, ModType FROM ChangelogHistory "
                                         "ORDER BY KeyHash, TableName, Keys, CommitTimestamp"))
    assert sorted(r[2] for r in exported) == sorted(r.change_id for r in records)
    per_key: dict[tuple[str, tuple], list[str]] = {}
    for table, keys, _, mod in exported:
        per_key.setdefault((table, _key_of(table, keys)), []).append(mod)
    assert per_key == {k: [r.mod_type for r in v] for k, v in by_key.items()}
    changelog.unpersist()
    assert time.monotonic() - started < 240  # the whole pipeline, kept small
