"""Statement deadlines through the official client: a statement that outlives its call's
deadline (``timeout=``) is answered DEADLINE_EXCEEDED, and the server stops working on it.

The long statements cross-join three 1,000-element arrays (a billion triples, about a minute
of work unstopped); the short ones answer in milliseconds and are unaffected.
"""

from __future__ import annotations

import time

import pytest
from google.api_core import exceptions
from google.cloud import spanner

from tests.conftest import emulator_lacks

DDL = ["CREATE TABLE T (Id INT64 NOT NULL, V INT64) PRIMARY KEY (Id)"]
TRIPLES = ("UNNEST(GENERATE_ARRAY(1, 1000)) AS a CROSS JOIN UNNEST(GENERATE_ARRAY(1, 1000)) AS b "
           "CROSS JOIN UNNEST(GENERATE_ARRAY(1, 1000)) AS c")
LONG_QUERY = f"SELECT COUNT(*) FROM {TRIPLES} WHERE a * b * c = -1"
LONG_DML = f"UPDATE T SET V = 0 WHERE Id IN (SELECT a FROM {TRIPLES} WHERE a * b * c = -1)"
#: Far below a minute, far above the one-second deadlines the tests give.
STOPPED_WITHIN_SECONDS = 10.0


@pytest.fixture
def tdb(make_database):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("T", ("Id", "V"), [(i, i) for i in range(1, 6)])
    return db


def test_long_query_is_deadline_exceeded(tdb):
    started = time.monotonic()
    with pytest.raises(exceptions.DeadlineExceeded):
        with tdb.snapshot() as snap:
            list(snap.execute_sql(LONG_QUERY, timeout=1.0))
    assert time.monotonic() - started < STOPPED_WITHIN_SECONDS


def test_short_query_with_a_deadline_answers(tdb):
    with tdb.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT COUNT(*) FROM UNNEST(GENERATE_ARRAY(1, 300)) AS a CROSS JOIN "
                                     "UNNEST(GENERATE_ARRAY(1, 300)) AS b", timeout=30.0))
    assert rows == [[90_000]]


def test_short_dml_with_a_deadline_runs(tdb):
    def work(txn):
        assert txn.execute_update("UPDATE T SET V = V + 10 WHERE Id <= 2", timeout=30.0) == 2
    tdb.run_in_transaction(work)
    with tdb.snapshot() as snap:
        assert list(snap.execute_sql("SELECT V FROM T ORDER BY Id", timeout=30.0)) == [[11], [12], [3], [4], [5]]


@emulator_lacks("stopping a statement at its call's deadline")
def test_stopped_query_frees_its_read_write_transaction(tdb):
    # The query holds the database's writer; had it gone on after the deadline, the rollback and
    # the next commit would wait the minute it needs.
    started = time.monotonic()

    def work(txn):
        list(txn.execute_sql(LONG_QUERY, timeout=1.0))

    with pytest.raises(exceptions.DeadlineExceeded):
        tdb.run_in_transaction(work)
    with tdb.batch() as b:
        b.insert("T", ("Id", "V"), [(100, 100)])
    assert time.monotonic() - started < STOPPED_WITHIN_SECONDS
    with tdb.snapshot() as snap:
        assert list(snap.execute_sql("SELECT V FROM T WHERE Id = 100")) == [[100]]


class _Stopped(Exception):
    """Ends run_in_transaction's function with what a statement answered (no commit, no retry)."""


@emulator_lacks("stopping a statement at its call's deadline")
def test_stopped_dml_is_deadline_exceeded_and_its_transaction_writes_nothing(tdb):
    # Stopping a write rolls back what the transaction wrote (SQLite's interrupt does), so the
    # transaction is ABORTED from then on: the client runs it again if it carries on.
    started = time.monotonic()

    def work(txn):
        assert txn.execute_update("UPDATE T SET V = 99 WHERE Id = 1") == 1
        txn.execute_update(LONG_DML, timeout=1.0)

    with pytest.raises(exceptions.DeadlineExceeded):
        tdb.run_in_transaction(work)
    tdb.run_in_transaction(lambda txn: txn.execute_update("UPDATE T SET V = 7 WHERE Id = 2"))
    assert time.monotonic() - started < STOPPED_WITHIN_SECONDS
    with tdb.snapshot() as snap:
        assert [r[0] for r in snap.read("T", ("V",), spanner.KeySet(all_=True))] == [1, 7, 3, 4, 5]


@emulator_lacks("stopping a statement at its call's deadline")
def test_stopped_batch_dml_ends_deadline_exceeded(tdb):
    # ExecuteBatchDml answers with the counts of the statements that ran and the status that stopped
    # it, unless the client's own deadline ends the call first: both say DEADLINE_EXCEEDED.
    started = time.monotonic()

    def work(txn):
        raise _Stopped(txn.batch_update(["UPDATE T SET V = 50 WHERE Id = 1", LONG_DML], timeout=1.0))

    with pytest.raises((_Stopped, exceptions.DeadlineExceeded)) as stopped:
        tdb.run_in_transaction(work)
    assert time.monotonic() - started < STOPPED_WITHIN_SECONDS
    if isinstance(stopped.value, _Stopped):
        status, counts = stopped.value.args[0]
        assert (status.code, counts) == (4, [1])  # google.rpc.Code.DEADLINE_EXCEEDED
    tdb.run_in_transaction(lambda txn: txn.execute_update("UPDATE T SET V = 8 WHERE Id = 3"))
    with tdb.snapshot() as snap:
        assert [r[0] for r in snap.read("T", ("V",), spanner.KeySet(all_=True))] == [1, 2, 8, 4, 5]


def test_read_only_transaction_keeps_its_snapshot_after_a_stopped_query(tdb):
    with tdb.snapshot(multi_use=True) as snap:
        before = list(snap.execute_sql("SELECT Id, V FROM T ORDER BY Id"))
        with pytest.raises(exceptions.DeadlineExceeded):
            list(snap.execute_sql(LONG_QUERY, timeout=1.0))
        with tdb.batch() as b:
            b.update("T", ("Id", "V"), [(1, 1000)])
        assert list(snap.execute_sql("SELECT Id, V FROM T ORDER BY Id")) == before
    with tdb.snapshot() as fresh:
        assert list(fresh.execute_sql("SELECT V FROM T WHERE Id = 1")) == [[1000]]
