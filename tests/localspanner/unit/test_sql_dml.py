"""DML: row counts, Spanner's rules, integrity errors, THEN RETURN, PENDING_COMMIT_TIMESTAMP()."""

from __future__ import annotations

import pytest

from tests.localspanner.unit.sql_fixtures import CATALOG, build
from watcher.localspanner import errors
from watcher.localspanner.common.requests import Statement
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.sql import PENDING_COMMIT_TIMESTAMP_SENTINEL, execute_dml, execute_query, is_dml

NOW = values.parse_timestamp("2024-05-01T10:00:00Z")


def dml(conn, sql, params=None, types=None):
    return execute_dml(conn, Statement(sql, params or {}, types or {}), CATALOG, now_nanos=NOW)


def rows(conn, sql, params=None):
    return list(execute_query(conn, Statement(sql, params or {}), CATALOG, now_nanos=NOW)[1])


@pytest.fixture()
def conn():
    c = build()
    dml(c, "INSERT INTO Singers (SingerId, FirstName, LastName, Processed) VALUES (1, 'a', 'x', false), (2, 'b', 'y', false), (3, NULL, 'z', true)")
    return c


def test_is_dml():
    assert is_dml("insert Singers (SingerId) values (1)") and is_dml("  -- c\n DELETE FROM T WHERE true")
    assert is_dml("@{PDML_MAX_PARALLELISM=1} UPDATE T SET a = 1 WHERE true")
    assert not is_dml("SELECT 1") and not is_dml("WITH a AS (SELECT 1) SELECT * FROM a")


def test_insert_update_delete_counts(conn):
    assert dml(conn, "INSERT Singers (SingerId, LastName) SELECT SingerId + 10, LastName FROM Singers WHERE SingerId < 3").row_count == 2
    assert dml(conn, "UPDATE Singers SET FirstName = @f WHERE SingerId > @k", {"f": "q", "k": "10"}).row_count == 2
    assert rows(conn, "SELECT FirstName FROM Singers WHERE SingerId = 12") == [["q"]]
    assert dml(conn, "UPDATE Singers s SET s.LastName = 'n' WHERE s.SingerId = 99").row_count == 0
    assert dml(conn, "DELETE FROM Singers WHERE SingerId >= 11").row_count == 2
    assert dml(conn, "DELETE Singers WHERE true").row_count == 3


def test_generated_column_recomputed_on_update(conn):
    before = rows(conn, "SELECT ShardId FROM Singers WHERE SingerId = 1")[0][0]
    dml(conn, "UPDATE Singers SET Processed = true WHERE SingerId = 1")
    assert before is not None and rows(conn, "SELECT ShardId FROM Singers WHERE SingerId = 1") == [[None]]


def test_where_is_required(conn):
    for sql in ("UPDATE Singers SET FirstName = 'x'", "DELETE FROM Singers"):
        with pytest.raises(SpannerError) as e:
            dml(conn, sql)
        assert e.value.code == Code.INVALID_ARGUMENT and "WHERE" in e.value.message


def test_column_rules(conn):
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, LastName, ShardId) VALUES (5, 'x', 1)")
    assert e.value.message == errors.generated_column_written("Singers", "ShardId").message
    with pytest.raises(SpannerError) as e:
        dml(conn, "UPDATE Singers SET SingerId = 5 WHERE SingerId = 1")
    assert "SingerId" in e.value.message
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, Nope) VALUES (5, 'x')")
    assert "Nope" in e.value.message and "Singers" in e.value.message
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, LastName) VALUES ('five', 'x')")
    assert "cannot be assigned" in e.value.message


def test_literal_and_parameter_coercion(conn):
    dml(conn, "INSERT INTO Singers (SingerId, LastName, BirthDate, LastUpdated) VALUES (7, 'x', '2001-02-03', '2024-01-01 00:00:00+00')")
    assert rows(conn, "SELECT BirthDate, LastUpdated FROM Singers WHERE SingerId = 7") == [["2001-02-03", "2024-01-01T00:00:00Z"]]
    dml(conn, "INSERT INTO Singers (SingerId, LastName, LastUpdated) VALUES (@k, @n, @t)", {"k": "8", "n": "y", "t": "2024-01-01T00:00:00.5+01:00"})
    assert rows(conn, "SELECT LastUpdated FROM Singers WHERE SingerId = 8") == [["2023-12-31T23:00:00.500Z"]]
    dml(conn, "INSERT INTO Albums (SingerId, AlbumId, Score, Price, Tags) VALUES (1, 1, 2, 3, ['a', 'b'])")
    assert rows(conn, "SELECT Score, Price, Tags FROM Albums") == [[2.0, "3", ["a", "b"]]]


def test_integrity_errors(conn):
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, LastName) VALUES (1, 'dup')")
    assert e.value.code == Code.ALREADY_EXISTS and "Singers" in e.value.message
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, FirstName) VALUES (9, 'no last name')")
    assert e.value.code == Code.FAILED_PRECONDITION and "LastName" in e.value.message
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Albums (SingerId, AlbumId) VALUES (42, 1)")
    assert e.value.code == Code.NOT_FOUND and "Singers" in e.value.message


def test_insert_or_update_and_ignore(conn):
    assert dml(conn, "INSERT OR UPDATE INTO Singers (SingerId, LastName) VALUES (1, 'new'), (4, 'four')").row_count == 2
    assert rows(conn, "SELECT LastName FROM Singers WHERE SingerId IN (1, 4) ORDER BY SingerId") == [["new"], ["four"]]
    assert dml(conn, "INSERT OR IGNORE INTO Singers (SingerId, LastName) VALUES (1, 'ignored'), (5, 'five')").row_count == 1
    assert rows(conn, "SELECT LastName FROM Singers WHERE SingerId = 1") == [["new"]]


def test_then_return(conn):
    r = dml(conn, "UPDATE Singers SET FirstName = 'u' WHERE SingerId <= 2 THEN RETURN SingerId, FirstName AS f, SingerId * 2")
    assert r.row_count == 2
    assert [(f.name, f.type) for f in r.fields] == [("SingerId", T.INT64), ("f", T.STRING), ("", T.INT64)]
    assert sorted(r.rows) == [["1", "u", "2"], ["2", "u", "4"]]
    r = dml(conn, "DELETE FROM Singers WHERE SingerId = 3 THEN RETURN *")
    assert r.rows[0][0] == "3" and len(r.fields) == len(CATALOG.table("Singers").columns)


def test_pending_commit_timestamp_reported_by_key(conn):
    r = dml(conn, "INSERT INTO Singers (SingerId, LastName, LastUpdated) VALUES (10, 'p', PENDING_COMMIT_TIMESTAMP()), "
                  "(11, 'q', TIMESTAMP '2020-01-01T00:00:00Z')")
    assert r.row_count == 2
    assert r.pending_commit_timestamps == [("Singers", ("LastUpdated",), (10,))]
    assert conn.execute('SELECT "LastUpdated" FROM "Singers" WHERE "SingerId" = 10').fetchone()[0] == PENDING_COMMIT_TIMESTAMP_SENTINEL
    assert PENDING_COMMIT_TIMESTAMP_SENTINEL > values.nanos_to_stored(values._MAX_TS_NANOS)
    r = dml(conn, "UPDATE Singers SET LastUpdated = PENDING_COMMIT_TIMESTAMP() WHERE SingerId < 3")
    assert sorted(r.pending_commit_timestamps) == [("Singers", ("LastUpdated",), (1,)), ("Singers", ("LastUpdated",), (2,))]
    with pytest.raises(SpannerError) as e:
        rows(conn, "SELECT LastUpdated FROM Singers WHERE SingerId = 10")
    assert e.value.code == Code.FAILED_PRECONDITION


def test_pending_commit_timestamp_misuse(conn):
    with pytest.raises(SpannerError) as e:
        dml(conn, "INSERT INTO Singers (SingerId, LastName, FirstName) VALUES (10, 'p', PENDING_COMMIT_TIMESTAMP())")
    assert e.value.message == errors.pending_commit_timestamp_not_allowed("Singers", "FirstName").message
    for sql in ("SELECT PENDING_COMMIT_TIMESTAMP()",):
        with pytest.raises(SpannerError) as e:
            rows(conn, sql)
        assert e.value.message == errors.pending_commit_timestamp_misused().message
    with pytest.raises(SpannerError) as e:
        dml(conn, "UPDATE Singers SET FirstName = 'x' WHERE LastUpdated < PENDING_COMMIT_TIMESTAMP()")
    assert e.value.message == errors.pending_commit_timestamp_misused().message


def test_query_is_not_dml(conn):
    with pytest.raises(SpannerError) as e:
        dml(conn, "SELECT 1")
    assert e.value.code == Code.INVALID_ARGUMENT


def test_default_keyword_uses_the_column_default():
    from dataclasses import replace

    from tests.localspanner.unit.sql_fixtures import ALBUMS, SHARD_INDEX, SINGERS
    from watcher.localspanner.schema.catalog import Catalog

    albums = replace(ALBUMS, columns=tuple(replace(c, default="'untitled'") if c.name == "Title" else c for c in ALBUMS.columns))
    catalog = Catalog(tables=(SINGERS, albums), indexes=(SHARD_INDEX,), version=2)
    c = build(catalog)
    execute_dml(c, Statement("INSERT INTO Singers (SingerId, LastName) VALUES (1, 'x')"), catalog, now_nanos=NOW)
    execute_dml(c, Statement("INSERT INTO Albums (SingerId, AlbumId, Title) VALUES (1, 1, DEFAULT)"), catalog, now_nanos=NOW)
    execute_dml(c, Statement("UPDATE Albums SET Title = 'y' WHERE true"), catalog, now_nanos=NOW)
    assert c.execute('SELECT "Title" FROM "Albums"').fetchall() == [("y",)]
    execute_dml(c, Statement("UPDATE Albums SET Title = DEFAULT WHERE true"), catalog, now_nanos=NOW)
    assert c.execute('SELECT "Title" FROM "Albums"').fetchall() == [("untitled",)]


def test_unexpected_translation_failure_is_a_named_error(conn, monkeypatch):
    from watcher.localspanner.sql import execute as ex

    def boom(*args, **kwargs):
        raise AttributeError("no such thing")

    monkeypatch.setattr(ex, "translate_query", boom)
    ex.clear_cache()
    with pytest.raises(SpannerError) as e:
        rows(conn, "SELECT 12345")
    assert e.value.code == Code.UNIMPLEMENTED and "AttributeError" in e.value.message
    ex.clear_cache()
