"""Tables created and dropped under a running DatabaseWatcher (invariant 6: the world may change).

A table created while the watcher runs joins at the next discovery and starts from the read
timestamp of the last discovery that did not see it, so rows written right after CREATE TABLE
(before any discovery saw the table) arrive too. A dropped table's watcher ends alone, with a
WARNING and a table event; the other tables go on and ``failure`` stays None.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.error
import urllib.request

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


def test_a_per_table_setting_that_does_not_know_a_new_table_keeps_discovery_going(make_database, churn_watch, caplog):
    """A setting given as a function is the user's code: raising for a table it does not know
    leaves that table pending (a warning naming it, tried again at each look); the tables
    created after it still join, and it joins once the function knows it, from where it began."""
    db = make_database([_ddl("A")])
    columns = {"A": "Ts", "Later": "Ts"}
    got = Collector()
    w = churn_watch(db, discover_interval=0.2, commit_timestamp_column=lambda table: columns[table])
    w.add_callback(got)
    with caplog.at_level(logging.WARNING, logger="watcher"):
        w.start()
        db.update_ddl([_ddl("Surprise")]).result(30)
        _write(db, "Surprise", [7])
        wait_until(lambda: "could not start watching the new table Surprise" in caplog.text, timeout=15)
        db.update_ddl([_ddl("Later")]).result(30)
        _write(db, "Later", [1, 2])
        _write(db, "A", [1])
        wait_until(lambda: len(got) >= 3, timeout=15)
        assert _keys(got) == {"A": [1], "Later": [1, 2]}
        assert "Surprise" not in w.watchers
        assert "KeyError: 'Surprise'" in caplog.text
        columns["Surprise"] = "Ts"
        wait_until(lambda: len(got) >= 4, timeout=15)
    assert _keys(got) == {"A": [1], "Later": [1, 2], "Surprise": [7]}
    assert w.failure is None and w.state == State.RUNNING


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


def test_the_database_gone_is_a_failure_of_the_whole(make_database, churn_watch):
    db = make_database([_ddl("A"), _ddl("B")])
    w = churn_watch(db, discover_interval=0.1)
    w.add_callback(Collector())
    w.start()
    db.drop()
    wait_until(lambda: w.state == State.FAILED, timeout=15)
    assert w.failure is not None and w.database_stats()["tables_dropped"] == 0


def test_bad_selections_fail_on_building(make_database):
    db = make_database([_ddl("A")])
    with pytest.raises(ConfigurationError, match="exclude"):
        DatabaseWatcher(db, include=["A"], exclude=["B"])
    with pytest.raises(ConfigurationError, match="discover_interval"):
        DatabaseWatcher(db, discover_interval=-1)


# --- the command line: `spanner-watcher watch --metrics-port` --------------------------------------

def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sample(text: str, name: str, table: str | None = None) -> float | None:
    labels = f'{{table="{table}",shard="all"}}' if table is not None else ""
    for line in text.splitlines():
        if line.startswith(f"{name}{labels} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_watch_serves_metrics_and_health_while_tables_come_and_go(make_database, tmp_path):
    from tests.conftest import INSTANCE, PROJECT
    from watcher.cli.main import main

    db = make_database([_ddl("A"), _ddl("B"), _ddl("SkipMe")])
    config = tmp_path / "watcher.toml"
    config.write_text('[watch]\npoll_interval = 0.05\ninitial_timestamp = "beginning"\nstaging_dir = "staging"\n'
                      'discover_interval = 0.2\n[tables]\ninclude = "all"\nexclude = ["skip*"]\n')
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    result: dict[str, int] = {}
    argv = ["watch", "--config", str(config), "--duration", "6", "--quiet", "--metrics-port", str(port),
            "--project", PROJECT, "--instance", INSTANCE, "--database", db.database_id]
    runner = threading.Thread(target=lambda: result.setdefault("rc", main(argv)))
    runner.start()
    try:
        def healthy() -> bool:
            try:
                return _get(f"{base}/healthz")[0] == 200
            except OSError:
                return False

        wait_until(healthy, timeout=15, interval=0.05)
        _write(db, "A", [1, 2, 3])
        _write(db, "SkipMe", [1])
        db.update_ddl([_ddl("Added")]).result(30)
        _write(db, "Added", [1, 2])
        db.update_ddl(["DROP TABLE B"]).result(30)

        def caught_up() -> bool:
            text = _get(f"{base}/metrics")[1]
            return (_sample(text, "spanner_watcher_rows_total", "Added") == 2
                    and _sample(text, "spanner_watcher_tables_dropped_total") == 1)

        wait_until(caught_up, timeout=15, interval=0.1)
        status, text = _get(f"{base}/metrics")
        assert status == 200
        assert _sample(text, "spanner_watcher_rows_total", "A") == 3
        assert _sample(text, "spanner_watcher_tables_added_total") == 1
        assert _sample(text, "spanner_watcher_table_dropped", "B") == 1
        assert _sample(text, "spanner_watcher_running", "B") == 0
        assert _sample(text, "spanner_watcher_running", "A") == 1
        assert _sample(text, "spanner_watcher_rows_total", "SkipMe") is None
        assert _sample(text, "spanner_watcher_polls_total", "A") >= 1
        assert 0 <= _sample(text, "spanner_watcher_lag_seconds", "A") < 60
        assert abs(_sample(text, "spanner_watcher_watermark_timestamp_seconds", "A") - time.time()) < 60
        assert _sample(text, "spanner_watcher_failures_total", "A") == 0
        status, body = _get(f"{base}/healthz")
        assert status == 200 and body.startswith("ok")
        assert _get(f"{base}/nothing")[0] == 404
    finally:
        runner.join(30)
    assert result == {"rc": 0}
    with pytest.raises(OSError):  # stopped with the command
        _get(f"{base}/healthz")
    staged = {p.parent.name for p in (tmp_path / "staging").glob("table=*/*.jsonl")}
    assert staged == {"table=A", "table=Added"}


def test_health_says_why_a_watcher_failed(make_database, churn_watch):
    from watcher.cli.metrics_server import MetricsServer

    db = make_database([_ddl("A")])
    w = churn_watch(db)

    def refuse(change):
        raise RuntimeError("no thanks")

    w.add_callback(refuse)
    with MetricsServer(w, port=0) as server:
        assert _get(f"{server.url}/healthz") == (503, "new\n")
        w.start()
        assert _get(f"{server.url}/healthz")[0] == 200
        _write(db, "A", [1])
        wait_until(lambda: w.state == State.FAILED)
        status, body = _get(f"{server.url}/healthz")
        assert status == 503 and body.startswith("failed:") and "no thanks" in body
