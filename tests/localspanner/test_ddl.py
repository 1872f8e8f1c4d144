"""Schema changes through UpdateDatabaseDdl: every supported form, and how they fail."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import JsonObject

SCHEMA_ERRORS = (exceptions.FailedPrecondition, exceptions.InvalidArgument, exceptions.NotFound)

ALL_TYPES = """CREATE TABLE AllTypes (
    Id INT64 NOT NULL,
    F FLOAT64,
    B BOOL NOT NULL DEFAULT (TRUE),
    S STRING(20) DEFAULT ('none'),
    SM STRING(MAX),
    Bs BYTES(16),
    BM BYTES(MAX),
    D DATE,
    Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    N NUMERIC,
    J JSON,
    AI ARRAY<INT64>,
    AS_ ARRAY<STRING(MAX)>,
    Doubled INT64 AS (Id * 2) STORED
) PRIMARY KEY (Id)"""


def _ddl(db) -> str:
    db.reload()
    return "\n".join(db.ddl_statements)


def _rows(db, sql: str, **kw) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, **kw)]


def _fails(db, statements: list[str], *codes: type[exceptions.GoogleAPICallError]) -> str:
    with pytest.raises(codes or SCHEMA_ERRORS) as info:
        db.update_ddl(statements).result(60)
    return str(info.value)


def test_create_table_with_every_type_default_and_generated_column(make_database):
    db = make_database()
    db.update_ddl([ALL_TYPES]).result(60)
    blob = base64.b64encode(b"\x00\xffbin")
    with db.batch() as b:
        b.insert("AllTypes", ("Id", "F", "SM", "Bs", "D", "Ts", "N", "J", "AI", "AS_"),
                 [(7, 1.5, "long text", blob, dt.date(2024, 2, 29), spanner.COMMIT_TIMESTAMP,
                   decimal.Decimal("12345.123456789"), JsonObject({"a": [1, 2]}), [1, None, 3], ["x", None])])
    (row,) = _rows(db, "SELECT Id, F, B, S, SM, Bs, D, N, J, AI, AS_, Doubled, Ts FROM AllTypes")
    assert row[:5] == [7, 1.5, True, "none", "long text"]  # B and S from their DEFAULTs
    assert base64.b64decode(row[5]) == b"\x00\xffbin"  # the client hands BYTES back as base64 text
    assert row[6] == dt.date(2024, 2, 29)
    assert row[7] == decimal.Decimal("12345.123456789")
    assert json.loads(row[8].serialize()) == {"a": [1, 2]}
    assert row[9] == [1, None, 3] and row[10] == ["x", None]
    assert row[11] == 14
    assert isinstance(row[12], dt.datetime)
    text = _ddl(db)
    for fragment in ("ARRAY<INT64>", "STRING(20)", "BYTES(16)", "JSON", "NUMERIC", "allow_commit_timestamp=true",
                     "AS (Id * 2) STORED", "DEFAULT (TRUE)"):
        assert fragment.replace(" ", "") in text.replace(" ", ""), fragment


def test_not_null_is_enforced(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(MAX) NOT NULL) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition, match="V"):
        with db.batch() as b:
            b.insert("T", ("Id",), [(1,)])
    assert _rows(db, "SELECT COUNT(*) FROM T") == [[0]]


def test_string_length_limit_is_enforced(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(3)) PRIMARY KEY (Id)"])
    with pytest.raises((exceptions.FailedPrecondition, exceptions.InvalidArgument), match="V"):
        with db.batch() as b:
            b.insert("T", ("Id", "V"), [(1, "abcd")])


def test_primary_key_desc_orders_reads(make_database):
    db = make_database(["CREATE TABLE T (A INT64 NOT NULL, B STRING(MAX) NOT NULL) PRIMARY KEY (A ASC, B DESC)"])
    with db.batch() as b:
        b.insert("T", ("A", "B"), [(1, "a"), (2, "a"), (1, "c"), (2, "b"), (1, "b")])
    with db.snapshot() as snap:
        got = [tuple(r) for r in snap.read("T", ("A", "B"), spanner.KeySet(all_=True))]
    assert got == [(1, "c"), (1, "b"), (1, "a"), (2, "b"), (2, "a")]
    assert "B DESC" in _ddl(db)


def test_indexes_unique_null_filtered_storing(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Email STRING(MAX), Nick STRING(MAX), Age INT64) PRIMARY KEY (Id)"])
    db.update_ddl([
        "CREATE UNIQUE INDEX T_Email ON T (Email)",
        "CREATE NULL_FILTERED INDEX T_Nick ON T (Nick DESC) STORING (Age)",
        "CREATE UNIQUE NULL_FILTERED INDEX T_NickAge ON T (Nick, Age)",
    ]).result(60)
    with db.batch() as b:
        b.insert("T", ("Id", "Email", "Nick", "Age"), [(1, "a@x", "ann", 30), (2, "b@x", None, 40), (3, None, "cat", 50)])
    with db.snapshot() as snap:
        via_index = [list(r) for r in snap.read("T", ("Nick", "Age"), spanner.KeySet(all_=True), index="T_Nick")]
    assert via_index == [["cat", 50], ["ann", 30]]  # DESC order, the NULL nick is not in the index
    with pytest.raises(exceptions.AlreadyExists, match="T_Email"):
        with db.batch() as b:
            b.insert("T", ("Id", "Email"), [(4, "a@x")])
    with db.batch() as b:  # rows with a NULL key column are not in a NULL_FILTERED index: no collision
        b.insert("T", ("Id", "Email", "Nick", "Age"), [(5, "e@x", None, 30), (6, "f@x", "ann", None)])
    with pytest.raises(exceptions.AlreadyExists, match="T_NickAge"):
        with db.batch() as b:
            b.insert("T", ("Id", "Email", "Nick", "Age"), [(7, "g@x", "ann", 30)])
    text = _ddl(db)
    assert "CREATE UNIQUE INDEX T_Email" in text
    assert "CREATE NULL_FILTERED INDEX T_Nick" in text and "STORING (Age)" in text.replace("STORING(", "STORING (")
    assert "CREATE UNIQUE NULL_FILTERED INDEX T_NickAge" in text


def test_unique_index_rejects_update_into_duplicate(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Email STRING(MAX)) PRIMARY KEY (Id)",
                        "CREATE UNIQUE INDEX T_Email ON T (Email)"])
    with db.batch() as b:
        b.insert("T", ("Id", "Email"), [(1, "a"), (2, "b")])
    with pytest.raises(exceptions.AlreadyExists):
        with db.batch() as b:
            b.update("T", ("Id", "Email"), [(2, "a")])
    assert _rows(db, "SELECT Id, Email FROM T ORDER BY Id") == [[1, "a"], [2, "b"]]


def test_alter_table_add_and_drop_column(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id", "V"), [(1, "one")])
    db.update_ddl(["ALTER TABLE T ADD COLUMN N INT64",
                   "ALTER TABLE T ADD COLUMN Flag BOOL NOT NULL DEFAULT (FALSE)"]).result(60)
    assert _rows(db, "SELECT Id, V, N, Flag FROM T") == [[1, "one", None, False]]
    db.update_ddl(["ALTER TABLE T DROP COLUMN V"]).result(60)
    assert _rows(db, "SELECT * FROM T") == [[1, None, False]]
    with pytest.raises(exceptions.InvalidArgument, match="V"):
        _rows(db, "SELECT V FROM T")
    assert " V " not in _ddl(db)


def test_alter_column_set_options_commit_timestamp(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"])
    with pytest.raises((exceptions.FailedPrecondition, exceptions.InvalidArgument)):
        with db.batch() as b:
            b.insert("T", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    db.update_ddl(["ALTER TABLE T ALTER COLUMN Ts SET OPTIONS (allow_commit_timestamp=true)"]).result(60)
    assert "allow_commit_timestamp=true" in _ddl(db).replace(" = ", "=")
    with db.batch() as b:
        b.insert("T", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    assert b.committed == _rows(db, "SELECT Ts FROM T")[0][0]
    db.update_ddl(["ALTER TABLE T ALTER COLUMN Ts SET OPTIONS (allow_commit_timestamp=null)"]).result(60)
    assert "allow_commit_timestamp" not in _ddl(db)
    with pytest.raises((exceptions.FailedPrecondition, exceptions.InvalidArgument)):
        with db.batch() as b:
            b.insert("T", ("Id", "Ts"), [(2, spanner.COMMIT_TIMESTAMP)])


def test_drop_table_and_index(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V INT64) PRIMARY KEY (Id)", "CREATE INDEX T_V ON T (V)"])
    msg = _fails(db, ["DROP TABLE T"], exceptions.FailedPrecondition)
    assert "T_V" in msg and "DROP TABLE T" in msg
    db.update_ddl(["DROP INDEX T_V", "DROP TABLE T"]).result(60)
    db.reload()
    assert list(db.ddl_statements) == []
    with pytest.raises(exceptions.InvalidArgument, match="T"):
        _rows(db, "SELECT * FROM T")


def test_if_not_exists_and_if_exists(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)"])
    db.update_ddl([
        "CREATE TABLE IF NOT EXISTS T (Id INT64 NOT NULL, Other STRING(MAX)) PRIMARY KEY (Id)",
        "CREATE TABLE IF NOT EXISTS U (Id INT64 NOT NULL) PRIMARY KEY (Id)",
        "CREATE INDEX IF NOT EXISTS U_Id ON U (Id)",
        "CREATE INDEX IF NOT EXISTS U_Id ON U (Id)",
        "DROP INDEX IF EXISTS Nope",
        "DROP TABLE IF EXISTS Nope",
    ]).result(60)
    text = _ddl(db)
    assert "Other" not in text  # the existing T was left alone
    assert "CREATE TABLE U" in text and "CREATE INDEX U_Id" in text
    db.update_ddl(["DROP INDEX IF EXISTS U_Id", "DROP TABLE IF EXISTS U"]).result(60)
    db.reload()
    assert [s.split("(")[0].split() for s in db.ddl_statements] == [["CREATE", "TABLE", "T"]]


@pytest.mark.parametrize("statement, code, names", [
    ("CREATE TABLE T (Id INT64) PRIMARY KEY (Id)", exceptions.FailedPrecondition, "T"),
    ("CREATE INDEX T_V ON T (Id)", exceptions.FailedPrecondition, "T_V"),
    ("DROP TABLE Missing", exceptions.NotFound, "Missing"),
    ("DROP INDEX Missing", exceptions.NotFound, "Missing"),
    ("ALTER TABLE Missing ADD COLUMN X INT64", exceptions.NotFound, "Missing"),
    ("CREATE INDEX I ON T (NoSuchColumn)", SCHEMA_ERRORS, "NoSuchColumn"),
    ("ALTER TABLE T ADD COLUMN V INT64", exceptions.FailedPrecondition, "V"),
    ("ALTER TABLE T DROP COLUMN V", exceptions.FailedPrecondition, "T_V"),
    ("ALTER TABLE T DROP COLUMN Id", exceptions.FailedPrecondition, "Id"),
    ("ALTER TABLE T DROP COLUMN Nope", SCHEMA_ERRORS, "Nope"),
    ("ALTER TABLE T ADD COLUMN Z INT64 NOT NULL", exceptions.FailedPrecondition, "Z"),
    ("ALTER TABLE T ALTER COLUMN V SET OPTIONS (allow_commit_timestamp=true)", SCHEMA_ERRORS, "V"),
    ("CREATE TABLE Bad (Id INT64, Ts INT64 OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)", SCHEMA_ERRORS, "Ts"),
    ("CREATE TABLE Bad (Id INT64) PRIMARY KEY (Nope)", SCHEMA_ERRORS, "Nope"),
    ("CREATE TABLE Bad (Id INT64, Id STRING(MAX)) PRIMARY KEY (Id)", SCHEMA_ERRORS, "Id"),
    ("CREATE TABLE Bad (Id INT64, G INT64 AS (Nope + 1) STORED) PRIMARY KEY (Id)", SCHEMA_ERRORS, "Nope"),
    ("CREATE TABLE Bad (Id INT64) PRIMARY KEY (Id), INTERLEAVE IN PARENT Missing ON DELETE CASCADE", SCHEMA_ERRORS, "Missing"),
    ("CREATE TABLE Bad (K INT64) PRIMARY KEY (K), INTERLEAVE IN PARENT T ON DELETE CASCADE", exceptions.FailedPrecondition, "T"),
    ("CREATE TABLE", exceptions.InvalidArgument, "CREATE TABLE"),
    ("CREATE TABLE Bad (Id INT64 NOT NULL PRIMARY KEY (Id)", exceptions.InvalidArgument, "Bad"),
    ("CREATE TABLE Bad (Id WIDGET) PRIMARY KEY (Id)", exceptions.InvalidArgument, "WIDGET"),
    ("SELECT 1", exceptions.InvalidArgument, "SELECT"),
])
def test_bad_statements_fail_with_code_and_name(make_database, statement, code, names):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V INT64) PRIMARY KEY (Id)", "CREATE INDEX T_V ON T (V)"])
    before = _ddl(db)
    msg = _fails(db, [statement], *(code if isinstance(code, tuple) else (code,)))
    assert names in msg
    assert _ddl(db) == before


def test_unique_index_over_duplicates_fails_and_earlier_statements_stay(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id", "V"), [(1, "same"), (2, "same"), (3, None)])
    msg = _fails(db, ["CREATE TABLE Before (Id INT64 NOT NULL) PRIMARY KEY (Id)",
                      "CREATE UNIQUE INDEX T_V ON T (V)",
                      "CREATE TABLE After (Id INT64 NOT NULL) PRIMARY KEY (Id)"], exceptions.FailedPrecondition)
    assert "T_V" in msg or "CREATE UNIQUE INDEX" in msg
    text = _ddl(db)
    assert "CREATE TABLE Before" in text
    assert "T_V" not in text and "After" not in text
    # The data is untouched and the table still works.
    assert _rows(db, "SELECT Id, V FROM T ORDER BY Id") == [[1, "same"], [2, "same"], [3, None]]
    with db.batch() as b:
        b.insert("Before", ("Id",), [(1,)])


def test_unique_index_over_multiple_nulls_succeeds(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id", "V"), [(1, "a"), (2, None)])
    db.update_ddl(["CREATE UNIQUE INDEX T_V ON T (V)"]).result(60)
    with pytest.raises(exceptions.AlreadyExists):
        with db.batch() as b:  # Spanner indexes NULL like a value: a second NULL collides
            b.insert("T", ("Id", "V"), [(3, None)])


def test_alter_column_not_null_over_null_data_fails(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, V STRING(MAX), W STRING(MAX)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id", "V", "W"), [(1, "x", None), (2, "y", "w")])
    msg = _fails(db, ["ALTER TABLE T ALTER COLUMN V STRING(MAX) NOT NULL",
                      "ALTER TABLE T ALTER COLUMN W STRING(MAX) NOT NULL"], exceptions.FailedPrecondition)
    assert "W" in msg and "_ls_" not in msg
    text = _ddl(db)
    assert "V STRING(MAX) NOT NULL" in text  # the first statement stays applied
    assert "W STRING(MAX) NOT NULL" not in text
    assert _rows(db, "SELECT Id, V, W FROM T ORDER BY Id") == [[1, "x", None], [2, "y", "w"]]
    with pytest.raises(exceptions.FailedPrecondition):
        with db.batch() as b:
            b.insert("T", ("Id",), [(3,)])


def test_ddl_change_is_visible_to_new_transactions(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id",), [(1,)])
    db.update_ddl(["ALTER TABLE T ADD COLUMN Note STRING(MAX)"]).result(60)

    def work(txn):
        return txn.execute_update("UPDATE T SET Note = 'hi' WHERE Id = 1")

    assert db.run_in_transaction(work) == 1
    assert _rows(db, "SELECT Note FROM T") == [["hi"]]
