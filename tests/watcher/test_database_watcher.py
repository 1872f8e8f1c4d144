"""DatabaseWatcher end to end: the Java library's database-tailer scenarios, and the options it
passes on to every table (which the Java one does not)."""

from __future__ import annotations

import time

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from google.cloud import spanner

from tests.watcher.core_support import Collector, insert, wait_until
from watcher import (
    ALL,
    MIN_TIMESTAMP,
    ConfigurationError,
    DatabaseWatcher,
    FixedShardProvider,
    InMemoryCommitTimestampRepository,
    NotNullShardProvider,
    RetryPolicy,
    SpannerCommitTimestampRepository,
    State,
    TableNotFoundError,
    TableNotWatchableError,
)

A_DDL = "CREATE TABLE A (Id INT64 NOT NULL, Name STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"
B_DDL = ("CREATE TABLE B (Id INT64 NOT NULL, Name STRING(MAX), S INT64, "
         "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")
NO_TS = "CREATE TABLE Plain (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"
FAST = RetryPolicy(initial=0.001, maximum=0.01)


@pytest.fixture
def ab_db(make_database):
    return make_database([A_DDL, B_DDL, NO_TS])


@pytest.fixture
def dbwatch():
    made: list[DatabaseWatcher] = []

    def make(database, *args, **kwargs) -> DatabaseWatcher:
        kwargs.setdefault("poll_interval", 0.005)
        kwargs.setdefault("checkpoints", InMemoryCommitTimestampRepository())
        kwargs.setdefault("retry_policy", FAST)
        w = DatabaseWatcher(database, *args, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop(timeout=5)


def _write(db, table, ids, name="n", **extra):
    cols = ("Id", "Name", *extra)
    return insert(db, table, cols, [(i, f"{name}{i}", *extra.values()) for i in ids])


def _by_table(collector):
    out: dict[str, list] = {}
    for c in collector.changes:
        out.setdefault(c.table, []).append(c.keys)
    return out


def test_all_tables(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db, checkpoints=SpannerCommitTimestampRepository(ab_db))
    w.add_callback(got)
    w.start()
    # The checkpoint table has a TIMESTAMP column but no commit-timestamp option: not watched.
    assert sorted(w.watchers) == ["A", "B"] == w.tables()
    _write(ab_db, "A", [1, 2])
    _write(ab_db, "B", [3])
    got.wait_for(3)
    time.sleep(0.05)
    assert _by_table(got) == {"A": [(1,), (2,)], "B": [(3,)]}
    assert w.state == State.RUNNING


def test_all_tables_except(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db, ALL, exclude=["b"])
    w.add_callback(got)
    w.start()
    assert list(w.watchers) == ["A"]
    _write(ab_db, "B", [1])
    _write(ab_db, "A", [2])
    got.wait_for(1)
    time.sleep(0.05)
    assert _by_table(got) == {"A": [(2,)]}


def test_include_tables(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db, include=["B"])
    w.add_callback(got)
    w.start()
    assert list(w.watchers) == ["B"]
    _write(ab_db, "A", [1])
    _write(ab_db, "B", [2])
    got.wait_for(1)
    time.sleep(0.05)
    assert _by_table(got) == {"B": [(2,)]}
    assert list(dbwatch(ab_db, ["A"]).tables()) == ["A"]  # tables=[...] is the same as include


def test_an_included_table_that_does_not_exist_fails_at_start(ab_db, dbwatch):
    w = dbwatch(ab_db, include=["A", "Missing"])
    with pytest.raises(TableNotFoundError, match="Missing"):
        w.start()
    assert w.state != State.RUNNING
    assert w.watchers["A"].state != State.RUNNING  # the ones already started were stopped again


def test_an_included_table_without_commit_timestamp_fails_at_start(ab_db, dbwatch):
    with pytest.raises(TableNotWatchableError, match="Plain"):
        dbwatch(ab_db, include=["Plain"]).start()


def test_a_dropped_table_ends_alone(ab_db, dbwatch):
    # Invariant 6: a table that can no longer be watched ends alone (tests/watcher/test_table_churn.py has more).
    got = Collector()
    w = dbwatch(ab_db)
    w.add_callback(got)
    w.start()
    _write(ab_db, "A", [1])
    got.wait_for(1)
    ab_db.update_ddl(["DROP TABLE B"]).result(30)
    wait_until(lambda: w.database_stats()["tables_dropped"] == 1)
    assert w.state == State.RUNNING and w.failure is None
    _write(ab_db, "A", [2])
    got.wait_for(2)
    assert got.keys() == [(1,), (2,)]


def test_a_shared_scheduler_is_used_and_not_shut_down(ab_db, dbwatch):
    scheduler = BackgroundScheduler(daemon=True)
    scheduler.start()
    try:
        got1, got2 = Collector(), Collector()
        w1 = dbwatch(ab_db, include=["A"], scheduler=scheduler)
        w2 = dbwatch(ab_db, include=["B"], scheduler=scheduler)
        w1.add_callback(got1)
        w2.add_callback(got2)
        w1.start()
        w2.start()
        assert len(scheduler.get_jobs()) <= 2  # one pending poll job per table watcher
        _write(ab_db, "A", [1])
        _write(ab_db, "B", [2])
        got1.wait_for(1)
        got2.wait_for(1)
        w1.stop()
        assert scheduler.running
        _write(ab_db, "B", [3])
        got2.wait_for(2)  # the other watcher keeps running on the shared scheduler
        w2.stop()
        assert scheduler.running and scheduler.get_jobs() == []
        assert got1.keys() == [(1,)] and got2.keys() == [(2,), (3,)]
    finally:
        scheduler.shutdown(wait=False)


@pytest.mark.parametrize("kwargs", [{"include": []}, {"tables": []}, {"tables": ["A"], "include": ["A"]},
                                    {"include": ["A"], "exclude": ["B"]}])
def test_building_without_tables_fails(ab_db, kwargs):
    with pytest.raises(ConfigurationError):
        DatabaseWatcher(ab_db, **kwargs)


def test_no_suitable_tables_fails(make_database, dbwatch):
    db = make_database([NO_TS])
    with pytest.raises(TableNotFoundError, match="no table"):
        dbwatch(db).start()
    db2 = make_database([A_DDL])
    with pytest.raises(TableNotFoundError):
        dbwatch(db2, exclude=["A"]).start()


def test_per_table_commit_timestamp_columns(make_database, dbwatch):
    db = make_database([
        "CREATE TABLE X (Id INT64 NOT NULL, C1 TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
        "C2 TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
        "CREATE TABLE Y (Id INT64 NOT NULL, D1 TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
        "D2 TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
    ])
    for columns in ({"X": "C2", "y": "D2"}, lambda table: {"X": "C2", "Y": "D2"}[table]):
        got = Collector()
        w = dbwatch(db, commit_timestamp_column=columns)
        w.add_callback(got)
        w.start()
        assert {n: x.info.commit_timestamp_column for n, x in w.watchers.items()} == {"X": "C2", "Y": "D2"}
        with db.batch() as b:
            b.insert_or_update("X", ("Id", "C1"), [(1, spanner.COMMIT_TIMESTAMP)])
            b.insert_or_update("X", ("Id", "C2"), [(2, spanner.COMMIT_TIMESTAMP)])
            b.insert_or_update("Y", ("Id", "D1"), [(3, spanner.COMMIT_TIMESTAMP)])
            b.insert_or_update("Y", ("Id", "D2"), [(4, spanner.COMMIT_TIMESTAMP)])
        got.wait_for(2)
        time.sleep(0.05)
        assert sorted((c.table, c.keys) for c in got.changes) == [("X", (2,)), ("Y", (4,))]
        w.stop()


def test_per_table_shard_providers_and_hints(make_database, dbwatch):
    db = make_database([A_DDL, B_DDL, "CREATE NULL_FILTERED INDEX Idx_B_S ON B (S, Ts)"])
    got = Collector()
    w = dbwatch(db, shard_provider={"B": NotNullShardProvider("S")}, table_hint={"B": "@{FORCE_INDEX=Idx_B_S}"})
    w.add_callback(got)
    w.start()
    assert w.watchers["A"].shard_provider is None and w.watchers["A"].table_hint == ""
    assert w.watchers["B"].table_hint == "@{FORCE_INDEX=Idx_B_S}"
    _write(db, "A", [1])
    insert(db, "B", ("Id", "Name", "S"), [(2, "x", 5), (3, "y", None)])
    got.wait_for(2)
    time.sleep(0.05)
    assert sorted((c.table, c.keys) for c in got.changes) == [("A", (1,)), ("B", (2,))]


def test_one_shard_provider_for_every_table(make_database, dbwatch):
    db = make_database([B_DDL, B_DDL.replace("TABLE B", "TABLE B2")])
    got = Collector()
    w = dbwatch(db, shard_provider=FixedShardProvider("S", [1, 2]))
    w.add_callback(got)
    w.start()
    insert(db, "B", ("Id", "Name", "S"), [(1, "a", 1), (2, "b", 3)])
    insert(db, "B2", ("Id", "Name", "S"), [(3, "c", 2), (4, "d", None)])
    got.wait_for(2)
    time.sleep(0.05)
    assert sorted((c.table, c.keys, c.shard) for c in got.changes) == [("B", (1,), [1, 2]), ("B2", (3,), [1, 2])]


def test_transactions_spanning_two_tables(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db)
    w.add_callback(got)
    w.start()
    with ab_db.batch() as b:
        b.insert("A", ("Id", "Name", "Ts"), [(1, "a", spanner.COMMIT_TIMESTAMP), (2, "a", spanner.COMMIT_TIMESTAMP)])
        b.insert("B", ("Id", "Name", "Ts"), [(3, "b", spanner.COMMIT_TIMESTAMP)])
    got.wait_for(3)
    time.sleep(0.05)
    assert sorted((c.table, c.keys) for c in got.changes) == [("A", (1,)), ("A", (2,)), ("B", (3,))]
    assert {c.commit_timestamp for c in got.changes} == {b.committed}  # one transaction, one timestamp


def test_limit_hint_and_fallback_are_passed_to_every_table(make_database, dbwatch):
    db = make_database([A_DDL, B_DDL, "CREATE INDEX Idx_Ts ON A (Ts)", "CREATE INDEX Idx_B_Ts ON B (Ts)"])
    clock_calls: list[str] = []

    def clock():
        import datetime as dt
        clock_calls.append("x")
        return dt.datetime.now(dt.UTC)

    w = dbwatch(db, limit=3, fallback_to_with_query_seconds=12.5, table_hint={"A": "@{FORCE_INDEX=Idx_Ts}",
                "B": "@{FORCE_INDEX=Idx_B_Ts}"}, initial_timestamp=MIN_TIMESTAMP, clock=clock)
    got = Collector()
    w.add_callback(got)
    _write(db, "A", range(10))
    _write(db, "B", range(10, 17))
    w.start()
    for name, x in w.watchers.items():
        assert x.limit == 3 and x.fallback_to_with_query_seconds == 12.5 and x.poll_interval == 0.005
        assert x.table_hint == {"A": "@{FORCE_INDEX=Idx_Ts}", "B": "@{FORCE_INDEX=Idx_B_Ts}"}[name]
    got.wait_for(17)
    time.sleep(0.05)
    # LIMIT 3 cuts both groups; every row arrives exactly once, in key order per table.
    assert _by_table(got) == {"A": [(i,) for i in range(10)], "B": [(i,) for i in range(10, 17)]}
    assert clock_calls  # the injected clock reached the table watchers


def test_one_table_hint_for_every_table(ab_db, dbwatch):
    w = dbwatch(ab_db, include=["A", "B"], table_hint="@{FORCE_INDEX=_BASE_TABLE}")
    assert all(x.table_hint == "@{FORCE_INDEX=_BASE_TABLE}" for x in w.start().watchers.values())


def test_stopped_database_watcher_can_be_started_again(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db)
    w.add_callback(got)
    w.start()
    _write(ab_db, "A", [1])
    got.wait_for(1)
    w.stop()
    assert w.state == State.STOPPED
    _write(ab_db, "B", [2])  # while stopped
    w.start()
    _write(ab_db, "A", [3])
    got.wait_for(3)
    time.sleep(0.05)
    assert sorted((c.table, c.keys) for c in got.changes) == [("A", (1,)), ("A", (3,)), ("B", (2,))]


def test_failed_database_watcher_can_be_started_again(ab_db, dbwatch):
    fail = {"on": True}

    def maybe_fail(change, index):
        if fail["on"] and change.table == "B":
            raise RuntimeError("B is not welcome yet")

    got = Collector(maybe_fail)
    w = dbwatch(ab_db)
    w.add_callback(got)
    w.start()
    _write(ab_db, "B", [1])
    wait_until(lambda: w.state == State.FAILED)
    assert "not welcome" in str(w.failure)
    fail["on"] = False
    w.start()
    assert w.state == State.RUNNING and w.failure is None
    got.wait_for(1)
    _write(ab_db, "A", [2])
    got.wait_for(2)
    assert sorted((c.table, c.keys) for c in got.changes) == [("A", (2,)), ("B", (1,))]


def test_stats_prometheus_and_watermark(ab_db, dbwatch):
    got = Collector()
    w = dbwatch(ab_db)
    w.add_callback(got)
    w.start()
    ts = _write(ab_db, "A", [1, 2])
    got.wait_for(2)
    wait_until(lambda: w.watermark() is not None and w.watermark() >= ts)
    stats = {s["table"]: s for s in w.stats()}
    assert set(stats) == {"A", "B"} and stats["A"]["rows"] == 2 and stats["B"]["rows"] == 0
    text = w.prometheus()
    assert 'spanner_watcher_rows_total{table="A",shard="all"} 2' in text
    assert 'spanner_watcher_rows_total{table="B",shard="all"} 0' in text
    assert text.count("# TYPE spanner_watcher_polls_total counter") == 1
