"""Fault injection on the embedded server: the official client's retry paths, exercised for real.

Skipped against any other server (they need the ``local_server`` fixture).
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner

DDL = ["CREATE TABLE F (Id INT64 NOT NULL, V INT64) PRIMARY KEY (Id)"]
ROWS = 2500  # more than one streamed message (the server closes a message at 2,000 rows)


@pytest.fixture
def fdb(make_database):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("F", ("Id", "V"), [(i, i) for i in range(ROWS)])
    return db


@pytest.mark.parametrize("aborts", [1, 3])
def test_aborted_commit_reruns_the_transaction_function(local_server, fdb, aborts):
    local_server.faults.inject("Commit", "ABORTED", count=aborts)
    runs = []

    def work(txn):
        runs.append(1)
        (row,) = list(txn.read("F", ("V",), spanner.KeySet(keys=[[0]])))
        txn.update("F", ("Id", "V"), [(0, row[0] + 1)])
        return len(runs)

    assert fdb.run_in_transaction(work) == aborts + 1
    assert len(runs) == aborts + 1
    with fdb.snapshot() as snap:
        assert list(snap.read("F", ("V",), spanner.KeySet(keys=[[0]]))) == [[1]]  # applied exactly once


def test_aborted_dml_reruns_the_transaction_function(local_server, fdb):
    local_server.faults.inject("ExecuteSql", "ABORTED", count=2)
    runs = []

    def work(txn):
        runs.append(1)
        return txn.execute_update("UPDATE F SET V = V + 1 WHERE Id < 10")

    assert fdb.run_in_transaction(work) == 10
    assert len(runs) == 3
    with fdb.snapshot() as snap:
        assert list(snap.execute_sql("SELECT SUM(V) FROM F WHERE Id < 10")) == [[sum(range(10)) + 10]]


def test_unavailable_streaming_query_is_retried_and_returns_all_rows(local_server, fdb):
    local_server.faults.inject("ExecuteStreamingSql", "UNAVAILABLE", count=2)
    with fdb.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT Id FROM F ORDER BY Id"))
    assert [r[0] for r in rows] == list(range(ROWS))
    assert local_server.faults.fired.get("ExecuteStreamingSql", 0) >= 2


def test_unavailable_streaming_read_is_retried_and_returns_all_rows(local_server, fdb):
    local_server.faults.inject("StreamingRead", "UNAVAILABLE", count=1)
    with fdb.snapshot() as snap:
        rows = list(snap.read("F", ("Id",), spanner.KeySet(all_=True)))
    assert len(rows) == ROWS and rows[-1] == [ROWS - 1]


def test_unavailable_in_read_write_transaction_query_is_retried(local_server, fdb):
    local_server.faults.inject("ExecuteStreamingSql", "UNAVAILABLE", count=1)

    def work(txn):
        return [r[0] for r in txn.execute_sql("SELECT COUNT(*) FROM F")]

    assert fdb.run_in_transaction(work) == [ROWS]


def test_non_retryable_error_surfaces(local_server, fdb):
    # A read-only query is not re-run on ABORTED (only read/write transactions are).
    local_server.faults.inject("ExecuteStreamingSql", "ABORTED", count=1)
    with pytest.raises(exceptions.Aborted) as info:
        with fdb.snapshot() as snap:
            list(snap.execute_sql("SELECT 1"))
    assert "Injected fault" in info.value.message
    # INTERNAL on a DML statement surfaces from run_in_transaction, and nothing is written.
    local_server.faults.inject("ExecuteSql", "INTERNAL", count=1)
    with pytest.raises(exceptions.InternalServerError):
        fdb.run_in_transaction(lambda txn: txn.execute_update("UPDATE F SET V = -1 WHERE TRUE"))
    with fdb.snapshot() as snap:
        assert list(snap.execute_sql("SELECT COUNT(*) FROM F WHERE V = -1")) == [[0]]
    # The server keeps working afterwards.
    assert fdb.run_in_transaction(lambda txn: txn.execute_update("UPDATE F SET V = 0 WHERE Id = 1")) == 1


def test_faults_are_consumed(local_server, fdb):
    local_server.faults.inject("Commit", "ABORTED", count=1)
    fdb.run_in_transaction(lambda txn: txn.update("F", ("Id", "V"), [(5, 50)]))
    runs = []

    def work(txn):
        runs.append(1)
        txn.update("F", ("Id", "V"), [(5, 51)])

    fdb.run_in_transaction(work)
    assert runs == [1]  # the fault fired once and is gone
