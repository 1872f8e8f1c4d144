"""Query shapes, result names and types, hints, and translate_expression."""

from __future__ import annotations

import pytest

from tests.localspanner.unit.sql_fixtures import CATALOG, SINGERS, build
from watcher.localspanner.common.requests import Statement
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.sql import execute_dml, execute_query, translate_expression
from watcher.localspanner.sql.spanner_syntax import preprocess
from watcher.localspanner.sql.translator import translate_query

NOW = values.parse_timestamp("2024-05-01T10:00:00Z")


@pytest.fixture(scope="module")
def conn():
    c = build()
    execute_dml(c, Statement("INSERT INTO Singers (SingerId, FirstName, LastName, BirthDate) VALUES "
                             "(1, 'Ann', 'A', DATE '1990-01-01'), (2, 'Bob', 'B', NULL), (3, NULL, 'C', NULL)"), CATALOG, now_nanos=NOW)
    execute_dml(c, Statement("INSERT INTO Albums (SingerId, AlbumId, Title, Tags, Price, Score) VALUES "
                             "(1, 1, 'x', ['rock', 'pop'], NUMERIC '10.5', 1.5), (1, 2, 'y', [], NUMERIC '9', NULL), "
                             "(2, 1, 'z', NULL, NULL, 3.0)"), CATALOG, now_nanos=NOW)
    return c


def run(conn, sql, params=None, types=None):
    fields, rows = execute_query(conn, Statement(sql, params or {}, types or {}), CATALOG, now_nanos=NOW)
    return [(f.name, f.type) for f in fields], list(rows)


def test_preprocess_hints_then_return_and_insert_mode():
    p = preprocess("@{USE_ADDITIONAL_PARALLELISM=TRUE} SELECT a FROM `T`@{FORCE_INDEX=i} JOIN@{JOIN_METHOD=HASH_JOIN} U@{FORCE_INDEX=_BASE_TABLE} ON true")
    assert p.statement_hints == (("USE_ADDITIONAL_PARALLELISM", "TRUE"),)
    assert p.table_hints == (("t", (("FORCE_INDEX", "i"),)), ("u", (("FORCE_INDEX", "_BASE_TABLE"),)))
    assert "@" not in p.sql
    p = preprocess("UPDATE T SET a = 'THEN RETURN' WHERE CASE WHEN a THEN b END THEN RETURN a, b;")
    assert p.then_return == "a, b" and p.sql.endswith("END")
    assert preprocess("insert or update into T (a) values (1)").insert_mode == "UPDATE"
    assert preprocess("SELECT '@{x}' AS s").sql == "SELECT '@{x}' AS s"


def test_preprocess_names_the_sequence_of_sequence_functions_as_a_string():
    p = preprocess("SELECT GET_NEXT_SEQUENCE_VALUE( SEQUENCE `My Seq` ), get_internal_sequence_state(sequence s2), "
                   "'GET_NEXT_SEQUENCE_VALUE(SEQUENCE x)'")
    assert p.sql == ("SELECT GET_NEXT_SEQUENCE_VALUE('My Seq'), get_internal_sequence_state('s2'), "
                     "'GET_NEXT_SEQUENCE_VALUE(SEQUENCE x)'")
    p = preprocess("INSERT INTO T (a) VALUES (GET_NEXT_SEQUENCE_VALUE(SEQUENCE s)) THEN RETURN WITH ACTION a")
    assert p.then_return == "WITH ACTION a" and p.sql.endswith("VALUES (GET_NEXT_SEQUENCE_VALUE('s'))")


def test_output_names_and_types(conn):
    fields, rows = run(conn, "SELECT SingerId, s.FirstName AS fn, 1 + 1, 2.5, 'x', NULL, TRUE, @p, "
                             "CURRENT_TIMESTAMP() AS now, BirthDate FROM Singers AS s WHERE SingerId = 1",
                       {"p": "2024-01-01T00:00:00Z"})
    assert fields == [("SingerId", T.INT64), ("fn", T.STRING), ("", T.INT64), ("", T.FLOAT64), ("", T.STRING),
                      ("", T.INT64), ("", T.BOOL), ("", T.TIMESTAMP), ("now", T.TIMESTAMP), ("BirthDate", T.DATE)]
    assert rows == [["1", "Ann", "2", 2.5, "x", None, True, "2024-01-01T00:00:00Z", "2024-05-01T10:00:00Z", "1990-01-01"]]


def test_runtime_type_fallback_for_unknown_types(conn):
    fields, rows = run(conn, "SELECT x FROM (SELECT NULL AS x UNION ALL SELECT NULL)")
    assert fields == [("x", T.INT64)] and rows == [[None], [None]]


def test_joins_and_star(conn):
    fields, rows = run(conn, "SELECT s.SingerId, a.Title FROM Singers s LEFT JOIN Albums a ON a.SingerId = s.SingerId "
                             "ORDER BY s.SingerId, a.AlbumId")
    assert rows == [["1", "x"], ["1", "y"], ["2", "z"], ["3", None]]
    fields, rows = run(conn, "SELECT a.* FROM Albums AS a WHERE a.AlbumId = 2")
    assert [f[0] for f in fields] == [c.name for c in CATALOG.table("Albums").columns]
    assert rows[0][3] == [] and rows[0][4] == "9"
    fields, _ = run(conn, "SELECT * FROM Singers JOIN Albums USING (SingerId) WHERE Title = 'x'")
    assert [f[0] for f in fields].count("SingerId") == 1


def test_aggregates_group_by_having(conn):
    fields, rows = run(conn, "SELECT SingerId, COUNT(*) AS n, SUM(AlbumId), MAX(Title), AVG(Score), COUNT(DISTINCT Title), "
                             "ARRAY_AGG(AlbumId), STRING_AGG(Title, '|') FROM Albums GROUP BY SingerId HAVING COUNT(*) > 0 "
                             "ORDER BY n DESC")
    assert [f[1] for f in fields] == [T.INT64, T.INT64, T.INT64, T.STRING, T.FLOAT64, T.INT64, T.array_of(T.INT64), T.STRING]
    assert rows[0] == ["1", "2", "3", "y", 1.5, "2", ["1", "2"], "x|y"]
    assert rows[1][:2] == ["2", "1"]


def test_order_by_nulls_and_limit_offset(conn):
    _, rows = run(conn, "SELECT FirstName FROM Singers ORDER BY FirstName")
    assert rows == [[None], ["Ann"], ["Bob"]]
    _, rows = run(conn, "SELECT FirstName FROM Singers ORDER BY FirstName NULLS LAST LIMIT @l OFFSET @o", {"l": "2", "o": "1"})
    assert rows == [["Bob"], [None]]
    _, rows = run(conn, "SELECT FirstName AS f FROM Singers ORDER BY f DESC NULLS FIRST")
    assert rows == [[None], ["Bob"], ["Ann"]]


def test_set_operations(conn):
    _, rows = run(conn, "SELECT SingerId FROM Singers UNION ALL SELECT SingerId FROM Albums ORDER BY SingerId")
    assert [r[0] for r in rows] == ["1", "1", "1", "2", "2", "3"]
    _, rows = run(conn, "SELECT SingerId FROM Singers UNION DISTINCT SELECT SingerId FROM Albums ORDER BY 1")
    assert [r[0] for r in rows] == ["1", "2", "3"]
    _, rows = run(conn, "SELECT SingerId FROM Singers INTERSECT DISTINCT SELECT SingerId FROM Albums ORDER BY SingerId")
    assert [r[0] for r in rows] == ["1", "2"]
    _, rows = run(conn, "SELECT SingerId FROM Singers EXCEPT DISTINCT SELECT SingerId FROM Albums")
    assert rows == [["3"]]
    _, rows = run(conn, "(SELECT SingerId FROM Singers ORDER BY SingerId DESC LIMIT 1) UNION ALL (SELECT 7) ORDER BY 1")
    assert rows == [["3"], ["7"]]


def test_subqueries_cte_and_unnest(conn):
    _, rows = run(conn, "SELECT SingerId, (SELECT COUNT(*) FROM Albums a WHERE a.SingerId = s.SingerId) AS n FROM Singers s "
                        "WHERE EXISTS (SELECT 1 FROM Albums WHERE Albums.SingerId = s.SingerId) "
                        "AND SingerId IN (SELECT SingerId FROM Albums) ORDER BY SingerId")
    assert rows == [["1", "2"], ["2", "1"]]
    _, rows = run(conn, "WITH a AS (SELECT SingerId AS k FROM Singers WHERE SingerId > 1) SELECT k FROM a ORDER BY k")
    assert rows == [["2"], ["3"]]
    fields, rows = run(conn, "SELECT t, o FROM Albums, UNNEST(Albums.Tags) AS t WITH OFFSET AS o ORDER BY o")
    assert rows == [["rock", "0"], ["pop", "1"]] and fields == [("t", T.STRING), ("o", T.INT64)]
    _, rows = run(conn, "SELECT x FROM UNNEST(@arr) AS x WHERE x > 1 ORDER BY x DESC", {"arr": ["1", "2", "3"]})
    assert rows == [["3"], ["2"]]
    _, rows = run(conn, "SELECT Title FROM Albums WHERE 'pop' IN UNNEST(Tags)")
    assert rows == [["x"]]
    _, rows = run(conn, "SELECT SingerId FROM Singers WHERE FirstName IN UNNEST(@names) ORDER BY 1",
                  {"names": ["Ann", "Bob"]}, {"names": T.array_of(T.STRING)})
    assert rows == [["1"], ["2"]]


def test_distinct_and_numeric_ordering(conn):
    _, rows = run(conn, "SELECT DISTINCT SingerId FROM Albums ORDER BY SingerId")
    assert rows == [["1"], ["2"]]
    _, rows = run(conn, "SELECT Price FROM Albums WHERE Price > NUMERIC '9.5'")
    assert rows == [["10.5"]]


def test_parameters_of_every_type(conn):
    params = {"b": True, "i": "5", "f": 1.5, "s": "x", "y": "YWJj", "d": "2020-01-02", "t": "2020-01-02T03:04:05Z",
              "n": "1.5", "j": '{"b":1,"a":2}', "a": ["1", None]}
    types = {"b": T.BOOL, "i": T.INT64, "f": T.FLOAT64, "s": T.STRING, "y": T.BYTES, "d": T.DATE, "t": T.TIMESTAMP,
             "n": T.NUMERIC, "j": T.JSON, "a": T.array_of(T.INT64)}
    fields, rows = run(conn, "SELECT @b, @i, @f, @s, @y, @d, @t, @n, @j, @a", params, types)
    assert [f[1] for f in fields] == list(types.values())
    assert rows == [[True, "5", 1.5, "x", "YWJj", "2020-01-02", "2020-01-02T03:04:05Z", "1.5", '{"a":2,"b":1}', ["1", None]]]


def test_type_errors_are_invalid_argument(conn):
    for sql in ("SELECT 1 FROM Singers WHERE FirstName = 1", "SELECT 'a' + 1", "SELECT 1 FROM Singers WHERE SingerId",
                "SELECT 1 UNION ALL SELECT 1, 2"):
        with pytest.raises(SpannerError) as e:
            run(conn, sql)
        assert e.value.code == Code.INVALID_ARGUMENT, sql


def test_case_insensitive_and_backquoted_names(conn):
    _, rows = run(conn, "select `singerid`, SINGERS.firstname from `SINGERS` where SingerID = 2")
    assert rows == [["2", "Bob"]]


def test_translate_expression_for_generated_columns():
    sql = translate_expression("CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(FirstName || ' ', '') || LastName), 19) END",
                               SINGERS, CATALOG)
    assert sql == ('CASE WHEN "Processed" THEN NULL ELSE (ls_farm_fingerprint((coalesce(("FirstName" || \' \'), \'\') '
                   '|| "LastName")) % 19) END')
    assert translate_expression("CURRENT_TIMESTAMP()", SINGERS, CATALOG) == "ls_current_timestamp()"
    with pytest.raises(SpannerError):
        translate_expression("NoSuchColumn + 1", SINGERS, CATALOG)


def test_translate_query_is_pure_text():
    q = translate_query("SELECT SingerId FROM Singers WHERE LastUpdated > @p LIMIT 5", CATALOG, {"p": T.TIMESTAMP})
    assert q.sql == ('SELECT "Singers"."SingerId" AS "SingerId" FROM "Singers" AS "Singers" '
                     'WHERE ("Singers"."LastUpdated" > :p) LIMIT 5')
