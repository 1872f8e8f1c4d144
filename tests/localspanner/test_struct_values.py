"""STRUCT values in query results and parameters, decoded by the official client."""

from __future__ import annotations

import base64
import datetime

import pytest
from google.api_core import exceptions
from google.cloud.spanner_v1 import TypeCode, param_types

NESTED = param_types.Struct([
    param_types.StructField("f", param_types.INT64),
    param_types.StructField("nested", param_types.Struct([param_types.StructField("g", param_types.STRING)])),
])
PAIR = param_types.Struct([param_types.StructField("f", param_types.INT64),
                           param_types.StructField("s", param_types.STRING)])


def _query(db, sql: str, **kwargs):
    with db.snapshot() as snap:
        result = snap.execute_sql(sql, **kwargs)
        rows = [list(r) for r in result]
        return rows, result.fields


def _field_types(field):
    return [(f.name, TypeCode(f.type_.code).name) for f in field.type_.struct_type.fields]


def test_struct_constructor_in_select_list(make_database):
    db = make_database()
    rows, fields = _query(db, "SELECT STRUCT(1 AS a, 'x' AS b) AS s, STRUCT<f1 INT64, f2 STRING>(2, 'y')")
    assert rows == [[[1, "x"], [2, "y"]]]
    assert fields[0].name == "s" and _field_types(fields[0]) == [("a", "INT64"), ("b", "STRING")]
    assert _field_types(fields[1]) == [("f1", "INT64"), ("f2", "STRING")]


def test_every_scalar_type_survives_inside_a_struct(make_database):
    db = make_database()
    rows, fields = _query(db, "SELECT STRUCT(TRUE AS b, 1.5 AS f, b'\\x00\\xff' AS y, DATE '2024-05-01' AS d, "
                              "TIMESTAMP '2024-05-01T10:00:00.123456Z' AS t, NUMERIC '1.25' AS n, JSON '{\"k\": 1}' AS j, "
                              "[1, NULL, 3] AS arr, CAST(NULL AS STRING) AS missing, 9007199254740993 AS big)")
    b, f, y, d, t, n, j, arr, missing, big = rows[0][0]
    assert (b, f, d, missing, big) == (True, 1.5, datetime.date(2024, 5, 1), None, 9007199254740993)
    assert base64.b64decode(y) == b"\x00\xff"
    assert t == datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=datetime.UTC)
    assert str(n) == "1.25" and j == {"k": 1} and arr == [1, None, 3]
    assert [c for _, c in _field_types(fields[0])] == ["BOOL", "FLOAT64", "BYTES", "DATE", "TIMESTAMP", "NUMERIC",
                                                          "JSON", "ARRAY", "STRING", "INT64"]


def test_select_as_struct_in_array_subquery(make_database):
    db = make_database(["CREATE TABLE T (K INT64, Name STRING(MAX), Tags ARRAY<STRING(MAX)>) PRIMARY KEY (K)"])
    with db.batch() as batch:
        batch.insert("T", ("K", "Name", "Tags"), [(1, "one", ["a"]), (2, None, []), (3, "three", None)])
    rows, fields = _query(db, "SELECT ARRAY(SELECT AS STRUCT K, Name, Tags FROM T ORDER BY K DESC) AS all_rows")
    assert rows == [[[[3, "three", None], [2, None, []], [1, "one", ["a"]]]]]
    element = fields[0].type_.array_element_type
    assert [(f.name, TypeCode(f.type_.code).name) for f in element.struct_type.fields] == [
        ("K", "INT64"), ("Name", "STRING"), ("Tags", "ARRAY")]
    rows, _ = _query(db, "SELECT ARRAY(SELECT STRUCT(K AS k, UPPER(Name) AS n) FROM T WHERE K < 3 ORDER BY K) AS a, "
                         "ARRAY(SELECT AS STRUCT K FROM T WHERE K > 10) AS empty")
    assert rows == [[[[1, "ONE"], [2, None]], []]]


def test_nested_arrays_of_structs(make_database):
    db = make_database()
    rows, fields = _query(db, "SELECT ARRAY(SELECT AS STRUCT 'outer' AS name, "
                              "ARRAY(SELECT AS STRUCT x AS v, x > 1 AS big FROM UNNEST([1, 2]) AS x ORDER BY x) AS inner_rows)")
    assert rows == [[[["outer", [[1, False], [2, True]]]]]]
    outer = fields[0].type_.array_element_type.struct_type.fields
    assert outer[1].name == "inner_rows"
    assert [f.name for f in outer[1].type_.array_element_type.struct_type.fields] == ["v", "big"]


def test_struct_parameter_fields(make_database):
    db = make_database()
    rows, fields = _query(db, "SELECT @p.f, @p.nested.g, @p.f + 1 AS next",
                          params={"p": (41, ("deep",))}, param_types={"p": NESTED})
    assert rows == [[41, "deep", 42]]
    assert [f.name for f in fields] == ["f", "g", "next"]
    rows, _ = _query(db, "SELECT @p AS whole", params={"p": (7, None)}, param_types={"p": NESTED})
    assert rows == [[[7, None]]]


def test_unnest_array_of_struct_parameter(make_database):
    db = make_database()
    rows, _ = _query(db, "SELECT a.s, a.f * 10 AS ten FROM UNNEST(@arr) AS a WHERE a.f > 1 ORDER BY a.f DESC",
                     params={"arr": [(1, "one"), (2, "two"), (3, None)]},
                     param_types={"arr": param_types.Array(PAIR)})
    assert rows == [[None, 30], ["two", 20]]
    rows, _ = _query(db, "SELECT a FROM UNNEST(@arr) AS a", params={"arr": [(5, "five")]},
                     param_types={"arr": param_types.Array(PAIR)})
    assert rows == [[[5, "five"]]]


def test_struct_values_from_a_table_and_a_subquery(make_database):
    db = make_database(["CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)"])
    with db.batch() as batch:
        batch.insert("T", ("K", "V"), [(1, "a"), (2, "b")])
    rows, _ = _query(db, "SELECT s.v FROM (SELECT STRUCT(K AS k, V AS v) AS s FROM T) ORDER BY s.k")
    assert rows == [["a"], ["b"]]
    rows, _ = _query(db, "SELECT AS STRUCT K, V FROM T WHERE K = 2")
    assert rows == [[[2, "b"]]]


def test_unknown_field_is_a_clear_error(make_database):
    db = make_database()
    with pytest.raises(exceptions.InvalidArgument, match="nope"):
        _query(db, "SELECT @p.nope", params={"p": (1, ("x",))}, param_types={"p": NESTED})
    with pytest.raises(exceptions.InvalidArgument, match="fields"):
        _query(db, "SELECT STRUCT<a INT64, b INT64>(1)")


def test_star_of_a_struct_value_expands_into_its_fields(make_database):
    db = make_database()
    thread = param_types.Struct([param_types.StructField("threadid", param_types.INT64),
                                 param_types.StructField("userid", param_types.STRING)])
    rows, fields = _query(db, "SELECT CAST(t AS STRUCT<threadid INT64, userid STRING>).* FROM UNNEST(@threads) t",
                          params={"threads": [(1, "a"), (2, "b")]}, param_types={"threads": param_types.Array(thread)})
    assert rows == [[1, "a"], [2, "b"]]
    assert [(f.name, TypeCode(f.type_.code).name) for f in fields] == [("threadid", "INT64"), ("userid", "STRING")]
    rows, fields = _query(db, "SELECT @p.*", params={"p": (3, "c")}, param_types={"p": thread})
    assert rows == [[3, "c"]] and [f.name for f in fields] == ["threadid", "userid"]
    with pytest.raises(exceptions.InvalidArgument):
        _query(db, "SELECT @n.*", params={"n": 1}, param_types={"n": param_types.INT64})
