"""Change-set pollers: tables without a commit-timestamp column, written with mutations and DML."""

from __future__ import annotations

import pytest
from google.cloud.spanner_v1 import KeySet, param_types

from tests.watcher.core_support import Collector, wait_until
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
from watcher.capture.helper_tables.change_sets import (
    ChangeSetWatcher,
    change_set_batch,
    change_set_column_ddl,
    change_sets_table_ddl,
    run_in_change_set_transaction,
)
from watcher.errors import TableNotFoundError, TableNotWatchableError

DDL = [
    change_sets_table_ddl(),
    "CREATE TABLE Orders (OrderId INT64 NOT NULL, Total FLOAT64) PRIMARY KEY (OrderId)",
    *change_set_column_ddl("Orders"),
    "CREATE TABLE Items (OrderId INT64 NOT NULL, ItemId STRING(20) NOT NULL, Qty INT64, CHANGE_SET_ID STRING(MAX)) "
    "PRIMARY KEY (OrderId, ItemId)",
    "CREATE TABLE Plain (Id INT64 NOT NULL) PRIMARY KEY (Id)",
]
STRING = param_types.STRING


@pytest.fixture
def db(make_database):
    return make_database(DDL)


def watcher(db, tables=("Orders", "Items"), **kw):
    kw.setdefault("checkpoints", InMemoryCommitTimestampRepository())
    return ChangeSetWatcher(db, list(tables) if not isinstance(tables, str) else tables, poll_interval=0.01, **kw)


def change_set_commits(db) -> dict[str, object]:
    with db.snapshot() as snap:
        return {r[0]: r[1] for r in snap.execute_sql("SELECT CHANGE_SET_ID, COMMIT_TIMESTAMP FROM CHANGE_SETS")}


def test_mutations_in_two_tables_are_delivered_per_change_set_in_order(db):
    got = Collector()
    with watcher(db) as w:
        w.add_callback(got)

        def order(txn, cs, order_id, items):
            txn.insert("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[order_id, 10.0 * order_id, cs]])
            txn.insert("Items", ["OrderId", "ItemId", "Qty", "CHANGE_SET_ID"], [[order_id, i, n, cs] for i, n in items])
            return cs

        first = run_in_change_set_transaction(db, order, 1, [("b", 2), ("a", 1)])
        second = run_in_change_set_transaction(db, order, 2, [("c", 5)])
        got.wait_for(5)
    commits = change_set_commits(db)
    assert set(commits) == {first, second}
    assert [(c.table, c.keys) for c in got.changes] == [
        ("Orders", (1,)), ("Items", (1, "a")), ("Items", (1, "b")), ("Orders", (2,)), ("Items", (2, "c"))]
    assert [c.commit_timestamp for c in got.changes] == [commits[first]] * 3 + [commits[second]] * 2
    assert got.changes[0].row == {"OrderId": 1, "Total": 10.0, "CHANGE_SET_ID": first}
    assert got.changes[2].row["Qty"] == 2


def test_dml_writers_and_batches_are_delivered(db):
    def dml(txn, cs):
        txn.execute_update("INSERT INTO Orders (OrderId, Total, CHANGE_SET_ID) VALUES (7, 1.5, @cs)",
                           params={"cs": cs}, param_types={"cs": STRING})
        txn.execute_update("INSERT INTO Items (OrderId, ItemId, Qty, CHANGE_SET_ID) VALUES (7, 'x', 1, @cs)",
                           params={"cs": cs}, param_types={"cs": STRING})
        return cs

    def dml_update(txn, cs):
        txn.execute_update("UPDATE Items SET Qty = Qty + 41, CHANGE_SET_ID = @cs WHERE OrderId = 7",
                           params={"cs": cs}, param_types={"cs": STRING})
        return cs

    inserted = run_in_change_set_transaction(db, dml)
    updated = run_in_change_set_transaction(db, dml_update)
    with change_set_batch(db) as (batch, batched):
        batch.insert_or_update("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[8, 2.5, batched]])
    got = Collector()
    with watcher(db, initial_timestamp=MIN_TIMESTAMP) as w:
        w.add_callback(got)
        got.wait_for(3)
        wait_until(lambda: w.stats()["last_poll_rows"] == 0)
    commits = change_set_commits(db)
    # The item inserted by `inserted` was overwritten by `updated`: delivered once, as updated.
    assert [(c.table, c.keys, c.row["CHANGE_SET_ID"], c.commit_timestamp) for c in got.changes] == [
        ("Orders", (7,), inserted, commits[inserted]),
        ("Items", (7, "x"), updated, commits[updated]),
        ("Orders", (8,), batched, commits[batched]),
    ]
    assert got.changes[0].row["Total"] == 1.5 and got.changes[1].row["Qty"] == 42


def test_overwritten_rows_are_delivered_once_with_the_later_change_set(db):
    def write(txn, cs, total):
        txn.insert_or_update("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[1, total, cs]])
        return cs

    run_in_change_set_transaction(db, write, 1.0)
    later = run_in_change_set_transaction(db, write, 2.0)
    got = Collector()
    with watcher(db, "Orders", initial_timestamp=MIN_TIMESTAMP) as w:
        w.add_callback(got)
        wait_until(lambda: w.stats()["polls"] >= 2 and w.stats()["last_poll_rows"] == 0)
    assert [(c.keys, c.row["Total"], c.row["CHANGE_SET_ID"]) for c in got.changes] == [((1,), 2.0, later)]


def test_every_attempt_gets_its_own_change_set_and_one_row_per_commit(db, local_server):
    attempts: list[str] = []

    def write(txn, cs):
        attempts.append(cs)
        txn.insert_or_update("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[5, 1.0, cs]])
        return cs

    local_server.faults.inject("Commit", "ABORTED", count=2)
    committed = run_in_change_set_transaction(db, write)
    assert len(attempts) == 3 and len(set(attempts)) == 3 and committed == attempts[-1]

    local_server.faults.inject("ExecuteSql", "ABORTED", count=1)
    dml_attempts: list[str] = []

    def dml(txn, cs):
        dml_attempts.append(cs)
        txn.execute_update("UPDATE Orders SET Total = 3.0, CHANGE_SET_ID = @cs WHERE OrderId = 5",
                           params={"cs": cs}, param_types={"cs": STRING})
        return cs

    second = run_in_change_set_transaction(db, dml)
    assert len(dml_attempts) >= 1 and second == dml_attempts[-1]
    assert set(change_set_commits(db)) == {committed, second}
    with db.snapshot() as snap:
        assert list(snap.read("Orders", ["CHANGE_SET_ID"], KeySet(keys=[[5]]))) == [[second]]


def test_all_tables_with_a_change_set_column_and_exclude(db):
    w = ChangeSetWatcher(db, checkpoints=InMemoryCommitTimestampRepository())
    assert w.tables() == ["Items", "Orders"]
    assert ChangeSetWatcher(db, exclude=["items"], checkpoints=InMemoryCommitTimestampRepository()).tables() == ["Orders"]
    got = Collector()
    with ChangeSetWatcher(db, poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository()) as w:
        w.add_callback(got)
        run_in_change_set_transaction(db, lambda txn, cs: txn.insert(
            "Items", ["OrderId", "ItemId", "CHANGE_SET_ID"], [[1, "a", cs]]))
        got.wait_for(1)
    assert [c.table for c in got.changes] == ["Items"]


def test_start_fails_for_tables_that_cannot_be_watched(db):
    with pytest.raises(TableNotWatchableError, match="Plain.*CHANGE_SET_ID"):
        watcher(db, "Plain").start()
    with pytest.raises(TableNotFoundError, match="Nope"):
        watcher(db, "Nope").start()


def test_pollers_of_different_tables_keep_separate_places_and_resume(db):
    repo = SpannerCommitTimestampRepository(db)
    orders, items = Collector(), Collector()
    w1, w2 = watcher(db, "Orders", checkpoints=repo), watcher(db, "Items", checkpoints=repo)
    w1.add_callback(orders)
    w2.add_callback(items)
    with w1, w2:
        run_in_change_set_transaction(db, lambda txn, cs: txn.insert(
            "Orders", ["OrderId", "CHANGE_SET_ID"], [[1, cs]]))
        orders.wait_for(1)
    with change_set_batch(db) as (batch, cs):
        batch.insert("Orders", ["OrderId", "CHANGE_SET_ID"], [[2, cs]])
        batch.insert("Items", ["OrderId", "ItemId", "CHANGE_SET_ID"], [[2, "z", cs]])
    again = Collector()
    w3 = watcher(db, "Orders", checkpoints=repo)
    w3.add_callback(again)
    with w3, w2:
        again.wait_for(1)
        items.wait_for(1)
    assert [c.keys for c in again.changes] == [(2,)]
    assert [c.keys for c in items.changes] == [(2, "z")]


def test_iterator(db):
    with watcher(db, "Orders") as w:
        with change_set_batch(db) as (batch, cs):
            batch.insert("Orders", ["OrderId", "CHANGE_SET_ID"], [[3, cs], [4, cs]])
        seen = []
        for change in w.changes(timeout=5):
            seen.append(change.keys)
            if len(seen) == 2:
                break
    assert seen == [(3,), (4,)]
