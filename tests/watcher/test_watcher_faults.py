"""Injected ABORTED / UNAVAILABLE on polls (ExecuteStreamingSql) and checkpoint writes (Commit):
the watcher keeps running, delivers every row, and its stored checkpoint ends where it stopped."""

from __future__ import annotations

import threading

import pytest

from tests.watcher.core_support import T_DDL, Collector, insert_t, wait_until
from watcher import MIN_TIMESTAMP, SpannerCommitTimestampRepository, State, TableId, TableWatcher
from watcher.capture.helper_tables.change_sets import ChangeSetWatcher, change_set_batch, change_sets_table_ddl
from watcher.capture.helper_tables.history import HistoryTable, HistoryWatcher

ROWS = 40
LIMIT = 7


def gated_watcher(db, watcher_cls=TableWatcher, *args, **kw):
    """A watcher whose first callback waits for ``gate``: faults are armed while it is mid-poll."""
    gate = threading.Event()
    got = Collector(lambda change, index: gate.wait(10) if index == 0 else None)
    repo = SpannerCommitTimestampRepository(db)
    w = watcher_cls(db, *args, poll_interval=0.01, limit=LIMIT, initial_timestamp=MIN_TIMESTAMP, checkpoints=repo, **kw)
    w.add_callback(got)
    return w, got, gate, repo


# (rpc, code, whether the watcher itself must retry: the client already retries some of them,
# e.g. UNAVAILABLE on Commit and ABORTED on a batch's commit)
FAULTS = [
    ("ExecuteStreamingSql", "ABORTED", True),
    ("ExecuteStreamingSql", "UNAVAILABLE", False),
    ("ExecuteStreamingSql", "DEADLINE_EXCEEDED", True),
    ("Commit", "ABORTED", False),
    ("Commit", "UNAVAILABLE", False),
    ("Commit", "INTERNAL", True),
]


@pytest.mark.parametrize(("method", "code", "watcher_retries"), FAULTS)
def test_table_watcher_survives_faults(make_database, local_server, method, code, watcher_retries):
    db = make_database([T_DDL])
    for start in range(0, ROWS, 10):
        insert_t(db, range(start, start + 10))  # groups of 10 rows per commit timestamp, LIMIT 7 cuts them
    w, got, gate, repo = gated_watcher(db, TableWatcher, "T")
    with w:
        wait_until(lambda: w.stats()["polls"] >= 1)
        local_server.faults.inject(method, code, count=3)
        gate.set()
        got.wait_for(ROWS, timeout=20)
        wait_until(lambda: w.position is not None and w.position.key is None and w.stats()["last_poll_rows"] == 0)
        assert w.state == State.RUNNING and w.failure is None
        assert w.stats()["retries"] >= (1 if watcher_retries else 0)
    assert local_server.faults.fired.get(method, 0) >= 3
    keys = [k for (k,) in got.keys()]
    assert set(keys) == set(range(ROWS))
    # At-least-once: a retried poll may hand over rows again, but never out of order per key
    # and never more than one poll's worth per fault.
    assert len(keys) - ROWS <= 3 * LIMIT
    assert repo.get(TableId("T")) == w.position


def test_change_set_and_history_watchers_survive_poll_faults(make_database, local_server):
    db = make_database([change_sets_table_ddl(),
                        "CREATE TABLE O (Id INT64 NOT NULL, CHANGE_SET_ID STRING(MAX)) PRIMARY KEY (Id)",
                        "CREATE TABLE D (Id INT64 NOT NULL, V INT64) PRIMARY KEY (Id)"])
    history = HistoryTable.discover(db, "D")
    history.create(db)
    for start in range(0, ROWS, 10):
        with change_set_batch(db) as (batch, cs):
            batch.insert("O", ["Id", "CHANGE_SET_ID"], [[i, cs] for i in range(start, start + 10)])
        db.run_in_transaction(lambda txn, s=start: history.writer(txn).insert(["Id", "V"], [[i, i] for i in range(s, s + 10)]))
    cs_w, cs_got, cs_gate, _ = gated_watcher(db, ChangeSetWatcher, "O")
    h_w, h_got, h_gate, _ = gated_watcher(db, HistoryWatcher, "D")
    with cs_w, h_w:
        wait_until(lambda: cs_w.stats()["polls"] >= 1 and h_w.stats()["polls"] >= 1)
        local_server.faults.inject("ExecuteStreamingSql", "UNAVAILABLE", count=4)
        local_server.faults.inject("ExecuteStreamingSql", "ABORTED", count=4)
        cs_gate.set()
        h_gate.set()
        cs_got.wait_for(ROWS, timeout=20)
        h_got.wait_for(ROWS, timeout=20)
        assert cs_w.failure is None and h_w.failure is None
    assert {k for (k,) in cs_got.keys()} == set(range(ROWS))
    assert {k for (k,) in h_got.keys()} == set(range(ROWS))
    assert {c.mod_type for c in h_got.changes} == {"INSERT"}
