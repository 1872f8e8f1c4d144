"""ChangeStreamWatcher end to end: the official client against the shared server (embedded, or
SPANNER_EMULATOR_HOST); tests that force partition churn need the embedded server."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import os
import threading
import time
from collections import Counter, defaultdict

import pytest
from google.cloud import spanner
from google.cloud.spanner_v1.data_types import JsonObject

from watcher import (
    CallbackError,
    ChangeStreamNotFoundError,
    ChangeStreamRetentionError,
    ChangeStreamWatcher,
    ConfigurationError,
    InMemoryProgressStore,
    State,
)
from watcher.staging.sink import StagingSink

from .core_support import Collector, wait_until

# Read at import (collection), before the shared fixtures point the variable at their own server.
_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")
TABLES = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX), LastName STRING(MAX), Score FLOAT64, "
    "Photo BYTES(MAX), Born DATE, Seen TIMESTAMP, Money NUMERIC, Info JSON, Tags ARRAY<STRING(MAX)>, "
    "Nums ARRAY<INT64>) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]
HEARTBEAT = dt.timedelta(seconds=1)
SEEN = dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.UTC)


def now(db):
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def ident(change):
    return (change.server_transaction_id, change.record_sequence, change.mod_index)


def read_range(db, start, end, stream="S", **kwargs):
    """Every change in [start, end]: a watcher that ends by itself at ``end``."""
    w = ChangeStreamWatcher(db, stream, heartbeat=HEARTBEAT, start=start, end=end,
                            progress=kwargs.pop("progress", InMemoryProgressStore()), **kwargs)
    got = Collector()
    w.add_callback(got)
    w.start()
    assert w.wait(30), "the watcher did not reach its end"
    assert w.failure is None and w.state == State.STOPPED
    return got.changes


#: The stream every churn test reads, in each partition mode (the watcher reads both formats).
STREAMS = {"IMMUTABLE_KEY_RANGE": "CREATE CHANGE STREAM S FOR ALL",
           "MUTABLE_KEY_RANGE": "CREATE CHANGE STREAM S FOR ALL OPTIONS (partition_mode = 'MUTABLE_KEY_RANGE')"}


@pytest.fixture(params=list(STREAMS))
def stream_ddl(request):
    """``CREATE CHANGE STREAM S FOR ALL`` in the default partition mode, then in MUTABLE_KEY_RANGE."""
    return STREAMS[request.param]


def write_all_types(db):
    db.run_in_transaction(lambda t: t.insert(
        "Singers", ("SingerId", "FirstName", "LastName", "Score", "Photo", "Born", "Seen", "Money", "Info", "Tags", "Nums"),
        [(2**60 + 1, "Ann", "Lee", float("nan"), base64.b64encode(b"\x00\xff"), dt.date(1990, 2, 28), SEEN,
          decimal.Decimal("12345678901234567890.123456789"), JsonObject({"k": [1, "x"]}), ["a", None], [2**62, -1]),
         (2, "Bo", "Ng", None, None, None, None, None, None, None, None)]))


def test_inserts_updates_and_deletes_arrive_typed_like_the_client_reads_them(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = now(db)
    write_all_types(db)
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "FirstName", "Score"), [(2, "Bob", 1.5)]),
                          transaction_tag="rename")
    db.run_in_transaction(lambda t: t.execute_update("DELETE FROM Singers WHERE SingerId = 2"))
    changes = read_range(db, start, now(db))
    assert sorted((c.mod_type, c.keys) for c in changes[:2]) == [("INSERT", (2,)), ("INSERT", (2**60 + 1,))]
    assert [(c.mod_type, c.keys) for c in changes[2:]] == [("UPDATE", (2,)), ("DELETE", (2,))]
    ann = next(c.row for c in changes if c.keys == (2**60 + 1,))
    with db.snapshot() as snap:
        read = dict(zip(ann, list(snap.execute_sql(f"SELECT {', '.join(ann)} FROM Singers WHERE SingerId = {2**60 + 1}"))[0],
                        strict=True))
    read["Photo"] = base64.b64decode(read["Photo"])  # the client hands BYTES back as base64; watchers give the bytes
    assert math.isnan(ann["Score"]) and math.isnan(read["Score"])
    assert {k: v for k, v in ann.items() if k != "Score"} == {k: v for k, v in read.items() if k != "Score"}
    assert {k: type(v) for k, v in ann.items()} == {k: type(v) for k, v in read.items()}
    assert ann["Photo"] == b"\x00\xff" and ann["Info"] == {"k": [1, "x"]} and ann["Nums"] == [2**62, -1]
    assert changes[0].column_types["Tags"] == "ARRAY<STRING>" and changes[0].column_types["Money"] == "NUMERIC"
    update, delete = changes[2], changes[3]
    assert update.row == {"SingerId": 2, "FirstName": "Bob", "Score": 1.5}
    assert update.old_values == {"FirstName": "Bo", "Score": None}
    assert update.transaction_tag == "rename" and changes[0].transaction_tag == ""
    assert delete.row == {"SingerId": 2} and delete.old_values["LastName"] == "Ng"
    assert all(c.value_capture_type == "OLD_AND_NEW_VALUES" and c.is_system_transaction is False for c in changes)
    assert changes[0].server_transaction_id == changes[1].server_transaction_id
    assert changes[0].number_of_records_in_transaction == len({c.record_sequence for c in changes[:2]})
    assert len({ident(c) for c in changes}) == 4
    assert all(c.partition_token for c in changes)
    assert all(c.read_timestamp is not None and c.read_timestamp >= c.commit_timestamp for c in changes)


@pytest.mark.parametrize("capture, update_row, update_old, delete_old", [
    ("OLD_AND_NEW_VALUES", {"SingerId": 2, "FirstName": "Bob"}, {"FirstName": "Bo"}, {"FirstName": "Bob", "LastName": "Ng"}),
    ("NEW_VALUES", {"SingerId": 2, "FirstName": "Bob"}, {}, {}),
    ("NEW_ROW", {"SingerId": 2, "FirstName": "Bob", "LastName": "Ng"}, {}, {}),
    ("NEW_ROW_AND_OLD_VALUES", {"SingerId": 2, "FirstName": "Bob", "LastName": "Ng"}, {"FirstName": "Bo"},
     {"FirstName": "Bob", "LastName": "Ng"}),
])
def test_each_value_capture_type_gives_its_new_and_old_values(make_database, capture, update_row, update_old, delete_old):
    db = make_database(TABLES + [f"CREATE CHANGE STREAM S FOR Singers(FirstName, LastName) "
                                 f"OPTIONS (value_capture_type = '{capture}')"])
    start = now(db)
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName", "LastName"), [(2, "Bo", "Ng")]))
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "FirstName"), [(2, "Bob")]))
    db.run_in_transaction(lambda t: t.delete("Singers", spanner.KeySet(keys=[[2]])))
    insert, update, delete = read_range(db, start, now(db))
    assert (insert.mod_type, update.mod_type, delete.mod_type) == ("INSERT", "UPDATE", "DELETE")
    assert insert.row == {"SingerId": 2, "FirstName": "Bo", "LastName": "Ng"} and insert.old_values == {}
    assert (update.row, update.old_values) == (update_row, update_old)
    assert (delete.row, delete.old_values) == ({"SingerId": 2}, delete_old)
    assert {c.value_capture_type for c in (insert, update, delete)} == {capture}


def test_cascaded_deletes_of_interleaved_rows_appear_in_the_deleting_transaction(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    with db.batch() as b:
        b.insert("Singers", ("SingerId", "FirstName"), [(1, "Ann")])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First"), (1, 11, "Second")])
    start = now(db)
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(keys=[[1]]))
    changes = read_range(db, start, now(db))
    assert sorted((c.table, c.keys, c.mod_type) for c in changes) == [
        ("Albums", (1, 10), "DELETE"), ("Albums", (1, 11), "DELETE"), ("Singers", (1,), "DELETE")]
    assert len({c.server_transaction_id for c in changes}) == 1
    assert {c.old_values["Title"] for c in changes if c.table == "Albums"} == {"First", "Second"}


def test_row_deletion_policy_deletes_arrive_as_system_transactions_into_the_staging_record(make_database, local_server,
                                                                                           tmp_path):
    db = make_database(["CREATE TABLE Events (Id INT64 NOT NULL, CreatedAt TIMESTAMP) PRIMARY KEY (Id), "
                        "ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))", "CREATE CHANGE STREAM S FOR ALL"])
    start = now(db)
    db.run_in_transaction(lambda t: t.insert("Events", ("Id", "CreatedAt"), [(1, start - dt.timedelta(days=3)), (2, start)]))
    local_server.service.sweep_expired_rows()
    end = now(db)
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, start=start, end=end, progress=InMemoryProgressStore())
    got = Collector()
    w.add_callback(got)
    sink = StagingSink(tmp_path, fsync=False)
    sink.attach(w)
    w.start()
    assert w.wait(30) and w.failure is None
    assert [(c.mod_type, c.keys, c.is_system_transaction, c.transaction_tag) for c in got.changes] == [
        ("INSERT", (1,), False, ""), ("INSERT", (2,), False, ""), ("DELETE", (1,), True, "RowDeletionPolicy")]
    wait_until(lambda: sink.records_written >= 3)
    staged = sorted((json.loads(line) for f in tmp_path.rglob("*.jsonl") for line in f.read_text().splitlines()),
                    key=lambda r: (r["commit_timestamp"], r["values"]["Id"]))
    assert [(r["values"]["Id"], r["is_system_transaction"], r["transaction_tag"]) for r in staged] == [
        ("1", False, ""), ("2", False, ""), ("1", True, "RowDeletionPolicy")]


def write_versions(db, seconds, keys=7, tag=None):
    """Versions of ``keys`` rows written one transaction each for ``seconds``; key -> names in commit order."""
    written = defaultdict(list)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        k = n % keys
        db.run_in_transaction(lambda t, k=k, v=f"{tag or 'v'}{n}": t.insert_or_update("Singers", ("SingerId", "FirstName"),
                                                                                       [(k, v)]))
        written[k].append(f"{tag or 'v'}{n}")
        n += 1
    return written


def by_key(changes):
    seen = defaultdict(list)
    for c in changes:
        seen[c.keys[0]].append(c.row["FirstName"])
    return seen


#: Partitions the watcher finishes at least, per trigger and partition mode: under churn, three periods;
#: under load, one split (while written) and one merge (once cold). A key range's partition ends at its
#: merge, the long-lived one never.
FINISHED = {("churn", False): 3, ("churn", True): 2, ("load_splits", False): 3, ("load_splits", True): 1}


@pytest.mark.parametrize("trigger", ["churn", "load_splits"])
def test_partition_splits_and_merges_deliver_every_change_once_in_key_order(make_database, request, trigger, stream_ddl):
    """Also when key ranges move between long-lived partitions: a partition that keys moved into waits at
    the move until their source caught up, so each key's versions still come in commit order; and
    whether the timer or the write load splits and merges the partitions."""
    request.getfixturevalue(trigger)
    db = make_database(TABLES + [stream_ddl])
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=InMemoryProgressStore(), max_concurrent_partitions=3)
    got = Collector()
    w.add_callback(got)
    finished = FINISHED[(trigger, "MUTABLE_KEY_RANGE" in stream_ddl)]
    with w:
        written = write_versions(db, 1.5)
        total = sum(len(v) for v in written.values())
        got.wait_for(total, timeout=20)
        wait_until(lambda: w.stats()["partitions_finished"] >= finished, 10)  # under load: the merge once cold
        time.sleep(0.5)  # nothing more may come
        stats = w.stats()
    assert by_key(got.changes) == written
    assert len({ident(c) for c in got.changes}) == len(got.changes) == total
    assert stats["partitions_finished"] >= finished and stats["records"] == total and stats["rows"] == total


def test_stop_and_restart_and_a_fresh_watcher_resume_without_loss_or_repeats(make_database, churn, stream_ddl):
    """Progress in the Spanner table (the default store): writes while stopped are read after a restart, by the
    same object and by a new one, also across partitions that split and merged (or key ranges that moved)
    while nobody was reading."""
    db = make_database(TABLES + [stream_ddl])
    got = Collector()
    first = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, watcher_id="resume")
    first.add_callback(got)
    with first:
        written = write_versions(db, 0.6, tag="a")
        got.wait_for(sum(map(len, written.values())), timeout=20)
    for k, v in write_versions(db, 0.7, tag="b").items():   # nobody reads; partitions churn meanwhile
        written[k] += v
    with first:
        got.wait_for(sum(map(len, written.values())), timeout=20)
    for k, v in write_versions(db, 0.7, tag="c").items():
        written[k] += v
    fresh = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, watcher_id="resume")
    fresh.add_callback(got)
    with fresh:
        got.wait_for(sum(map(len, written.values())), timeout=20)
        time.sleep(0.5)
    assert by_key(got.changes) == written
    assert not [i for i, n in Counter(ident(c) for c in got.changes).items() if n > 1]
    stamps = [c.commit_timestamp for c in got.changes]
    other = read_range(db, min(stamps), max(stamps), watcher_id="other")
    assert len(other) == len(got.changes)   # another watcher id has its own progress


def test_each_change_carries_a_watermark_that_every_earlier_commit_was_delivered_by(make_database, churn):
    """Several partitions, split and merged while read: whatever was committed up to a change's
    stream_watermark came with that change's batch or before it (what lets the changelog say it is complete)."""
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=InMemoryProgressStore(), max_concurrent_partitions=4)
    batches = []
    w.add_batch_callback(lambda changes: batches.append(list(changes)))
    with w:
        written = write_versions(db, 2.0)
        time.sleep(1.5)                                          # heartbeats move every partition past the writes
        last = write_versions(db, 0.1, keys=1, tag="last")
        total = sum(len(v) for v in written.values()) + sum(len(v) for v in last.values())
        wait_until(lambda: sum(map(len, batches)) >= total, timeout=20)
    delivered = [c for batch in batches for c in batch]
    assert len(delivered) == total and all(c.stream_watermark is not None for c in delivered)
    seen = 0
    for batch in batches:
        seen += len(batch)
        mark = batch[0].stream_watermark
        assert {c.stream_watermark for c in batch} == {mark}
        before = {ident(c) for c in delivered[:seen]}
        assert not [c for c in delivered if c.commit_timestamp <= mark and ident(c) not in before]
    # The last batch's watermark covers the writes before the pause (the partitions' heartbeats said so).
    assert batches[-1][0].stream_watermark >= max(c.commit_timestamp for c in delivered[:-len(batches[-1])]
                                                  if c.row["FirstName"].startswith("v"))


def _progress_rows(db, watcher_id):
    with db.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql(
            "SELECT PARTITION_TOKEN, STATE, PARENT_TOKENS FROM WATCHER_CHANGE_STREAM_PARTITIONS WHERE WATCHER_ID = @w",
            params={"w": watcher_id}, param_types={"w": spanner.param_types.STRING})]


def test_finished_partitions_are_pruned_so_the_progress_table_stays_bounded_under_churn(make_database, churn):
    """Splits and merges every 0.3 s: the table keeps the root and the partitions not finished (and
    their waiting children) only; a restart from it, also after more churn unread, loses and repeats nothing."""
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    got = Collector()
    first = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, watcher_id="prune", max_concurrent_partitions=4)
    first.add_callback(got)
    sizes = []
    with first:
        written = write_versions(db, 0.5, tag="a")
        for i in range(4):
            for k, v in write_versions(db, 0.5, tag=f"a{i}").items():
                written[k] += v
            sizes.append(len(_progress_rows(db, "prune")))
        got.wait_for(sum(map(len, written.values())), timeout=20)
        finished = first.stats()["partitions_finished"]
    rows = _progress_rows(db, "prune")
    assert not [r for r in rows if r[1] == "FINISHED" and r[0] != ""], rows   # only the root row stays FINISHED
    assert max(sizes + [len(rows)]) <= 5 < finished, (sizes, rows, finished)   # the root + the live ones; churn happened
    tokens = {r[0] for r in rows}
    assert all(set(parents or ()) <= tokens for _, _, parents in rows)  # every named parent is still there
    for k, v in write_versions(db, 1.0, tag="b").items():       # unread; partitions split and merge meanwhile
        written[k] += v
    fresh = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, watcher_id="prune", max_concurrent_partitions=4)
    fresh.add_callback(got)
    with fresh:
        got.wait_for(sum(map(len, written.values())), timeout=20)
        time.sleep(0.5)
    assert by_key(got.changes) == written
    assert not [i for i, n in Counter(ident(c) for c in got.changes).items() if n > 1]
    assert not [r for r in _progress_rows(db, "prune") if r[1] == "FINISHED" and r[0] != ""]


class _PruneFailsOnce(InMemoryProgressStore):
    """A store whose first prune fails (a lost connection at that moment: not something a test can cause)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def prune(self, stream, watcher_id, tokens, rows):
        if not self.failed:
            self.failed = True
            raise RuntimeError("connection lost")
        super().prune(stream, watcher_id, tokens, rows)


def test_a_finished_row_left_by_a_failed_prune_is_pruned_at_the_next_start(make_database, churn):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    store = _PruneFailsOnce()
    got = Collector()
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=store)
    w.add_callback(got)
    with w:
        written = write_versions(db, 1.5)
        got.wait_for(sum(map(len, written.values())), timeout=20)
    assert w.failure is None and store.failed
    assert len([p for p in store.load("S", "default") if p.state == "FINISHED" and p.token]) == 1
    with w:
        for k, v in write_versions(db, 0.5, tag="b").items():
            written[k] += v
        got.wait_for(sum(map(len, written.values())), timeout=20)
        time.sleep(0.3)
    assert not [p for p in store.load("S", "default") if p.state == "FINISHED" and p.token]
    assert by_key(got.changes) == written


def test_a_failing_callback_fails_the_watcher_and_a_restart_repeats_at_most_that_batch(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    progress = InMemoryProgressStore()
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=progress)
    fail = threading.Event()

    def action(change, index):
        if fail.is_set() and change.row["FirstName"] == "boom":
            raise RuntimeError("downstream is down")

    got = Collector(action)
    w.add_callback(got)
    w.start()
    written = write_versions(db, 0.3)
    got.wait_for(sum(map(len, written.values())))
    fail.set()
    db.run_in_transaction(lambda t: t.insert_or_update("Singers", ("SingerId", "FirstName"), [(1, "boom")]))
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, CallbackError) and "downstream is down" in str(w.failure)
    assert "downstream is down" in w.stats()["failure"] and w.stats()["failures"] == 1
    assert list(w.changes(timeout=0.1)) == []              # iterators end when the watcher failed
    fail.clear()
    w.start()
    wait_until(lambda: "boom" in [c.row["FirstName"] for c in got.changes])
    w.stop()
    assert w.state == State.STOPPED and w.failure is None
    assert [c.row["FirstName"] for c in got.changes].count("boom") == 1
    assert by_key(got.changes)[1][-1] == "boom" and len(got.changes) == sum(map(len, written.values())) + 1


def test_batches_come_per_table_before_the_changes_and_progress_moves_after_them(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    progress = InMemoryProgressStore()
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=progress)
    events = []
    stored_ahead = []

    def on_batch(changes):
        events.append(("batch", changes[0].table, len(changes)))
        for p in progress.load("S", "default"):
            for c in changes:   # the store must not already count a change being delivered as handled
                if p.token == c.partition_token and (p.watermark > c.commit_timestamp or (
                        p.watermark == c.commit_timestamp
                        and f"{c.server_transaction_id}/{c.record_sequence}" in p.delivered_at_watermark)):
                    stored_ahead.append(c)

    w.add_batch_callback(on_batch)
    w.add_callback(lambda c: events.append(("change", c.table, c.keys)))
    polls = []
    w.add_poll_listener(polls.append)
    with w:
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "FirstName"), [(1, "Ann"), (2, "Bo")])
            b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First")])
        wait_until(lambda: len([e for e in events if e[0] == "change"]) == 3)
    batches = [e for e in events if e[0] == "batch"]
    assert sum(n for _, table, n in batches if table == "Albums") == 1
    assert sum(n for _, table, n in batches if table == "Singers") == 2
    assert events[0][0] == "batch"
    for i, event in enumerate(events):   # every change comes after the batch holding it
        if event[0] == "change":
            assert sum(n for kind, table, n in events[:i] if kind == "batch" and table == event[1]) >= \
                sum(1 for e in events[:i + 1] if e[0] == "change" and e[1] == event[1])
    assert stored_ahead == []
    assert polls and polls[0].table == "S" and sum(p.rows for p in polls) == 3
    assert {str(i.table) for i in w.table_infos()} == {"Singers", "Albums"}
    assert w.table_info("albums").key_columns == ("SingerId", "AlbumId")


def test_without_a_consumer_nothing_is_read_past(make_database):
    """A change that arrives while nobody listens waits for the first callback (its progress does not move)."""
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    progress = InMemoryProgressStore()
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=progress)
    with w:
        db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(5, "Eve")]))
        time.sleep(0.5)
        assert w.stats()["rows"] == 0
        got = Collector()
        w.add_callback(got)
        got.wait_for(1)
    assert got.keys() == [(5,)]


def test_changes_iterator_and_context_manager(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR Singers"])
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=InMemoryProgressStore())
    with w:
        db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(5, "Eve")]))
        seen = []
        for change in w.changes(timeout=5):
            seen.append((change.mod_type, change.row))
            break
    assert seen == [("INSERT", {"SingerId": 5, "FirstName": "Eve", "LastName": None, "Score": None, "Photo": None,
                                "Born": None, "Seen": None, "Money": None, "Info": None, "Tags": None, "Nums": None})]
    assert w.state == State.STOPPED


def test_stats_and_prometheus_show_partitions_heartbeats_and_lag(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=InMemoryProgressStore())
    w.add_callback(Collector())
    with w:
        db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(5, "Eve")]))
        wait_until(lambda: w.stats()["heartbeats"] >= 1 and w.stats()["rows"] == 1, timeout=10)
        stats, text = w.stats(), w.prometheus()
    assert stats["stream"] == "S" and stats["state"] == "running" and stats["running"] == 1
    assert stats["partitions_active"] >= 1 and stats["records"] == 1 and stats["failures"] == 0
    assert 0 <= stats["lag_seconds"] < 5 and stats["watermark"] >= stats["last_poll_at"] - dt.timedelta(seconds=5)
    assert 'spanner_watcher_rows_total{table="S",shard="all"} 1' in text
    assert 'spanner_watcher_change_stream_partitions_active{stream="S"}' in text
    assert "spanner_watcher_change_stream_heartbeats_total" in text
    assert w.stats()["running"] == 0


def test_an_unknown_stream_and_bad_options_are_errors_naming_them(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    with pytest.raises(ChangeStreamNotFoundError, match="Change stream not found: Nope"):
        ChangeStreamWatcher(db, "Nope", progress=InMemoryProgressStore()).start()
    with pytest.raises(ConfigurationError, match="heartbeat"):
        ChangeStreamWatcher(db, "S", heartbeat=dt.timedelta(milliseconds=10))
    with pytest.raises(ConfigurationError, match="max_concurrent_partitions"):
        ChangeStreamWatcher(db, "S", max_concurrent_partitions=0)


def test_a_start_outside_the_retention_is_an_error_naming_the_stream_and_its_retention(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL OPTIONS (retention_period = '36h')"])
    w = ChangeStreamWatcher(db, "S", start=now(db) - dt.timedelta(days=3), progress=InMemoryProgressStore())
    with pytest.raises(ChangeStreamRetentionError) as info:
        w.start()
    assert "Change stream S" in str(info.value) and "36h" in str(info.value)
    assert info.value.stream == "S" and info.value.retention == "36h"


def test_transient_read_errors_are_retried_from_the_partitions_progress(make_database, churn, local_server):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, progress=InMemoryProgressStore())
    got = Collector()
    w.add_callback(got)
    with w:
        local_server.faults.inject("ExecuteStreamingSql", "ABORTED", count=3)   # new partition reads fail
        written = write_versions(db, 1.2)
        got.wait_for(sum(map(len, written.values())), timeout=20)
        time.sleep(0.3)
        stats = w.stats()
    assert local_server.faults.fired.get("ExecuteStreamingSql", 0) >= 1
    assert stats["retries"] >= 1 and stats["failures"] == 0 and w.failure is None
    assert by_key(got.changes) == written
    assert len({ident(c) for c in got.changes}) == len(got.changes)


def test_a_watcher_stopped_longer_than_the_retention_says_so_at_start(tmp_path, monkeypatch):
    """The server's clock jumps two days while the watcher is stopped: its partitions' watermarks are outside
    the stream's one-day retention, and start() says so; a new watcher id starts from now."""
    from watcher.localspanner.server import LocalSpanner

    if _EXTERNAL:
        pytest.skip("drives the embedded server's clock; SPANNER_EMULATOR_HOST is set")
    offset = [0]
    with LocalSpanner(now_nanos=lambda: time.time_ns() + offset[0]) as server:
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        client = spanner.Client(project="cs-retention")
        instance = client.instance("cs-instance", configuration_name="projects/cs-retention/instanceConfigs/emulator-config",
                                   node_count=1)
        instance.create().result(30)
        db = instance.database("cs-db", ddl_statements=TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
        db.create().result(60)
        got = Collector()
        w = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT)
        w.add_callback(got)
        with w:
            db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(1, "Ann")]))
            got.wait_for(1)
        offset[0] = 2 * 86_400 * 10**9
        with pytest.raises(ChangeStreamRetentionError, match="Change stream S .*retention period \\(1d\\)"):
            w.start()
        fresh = ChangeStreamWatcher(db, "S", heartbeat=HEARTBEAT, watcher_id="new")
        fresh.add_callback(got)
        with fresh:
            db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(2, "Bo")]))
            got.wait_for(2)
    assert got.keys() == [(1,), (2,)]
