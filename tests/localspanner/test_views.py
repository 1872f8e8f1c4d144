"""Views through the official client: DDL, queries over them, INFORMATION_SCHEMA, and Spanner's refusals."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import TypeCode, param_types

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")

DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(100), Score NUMERIC) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]
SINGER_ALBUMS = (
    "CREATE VIEW SingerAlbums SQL SECURITY INVOKER AS "
    "SELECT s.SingerId, s.Name, a.Title FROM Singers AS s JOIN Albums AS a ON s.SingerId = a.SingerId"
)
HIGH_SCORES = (
    "CREATE VIEW HighScores SQL SECURITY DEFINER AS SELECT Singers.Name, Singers.Score FROM Singers WHERE Singers.Score > 10"
)


@pytest.fixture
def db(make_database):
    db = make_database(DDL)
    db.update_ddl([SINGER_ALBUMS, HIGH_SCORES]).result(60)
    with db.batch() as b:
        b.insert("Singers", ("SingerId", "Name", "Score"),
                 [(1, "Ann", Decimal("12.5")), (2, "Bo", Decimal("3")), (3, "Cy", None)])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First"), (1, 11, "Second"), (2, 20, "Third")])
    return db


def _query(db, sql, **kwargs):
    with db.snapshot() as snap:
        result = snap.execute_sql(sql, **kwargs)
        rows = [list(r) for r in result]
        return rows, [(f.name, TypeCode(f.type_.code).name) for f in result.fields]


def _refused(db, statement):
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        db.update_ddl([statement]).result(60)
    return info.value


def test_a_view_is_queried_with_its_types_filters_and_joins(db):
    rows, fields = _query(db, "SELECT v.Name, v.Title FROM SingerAlbums AS v WHERE v.SingerId = @id ORDER BY v.Title",
                          params={"id": 1}, param_types={"id": param_types.INT64})
    assert rows == [["Ann", "First"], ["Ann", "Second"]]
    assert fields == [("Name", "STRING"), ("Title", "STRING")]

    rows, fields = _query(db, "SELECT * FROM HighScores")
    assert rows == [["Ann", Decimal("12.5")]]  # NUMERIC stays NUMERIC through the view
    assert fields == [("Name", "STRING"), ("Score", "NUMERIC")]

    rows, _ = _query(db, "SELECT h.Name, COUNT(*) AS n FROM HighScores AS h JOIN SingerAlbums AS a ON h.Name = a.Name "
                         "GROUP BY h.Name")
    assert rows == [["Ann", 2]]


def test_a_view_sees_later_writes(db):
    with db.batch() as b:
        b.update("Singers", ("SingerId", "Score"), [(2, Decimal("99"))])
    rows, _ = _query(db, "SELECT Name FROM HighScores ORDER BY Name")
    assert rows == [["Ann"], ["Bo"]]


def test_views_are_listed_in_information_schema_and_ddl(db):
    rows, _ = _query(db, "SELECT TABLE_NAME, TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES "
                         "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' ORDER BY TABLE_NAME")
    assert rows == [["Albums", "BASE TABLE"], ["HighScores", "VIEW"], ["SingerAlbums", "VIEW"], ["Singers", "BASE TABLE"]]
    rows, _ = _query(db, "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, SECURITY_TYPE "
                         "FROM INFORMATION_SCHEMA.VIEWS ORDER BY TABLE_NAME")
    assert rows == [
        ["", "", "HighScores", "SELECT Singers.Name, Singers.Score FROM Singers WHERE Singers.Score > 10", "DEFINER"],
        ["", "", "SingerAlbums",
         "SELECT s.SingerId, s.Name, a.Title FROM Singers AS s JOIN Albums AS a ON s.SingerId = a.SingerId", "INVOKER"],
    ]
    db.reload()
    assert list(db.ddl_statements)[-2:] == [SINGER_ALBUMS, HIGH_SCORES]


def test_create_or_replace_changes_the_view_and_drop_view_removes_it(db):
    db.update_ddl(["CREATE OR REPLACE VIEW HighScores SQL SECURITY INVOKER AS "
                   "SELECT Singers.Name FROM Singers WHERE Singers.Score > 1"]).result(60)
    rows, fields = _query(db, "SELECT * FROM HighScores ORDER BY Name")
    assert rows == [["Ann"], ["Bo"]] and fields == [("Name", "STRING")]
    db.update_ddl(["DROP VIEW HighScores"]).result(60)
    with pytest.raises(exceptions.InvalidArgument, match="HighScores"):
        _query(db, "SELECT * FROM HighScores")


def test_a_view_without_sql_security_is_refused_naming_it(db):
    error = _refused(db, "CREATE VIEW NoSecurity AS SELECT Singers.Name FROM Singers")
    assert isinstance(error, exceptions.InvalidArgument)
    assert "NoSecurity" in str(error)


def test_a_table_a_view_reads_cannot_be_dropped(db):
    db.update_ddl(["DROP VIEW SingerAlbums"]).result(60)
    error = _refused(db, "DROP TABLE Singers")  # HighScores still reads it (Albums is also interleaved in it)
    assert isinstance(error, exceptions.FailedPrecondition)
    db.update_ddl(["DROP TABLE Albums"]).result(60)  # nothing reads Albums any more
    assert isinstance(_refused(db, "DROP TABLE Singers"), exceptions.FailedPrecondition)
    assert "HighScores" in str(_refused(db, "DROP TABLE Singers"))


def test_a_column_a_view_reads_cannot_be_dropped(db):
    assert isinstance(_refused(db, "ALTER TABLE Singers DROP COLUMN Score"), exceptions.FailedPrecondition)
    rows, _ = _query(db, "SELECT Name FROM HighScores")
    assert rows == [["Ann"]]


def test_a_view_shares_the_namespace_of_tables(db):
    assert isinstance(_refused(db, "CREATE VIEW Singers SQL SECURITY INVOKER AS SELECT 1 AS One"),
                      exceptions.FailedPrecondition)
    assert isinstance(_refused(db, "CREATE TABLE HighScores (K INT64) PRIMARY KEY (K)"), exceptions.FailedPrecondition)


def test_a_view_over_an_unknown_table_is_refused(db):
    error = _refused(db, "CREATE VIEW Bad SQL SECURITY INVOKER AS SELECT Nope.X FROM Nope")
    assert isinstance(error, exceptions.InvalidArgument)


def test_a_view_cannot_be_written(db):
    with pytest.raises(exceptions.NotFound):
        with db.batch() as b:
            b.insert("HighScores", ("Name", "Score"), [("Dee", Decimal("50"))])
    with pytest.raises(exceptions.InvalidArgument):
        db.run_in_transaction(lambda txn: txn.execute_update(
            "INSERT INTO HighScores (Name, Score) VALUES ('Dee', 50)"))
    rows, _ = _query(db, "SELECT COUNT(*) FROM Singers")
    assert rows == [[3]]


@pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")
def test_views_survive_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    for round_ in range(2):
        with LocalSpanner(data_dir=data_dir) as server:
            monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
            instance = spanner.Client(project="views-project").instance(
                "views", configuration_name="projects/views-project/instanceConfigs/emulator-config", node_count=1)
            if round_ == 0:
                instance.create().result(30)
                db = instance.database("views-db", ddl_statements=[*DDL, HIGH_SCORES])
                db.create().result(60)
                with db.batch() as b:
                    b.insert("Singers", ("SingerId", "Name", "Score"), [(1, "Ann", Decimal("12.5"))])
            else:
                db = instance.database("views-db")
                db.reload()
                assert list(db.ddl_statements)[-1] == HIGH_SCORES
                assert _query(db, "SELECT * FROM HighScores")[0] == [["Ann", Decimal("12.5")]]
                assert isinstance(_refused(db, "DROP TABLE Singers"), exceptions.FailedPrecondition)
