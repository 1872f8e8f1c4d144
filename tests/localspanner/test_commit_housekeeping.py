"""A commit is acknowledged as it happened, whatever the housekeeping after it does.

After a commit the server parks idle snapshots and wakes change stream readers. Were a failure
there reported as the commit's, the caller would see a durable write fail (before the fix: 500),
and a retry of it would commit it a second time, at a later timestamp. The failure is injected by
wrapping the engine's parking (only the embedded server has it); writes and reads go through the
official client.
"""

from __future__ import annotations

import sqlite3

import pytest
from google.api_core import exceptions
from google.cloud.spanner_v1 import param_types

from watcher.localspanner.database import engine as engine_module

SCHEMA = ["CREATE TABLE T (K INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (K)"]


@pytest.fixture
def parking_fails(local_server, monkeypatch):
    calls = []

    def broken(self):
        calls.append(1)
        raise sqlite3.OperationalError("database table is locked (test)")

    monkeypatch.setattr(engine_module.DatabaseEngine, "_park_idle_snapshots", broken)
    return calls


def _rows(db):
    with db.snapshot() as snap:
        return sorted(tuple(r) for r in snap.execute_sql("SELECT K, V FROM T"))


def test_a_commit_is_acknowledged_once_when_housekeeping_after_it_fails(make_database, parking_fails):
    db = make_database(SCHEMA)
    with db.batch() as batch:  # a blind write: the group commit path
        batch.insert("T", ("K", "V"), [(1, "a")])
    assert batch.committed is not None

    def read_then_write(txn):  # a transaction that read: the writer-held path
        seen = list(txn.execute_sql("SELECT COUNT(*) FROM T"))[0][0]
        txn.insert("T", ("K", "V"), [(2, f"after {seen}")])

    db.run_in_transaction(read_then_write)
    db.run_in_transaction(lambda txn: txn.execute_update(
        "UPDATE T SET V = @v WHERE K = 1", params={"v": "b"}, param_types={"v": param_types.STRING}))
    assert len(parking_fails) == 3  # the failure happened after each commit
    assert _rows(db) == [(1, "b"), (2, "after 1")]  # each written once: no retry of a done commit
    with pytest.raises(exceptions.AlreadyExists):  # and the server still says so
        with db.batch() as batch:
            batch.insert("T", ("K", "V"), [(1, "again")])
