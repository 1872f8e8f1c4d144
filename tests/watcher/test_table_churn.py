"""Tables created and dropped under a running DatabaseWatcher (invariant 6: the world may change).

A table created while the watcher runs joins at the next discovery and starts from the read
timestamp of the last discovery that did not see it, so rows written right after CREATE TABLE
(before any discovery saw the table) arrive too. A dropped table's watcher ends alone, with a
WARNING and a table event; the other tables go on and ``failure`` stays None.
"""

from __future__ import annotations

import logging

import pytest

from tests.watcher.core_support import Collector, insert, wait_until
from watcher import ConfigurationError, DatabaseWatcher, InMemoryCommitTimestampRepository, RetryPolicy, State

FAST = RetryPolicy(initial=0.001, maximum=0.01)


def _ddl(table: str) -> str:
    return (f"CREATE TABLE {table} (Id INT64 NOT NULL, Name STRING(MAX), "
            f"Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")


def _write(db, table: str, ids) -> None:
    insert(db, table, ("Id", "Name"), [(i, f"{table}{i}") for i in ids])


@pytest.fixture
def churn_watch():
    made: list[DatabaseWatcher] = []

    def make(database, **kwargs) -> DatabaseWatcher:
        kwargs.setdefault("poll_interval", 0.01)
        kwargs.setdefault("checkpoints", InMemoryCommitTimestampRepository())
        kwargs.setdefault("retry_policy", FAST)
        w = DatabaseWatcher(database, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop(timeout=5)


def _keys(got: Collector) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for c in list(got.changes):
        out.setdefault(c.table, []).append(c.keys[0])
    return {t: sorted(k) for t, k in out.items()}


def test_a_created_table_joins_and_its_first_rows_arrive(make_database, churn_watch):
    db = make_database([_ddl("A")])
    got, events = Collector(), []
    w = churn_watch(db, discover_interval=1.0)
    w.add_callback(got)
    w.add_table_listener(events.append)
    w.start()
    wait_until(lambda: w.database_stats()["discoveries"] >= 1)
    db.update_ddl([_ddl("Fresh")]).result(30)
    _write(db, "Fresh", range(5))  # right after the CREATE TABLE: no discovery has seen Fresh yet
    _write(db, "A", [1])
    wait_until(lambda: "Fresh" in w.watchers, timeout=15)
    _write(db, "Fresh", [5])
    wait_until(lambda: len(got) >= 7, timeout=15)
    assert _keys(got) == {"A": [1], "Fresh": [0, 1, 2, 3, 4, 5]}
    assert [(e.kind, e.table) for e in events] == [("added", "Fresh")]
    stats = w.database_stats()
    assert stats["tables_added"] == 1 and stats["tables_watched"] == 2 and stats["tables_dropped"] == 0
    assert "spanner_watcher_tables_added_total 1" in w.prometheus()
    assert w.failure is None and w.state == State.RUNNING


def test_a_dropped_table_ends_alone_with_an_event(make_database, churn_watch, caplog):
    db = make_database([_ddl("A"), _ddl("B"), _ddl("C")])
    got, events = Collector(), []
    w = churn_watch(db, discover_interval=0.2)
    w.add_callback(got)
    w.add_table_listener(events.append)
    w.start()
    _write(db, "B", [1])
    got.wait_for(1)
    with caplog.at_level(logging.WARNING, logger="watcher.capture.database_watcher"):
        db.update_ddl(["DROP TABLE B"]).result(30)
        wait_until(lambda: w.database_stats()["tables_dropped"] == 1, timeout=15)
    _write(db, "A", [2])
    _write(db, "C", [3, 4])
    wait_until(lambda: len(got) >= 4)
    assert _keys(got) == {"A": [2], "B": [1], "C": [3, 4]}
    assert w.failure is None and w.state == State.RUNNING
    assert [(e.kind, e.table) for e in events] == [("dropped", "B")]
    assert any(r.levelno == logging.WARNING and "B" in r.getMessage() and "dropped" in r.getMessage()
               for r in caplog.records)
    stats = {s["table"]: s for s in w.stats()}
    assert stats["B"]["state"] == "dropped" and stats["B"]["rows"] == 1
    assert stats["A"]["state"] == stats["C"]["state"] == "running"
    assert w.database_stats()["dropped"] == ["B"] and sorted(w.watchers) == ["A", "C"]
    text = w.prometheus()
    assert "spanner_watcher_tables_dropped_total 1" in text
    assert 'spanner_watcher_table_dropped{table="B",shard="all"} 1' in text
    assert 'spanner_watcher_running{table="A",shard="all"} 1' in text
    # A stop and a restart start the tables still there, not the dropped one.
    w.stop()
    w.start()
    assert sorted(w.watchers) == ["A", "C"] and w.failure is None


def test_patterns_choose_which_new_tables_join(make_database, churn_watch):
    db = make_database([_ddl("LogOld"), _ddl("Other")])
    got = Collector()
    w = churn_watch(db, include=["log*"], exclude=["LogSecret*"], discover_interval=0.2)
    w.add_callback(got)
    w.start()
    assert sorted(w.watchers) == ["LogOld"]
    db.update_ddl([_ddl("LogNew"), _ddl("LogSecretKeys"), _ddl("Unrelated")]).result(30)
    for table in ("LogNew", "LogSecretKeys", "Unrelated", "Other", "LogOld"):
        _write(db, table, [1])
    wait_until(lambda: len(got) >= 2, timeout=15)
    wait_until(lambda: w.database_stats()["discoveries"] >= 3)
    assert _keys(got) == {"LogNew": [1], "LogOld": [1]}
    assert sorted(w.watchers) == ["LogNew", "LogOld"] and w.database_stats()["tables_added"] == 1


def test_a_table_created_while_stopped_starts_where_the_last_discovery_left(make_database, churn_watch):
    db = make_database([_ddl("A")])
    got = Collector()
    w = churn_watch(db, discover_interval=60)
    w.add_callback(got)
    w.start()
    w.stop()
    db.update_ddl([_ddl("Later")]).result(30)
    _write(db, "Later", [1, 2])
    w.start()
    got.wait_for(2)
    assert _keys(got) == {"Later": [1, 2]}


def test_bad_selections_fail_on_building(make_database):
    db = make_database([_ddl("A")])
    with pytest.raises(ConfigurationError, match="exclude"):
        DatabaseWatcher(db, include=["A"], exclude=["B"])
    with pytest.raises(ConfigurationError, match="discover_interval"):
        DatabaseWatcher(db, discover_interval=-1)
