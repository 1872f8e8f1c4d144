"""DML through the official client: exact row counts, batch DML, partitioned DML, commit timestamps."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types
from google.rpc import code_pb2

DDL = [
    """CREATE TABLE Acc (Id INT64 NOT NULL, Owner STRING(MAX), Balance INT64 NOT NULL,
                        Changed TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)""",
]


@pytest.fixture
def db(make_database):
    database = make_database(DDL)
    with database.batch() as b:
        b.insert("Acc", ("Id", "Owner", "Balance"), [(i, "even" if i % 2 == 0 else "odd", i * 100) for i in range(1, 11)])
    return database


def _rows(db, sql="SELECT Id, Owner, Balance FROM Acc ORDER BY Id"):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


def _update(db, sql, params=None, types=None):
    return db.run_in_transaction(lambda txn: txn.execute_update(sql, params=params, param_types=types))


def test_insert_update_delete_report_exact_row_counts(db):
    assert _update(db, "INSERT INTO Acc (Id, Owner, Balance) VALUES (11, 'x', 1), (12, 'x', 2)") == 2
    assert _update(db, "UPDATE Acc SET Balance = Balance + 1 WHERE Owner = @o", {"o": "odd"},
                   {"o": param_types.STRING}) == 5
    assert _update(db, "UPDATE Acc SET Balance = 0 WHERE Id > 1000") == 0
    assert _update(db, "DELETE FROM Acc WHERE Owner = 'x' OR Id = 2") == 3
    rows = _rows(db)
    assert [r[0] for r in rows] == [1, 3, 4, 5, 6, 7, 8, 9, 10]
    assert rows[0] == [1, "odd", 101] and rows[2] == [4, "even", 400]


def test_insert_select_and_update_with_subquery(db):
    count = _update(db, "INSERT INTO Acc (Id, Owner, Balance) SELECT Id + 100, 'copy', Balance FROM Acc WHERE Id <= 3")
    assert count == 3
    assert _update(db, "UPDATE Acc SET Balance = (SELECT MAX(Balance) FROM Acc WHERE Owner = 'odd') WHERE Id = 101") == 1
    assert _rows(db, "SELECT Balance FROM Acc WHERE Id IN (101, 102, 103) ORDER BY Id") == [[900], [200], [300]]


def test_dml_insert_of_existing_key_is_already_exists(db):
    with pytest.raises(exceptions.AlreadyExists) as info:
        _update(db, "INSERT INTO Acc (Id, Owner, Balance) VALUES (50, 'n', 0), (3, 'dup', 0)")
    assert "Acc" in info.value.message
    assert _rows(db, "SELECT Id FROM Acc WHERE Id = 50") == []  # the statement is all or nothing


def test_dml_and_read_in_same_transaction_see_the_dml(db):
    def work(txn):
        txn.execute_update("UPDATE Acc SET Balance = 7 WHERE Id = 1")
        txn.execute_update("DELETE FROM Acc WHERE Id = 2")
        txn.execute_update("INSERT INTO Acc (Id, Owner, Balance) VALUES (20, 'new', 20)")
        read = [list(r) for r in txn.read("Acc", ("Id", "Balance"), spanner.KeySet(keys=[[1], [2], [20]]))]
        queried = [list(r) for r in txn.execute_sql("SELECT COUNT(*), SUM(Balance) FROM Acc")]
        return read, queried

    read, queried = db.run_in_transaction(work)
    assert read == [[1, 7], [20, 20]]
    total = sum(i * 100 for i in range(3, 11)) + 7 + 20
    assert queried == [[10, total]]
    assert _rows(db, "SELECT COUNT(*), SUM(Balance) FROM Acc") == [[10, total]]


def test_batch_update_returns_counts(db):
    def work(txn):
        return txn.batch_update([
            "UPDATE Acc SET Balance = Balance * 2 WHERE Owner = 'even'",
            ("DELETE FROM Acc WHERE Id = @id", {"id": 1}, {"id": param_types.INT64}),
            "INSERT INTO Acc (Id, Owner, Balance) VALUES (30, 'b', 1)",
        ])

    status, counts = db.run_in_transaction(work)
    assert status.code == code_pb2.OK
    assert counts == [5, 1, 1]
    assert _rows(db, "SELECT Balance FROM Acc WHERE Id IN (2, 30) ORDER BY Id") == [[400], [1]]
    assert _rows(db, "SELECT COUNT(*) FROM Acc WHERE Id = 1") == [[0]]


def test_batch_update_stops_at_failing_statement(db):
    def work(txn):
        status, counts = txn.batch_update([
            "UPDATE Acc SET Balance = 1 WHERE Id <= 3",
            "INSERT INTO Acc (Id, Owner, Balance) VALUES (40, 'ok', 0)",
            "INSERT INTO Acc (Id, Owner, Balance) VALUES (5, 'dup', 0)",  # fails: key exists
            "DELETE FROM Acc",  # never runs
        ])
        return status, counts

    status, counts = db.run_in_transaction(work)
    assert status.code == code_pb2.ALREADY_EXISTS
    assert "Acc" in status.message
    assert counts == [3, 1]
    # The transaction committed what ran before the failure; the statements after it never ran.
    assert _rows(db, "SELECT COUNT(*) FROM Acc") == [[11]]
    assert _rows(db, "SELECT Balance FROM Acc WHERE Id IN (1, 40) ORDER BY Id") == [[1], [0]]


def test_batch_update_with_bad_first_statement(db):
    def work(txn):
        # Begin the transaction first: with an inline begin, a failing first statement starts
        # no transaction (as on Spanner), and this client then cannot commit.
        list(txn.execute_sql("SELECT 1"))
        return txn.batch_update(["UPDATE NoSuchTable SET X = 1 WHERE TRUE", "DELETE FROM Acc WHERE TRUE"])

    status, counts = db.run_in_transaction(work)
    assert status.code == code_pb2.INVALID_ARGUMENT and "NoSuchTable" in status.message
    assert counts == []
    assert _rows(db, "SELECT COUNT(*) FROM Acc") == [[10]]


def test_partitioned_dml_reports_lower_bound_count(db):
    count = db.execute_partitioned_dml("UPDATE Acc SET Balance = Balance - 1 WHERE Balance >= @min",
                                       params={"min": 500}, param_types={"min": param_types.INT64})
    assert count == 6
    assert _rows(db, "SELECT Balance FROM Acc WHERE Id IN (4, 5, 10) ORDER BY Id") == [[400], [499], [999]]
    assert db.execute_partitioned_dml("DELETE FROM Acc WHERE Owner = 'odd'") == 5
    assert _rows(db, "SELECT COUNT(*) FROM Acc") == [[5]]


def test_pending_commit_timestamp_in_insert_and_update(db):
    def insert(txn):
        return txn.execute_update(
            "INSERT INTO Acc (Id, Owner, Balance, Changed) VALUES (60, 'c', 0, PENDING_COMMIT_TIMESTAMP())")

    before = dt.datetime.now(dt.UTC)
    with db.batch() as marker:  # a commit whose timestamp bounds the next one from below
        marker.update("Acc", ("Id", "Balance"), [(1, 100)])
    assert db.run_in_transaction(insert) == 1
    (first,) = _rows(db, "SELECT Changed FROM Acc WHERE Id = 60")
    assert first[0] > marker.committed >= before - dt.timedelta(seconds=5)

    count = _update(db, "UPDATE Acc SET Changed = PENDING_COMMIT_TIMESTAMP() WHERE Id IN (60, 1)")
    assert count == 2
    rows = _rows(db, "SELECT Id, Changed FROM Acc WHERE Id IN (1, 60) ORDER BY Id")
    assert rows[0][1] == rows[1][1] > first[0]  # one commit, one timestamp for both rows


def test_pending_commit_timestamp_matches_commit_timestamp(db):
    txn_holder = {}

    def work(txn):
        txn_holder["txn"] = txn
        return txn.execute_update("UPDATE Acc SET Changed = PENDING_COMMIT_TIMESTAMP() WHERE Id = 3")

    db.run_in_transaction(work)
    committed = txn_holder["txn"].committed
    assert _rows(db, "SELECT Changed FROM Acc WHERE Id = 3") == [[committed]]


def test_pending_commit_timestamp_on_column_without_option_is_rejected(make_database):
    plain = make_database(["CREATE TABLE P (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        _update(plain, "INSERT INTO P (Id, Ts) VALUES (1, PENDING_COMMIT_TIMESTAMP())")
    assert "Ts" in info.value.message


def test_dml_in_read_only_transaction_is_rejected(db):
    with pytest.raises(exceptions.InvalidArgument):
        with db.snapshot() as snap:
            list(snap.execute_sql("UPDATE Acc SET Balance = 0 WHERE TRUE"))
    assert _rows(db, "SELECT COUNT(*) FROM Acc WHERE Balance = 0") == [[0]]


def test_failed_dml_statement_leaves_transaction_usable(db):
    def work(txn):
        # Begun first: after a failed inline-begin statement this client never releases its own lock.
        list(txn.execute_sql("SELECT 1"))
        with pytest.raises(exceptions.AlreadyExists):
            txn.execute_update("INSERT INTO Acc (Id, Owner, Balance) VALUES (1, 'dup', 0)")
        return txn.execute_update("UPDATE Acc SET Balance = 5 WHERE Id = 1")

    assert db.run_in_transaction(work) == 1
    assert _rows(db, "SELECT Balance FROM Acc WHERE Id = 1") == [[5]]


def test_failed_first_statement_does_not_hold_up_the_next_transaction(db):
    # The failing statement begins the transaction inline, so the client never learns its id
    # and cannot end it: the server must not let it block the database.
    with pytest.raises(exceptions.AlreadyExists):
        _update(db, "INSERT INTO Acc (Id, Owner, Balance) VALUES (1, 'dup', 0)")
    started = time.monotonic()
    assert _update(db, "UPDATE Acc SET Balance = 1 WHERE Id = 1") == 1
    assert time.monotonic() - started < 3
