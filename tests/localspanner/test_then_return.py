"""DML THEN RETURN [WITH ACTION], INSERT OR UPDATE and INSERT OR IGNORE through the official client.

Covers ordinary, batch and Partitioned DML, and that every write of these statements reaches
the row versions (stale reads) and change streams like any other DML.
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions

from tests.conftest import emulator_lacks
from tests.localspanner.test_change_streams import _mods, _now, read_stream

pytestmark = emulator_lacks("DML THEN RETURN")

DDL = [
    """CREATE TABLE Acc (Id INT64 NOT NULL, Owner STRING(MAX), Balance INT64,
                        Doubled INT64 AS (Balance * 2) STORED) PRIMARY KEY (Id)""",
    "CREATE CHANGE STREAM AccStream FOR Acc",
]


@pytest.fixture
def db(make_database):
    database = make_database(DDL)
    with database.batch() as b:
        b.insert("Acc", ("Id", "Owner", "Balance"), [(1, "ann", 100), (2, "bo", 200), (3, "cy", 300)])
    return database


def _returning(db, sql):
    """Rows, column names and the exact row count of one DML statement in a read/write transaction."""
    def work(txn):
        result = txn.execute_sql(sql)
        rows = [list(r) for r in result]
        return rows, [f.name for f in result.fields], result.stats.row_count_exact
    return db.run_in_transaction(work)


def _rows(db, sql="SELECT Id, Owner, Balance FROM Acc ORDER BY Id"):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


def test_insert_update_delete_return_the_rows_they_wrote(db):
    rows, names, count = _returning(db, "INSERT INTO Acc (Id, Owner, Balance) VALUES (4, 'di', 40), (5, 'ed', 50) "
                                        "THEN RETURN Id, UPPER(Owner) AS Shout, Doubled")
    assert (rows, names, count) == ([[4, "DI", 80], [5, "ED", 100]], ["Id", "Shout", "Doubled"], 2)
    rows, names, count = _returning(db, "UPDATE Acc SET Balance = Balance + 1 WHERE Id <= 2 THEN RETURN *")
    assert names == ["Id", "Owner", "Balance", "Doubled"] and count == 2
    assert sorted(rows) == [[1, "ann", 101, 202], [2, "bo", 201, 402]]
    rows, _, count = _returning(db, "DELETE FROM Acc WHERE Owner = 'cy' THEN RETURN Id, Balance")
    assert (rows, count) == ([[3, 300]], 1)
    assert [r[0] for r in _rows(db)] == [1, 2, 4, 5]


def test_execute_update_with_then_return_reports_the_count(db):
    assert db.run_in_transaction(lambda t: t.execute_update("UPDATE Acc SET Owner = 'x' WHERE Id > 1 THEN RETURN Id")) == 2


def test_with_action_names_what_happened_to_each_row(db):
    rows, names, _ = _returning(db, "INSERT OR UPDATE INTO Acc (Id, Balance) VALUES (1, 111), (9, 999) "
                                    "THEN RETURN WITH ACTION Id, Balance")
    assert names == ["Id", "Balance", "ACTION"]
    assert sorted(rows) == [[1, 111, "UPDATE"], [9, 999, "INSERT"]]
    rows, names, _ = _returning(db, "UPDATE Acc SET Balance = 0 WHERE Id = 2 THEN RETURN WITH ACTION AS what Id")
    assert (rows, names) == ([[2, "UPDATE"]], ["Id", "what"])
    rows, _, _ = _returning(db, "DELETE FROM Acc WHERE Id = 2 THEN RETURN WITH ACTION *")
    assert rows == [[2, "bo", 0, 0, "DELETE"]]
    rows, _, _ = _returning(db, "INSERT INTO Acc (Id) VALUES (20) THEN RETURN WITH ACTION Id")
    assert rows == [[20, "INSERT"]]


def test_insert_or_update_writes_only_the_named_columns(db):
    count = db.run_in_transaction(lambda t: t.execute_update(
        "INSERT OR UPDATE INTO Acc (Id, Balance) VALUES (1, 1), (7, 7)"))
    assert count == 2
    assert _rows(db) == [[1, "ann", 1], [2, "bo", 200], [3, "cy", 300], [7, None, 7]]
    count = db.run_in_transaction(lambda t: t.execute_update(
        "INSERT OR UPDATE INTO Acc (Id, Owner, Balance) SELECT Id + 1, 'copy', Balance FROM Acc WHERE Id >= 3"))
    assert count == 2  # 4 inserted, 8 inserted
    assert _rows(db, "SELECT Id, Owner FROM Acc WHERE Owner = 'copy' ORDER BY Id") == [[4, "copy"], [8, "copy"]]


def test_insert_or_update_of_the_key_alone_counts_existing_rows(db):
    rows, _, count = _returning(db, "INSERT OR UPDATE INTO Acc (Id) VALUES (1), (10) THEN RETURN WITH ACTION Id")
    assert count == 2 and sorted(rows) == [[1, "UPDATE"], [10, "INSERT"]]
    assert _rows(db, "SELECT Owner FROM Acc WHERE Id = 1") == [["ann"]]


def test_insert_or_ignore_leaves_existing_rows_alone(db):
    rows, _, count = _returning(db, "INSERT OR IGNORE INTO Acc (Id, Owner) VALUES (1, 'new'), (6, 'six') "
                                    "THEN RETURN WITH ACTION Id, Owner")
    assert (rows, count) == ([[6, "six", "INSERT"]], 1)
    assert _rows(db, "SELECT Id, Owner FROM Acc WHERE Id IN (1, 6) ORDER BY Id") == [[1, "ann"], [6, "six"]]


def test_insert_or_update_of_one_key_twice_is_refused(db):
    with pytest.raises(exceptions.InvalidArgument) as info:
        db.run_in_transaction(lambda t: t.execute_update(
            "INSERT OR UPDATE INTO Acc (Id, Balance) VALUES (30, 1), (30, 2)"))
    assert "second time" in info.value.message
    assert _rows(db, "SELECT Id FROM Acc WHERE Id = 30") == []


def test_then_return_errors_name_the_problem(db):
    with pytest.raises(exceptions.InvalidArgument):
        _returning(db, "UPDATE Acc SET Balance = 1 WHERE true THEN RETURN SUM(Balance)")
    with pytest.raises(exceptions.InvalidArgument):
        _returning(db, "UPDATE Acc SET Balance = 1 WHERE true THEN RETURN NoSuchColumn")


def test_batch_dml_runs_upserts_and_then_return(db):
    def work(txn):
        return txn.batch_update([
            "INSERT OR UPDATE INTO Acc (Id, Owner) VALUES (1, 'batch'), (11, 'eleven')",
            "INSERT OR IGNORE INTO Acc (Id, Owner) VALUES (1, 'ignored'), (12, 'twelve') THEN RETURN Id",
            "UPDATE Acc SET Balance = -1 WHERE Id IN (11, 12) THEN RETURN WITH ACTION Id",
        ])
    status, counts = db.run_in_transaction(work)
    assert status.code == 0 and counts == [2, 1, 2]
    assert _rows(db, "SELECT Id, Owner, Balance FROM Acc WHERE Id IN (1, 11, 12) ORDER BY Id") == [
        [1, "batch", 100], [11, "eleven", -1], [12, "twelve", -1]]


def test_partitioned_dml_allows_update_and_delete_only_without_then_return(db):
    assert db.execute_partitioned_dml("UPDATE Acc SET Balance = Balance * 10 WHERE Id > 1") == 2
    with pytest.raises(exceptions.InvalidArgument) as info:
        db.execute_partitioned_dml("INSERT OR UPDATE INTO Acc (Id, Balance) VALUES (1, 5)")
    assert "INSERT is not supported for Partitioned DML" in info.value.message
    with pytest.raises(exceptions.InvalidArgument) as info:
        db.execute_partitioned_dml("DELETE FROM Acc WHERE Id = 3 THEN RETURN Id")
    assert "THEN RETURN" in info.value.message
    assert _rows(db) == [[1, "ann", 100], [2, "bo", 2000], [3, "cy", 3000]]


def test_upserts_are_captured_by_change_streams_and_versions(db):
    before = _now(db)
    db.run_in_transaction(lambda t: t.execute_update(
        "INSERT OR UPDATE INTO Acc (Id, Balance) VALUES (1, 150), (4, 400)"))
    db.run_in_transaction(lambda t: t.execute_update(
        "INSERT OR IGNORE INTO Acc (Id, Balance) VALUES (2, 999), (5, 500) THEN RETURN Id"))
    mods = _mods(read_stream(db, "AccStream", before, _now(db)), table="Acc")
    assert ("UPDATE", {"Id": "1"}, {"Balance": "150", "Doubled": "300"}, {"Balance": "100", "Doubled": "200"}) in mods
    assert ("INSERT", {"Id": "4"}, {"Owner": None, "Balance": "400", "Doubled": "800"}, {}) in mods
    assert ("INSERT", {"Id": "5"}, {"Owner": None, "Balance": "500", "Doubled": "1000"}, {}) in mods
    assert not [m for m in mods if m[1] == {"Id": "2"}]  # the ignored row was not written
    with db.snapshot(read_timestamp=before) as snap:
        old = [list(r) for r in snap.execute_sql("SELECT Id, Balance FROM Acc WHERE Id IN (1, 4) ORDER BY Id")]
    assert old == [[1, 100]]  # the version before the upsert is kept
