"""Queries through ``execute_sql``: parameters (incl. ``IN UNNEST(@p)`` of every type), the poll query, streaming."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import pytest
from google.api_core import exceptions
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import spanner
from google.cloud.spanner_v1 import TypeCode, param_types

UTC = dt.UTC

DDL = [
    """CREATE TABLE Q (Id INT64 NOT NULL, F FLOAT64, B BOOL, S STRING(MAX), Y BYTES(MAX), D DATE,
                      T TIMESTAMP, N NUMERIC, Tags ARRAY<STRING(MAX)>) PRIMARY KEY (Id)""",
    "CREATE TABLE R (Id INT64 NOT NULL, QId INT64, W INT64) PRIMARY KEY (Id)",
]

Q_ROWS = [
    (i, i / 4, i % 2 == 0, f"s{i}", base64.b64encode(f"y{i}".encode()), dt.date(2020, 1, i),
     DatetimeWithNanoseconds(2020, 1, 1, 0, 0, i, nanosecond=i * 1000 + 7, tzinfo=UTC), Decimal(f"{i}.{i}"),
     [f"t{i % 3}", "all"])
    for i in range(1, 11)
]


@pytest.fixture(scope="module")
def qdb(instance):
    import uuid

    db = instance.database(f"queries-{uuid.uuid4().hex[:8]}", ddl_statements=DDL)
    db.create().result(60)
    with db.batch() as b:
        b.insert("Q", ("Id", "F", "B", "S", "Y", "D", "T", "N", "Tags"), Q_ROWS)
        b.insert("R", ("Id", "QId", "W"), [(100 + i, i % 4, i) for i in range(12)])
    yield db
    db.drop()


def _query(db, sql, params=None, types=None):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def _ids(db, where, value, ptype):
    return [r[0] for r in _query(db, f"SELECT Id FROM Q WHERE {where} ORDER BY Id", {"p": value}, {"p": ptype})]


IN_UNNEST = {
    # column: (element type, values to look for, ids expected)
    "Id": (param_types.INT64, [3, 5, 99], [3, 5]),
    "F": (param_types.FLOAT64, [0.5, 2.25], [2, 9]),
    "B": (param_types.BOOL, [True], [2, 4, 6, 8, 10]),
    "S": (param_types.STRING, ["s1", "s10", "nope"], [1, 10]),
    "Y": (param_types.BYTES, [base64.b64encode(b"y4")], [4]),
    "D": (param_types.DATE, [dt.date(2020, 1, 7), dt.date(1999, 1, 1)], [7]),
    "T": (param_types.TIMESTAMP, [Q_ROWS[5][6]], [6]),
    "N": (param_types.NUMERIC, [Decimal("8.8"), Decimal("3.30")], [3, 8]),
}


@pytest.mark.parametrize("column", list(IN_UNNEST))
def test_in_unnest_of_every_type(qdb, column):
    ptype, values, expected = IN_UNNEST[column]
    assert _ids(qdb, f"{column} IN UNNEST(@p)", values, param_types.Array(ptype)) == expected
    assert _ids(qdb, f"{column} IN UNNEST(@p)", [], param_types.Array(ptype)) == []
    everyone = _ids(qdb, f"{column} NOT IN UNNEST(@p)", values, param_types.Array(ptype))
    assert sorted(everyone + expected) == list(range(1, 11))


def test_in_unnest_with_null_parameter_matches_nothing(qdb):
    assert _ids(qdb, "Id IN UNNEST(@p)", None, param_types.Array(param_types.INT64)) == []


def test_comparison_parameters_of_each_type(qdb):
    assert _ids(qdb, "F > @p", 2.0, param_types.FLOAT64) == [9, 10]
    assert _ids(qdb, "B = @p AND Id < 5", False, param_types.BOOL) == [1, 3]
    assert _ids(qdb, "S >= @p", "s8", param_types.STRING) == [8, 9]
    assert _ids(qdb, "D BETWEEN @p AND DATE '2020-01-03'", dt.date(2020, 1, 2), param_types.DATE) == [2, 3]
    # Nanosecond precision in comparisons: T of row 3 is ...:03.000003007.
    at = DatetimeWithNanoseconds(2020, 1, 1, 0, 0, 3, nanosecond=3007, tzinfo=UTC)
    assert _ids(qdb, "T = @p", at, param_types.TIMESTAMP) == [3]
    assert _ids(qdb, "T > @p AND Id < 5", at, param_types.TIMESTAMP) == [4]
    assert _ids(qdb, "N < @p", Decimal("2.2"), param_types.NUMERIC) == [1]
    assert _ids(qdb, "@p IN UNNEST(Tags)", "t0", param_types.STRING) == [3, 6, 9]


def test_array_column_and_array_functions(qdb):
    rows = _query(qdb, "SELECT Tags, ARRAY_LENGTH(Tags) FROM Q WHERE Id = @id", {"id": 4}, {"id": param_types.INT64})
    assert rows == [[["t1", "all"], 2]]


def test_joins_aggregates_and_ordering(qdb):
    rows = _query(qdb, """
        SELECT q.Id, COUNT(*) AS n, SUM(r.W) AS total
        FROM Q AS q JOIN R AS r ON r.QId = q.Id
        WHERE q.Id IN UNNEST(@ids)
        GROUP BY q.Id
        ORDER BY total DESC""", {"ids": [1, 2, 3]}, {"ids": param_types.Array(param_types.INT64)})
    # R.QId = i % 4 for i in 0..11: QId 1 <- 1,5,9; 2 <- 2,6,10; 3 <- 3,7,11.
    assert rows == [[3, 3, 21], [2, 3, 18], [1, 3, 15]]


def test_with_union_subquery_limit_offset(qdb):
    rows = _query(qdb, """
        WITH small AS (SELECT Id FROM Q WHERE Id <= @k)
        SELECT Id FROM small
        UNION ALL
        SELECT Id FROM Q WHERE Id > (SELECT MAX(Id) - 2 FROM Q)
        ORDER BY Id DESC LIMIT 3 OFFSET 1""", {"k": 3}, {"k": param_types.INT64})
    assert rows == [[9], [3], [2]]


def test_null_handling_in_results_and_params(qdb):
    rows = _query(qdb, "SELECT COALESCE(@p, 'dflt'), IFNULL(@p, 'x') IS NULL, @p IS NULL",
                  {"p": None}, {"p": param_types.STRING})
    assert rows == [["dflt", False, True]]
    assert _ids(qdb, "S = @p", None, param_types.STRING) == []  # NULL = anything is not TRUE


def test_query_metadata_field_names_and_types(qdb):
    with qdb.snapshot() as snap:
        result = snap.execute_sql("SELECT Id, S AS Name, T, N FROM Q WHERE Id = 1")
        rows = list(result)
        fields = [(f.name, TypeCode(f.type_.code).name) for f in result.fields]
    assert fields == [("Id", "INT64"), ("Name", "STRING"), ("T", "TIMESTAMP"), ("N", "NUMERIC")]
    assert rows[0][0] == 1 and rows[0][1] == "s1"


def test_poll_query_with_force_index_on_null_filtered_index(singers_db):
    with singers_db.batch() as b:
        b.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed"),
                 [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP, i % 3 == 0) for i in range(1, 31)])
    with singers_db.snapshot() as snap:
        all_rows = list(snap.execute_sql("SELECT SingerId, ShardId FROM Singers"))
    shards = sorted({r[1] for r in all_rows if r[1] is not None})
    wanted = shards[: max(1, len(shards) // 2)]
    sql = ("SELECT SingerId, ShardId, LastUpdated FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} "
           "WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts "
           "ORDER BY LastUpdated, SingerId LIMIT 1000")
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    rows = _query(singers_db, sql, {"shards": wanted, "ts": epoch},
                  {"shards": param_types.Array(param_types.INT64), "ts": param_types.TIMESTAMP})
    expected = sorted(r[0] for r in all_rows if r[1] in wanted)
    assert sorted(r[0] for r in rows) == expected
    assert all(r[0] % 3 != 0 for r in rows)  # processed rows have a NULL ShardId
    assert rows == sorted(rows, key=lambda r: (r[2], r[0]))
    later = _query(singers_db, sql, {"shards": wanted, "ts": rows[-1][2]},
                   {"shards": param_types.Array(param_types.INT64), "ts": param_types.TIMESTAMP})
    assert later == []


def test_force_index_with_unknown_index_is_an_error(singers_db):
    with pytest.raises(exceptions.InvalidArgument) as info:
        _query(singers_db, "SELECT SingerId FROM Singers@{FORCE_INDEX=NoSuchIdx}")
    assert "NoSuchIdx" in info.value.message


def test_large_result_streams_completely(make_database):
    db = make_database(["CREATE TABLE Big (Id INT64 NOT NULL, Pad STRING(MAX)) PRIMARY KEY (Id)"])
    pad = "x" * 1000
    for start in range(0, 6000, 2000):
        with db.batch() as b:
            b.insert("Big", ("Id", "Pad"), [(i, pad) for i in range(start, start + 2000)])
    with db.snapshot() as snap:
        count = 0
        last = -1
        for row in snap.execute_sql("SELECT Id, Pad FROM Big ORDER BY Id"):
            assert row[0] == last + 1 and row[1] == pad
            last = row[0]
            count += 1
    assert count == 6000  # ~6 MB in total: more than one 4 MiB message's worth


def test_query_in_read_write_transaction_sees_earlier_dml(make_database):
    db = make_database(DDL[1:])

    def work(txn):
        txn.execute_update("INSERT INTO R (Id, QId, W) VALUES (1, 1, 5), (2, 1, 6)")
        return [list(r) for r in txn.execute_sql("SELECT SUM(W) FROM R WHERE QId = 1")]

    assert db.run_in_transaction(work) == [[11]]


def test_query_mode_plan_returns_metadata_and_a_plan_but_no_rows(make_database):
    from google.cloud.spanner_v1 import ExecuteSqlRequest

    db = make_database(DDL)
    with db.batch() as batch:
        batch.insert("R", ("Id", "QId", "W"), [(1, 1, 1)])
    with db.snapshot() as snap:
        result = snap.execute_sql("SELECT Id, W FROM R", query_mode=ExecuteSqlRequest.QueryMode.PLAN)
        rows = list(result)
        assert rows == []
        assert [f.name for f in result.fields] == ["Id", "W"]
        assert result.stats is not None and "query_plan" in result.stats
