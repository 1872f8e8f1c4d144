"""TableWatcher end to end through the official client: the Java library's scenarios, then each
point where this watcher does better (exact resume, checkpoint after callbacks, retries, restarts,
watermark, stats, the iterator, the WITH-query fallback).
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import time

import pytest
from apscheduler.executors.pool import ThreadPoolExecutor
from google.api_core import exceptions as gexc
from google.cloud import spanner

from tests.watcher.core_support import NO_TS_DDL, T_DDL, Collector, insert, insert_t, wait_until
from watcher import (
    MIN_TIMESTAMP,
    CallbackError,
    CallbackErrorPolicy,
    Checkpoint,
    FixedShardProvider,
    InMemoryCommitTimestampRepository,
    NotNullShardProvider,
    PollError,
    RetryPolicy,
    SchemaError,
    SpannerCommitTimestampRepository,
    State,
    TableId,
    TableNotFoundError,
    TableNotWatchableError,
    TableWatcher,
)
from watcher.errors import ColumnNotFoundError, ConfigurationError

FAST = RetryPolicy(initial=0.001, maximum=0.01)
UTC = dt.UTC


@pytest.fixture
def t_db(make_database):
    return make_database([T_DDL, NO_TS_DDL])


@pytest.fixture
def watch():
    """Build TableWatchers with fast test defaults; every one is stopped after the test."""
    made: list[TableWatcher] = []

    def make(database, table="T", **kwargs) -> TableWatcher:
        kwargs.setdefault("poll_interval", 0.005)
        kwargs.setdefault("checkpoints", InMemoryCommitTimestampRepository())
        kwargs.setdefault("retry_policy", FAST)
        w = TableWatcher(database, table, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop(timeout=5)


@pytest.fixture(params=["memory", "spanner"])
def repo_factory(request):
    """A function database -> checkpoint store, for each kind of store."""
    if request.param == "memory":
        shared = InMemoryCommitTimestampRepository()
        return lambda db: shared
    return lambda db: SpannerCommitTimestampRepository(db)


def _rows(changes):
    return [(c.keys, c.row.get("Name"), c.commit_timestamp) for c in changes]


# === The Java library's table-tailer scenarios ===================================================================

def test_receives_all_rows(t_db, watch):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    assert w.state == State.RUNNING
    ts = [insert_t(t_db, range(i * 10, i * 10 + 10)) for i in range(5)]
    got.wait_for(50)
    time.sleep(0.05)
    assert sorted(got.keys()) == [(i,) for i in range(50)] and len(got) == 50
    assert [c.commit_timestamp for c in got.changes] == sorted(c.commit_timestamp for c in got.changes)
    assert {c.commit_timestamp for c in got.changes} == set(ts)


def test_rows_written_before_start_are_not_delivered_by_default(t_db, watch):
    insert_t(t_db, [1, 2])
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    insert_t(t_db, [3])
    got.wait_for(1)
    time.sleep(0.05)
    assert got.keys() == [(3,)]


def test_table_without_commit_timestamp_column_fails_at_start(t_db, watch):
    w = watch(t_db, "NoTs")
    with pytest.raises(TableNotWatchableError, match="Table NoTs cannot be watched: .*allow_commit_timestamp=true"):
        w.start()
    assert w.state == State.NEW


def test_missing_table_fails_at_start(t_db, watch):
    with pytest.raises(TableNotFoundError, match="Nope"):
        watch(t_db, "Nope").start()


def test_dropped_table_fails_the_running_watcher_with_not_found(t_db, watch):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    insert_t(t_db, [1])
    got.wait_for(1)
    t_db.update_ddl(["DROP TABLE T"]).result(30)
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, TableNotFoundError) and w.failure.table == "T"
    cause = w.failure.__cause__
    assert isinstance(cause, gexc.GoogleAPICallError) and "not found" in cause.message.lower()
    assert w.stats()["failure"] and w.stats()["running"] == 0


def test_many_small_groups_with_a_1ms_poll_interval_deliver_exactly_the_total(t_db, watch):
    got = Collector()
    w = watch(t_db, poll_interval=0.001)
    w.add_callback(got)
    w.start()
    rng = random.Random(7)
    total, next_id = 0, 0
    for _ in range(50):
        n = rng.randint(1, 10)
        insert_t(t_db, range(next_id, next_id + n))
        next_id += n
        total += n
    got.wait_for(total)
    time.sleep(0.05)
    assert len(got) == total
    assert sorted(got.keys()) == [(i,) for i in range(total)]


def test_custom_executor_is_used_and_not_shut_down(t_db, watch):
    executor = ThreadPoolExecutor(2, pool_kwargs={"thread_name_prefix": "my-poller"})
    threads: set[str] = set()
    got = Collector(lambda change, i: threads.add(threading.current_thread().name))
    w = watch(t_db, executor=executor)
    w.add_callback(got)
    w.start()
    insert_t(t_db, [1, 2])
    got.wait_for(2)
    w.stop()
    assert threads and all(name.startswith("my-poller") for name in threads)
    assert executor._pool.submit(lambda: 42).result(5) == 42  # still usable: never shut down
    w.start()  # and reusable by the same watcher
    insert_t(t_db, [3])
    got.wait_for(3)
    w.stop()
    executor.shutdown()


def test_fixed_commit_timestamp_column(make_database, watch):
    db = make_database(["CREATE TABLE Two (Id INT64 NOT NULL, Name STRING(MAX), "
                        "Created TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
                        "Updated TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    got = Collector()
    w = watch(db, "Two", commit_timestamp_column="Updated")
    w.add_callback(got)
    w.start()
    assert w.info.commit_timestamp_column == "Updated"
    with db.batch() as b:
        b.insert("Two", ("Id", "Name", "Created"), [(1, "created only", spanner.COMMIT_TIMESTAMP)])
        b.insert("Two", ("Id", "Name", "Created", "Updated"), [(2, "both", spanner.COMMIT_TIMESTAMP, spanner.COMMIT_TIMESTAMP)])
    got.wait_for(1)
    time.sleep(0.05)
    assert got.keys() == [(2,)]
    assert got.changes[0].commit_timestamp == got.changes[0].row["Updated"]


def test_commit_timestamp_column_name_is_matched_case_insensitively(t_db, watch):
    w = watch(t_db, commit_timestamp_column="ts").start()
    assert w.info.commit_timestamp_column == "Ts"


def test_invalid_commit_timestamp_column_fails_with_not_found(t_db, watch):
    with pytest.raises(ColumnNotFoundError, match="Column Nope not found in table T"):
        watch(t_db, commit_timestamp_column="Nope").start()
    with pytest.raises(TableNotWatchableError, match="column Name is STRING\\(MAX\\), not TIMESTAMP"):
        watch(t_db, commit_timestamp_column="Name").start()


def test_not_null_shard_provider_with_a_hint(singers_db, watch):
    got = Collector()
    w = watch(singers_db, "Singers", shard_provider=NotNullShardProvider("ShardId"),
              table_hint="@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}")
    w.add_callback(got)
    w.start()
    cols = ("SingerId", "FirstName", "LastName", "Processed", "LastUpdated")
    with singers_db.batch() as b:
        b.insert_or_update("Singers", cols, [(i, f"F{i}", f"L{i}", i % 3 == 0, spanner.COMMIT_TIMESTAMP) for i in range(12)])
    got.wait_for(8)
    time.sleep(0.05)
    assert sorted(got.keys()) == [(i,) for i in range(12) if i % 3 != 0]
    assert all(c.row["ShardId"] is not None for c in got.changes)


def test_invalid_options_are_rejected_naming_the_option(t_db):
    with pytest.raises(ConfigurationError, match="limit"):
        TableWatcher(t_db, "T", limit=0)
    with pytest.raises(ConfigurationError, match="poll_interval"):
        TableWatcher(t_db, "T", poll_interval=-1)
    with pytest.raises(ConfigurationError, match="table_hint"):
        TableWatcher(t_db, "T", table_hint="FORCE_INDEX=x")


# === Integration scenarios ======================================================================================

def test_insert_3_insert_2_update_2_gives_exactly_7_events_and_deletes_none(t_db, watch):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    # Each step waits for its events: polling sees rows, so an update made before the poll
    # would coalesce with the insert (as in the Java library's test, which also waits).
    t1 = insert_t(t_db, [1, 2, 3], "a")
    got.wait_for(3)
    t2 = insert_t(t_db, [4, 5], "b")
    got.wait_for(5)
    with t_db.batch() as b:
        b.update("T", ("Id", "Name", "Ts"), [(1, "c1", spanner.COMMIT_TIMESTAMP), (4, "c4", spanner.COMMIT_TIMESTAMP)])
    t3 = b.committed
    got.wait_for(7)
    with t_db.batch() as b:
        b.delete("T", spanner.KeySet(keys=[[2], [3]]))
    insert_t(t_db, [99], "marker")
    got.wait_for(8)
    time.sleep(0.05)
    assert _rows(got.changes) == [
        ((1,), "a1", t1), ((2,), "a2", t1), ((3,), "a3", t1), ((4,), "b4", t2), ((5,), "b5", t2),
        ((1,), "c1", t3), ((4,), "c4", t3), ((99,), "marker99", got.changes[-1].commit_timestamp)]
    assert all(c.row["Ts"] == c.commit_timestamp for c in got.changes)
    assert all(c.table == "T" and c.shard is None for c in got.changes)


ARRAY_DDL = ("CREATE TABLE Sh (Id INT64 NOT NULL, Name STRING(MAX), "
             "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
             "ShardId INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(Name, '')), 11)) STORED) PRIMARY KEY (Id)")


def _write_names(db, ids):
    return insert(db, "Sh", ("Id", "Name"), [(i, f"name-{i}") for i in ids])


def _shard_of(db, ids):
    with db.snapshot() as snap:
        return {r[0]: r[1] for r in snap.execute_sql(f"SELECT Id, ShardId FROM Sh WHERE Id IN UNNEST({list(ids)})")}


def test_array_shard_provider_over_a_computed_column_with_21_values(make_database, watch):
    db = make_database([ARRAY_DDL])
    got = Collector()
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", range(-10, 11)))
    w.add_callback(got)
    w.start()
    _write_names(db, range(60))
    insert(db, "Sh", ("Id", "Name"), [(100, None)])
    got.wait_for(61)
    time.sleep(0.05)
    assert sorted(got.keys()) == [(i,) for i in range(60)] + [(100,)]
    assert all(c.shard == list(range(-10, 11)) for c in got.changes)
    assert {c.row["ShardId"] for c in got.changes} <= set(range(-10, 11))


def test_fixed_scalar_shard_provider_sees_only_its_shard(make_database, watch):
    db = make_database([ARRAY_DDL])
    got = Collector()
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", 3))
    w.add_callback(got)
    w.start()
    _write_names(db, range(80))
    shards = _shard_of(db, range(80))
    expected = sorted((i,) for i, s in shards.items() if s == 3)
    assert expected  # the names are chosen so that shard 3 is used
    got.wait_for(len(expected))
    time.sleep(0.05)
    assert sorted(got.keys()) == expected
    assert all(c.shard == 3 for c in got.changes)


def test_two_watchers_on_different_shard_values_together_see_every_change(make_database, watch):
    db = make_database([ARRAY_DDL])
    repo = InMemoryCommitTimestampRepository()
    a, b = Collector(), Collector()
    wa = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", list(range(-10, 0))), checkpoints=repo)
    wb = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", list(range(0, 11))), checkpoints=repo)
    wa.add_callback(a)
    wb.add_callback(b)
    wa.start()
    wb.start()
    for start in range(0, 100, 20):
        _write_names(db, range(start, start + 20))
    wait_until(lambda: len(a) + len(b) >= 100)
    time.sleep(0.05)
    assert sorted(a.keys() + b.keys()) == [(i,) for i in range(100)]
    assert all(c.row["ShardId"] < 0 for c in a.changes) and all(c.row["ShardId"] >= 0 for c in b.changes)
    assert a.changes and b.changes
    # Each keeps its own checkpoint.
    assert repo.get(TableId("Sh"), list(range(-10, 0))) is not None
    assert repo.get(TableId("Sh"), list(range(0, 11))) is not None
    assert repo.get(TableId("Sh")) is None


# === Better than the Java library ===============================================================================

def test_no_loss_when_limit_cuts_groups(t_db, watch):
    ts = [insert_t(t_db, range(g * 100, g * 100 + n)) for g, n in enumerate([25, 3, 8, 1, 13])]
    got = Collector()
    w = watch(t_db, limit=4, initial_timestamp=MIN_TIMESTAMP, poll_interval=5.0)
    w.add_callback(got)
    w.start()
    got.wait_for(50)  # a 5 s poll interval: only the immediate re-polls of full polls get here in time
    time.sleep(0.05)
    expected = [(g * 100 + i,) for g, n in enumerate([25, 3, 8, 1, 13]) for i in range(n)]
    assert got.keys() == expected
    assert [c.commit_timestamp for c in got.changes] == [ts[g] for g, n in enumerate([25, 3, 8, 1, 13]) for _ in range(n)]


@pytest.mark.parametrize("k", [0, 1, 5, 11, 12, 18])
def test_exact_resume_after_a_stop_inside_a_group(t_db, watch, repo_factory, k):
    """Stop from inside the callback at row k of a 19-row group cut by LIMIT 5; a new watcher
    (as after a process restart) on the same checkpoints delivers rows k+1.. exactly once."""
    insert_t(t_db, range(19))
    tail = insert_t(t_db, [100, 101])
    repo = repo_factory(t_db)
    holder: dict[str, TableWatcher] = {}

    def stop_at_k(change, index):
        if index == k:
            holder["w"].stop()

    first = Collector(stop_at_k)
    w1 = watch(t_db, limit=5, initial_timestamp=MIN_TIMESTAMP, checkpoints=repo)
    holder["w"] = w1
    w1.add_callback(first)
    w1.start()
    wait_until(lambda: w1.state == State.STOPPED)
    assert first.keys() == [(i,) for i in range(k + 1)]

    second = Collector()
    w2 = watch(t_db, limit=5, initial_timestamp=MIN_TIMESTAMP, checkpoints=repo)
    w2.add_callback(second)
    w2.start()
    second.wait_for(19 - k - 1 + 2)
    time.sleep(0.05)
    assert second.keys() == [(i,) for i in range(k + 1, 19)] + [(100,), (101,)]
    assert second.changes[-1].commit_timestamp == tail


@pytest.mark.parametrize("k", [0, 3, 7, 10])
def test_checkpoint_after_a_callback_failure_is_exactly_the_row_before(t_db, watch, repo_factory, k):
    ts = insert_t(t_db, range(12))
    repo = repo_factory(t_db)
    seen_stored: list[Checkpoint | None] = []

    def fail_at_k(change, index):
        seen_stored.append(repo.get(TableId("T")))
        if index == k:
            raise RuntimeError("boom")

    got = Collector(fail_at_k)
    w = watch(t_db, limit=4, initial_timestamp=MIN_TIMESTAMP, checkpoints=repo)
    w.add_callback(got)
    w.start()
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, CallbackError) and "boom" in str(w.failure)
    assert isinstance(w.failure.__cause__, RuntimeError)
    stored = repo.get(TableId("T"))
    if k == 0:
        assert stored == Checkpoint(MIN_TIMESTAMP)
    else:
        assert stored == Checkpoint(ts, (k - 1,))
    # While a callback ran, the stored checkpoint never covered that row.
    for index, cp in enumerate(seen_stored):
        assert cp.commit_timestamp < ts or (cp.key is not None and cp.key[0] < index)
    # A new watcher resumes exactly at row k.
    again = Collector()
    w2 = watch(t_db, limit=4, checkpoints=repo)
    w2.add_callback(again)
    w2.start()
    again.wait_for(12 - k)
    time.sleep(0.05)
    assert again.keys() == [(i,) for i in range(k, 12)]


@pytest.mark.parametrize("code", ["ABORTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL"])
def test_transient_poll_errors_are_retried(t_db, watch, local_server, code):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    insert_t(t_db, range(5))
    got.wait_for(5)
    local_server.faults.inject("ExecuteStreamingSql", code, count=3)
    insert_t(t_db, range(5, 10))
    got.wait_for(10)
    time.sleep(0.05)
    assert w.state == State.RUNNING and w.failure is None
    assert sorted(got.keys()) == [(i,) for i in range(10)]
    # Either the client retried (the faults fired) or the watcher did (and counted it).
    assert local_server.faults.fired.get("ExecuteStreamingSql", 0) >= 3


def test_aborted_poll_is_retried_by_the_watcher_and_counted(t_db, watch, local_server):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    wait_until(lambda: w.stats()["polls"] >= 1)
    local_server.faults.inject("ExecuteStreamingSql", "DEADLINE_EXCEEDED", count=4)
    insert_t(t_db, range(3))
    got.wait_for(3)
    stats = w.stats()
    assert stats["retries"] >= 1 and stats["failures"] >= 1 and stats["state"] == "running"


def test_transient_checkpoint_write_errors_are_retried(t_db, watch, local_server):
    repo = SpannerCommitTimestampRepository(t_db)
    with watch(t_db, checkpoints=repo):  # fixes the starting point in the checkpoint table
        pass
    insert_t(t_db, range(6))
    # The next Commits are the new watcher's checkpoint writes: it reads its start, polls, delivers, stores.
    local_server.faults.inject("Commit", "ABORTED", count=3)
    local_server.faults.inject("Commit", "UNAVAILABLE", count=2)
    local_server.faults.inject("Commit", "DEADLINE_EXCEEDED", count=2)  # not retried by the client itself
    got = Collector()
    w = watch(t_db, checkpoints=repo)
    w.add_callback(got)
    w.start()
    got.wait_for(6)
    wait_until(lambda: repo.get(TableId("T")).commit_timestamp == got.changes[-1].commit_timestamp)
    assert local_server.faults.fired.get("Commit", 0) >= 7
    assert w.state == State.RUNNING and w.stats()["retries"] >= 1
    assert got.keys() == [(i,) for i in range(6)]  # stored late, but nothing delivered twice


def test_a_dropped_column_fails_with_the_cause(make_database, watch):
    db = make_database(["CREATE TABLE D (Id INT64 NOT NULL, Name STRING(MAX), Extra INT64, "
                        "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    w = watch(db, "D", commit_timestamp_column="Ts", shard_provider=NotNullShardProvider("Extra"))
    w.add_callback(Collector())
    w.start()
    wait_until(lambda: w.stats()["polls"] >= 1)
    db.update_ddl(["ALTER TABLE D DROP COLUMN Extra"]).result(30)
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, (PollError, SchemaError))
    assert isinstance(w.failure.__cause__, gexc.GoogleAPICallError)
    assert w.stats()["retries"] == 0


def test_a_failed_watcher_can_be_started_again_and_resumes(t_db, watch):
    fail = {"on": True}

    def maybe_fail(change, index):
        if fail["on"] and change.keys == (4,):
            raise ValueError("not now")

    got = Collector(maybe_fail)
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    insert_t(t_db, range(8))
    w.start()
    wait_until(lambda: w.state == State.FAILED)
    assert got.keys() == [(i,) for i in range(4)]
    fail["on"] = False
    w.start()
    assert w.state == State.RUNNING and w.failure is None
    got.wait_for(8)
    insert_t(t_db, [8])
    got.wait_for(9)
    time.sleep(0.05)
    assert got.keys() == [(i,) for i in range(9)]


def test_restart_right_after_failure_keeps_polling(t_db, watch):
    """The failure's cleanup must not shut down the scheduler of the restarted watcher."""
    for attempt in range(5):
        boom = {"on": True}

        def fail_once(change, index, boom=boom):
            if boom["on"]:
                boom["on"] = False
                raise ValueError("once")

        got = Collector(fail_once)
        w = watch(t_db, initial_timestamp=MIN_TIMESTAMP)
        w.add_callback(got)
        insert_t(t_db, [1000 + attempt])
        w.start()
        wait_until(lambda w=w: w.state == State.FAILED)
        w.start()
        insert_t(t_db, [2000 + attempt])
        wait_until(lambda got=got, key=(2000 + attempt,): key in got.keys(), timeout=5)
        w.stop()


def test_a_stopped_watcher_can_be_started_again_and_resumes(t_db, watch):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    with w:
        insert_t(t_db, [1, 2])
        got.wait_for(2)
    assert w.state == State.STOPPED
    insert_t(t_db, [3])  # written while stopped: delivered after the restart
    with w:
        insert_t(t_db, [4])
        got.wait_for(4)
        time.sleep(0.05)
    assert got.keys() == [(1,), (2,), (3,), (4,)]


def test_callback_error_policy_retry(t_db, watch):
    attempts: dict[tuple, int] = {}

    def flaky(change, index):
        attempts[change.keys] = attempts.get(change.keys, 0) + 1
        if change.keys == (5,) and attempts[change.keys] <= 2:
            raise RuntimeError("flaky")

    got = Collector(flaky)
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP, limit=3, callback_error_policy=CallbackErrorPolicy.RETRY)
    w.add_callback(got)
    insert_t(t_db, range(10))
    w.start()
    got.wait_for(10)
    time.sleep(0.05)
    assert got.keys() == [(i,) for i in range(10)]
    assert attempts[(5,)] == 3 and all(n == 1 for key, n in attempts.items() if key != (5,))
    stats = w.stats()
    assert stats["retries"] == 2 and stats["state"] == "running" and w.failure is None


def test_callback_error_policy_fail_is_the_default(t_db, watch):
    got = Collector(lambda change, index: 1 / 0)
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP)
    assert w.callback_error_policy == CallbackErrorPolicy.FAIL
    w.add_callback(got)
    insert_t(t_db, [1])
    w.start()
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure.__cause__, ZeroDivisionError)
    assert w.stats()["retries"] == 0


def test_commit_timestamp_column_found_among_several_column_options(make_database, watch):
    db = make_database(["CREATE TABLE Opts (Id INT64 NOT NULL, "
                        "Audit TIMESTAMP OPTIONS (allow_commit_timestamp=false), "
                        "Archived TIMESTAMP OPTIONS (allow_commit_timestamp=null), "
                        "Name STRING(MAX), "
                        "Changed TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    got = Collector()
    w = watch(db, "Opts")
    w.add_callback(got)
    w.start()
    assert w.info.commit_timestamp_column == "Changed"
    with db.batch() as b:
        b.insert("Opts", ("Id", "Name", "Changed"), [(1, "x", spanner.COMMIT_TIMESTAMP)])
    got.wait_for(1)
    assert got.changes[0].commit_timestamp == got.changes[0].row["Changed"]


def test_several_commit_timestamp_columns_pick_one_deterministically(make_database, watch):
    db = make_database(["CREATE TABLE Multi (Id INT64 NOT NULL, "
                        "Zeta TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
                        "Alpha TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    names = {watch(db, "Multi").start().info.commit_timestamp_column for _ in range(3)}
    assert len(names) == 1 and names <= {"Alpha", "Zeta"}


def test_watermark_advances_to_the_read_timestamp_when_nothing_changes(t_db, watch):
    w = watch(t_db, poll_interval=0.01)
    w.add_callback(Collector())
    before = dt.datetime.now(UTC)
    w.start()
    wait_until(lambda: w.stats()["watermark"] is not None)
    first = w.stats()["watermark"]
    wait_until(lambda: w.stats()["watermark"] > first)
    stats = w.stats()
    assert stats["rows"] == 0 and stats["polls"] >= 2
    assert stats["watermark"] >= before - dt.timedelta(seconds=1)
    assert 0 <= stats["lag_seconds"] < 5
    assert stats["watermark"] > w.position.commit_timestamp  # beyond the last change: nothing changed


def test_watermark_covers_delivered_changes(t_db, watch):
    got = Collector()
    w = watch(t_db)
    w.add_callback(got)
    w.start()
    ts = insert_t(t_db, [1])
    got.wait_for(1)
    wait_until(lambda: w.stats()["watermark"] >= ts)


def test_stats_and_prometheus_text(t_db, watch):
    got = Collector()
    w = watch(t_db, name="stats-test")
    w.add_callback(got)
    w.start()
    insert_t(t_db, range(3))
    last = insert_t(t_db, range(3, 5))
    got.wait_for(5)
    wait_until(lambda: w.stats()["watermark"] >= last)
    s = w.stats()
    assert s["table"] == "T" and s["shard"] == "all" and s["state"] == "running" and s["running"] == 1
    assert s["rows"] == 5 and s["polls"] >= 1 and s["failures"] == 0 and s["retries"] == 0
    assert isinstance(s["last_poll_at"], dt.datetime) and 0 <= s["last_poll_seconds"] < 5
    assert s["last_commit_timestamp"] == last and s["using_with_query"] is False and s["failure"] is None
    text = w.prometheus()
    assert '# TYPE spanner_watcher_polls_total counter' in text
    assert 'spanner_watcher_rows_total{table="T",shard="all"} 5\n' in text
    assert 'spanner_watcher_running{table="T",shard="all"} 1\n' in text
    line = next(ln for ln in text.splitlines() if ln.startswith("spanner_watcher_watermark_timestamp_seconds{"))
    exported = float(line.rsplit(" ", 1)[1])
    assert abs(exported - w.stats()["watermark_seconds"]) < 0.001  # full precision, not 1.7e+09
    w.stop()
    assert w.stats()["running"] == 0 and w.stats()["state"] == "stopped"


def test_shard_label_in_stats(make_database, watch):
    db = make_database([ARRAY_DDL])
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", range(-10, 11)))
    assert w.stats()["shard"] == "-10..10"
    assert 'spanner_watcher_polls_total{table="Sh",shard="-10..10"} 0' in w.prometheus()


# --- the iterator --------------------------------------------------------------------------------------------

def test_changes_iterator_blocks_and_ends_on_stop(t_db, watch):
    w = watch(t_db)
    it = w.changes()
    w.start()
    insert_t(t_db, [1, 2, 3])
    got = [next(it).keys for _ in range(3)]
    assert got == [(1,), (2,), (3,)]
    threading.Timer(0.1, w.stop).start()
    started = time.monotonic()
    assert list(it) == []  # blocks until the stop, then ends
    assert 0.05 < time.monotonic() - started < 5


def test_changes_iterator_with_the_watcher_as_context_manager(t_db, watch):
    insert_t(t_db, [1, 2])
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP)
    with w:
        keys = [c.keys for c in w.changes(timeout=0.5)]
    assert keys == [(1,), (2,)]


def test_changes_iterator_counts_a_change_handled_only_when_the_next_is_asked_for(t_db, watch, repo_factory):
    repo = repo_factory(t_db)
    insert_t(t_db, range(5))
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP, limit=2, checkpoints=repo)
    it = w.changes()
    w.start()
    first = next(it)
    second = next(it)  # change 0 is handled now, change 1 is held
    assert (first.keys, second.keys) == ((0,), (1,))
    time.sleep(0.1)
    stored = repo.get(TableId("T"))
    assert stored.commit_timestamp < second.commit_timestamp or stored.key is None or stored.key[0] < 1
    # Stop while change 1 is held: it was not handled, so it comes again after a restart.
    w.stop()
    assert list(it) == []
    again = watch(t_db, checkpoints=repo)
    it2 = again.changes()
    again.start()
    assert [next(it2).keys for _ in range(4)] == [(1,), (2,), (3,), (4,)]


def test_stop_waits_for_the_callback_in_flight(t_db, watch):
    entered, release = threading.Event(), threading.Event()
    finished: list[float] = []

    def slow(change, index):
        entered.set()
        release.wait(5)
        time.sleep(0.1)
        finished.append(time.monotonic())

    w = watch(t_db)
    w.add_callback(Collector(slow))
    w.start()
    insert_t(t_db, [1, 2])
    assert entered.wait(5)
    threading.Timer(0.05, release.set).start()
    w.stop()
    stopped_at = time.monotonic()
    assert len(finished) == 1 and finished[0] <= stopped_at
    assert w.state == State.STOPPED
    assert w.position.key == (1,)  # the second change was not handed out


# --- the WITH-query fallback ---------------------------------------------------------------------------------

@pytest.mark.parametrize("behind, expect_with", [(59.0, False), (61.0, True)])
def test_with_query_fallback_threshold(make_database, watch, behind, expect_with):
    db = make_database([ARRAY_DDL])
    _write_names(db, range(30))
    with db.snapshot() as snap:
        ((now,),) = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))
    # The clock is fixed 1 s after `now`; the start is `behind` seconds before the clock.
    modes: list[bool] = []
    holder: dict[str, TableWatcher] = {}
    got = Collector(lambda change, index: modes.append(holder["w"].stats()["using_with_query"]))
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", range(-10, 11)), limit=7,
              fallback_to_with_query_seconds=60, initial_timestamp=now + dt.timedelta(seconds=1 - behind),
              clock=lambda: now + dt.timedelta(seconds=1))
    holder["w"] = w
    w.add_callback(got)
    w.start()
    got.wait_for(30)
    time.sleep(0.05)
    assert sorted(got.keys()) == [(i,) for i in range(30)]
    assert modes[0] is expect_with
    # Caught up (0 s behind on the fixed clock): back to the simple query.
    insert(db, "Sh", ("Id", "Name"), [(500, "late")])
    got.wait_for(31)
    assert modes[-1] is False
    assert w.stats()["using_with_query"] is False


def test_with_query_not_used_for_ineligible_providers(make_database, watch):
    db = make_database([ARRAY_DDL])
    _write_names(db, range(5))
    got = Collector()
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", 3), initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    wait_until(lambda: w.stats()["polls"] >= 2)
    assert w.stats()["using_with_query"] is False


def test_with_query_with_freezegun_driven_clock(make_database, watch):
    """The default clock reads the wall clock; freezegun moves it past the threshold."""
    from freezegun import freeze_time

    db = make_database([ARRAY_DDL])
    w = watch(db, "Sh", shard_provider=FixedShardProvider("ShardId", range(-10, 11)),
              initial_timestamp=dt.datetime(2030, 1, 1, tzinfo=UTC), fallback_to_with_query_seconds=60)
    w.add_callback(Collector())
    w.start()
    w.stop()
    with freeze_time("2030-01-01 00:00:59", tz_offset=0):
        assert w._next_query().sql.startswith("SELECT * FROM")
    with freeze_time("2030-01-01 00:01:01", tz_offset=0):
        assert w._next_query().sql.startswith("WITH shard0 AS (")


def test_a_watcher_without_consumers_does_not_consume_changes(t_db, watch):
    insert_t(t_db, [1, 2])
    repo = InMemoryCommitTimestampRepository()
    w = watch(t_db, initial_timestamp=MIN_TIMESTAMP, checkpoints=repo)
    w.start()
    time.sleep(0.1)
    assert repo.get(TableId("T")) == Checkpoint(MIN_TIMESTAMP)
    assert [c.keys for c in w.changes(timeout=0.5)] == [(1,), (2,)]
