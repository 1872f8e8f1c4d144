"""Change streams into the changelog: every version, the stream's mod types, old values and transactions.

The embedded server's change stream is read through the official client with the test-only
reader (tests/change_stream_reader.py), its mods become Change objects as a change-stream
watcher emits them, and the real StagingSink stages them. A ground truth kept while writing
(every committed version of every key, with its commit timestamp) is what the changelog and
the current state must equal.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.cloud import spanner

from tests.change_stream_reader import as_changes, read_stream
from tests.conftest import AND_AUTO
from tests.watcher.core_support import wait_until
from watcher import ChangeStreamWatcher, InMemoryProgressStore, TableWatcher
from watcher.changelog import Changelog
from watcher.changelog.exports import bigquery, datastream
from watcher.changelog.exports.bigquery import parse_sequence_number
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.codec import encode_value, timestamp_text
from watcher.model import MIN_TIMESTAMP, Change, from_nanos
from watcher.staging.sink import StagingSink

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("change-stream records")]

TABLE = ("CREATE TABLE {table} (SingerId INT64 NOT NULL, Name STRING(MAX), Score FLOAT64, Photo BYTES(MAX), "
         "LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (SingerId)")
TYPES = {"SingerId": "INT64", "Name": "STRING", "Score": "FLOAT64", "Photo": "BYTES", "LastUpdated": "TIMESTAMP"}
CAPTURE_TYPES = ["OLD_AND_NEW_VALUES", "NEW_VALUES", "NEW_ROW", "NEW_ROW_AND_OLD_VALUES"]
WITH_OLD_VALUES = {"OLD_AND_NEW_VALUES", "NEW_ROW_AND_OLD_VALUES"}


@dataclass
class Version:
    """One committed version of a key: what the changelog must hold for it."""

    key: int
    commit: str
    mod_type: str
    row: dict[str, Any] | None  # None: deleted
    old: dict[str, Any]  # the previous values of the columns written (a DELETE: of every non-key column)


@dataclass
class Truth:
    """The table as written, version by version (values as the client returns them)."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    versions: list[Version] = field(default_factory=list)
    transactions: list[list[int]] = field(default_factory=list)  # the keys each transaction wrote
    table: str = "Singers"

    def write(self, db, inserts: Sequence[dict] = (), updates: Sequence[dict] = (), deletes: Sequence[int] = ()) -> str:
        """One transaction (a batch of mutations); returns its commit timestamp as text."""
        with db.batch() as b:
            for row in inserts:
                b.insert(self.table, (*row, "LastUpdated"), [(*map(_wire, row.values()), spanner.COMMIT_TIMESTAMP)])
            for row in updates:
                b.update(self.table, (*row, "LastUpdated"), [(*map(_wire, row.values()), spanner.COMMIT_TIMESTAMP)])
            if deletes:
                b.delete(self.table, spanner.KeySet(keys=[[k] for k in deletes]))
        commit = b.committed
        for row in inserts:
            self._apply(row["SingerId"], commit, "INSERT", {**row, "LastUpdated": commit})
        for row in updates:
            self._apply(row["SingerId"], commit, "UPDATE", {**self.rows[row["SingerId"]], **row, "LastUpdated": commit},
                        written=[*row, "LastUpdated"])
        for key in deletes:
            self._apply(key, commit, "DELETE", None)
        self.transactions.append([row["SingerId"] for row in [*inserts, *updates]] + list(deletes))
        return timestamp_text(commit)

    def _apply(self, key: int, commit: Any, mod_type: str, row: dict | None, written: Sequence[str] = ()) -> None:
        before = self.rows.get(key, {})
        if mod_type == "DELETE":
            old = {c: v for c, v in before.items() if c != "SingerId"}
        else:
            old = {c: before[c] for c in written if c != "SingerId" and c in before}
        self.versions.append(Version(key, timestamp_text(commit), mod_type, row, old))
        if row is None:
            del self.rows[key]
        else:
            self.rows[key] = row


def _wire(value: Any) -> Any:
    return base64.b64encode(value) if isinstance(value, bytes) else value


def typed(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the changelog's typed JSON holds it."""
    return {c: encode_value(TYPES[c], v) for c, v in row.items()}


def workload(db, table: str = "Singers") -> Truth:
    """Inserts, updates of one and of several columns, a two-key transaction, a delete, a key that comes back."""
    t = Truth(table=table)
    t.write(db, inserts=[{"SingerId": 1, "Name": "Ann", "Score": 1.5, "Photo": b"\x00a"},
                         {"SingerId": 2, "Name": "Bo", "Score": None, "Photo": None},
                         {"SingerId": 3, "Name": "Cy", "Score": 3.0, "Photo": None}])
    t.write(db, updates=[{"SingerId": 1, "Name": "Anna"}])
    t.write(db, updates=[{"SingerId": 1, "Score": 2.5}, {"SingerId": 2, "Name": "Bob", "Photo": b"x"}])
    t.write(db, deletes=[3])
    t.write(db, inserts=[{"SingerId": 3, "Name": "Cyd", "Score": None, "Photo": None}])
    t.write(db, updates=[{"SingerId": 1, "Name": "Annie"}], deletes=[2])
    return t


def stream_db(make_database, capture: str = "OLD_AND_NEW_VALUES"):
    return make_database([TABLE.format(table="Singers"),
                          f"CREATE CHANGE STREAM S FOR Singers OPTIONS (value_capture_type = '{capture}')"])


def now(db) -> Any:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def stream_changes(db, start) -> list[Change]:
    return as_changes(read_stream(db, "S", start, now(db)))


def stage(sink: StagingSink, changes: list[Change], batch: int = 3) -> None:
    """Stage through the sink's public batch API, a few changes per batch (as a watcher would)."""
    for i in range(0, len(changes), batch):
        sink.write(changes[i:i + batch], {}, ["SingerId"])


def run(spark, dirs):
    return Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()


def changelog_rows(spark, table: str = "Singers") -> list[Any]:
    return spark.sql(f"SELECT * FROM changelog WHERE table_name = '{table}' "
                     "ORDER BY commit_timestamp, record_sequence").collect()


def table_now(db, table: str = "Singers") -> dict[str, dict[str, Any]]:
    with db.snapshot() as snap:
        rows = snap.execute_sql(f"SELECT SingerId, Name, Score, Photo, LastUpdated FROM {table}")
        # The client hands BYTES back as their base64 text.
        return {str(r[0]): typed(dict(zip(TYPES, r, strict=True)) | {"Photo": r[3] and base64.b64decode(r[3])})
                for r in rows}


def current_state(spark, table: str = "Singers") -> dict[str, dict[str, Any]]:
    return {json.loads(r.keys)["SingerId"]: json.loads(r.new_values)
            for r in spark.sql(f"SELECT keys, new_values FROM current_state WHERE table_name = '{table}'").collect()}


def assert_versions(rows: list[Any], truth: Truth, capture: str) -> None:
    """Every version once, at its commit timestamp, with the stream's mod_type, the whole new row and its old values."""
    got = sorted(rows, key=lambda r: (int(json.loads(r.keys)["SingerId"]), r.commit_timestamp))
    want = sorted(truth.versions, key=lambda v: (v.key, v.commit))
    assert [(json.loads(r.keys)["SingerId"], r.commit_timestamp, r.mod_type) for r in got] == \
        [(str(v.key), v.commit, v.mod_type) for v in want]
    for r, v in zip(got, want, strict=True):
        new = json.loads(r.new_values)
        assert new == (typed(v.row) if v.row is not None else {"SingerId": str(v.key)}), (v, capture)
        if capture in WITH_OLD_VALUES:
            assert json.loads(r.old_values) == typed(v.old), (v, capture)
        else:  # the stream carried none: the changelog says so instead of guessing
            assert r.old_values is None, (v, capture)
        assert (r.value_capture_type, r.read_method) == (capture, "change_stream")
        assert r.server_transaction_id and r.transaction_tag == "" and r.is_system_transaction is False


@pytest.mark.parametrize("capture", CAPTURE_TYPES)
def test_each_value_capture_type_ends_in_a_correct_changelog(spark, make_database, dirs, capture):
    db = stream_db(make_database, capture)
    start = now(db)
    truth = workload(db)
    changes = stream_changes(db, start)
    stage(StagingSink(dirs["staging"], fsync=False), changes)

    result = run(spark, dirs)
    assert result.quarantined == [] and result.duplicates_dropped == 0
    assert result.changes_written == len(truth.versions) == len(changes)
    assert_versions(changelog_rows(spark), truth, capture)
    assert current_state(spark) == table_now(db)  # partial rows filled: the state is whole


def test_a_batch_staged_twice_and_again_later_yields_each_change_once(spark, make_database, dirs):
    db = stream_db(make_database)
    start = now(db)
    truth = workload(db)
    changes = stream_changes(db, start)
    sink = StagingSink(dirs["staging"], fsync=False)
    stage(sink, changes)
    stage(sink, changes, batch=2)  # a crash before the checkpoint: every change staged again, cut differently

    first = run(spark, dirs)
    assert (first.changes_written, first.duplicates_dropped) == (len(changes), len(changes))
    stage(sink, changes[-4:])  # and again after the run: known changes, not written twice
    second = run(spark, dirs)
    assert (second.changes_written, second.duplicates_dropped) == (0, 4)
    assert_versions(changelog_rows(spark), truth, "OLD_AND_NEW_VALUES")
    assert current_state(spark) == table_now(db)


def test_transaction_groups_are_the_streams_transactions(spark, make_database, dirs):
    db = stream_db(make_database, "NEW_ROW")
    start = now(db)
    truth = workload(db)
    records = read_stream(db, "S", start, now(db))
    stage(StagingSink(dirs["staging"], fsync=False), as_changes(records), batch=1)
    run(spark, dirs)
    rows = changelog_rows(spark)
    groups: dict[str, list[Any]] = {}
    for r in rows:
        groups.setdefault(r.transaction_group, []).append(r)
    # One group per transaction, holding exactly the keys it wrote, numbered from 0 in the stream's order.
    assert sorted(sorted(int(json.loads(r.keys)["SingerId"]) for r in g) for g in groups.values()) == \
        sorted(sorted(keys) for keys in truth.transactions)
    by_tx = {r["server_transaction_id"]: r for r in records}
    for group in groups.values():
        assert len({r.server_transaction_id for r in group}) == 1 and len({r.commit_timestamp for r in group}) == 1
        assert sorted(r.record_sequence for r in group) == list(range(len(group)))
        assert {r.number_of_records_in_group for r in group} == {len(group)}
        tx = by_tx[group[0].server_transaction_id]
        assert {(r.number_of_records_in_transaction, r.number_of_partitions_in_transaction) for r in group} == \
            {(tx["number_of_records_in_transaction"], tx["number_of_partitions_in_transaction"])}
    two_keys = next(g for g in groups.values() if len(g) == 2 and {r.mod_type for r in g} == {"UPDATE"})
    ordered = sorted(two_keys, key=lambda r: r.record_sequence)
    mods = sorted((c for c in as_changes(records) if c.server_transaction_id == ordered[0].server_transaction_id),
                  key=lambda c: (c.record_sequence, c.mod_index))
    assert [json.loads(r.keys)["SingerId"] for r in ordered] == [str(c.keys[0]) for c in mods]  # the stream's order


def stream_watcher(db, stream: str, sink: StagingSink, start: Any, end: Any = None) -> ChangeStreamWatcher:
    """A real ChangeStreamWatcher from ``start`` (to ``end``, or until stopped) staging into ``sink``, started."""
    w = ChangeStreamWatcher(db, stream, heartbeat=1, start=start, end=end, progress=InMemoryProgressStore(),
                            max_batch_rows=2)
    sink.attach(w)
    return w.start()


def test_each_value_capture_type_through_a_real_watcher_ends_in_a_correct_changelog(spark, make_database, dirs):
    """The four value capture types at once: a table and a stream each, each stream's watcher staging into one folder."""
    tables = {capture: f"Singers{i}" for i, capture in enumerate(CAPTURE_TYPES)}
    db = make_database([TABLE.format(table=t) for t in tables.values()] + [
        f"CREATE CHANGE STREAM S{t} FOR {t} OPTIONS (value_capture_type = '{c}')" for c, t in tables.items()])
    start = now(db)
    truths = {c: workload(db, t) for c, t in tables.items()}
    end = now(db)
    for t in tables.values():
        w = stream_watcher(db, f"S{t}", StagingSink(dirs["staging"], watcher_id=f"stream-{t}", fsync=False), start, end)
        assert w.wait(60) and w.failure is None

    result = run(spark, dirs)
    assert result.quarantined == [] and result.duplicates_dropped == 0
    assert result.changes_written == sum(len(t.versions) for t in truths.values())
    for capture, table in tables.items():
        assert_versions(changelog_rows(spark, table), truths[capture], capture)
        assert current_state(spark, table) == table_now(db, table)  # NEW_VALUES' partial rows filled


def poll_and_stream(db, dirs, truth_steps) -> tuple[StagingSink, Truth]:
    """Poll the table while writing (each version waited for, so polling sees it), into the staging folder."""
    sink = StagingSink(dirs["staging"], watcher_id="poller", fsync=False)
    watcher = TableWatcher(db, "Singers", poll_interval=0.02, initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(watcher)
    truth = Truth()
    with watcher:
        for step in truth_steps:
            step(truth)
            live = sum(1 for v in truth.versions if v.mod_type != "DELETE")
            wait_until(lambda n=live: sink.records_written >= n, timeout=30)
    assert watcher.failure is None
    return sink, truth


STEPS = [
    lambda db: lambda t: t.write(db, inserts=[{"SingerId": 1, "Name": "Ann", "Score": 1.5, "Photo": None},
                                             {"SingerId": 2, "Name": "Bo", "Score": None, "Photo": b"b"}]),
    lambda db: lambda t: t.write(db, updates=[{"SingerId": 1, "Name": "Anna"}]),
    lambda db: lambda t: t.write(db, updates=[{"SingerId": 2, "Score": 9.0}], deletes=[1]),
    lambda db: lambda t: t.write(db, inserts=[{"SingerId": 1, "Name": "Back", "Score": None, "Photo": None}]),
]


def test_both_modes_on_one_table_yield_one_changelog_without_duplicates(spark, make_database, dirs):
    db = stream_db(make_database)
    start = now(db)
    poller, truth = poll_and_stream(db, dirs, [step(db) for step in STEPS])
    changes = stream_changes(db, start)
    stage(StagingSink(dirs["staging"], watcher_id="streamer", fsync=False), changes)

    result = run(spark, dirs)
    assert result.changes_written == len(truth.versions)
    assert result.duplicates_dropped == poller.records_written  # every polled version is the stream's too
    rows = changelog_rows(spark)
    assert_versions(rows, truth, "OLD_AND_NEW_VALUES")  # the stream's record of each version won
    assert {r.watcher_id for r in rows} == {"streamer"}
    assert current_state(spark) == table_now(db)


@AND_AUTO
def test_the_streams_row_replaces_a_version_polled_in_an_earlier_run(spark, make_database, dirs):
    """Run 1 writes the polled versions; run 2 brings the stream's rows of the same versions (the older
    ones late, the newest repeating the current state): each replaces the polled row, none is added beside it."""
    db = stream_db(make_database, "NEW_ROW_AND_OLD_VALUES")
    start = now(db)
    poller, truth = poll_and_stream(db, dirs, [step(db) for step in STEPS])
    first = run(spark, dirs)
    assert first.changes_written == poller.records_written < len(truth.versions)   # polling cannot see deletes
    assert {r.read_method for r in changelog_rows(spark)} == {"cdc"}
    streamer = StagingSink(dirs["staging"], watcher_id="streamer", fsync=False)
    changes = stream_changes(db, start)
    stage(streamer, changes)

    second = run(spark, dirs)
    rows = changelog_rows(spark)
    assert_versions(rows, truth, "NEW_ROW_AND_OLD_VALUES")   # each version once: the stream's mod_type, old values
    assert {r.watcher_id for r in rows} == {"streamer"}
    assert (second.changes_written, second.replaced, second.duplicates_dropped) == (
        len(truth.versions), poller.records_written, 0)
    assert current_state(spark) == table_now(db)

    stage(streamer, changes)                                # the stream's batches again (a crash before its progress)
    third = run(spark, dirs)
    assert (third.changes_written, third.replaced, third.duplicates_dropped) == (0, 0, len(changes))
    assert [(r.change_id, r.run_version) for r in changelog_rows(spark)] == [(r.change_id, r.run_version) for r in rows]


def test_a_row_deletion_policys_delete_is_a_system_transaction_in_the_changelog(spark, make_database, dirs, local_server):
    db = make_database([TABLE.format(table="Singers") + ", ROW DELETION POLICY (OLDER_THAN(LastUpdated, INTERVAL 1 DAY))",
                        "CREATE CHANGE STREAM S FOR Singers"])
    start = now(db)
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "Name", "LastUpdated"),
                                             [(1, "old", start - dt.timedelta(days=2)), (2, "new", start)]))
    local_server.service.sweep_expired_rows()
    stage(StagingSink(dirs["staging"], fsync=False), stream_changes(db, start))
    run(spark, dirs)
    rows = sorted(changelog_rows(spark), key=lambda r: (r.commit_timestamp, json.loads(r.keys)["SingerId"]))
    assert [(json.loads(r.keys)["SingerId"], r.mod_type, r.is_system_transaction, r.transaction_tag) for r in rows] == [
        ("1", "INSERT", False, ""), ("2", "INSERT", False, ""), ("1", "DELETE", True, "RowDeletionPolicy")]


def test_exports_carry_the_streams_transaction(spark, make_database, dirs):
    db = stream_db(make_database)
    start = now(db)
    truth = workload(db)
    records = read_stream(db, "S", start, now(db))
    stage(StagingSink(dirs["staging"], fsync=False), as_changes(records))
    run(spark, dirs)
    changelog = spark.table("changelog")

    events = [json.loads(r.event) for r in datastream.datastream_events(changelog).collect()]
    assert len(events) == len(truth.versions)
    tx = {r["server_transaction_id"]: r for r in records}
    versions = {(str(v.key), v.commit): v.mod_type for v in truth.versions}
    for e in events:
        meta = e["source_metadata"]
        assert e["read_method"] == "spanner-change_stream" and meta["tx_id"] in tx
        record = tx[meta["tx_id"]]
        assert (meta["number_of_records_in_transaction"], meta["number_of_partitions_in_transaction"],
                meta["transaction_tag"], meta["is_system_transaction"]) == \
            (record["number_of_records_in_transaction"], record["number_of_partitions_in_transaction"], "", False)
        mod_type = versions[(e["payload"]["SingerId"], e["source_timestamp"])]
        assert meta["change_type"] == mod_type and meta["is_deleted"] == (mod_type == "DELETE")

    rows = bigquery.bigquery_rows(changelog).collect()
    assert sorted(r._CHANGE_TYPE for r in rows) == sorted(
        "DELETE" if v.mod_type == "DELETE" else "UPSERT" for v in truth.versions)
    for key in {v.key for v in truth.versions}:  # BigQuery applies each key's versions in the stream's order
        mine = [r for r in rows if json.loads(r.keys)["SingerId"] == str(key)]
        by_sequence = sorted(mine, key=lambda r: parse_sequence_number(r._CHANGE_SEQUENCE_NUMBER))
        assert [r.commit_timestamp for r in by_sequence] == sorted(r.commit_timestamp for r in mine)
    deleted = next(r for r in rows if r._CHANGE_TYPE == "DELETE")
    assert set(json.loads(deleted.row)) == {"SingerId", "_CHANGE_TYPE", "_CHANGE_SEQUENCE_NUMBER"}


def test_a_stream_record_without_its_identity_is_quarantined(spark, dirs):
    sink = StagingSink(dirs["staging"], fsync=False)
    good = Change("Singers", (1,), {"SingerId": 1, "Name": "A"}, from_nanos(1_714_557_600_000_000_000), mod_type="INSERT",
                  column_types=TYPES, value_capture_type="NEW_ROW", server_transaction_id="tx", record_sequence="0",
                  mod_index=0)
    path = sink.write([good], {}, ["SingerId"])
    assert path is not None
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["server_transaction_id"]  # a writer that lost it: the change could not be told from a repeat
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = run(spark, dirs)
    assert [q.reason for q in result.quarantined] == ["1 of 1 lines are not valid staging records "
                                                       "(corrupt or truncated JSON, or missing fields)"]
    assert result.changes_written == 0


def test_both_real_watchers_at_once_on_one_table_yield_one_changelog_without_duplicates(spark, make_database, dirs):
    """A polling TableWatcher and a ChangeStreamWatcher run together into one staging folder while the
    workload writes (polling coalesces what it misses); two job runs, each after both caught up."""
    db = stream_db(make_database)
    start = now(db)
    poller = TableWatcher(db, "Singers", poll_interval=0.05, initial_timestamp=MIN_TIMESTAMP,
                          checkpoints=InMemoryCommitTimestampRepository())
    polled = StagingSink(dirs["staging"], watcher_id="poller", fsync=False)
    polled.attach(poller)
    poller.start()
    streamer = stream_watcher(db, "S", StagingSink(dirs["staging"], watcher_id="streamer", fsync=False), start)
    try:
        results = []
        for half in range(2):
            if half == 0:
                truth = workload(db)
            else:  # more versions of the same keys: partial rows whose previous whole row is in the state
                truth.write(db, updates=[{"SingerId": 1, "Name": "Al", "Score": 7.0}], deletes=[3])
                truth.write(db, inserts=[{"SingerId": 2, "Name": "Bea", "Score": None, "Photo": b"y"}])
                truth.write(db, updates=[{"SingerId": 2, "Photo": None}])
            last = now(db)
            wait_until(lambda t=last: streamer.watermark() >= t and poller.stats()["watermark"] is not None
                       and poller.stats()["watermark"] >= t, timeout=60, interval=0.05)
            assert poller.failure is None and streamer.failure is None
            results.append(run(spark, dirs))
    finally:
        poller.stop()
        streamer.stop()
    rows = changelog_rows(spark)
    assert sum(r.changes_written for r in results) == len(truth.versions)
    assert sum(r.duplicates_dropped for r in results) == polled.records_written  # each polled version: the stream's
    assert_versions(rows, truth, "OLD_AND_NEW_VALUES")  # each version once, the stream's record of it
    assert {r.watcher_id for r in rows} == {"streamer"}
    assert current_state(spark) == table_now(db)  # the second run's partial rows filled from the first's state
    state = spark.sql("SELECT new_values, column_types FROM current_state WHERE table_name = 'Singers'").collect()
    assert all(set(json.loads(r.new_values)) == set(r.column_types) for r in state)  # a type for every value


def test_stream_batches_move_each_tables_watermark_to_where_its_changelog_is_complete(spark, make_database, dirs):
    """A stream on two tables, read by a real watcher: after a run, each table's watermark is past every write
    the stream's heartbeats covered, and the changelog holds every version committed up to it."""
    db = make_database([TABLE.format(table="Singers"), TABLE.format(table="Others"),
                        "CREATE CHANGE STREAM S FOR Singers, Others"])
    sink = StagingSink(dirs["staging"], watcher_id="streamer", fsync=False)
    w = stream_watcher(db, "S", sink, now(db))
    try:
        truths = {t: workload(db, t) for t in ("Singers", "Others")}
        covered = max(v.commit for t in truths.values() for v in t.versions)
        time.sleep(2.5)                                       # every partition's heartbeat passes those writes
        for t in truths.values():                            # one more version each: batches after the heartbeats
            t.write(db, updates=[{"SingerId": 1, "Name": "Last"}])
        total = sum(len(t.versions) for t in truths.values())
        wait_until(lambda: sink.records_written >= total, timeout=30)
    finally:
        w.stop()
    assert w.failure is None

    result = run(spark, dirs)
    marks = {r.table_name: r.watermark for r in spark.sql("SELECT table_name, watermark FROM watermarks").collect()}
    assert set(marks) == {"Singers", "Others"} and result.watermarks == marks
    for table, truth in truths.items():
        assert marks[table] >= covered, (table, marks, covered)
        logged = {(json.loads(r.keys)["SingerId"], r.commit_timestamp) for r in changelog_rows(spark, table)}
        assert {(str(v.key), v.commit) for v in truth.versions if v.commit <= marks[table]} <= logged
