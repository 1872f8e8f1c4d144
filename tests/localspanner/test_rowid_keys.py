"""Tables keyed by one NOT NULL INT64 column (stored as SQLite rowid tables): a NULL key is
refused on every write path, as Spanner refuses it, and such tables behave like any other.

SQLite would turn a NULL written to an ``INTEGER PRIMARY KEY`` into a fresh key; these tests
prove the server refuses it itself: mutations, DML (values, parameters, INSERT ... SELECT, a
left-out key, INSERT OR UPDATE), batch DML, BatchWrite, and that nothing was written.
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE INDEX SingersByName ON Singers (Name)",
]
NULL_KEY = "SingerId must not be NULL"


@pytest.fixture
def db(make_database):
    database = make_database(DDL)
    with database.batch() as b:
        b.insert("Singers", ("SingerId", "Name"), [(1, "Ann"), (2, "Bo")])
    return database


def _singers(db) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql("SELECT SingerId, Name FROM Singers ORDER BY SingerId")]


UNCHANGED = [[1, "Ann"], [2, "Bo"]]


@pytest.mark.parametrize("op", ["insert", "insert_or_update", "replace"])
def test_a_mutation_with_a_null_key_is_refused(db, op):
    with pytest.raises(exceptions.FailedPrecondition, match=NULL_KEY):
        with db.batch() as b:
            getattr(b, op)("Singers", ("SingerId", "Name"), [(3, "Cy"), (None, "Nobody")])
    assert _singers(db) == UNCHANGED


def test_an_update_mutation_with_a_null_key_finds_no_row(db):
    with pytest.raises(exceptions.NotFound):
        with db.batch() as b:
            b.update("Singers", ("SingerId", "Name"), [(None, "Nobody")])
    assert _singers(db) == UNCHANGED


@pytest.mark.parametrize("sql, params", [
    ("INSERT INTO Singers (SingerId, Name) VALUES (3, 'Cy'), (NULL, 'Nobody')", None),
    ("INSERT INTO Singers (SingerId, Name) VALUES (@id, 'Nobody')", {"id": None}),
    ("INSERT INTO Singers (SingerId, Name) SELECT SingerId + 10, Name FROM Singers UNION ALL SELECT NULL, 'Nobody'", None),
    ("INSERT OR UPDATE INTO Singers (SingerId, Name) VALUES (NULL, 'Nobody')", None),
    ("INSERT OR IGNORE INTO Singers (Name, SingerId) SELECT 'Nobody', CAST(NULL AS INT64)", None),
    ("INSERT INTO Singers (Name) VALUES ('Nobody')", None),
], ids=["values", "parameter", "select", "or-update", "or-ignore-select", "left-out"])
def test_dml_writing_a_null_key_is_refused(db, sql, params):
    types = {"id": param_types.INT64} if params else None
    with pytest.raises(exceptions.FailedPrecondition, match=NULL_KEY):
        db.run_in_transaction(lambda txn: txn.execute_update(sql, params=params, param_types=types))
    assert _singers(db) == UNCHANGED


def test_batch_dml_stops_at_the_statement_with_a_null_key(db):
    def work(txn):
        status, counts = txn.batch_update([
            "INSERT INTO Singers (SingerId, Name) VALUES (3, 'Cy')",
            "INSERT INTO Singers (SingerId, Name) VALUES (NULL, 'Nobody')",
        ])
        return status, counts

    status, counts = db.run_in_transaction(work)
    assert counts == [1]
    assert status.code == 9 and NULL_KEY in status.message  # FAILED_PRECONDITION
    assert _singers(db) == [*UNCHANGED, [3, "Cy"]]


def test_batch_write_refuses_the_group_with_a_null_key_only(db):
    with db.mutation_groups() as groups:
        groups.group().insert("Singers", ("SingerId", "Name"), [(None, "Nobody")])
        groups.group().insert("Singers", ("SingerId", "Name"), [(4, "Di")])
        responses = list(groups.batch_write())
    codes = {i: r.status.code for r in responses for i in r.indexes}
    assert codes[0] == 9 and codes[1] == 0  # FAILED_PRECONDITION, OK
    assert _singers(db) == [*UNCHANGED, [4, "Di"]]


def test_rowid_tables_read_write_and_cascade_like_any_table(db):
    with db.batch() as b:
        b.insert_or_update("Singers", ("SingerId", "Name"), [(-5, "Neg"), (2**63 - 1, "Max"), (1, "Ann2"), (-2**63, "Min")])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 1, "A"), (-5, 1, "B")])
    db.run_in_transaction(lambda txn: txn.execute_update("INSERT INTO Singers (SingerId, Name) SELECT 7, 'Ed'"))
    assert _singers(db) == [[-2**63, "Min"], [-5, "Neg"], [1, "Ann2"], [2, "Bo"], [7, "Ed"], [2**63 - 1, "Max"]]
    with db.snapshot(multi_use=True) as snap:
        forced = [r[0] for r in snap.execute_sql("SELECT SingerId FROM Singers@{FORCE_INDEX=_BASE_TABLE} WHERE SingerId > 0")]
        by_name = [r[0] for r in snap.read("Singers", ("Name",), spanner.KeySet(all_=True), index="SingersByName")]
    assert forced == [1, 2, 7, 2**63 - 1]
    assert by_name == ["Ann2", "Bo", "Ed", "Max", "Min", "Neg"]
    with pytest.raises(exceptions.AlreadyExists):
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Name"), [(2, "again")])
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(keys=[[1]]))
    with db.snapshot() as snap:
        assert [list(r) for r in snap.execute_sql("SELECT SingerId, AlbumId FROM Albums")] == [[-5, 1]]


def test_a_key_default_that_gives_null_is_refused(make_database):
    db = make_database(["CREATE TABLE T (K INT64 NOT NULL DEFAULT (IF(1 = 2, 5, NULL)), V STRING(MAX)) PRIMARY KEY (K)"])
    with pytest.raises(exceptions.FailedPrecondition, match="K must not be NULL"):
        with db.batch() as b:
            b.insert("T", ("V",), [("x",)])
    with pytest.raises(exceptions.FailedPrecondition, match="K must not be NULL"):
        db.run_in_transaction(lambda txn: txn.execute_update("INSERT INTO T (V) VALUES ('y')"))
    with db.snapshot() as snap:
        assert list(snap.execute_sql("SELECT K FROM T")) == []


def test_a_not_null_key_drawn_from_a_sequence_gets_the_sequence_values(make_database):
    db = make_database([
        "CREATE SEQUENCE Ids OPTIONS (sequence_kind = 'bit_reversed_positive')",
        "CREATE TABLE T (K INT64 NOT NULL DEFAULT (GET_NEXT_SEQUENCE_VALUE(SEQUENCE Ids)), V STRING(MAX)) PRIMARY KEY (K)",
    ])
    with db.batch() as b:
        b.insert("T", ("V",), [("a",), ("b",), ("c",)])
    db.run_in_transaction(lambda txn: txn.execute_update("INSERT INTO T (V) VALUES ('d')"))
    with db.snapshot() as snap:
        keys = [r[0] for r in snap.execute_sql("SELECT K FROM T")]
    assert len(set(keys)) == 4 and all(k > 0 for k in keys)
    assert sorted(keys) != [1, 2, 3, 4]  # bit-reversed sequence values, not row numbers
