"""UUID, FLOAT32 and INTERVAL (and TOKENLIST in DDL), end to end through the official client.

Each type as a column, a key, an index column, an array element and a query parameter;
casts and functions; wrong values refused naming column, table and type; GetDatabaseDdl
and INFORMATION_SCHEMA. The client hands UUID values as ``uuid.UUID``, FLOAT32 as a
Python float (rounded to single precision by the server), INTERVAL as
``spanner_v1.Interval`` (months, days, nanos).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import uuid

import pytest
from google.api_core import exceptions
from google.cloud.spanner_v1 import Interval, TypeCode, param_types

U1 = uuid.UUID("00000000-0000-4000-8000-000000000001")
U2 = uuid.UUID("7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b")
U3 = uuid.UUID("ffffffff-ffff-4fff-bfff-ffffffffffff")
F32_TENTH = 0.10000000149011612  # 0.1 rounded to single precision
DAY_NANOS = 86_400 * 10**9

DDL = [
    """CREATE TABLE Things (
        Id UUID NOT NULL,
        Score FLOAT32,
        Span INTERVAL,
        Ids ARRAY<UUID>,
        Scores ARRAY<FLOAT32>,
        Spans ARRAY<INTERVAL>,
        Title STRING(MAX),
        Title_Tokens TOKENLIST AS (TOKENIZE_FULLTEXT(Title)) HIDDEN,
    ) PRIMARY KEY (Id)""",
    "CREATE INDEX ThingsByScore ON Things (Score DESC)",
    "CREATE TABLE ByScore (Score FLOAT32 NOT NULL, Span INTERVAL NOT NULL, Name STRING(MAX)) PRIMARY KEY (Score, Span)",
    "CREATE SEARCH INDEX ThingsSearch ON Things(Title_Tokens) STORING (Score) OPTIONS (sort_order_sharding = true)",
]

COLUMNS = ("Id", "Score", "Span", "Ids", "Scores", "Spans", "Title")


@pytest.fixture
def db(make_database):
    database = make_database(DDL)
    rows = [
        (U2, 0.1, Interval(months=14, days=3, nanos=4 * 3600 * 10**9 + 500_000_000), [U1, None, U3],
         [0.1, math.inf, None], [Interval(days=1), None], "quick brown fox"),
        (U1, -2.5, Interval(nanos=-1), [], [], [], "lazy dog"),
        (U3, None, None, None, None, None, None),
    ]
    with database.batch() as batch:
        batch.insert("Things", COLUMNS, rows)
    return database


def query(database, sql, params=None, types=None):
    with database.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def test_values_round_trip_through_mutation_read_and_query(db):
    with db.snapshot() as snap:
        read = [list(r) for r in snap.read("Things", COLUMNS, keyset=_all())]
    queried = query(db, "SELECT Id, Score, Span, Ids, Scores, Spans, Title FROM Things ORDER BY Id")
    assert read == queried
    first = read[0]
    assert first[0] == U1 and first[1] == -2.5 and first[2] == Interval(nanos=-1) and first[3:6] == [[], [], []]
    second = read[1]
    assert second[0] == U2
    assert second[1] == F32_TENTH  # FLOAT32 keeps single precision
    assert second[2] == Interval(months=14, days=3, nanos=4 * 3600 * 10**9 + 500_000_000)
    assert second[3] == [U1, None, U3]
    assert second[4][0] == F32_TENTH and second[4][1] == math.inf and second[4][2] is None
    assert second[5] == [Interval(days=1), None]
    assert read[2][0] == U3 and read[2][1:] == [None] * 6


def test_keys_sort_by_value_and_index_orders_float32(db):
    with db.batch() as batch:
        batch.insert("ByScore", ("Score", "Span", "Name"), [
            (2.0, Interval(days=1), "a"), (-1.0, Interval(months=1), "b"), (2.0, Interval(nanos=5), "c"),
            (-1.0, Interval(days=-40), "d"),
        ])
    names = [r[0] for r in query(db, "SELECT Name FROM ByScore ORDER BY Score, Span")]
    assert names == ["d", "b", "c", "a"]  # by score, then by interval length (-40 days < 1 month)
    with db.snapshot() as snap:
        keyed = list(snap.read("ByScore", ("Name",), keyset=_keys([[2.0, "P1D"]])))
    assert keyed == [["a"]]
    by_index = query(db, "SELECT Id FROM Things@{FORCE_INDEX=ThingsByScore} WHERE Score IS NOT NULL ORDER BY Score DESC")
    assert by_index == [[U2], [U1]]


def test_parameters_of_each_type(db):
    assert query(db, "SELECT Title FROM Things WHERE Id = @id", {"id": U2}, {"id": param_types.UUID}) == [["quick brown fox"]]
    assert query(db, "SELECT Title FROM Things WHERE Id IN UNNEST(@ids) ORDER BY Title",
                 {"ids": [U1, U2]}, {"ids": param_types.Array(param_types.UUID)}) == [["lazy dog"], ["quick brown fox"]]
    assert query(db, "SELECT Title FROM Things WHERE Score = @s", {"s": 0.1}, {"s": param_types.FLOAT32}) == [["quick brown fox"]]
    assert query(db, "SELECT Title FROM Things WHERE Score < @s", {"s": 0.0}, {"s": param_types.FLOAT64}) == [["lazy dog"]]
    got = query(db, "SELECT @i", {"i": Interval(months=1, days=2, nanos=3)}, {"i": param_types.INTERVAL})
    assert got == [[Interval(months=1, days=2, nanos=3)]]
    assert query(db, "SELECT @u", {"u": U3}, {"u": param_types.UUID}) == [[U3]]


def test_result_metadata_carries_the_new_type_codes(db):
    with db.snapshot() as snap:
        results = snap.execute_sql("SELECT Id, Score, Span, Scores FROM Things LIMIT 1")
        list(results)
        codes = [TypeCode(f.type_.code).name for f in results.fields]
        element = TypeCode(results.fields[3].type_.array_element_type.code).name
    assert codes == ["UUID", "FLOAT32", "INTERVAL", "ARRAY"] and element == "FLOAT32"


def test_casts_and_functions(db):
    row = query(db, """SELECT CAST('7F3C8A1E-2B4D-4C6E-9A0B-1C2D3E4F5A6B' AS UUID),
                              CAST(Id AS STRING),
                              CAST(0.1 AS FLOAT32),
                              CAST(Score AS FLOAT64),
                              CAST('P1DT2H' AS INTERVAL),
                              CAST(Span AS STRING),
                              EXTRACT(DAY FROM Span),
                              MAKE_INTERVAL(1, 2, 3, 4, 5, 6),
                              TIMESTAMP '2024-01-31 00:00:00+00' + INTERVAL 1 MONTH,
                              TIMESTAMP_ADD(TIMESTAMP '2024-01-01 00:00:00+00', INTERVAL 36 HOUR),
                              INTERVAL 3 DAY
                       FROM Things WHERE Id = @id""", {"id": U2}, {"id": param_types.UUID})[0]
    assert row[0] == U2
    assert row[1] == str(U2)
    assert row[2] == F32_TENTH
    assert row[3] == F32_TENTH
    assert row[4] == Interval(days=1, nanos=2 * 3600 * 10**9)
    assert row[5] == "1-2 3 4:0:0.500"
    assert row[6] == 3
    assert row[7] == Interval(months=14, days=3, nanos=(4 * 3600 + 5 * 60 + 6) * 10**9)
    assert row[8] == dt.datetime(2024, 2, 29, tzinfo=dt.UTC)
    assert row[9] == dt.datetime(2024, 1, 2, 12, tzinfo=dt.UTC)
    assert row[10] == Interval(days=3)
    uuids = query(db, "SELECT NEW_UUID(), NEW_UUID()")[0]
    assert all(isinstance(u, uuid.UUID) and u.version == 4 for u in uuids) and uuids[0] != uuids[1]
    diff = query(db, "SELECT TIMESTAMP '2024-01-02 00:00:00+00' - TIMESTAMP '2024-01-01 00:00:00+00'")[0][0]
    assert diff == Interval(nanos=DAY_NANOS)


def test_comparisons_follow_googlesql(db):
    assert query(db, "SELECT INTERVAL 1 MONTH = INTERVAL 30 DAY, INTERVAL 1 DAY < INTERVAL 25 HOUR")[0] == [True, True]
    assert query(db, "SELECT COUNT(*) FROM Things WHERE Id > CAST('00000000-0000-4000-8000-000000000001' AS UUID)")[0] == [2]
    assert query(db, "SELECT Score * 2 FROM Things WHERE Id = @id", {"id": U1}, {"id": param_types.UUID})[0] == [-5.0]


@pytest.mark.parametrize(("column", "value", "type_name"), [
    ("Id", "not-a-uuid", "UUID"),
    ("Score", 1e300, "FLOAT32"),
    ("Span", "1 day", "INTERVAL"),
])
def test_wrong_values_are_refused_naming_column_table_and_type(db, column, value, type_name):
    with pytest.raises(exceptions.FailedPrecondition) as info:  # a mutation value not of the column's type
        with db.batch() as batch:
            batch.insert_or_update("Things", ("Id", column) if column != "Id" else ("Id",),
                                   [(str(U1), value)] if column != "Id" else [(value,)])
    message = str(info.value)
    assert column in message and "Things" in message and type_name in message


def test_tokenlist_is_hidden_and_cannot_be_read_or_written(db):
    assert len(query(db, "SELECT * FROM Things LIMIT 1")[0]) == 7  # Title_Tokens left out of *
    with pytest.raises(exceptions.InvalidArgument, match="TOKENLIST"):
        query(db, "SELECT Title_Tokens FROM Things")
    with pytest.raises(exceptions.InvalidArgument, match="TOKENLIST"):
        with db.snapshot() as snap:
            list(snap.read("Things", ("Title_Tokens",), keyset=_all()))
    with pytest.raises(exceptions.GoogleAPICallError):
        with db.batch() as batch:
            batch.insert_or_update("Things", ("Id", "Title_Tokens"), [(U1, "x")])
    with pytest.raises(exceptions.MethodNotImplemented, match="SEARCH"):  # full-text queries are not answered
        query(db, "SELECT Id FROM Things WHERE SEARCH(Title_Tokens, 'fox')")


def test_dml_text_literal_of_the_wrong_form_names_column_table_and_type(db):
    for column, literal, type_name in (("Id", "'not-a-uuid'", "UUID"), ("Span", "'soon'", "INTERVAL")):
        statement = (f"INSERT INTO Things (Id, Span) VALUES ({literal}, 'P1D')" if column == "Id"
                     else f"UPDATE Things SET Span = {literal} WHERE TRUE")
        with pytest.raises(exceptions.InvalidArgument) as info:
            db.run_in_transaction(lambda tx, s=statement: tx.execute_update(s))
        assert column in str(info.value) and "Things" in str(info.value) and type_name in str(info.value)


def test_get_database_ddl_round_trips(db, make_database):
    ddl = list(db.reload() or db.ddl_statements)
    printed = "\n".join(ddl)
    assert "Id UUID NOT NULL" in printed and "Score FLOAT32" in printed and "Spans ARRAY<INTERVAL>" in printed
    assert "Title_Tokens TOKENLIST AS (TOKENIZE_FULLTEXT(Title)) HIDDEN" in printed
    assert "CREATE SEARCH INDEX ThingsSearch ON Things(Title_Tokens) STORING (Score)" in printed
    again = make_database(ddl)
    again.reload()
    assert list(again.ddl_statements) == ddl


def test_information_schema_names_the_types(db):
    rows = query(db, "SELECT COLUMN_NAME, SPANNER_TYPE FROM INFORMATION_SCHEMA.COLUMNS "
                     "WHERE TABLE_NAME = 'Things' ORDER BY ORDINAL_POSITION")
    assert rows == [["Id", "UUID"], ["Score", "FLOAT32"], ["Span", "INTERVAL"], ["Ids", "ARRAY<UUID>"],
                    ["Scores", "ARRAY<FLOAT32>"], ["Spans", "ARRAY<INTERVAL>"], ["Title", "STRING(MAX)"],
                    ["Title_Tokens", "TOKENLIST"]]


def test_dml_writes_each_type(db):
    def work(tx):
        return tx.execute_update(
            "INSERT INTO Things (Id, Score, Span, Ids) VALUES (@id, 1.25, INTERVAL 2 HOUR, [@id])",
            params={"id": uuid.UUID("11111111-2222-4333-8444-555555555555")},
            param_types={"id": param_types.UUID})
    assert db.run_in_transaction(work) == 1
    got = query(db, "SELECT Score, Span, Ids FROM Things WHERE Id = '11111111-2222-4333-8444-555555555555'")
    assert got == [[1.25, Interval(nanos=2 * 3600 * 10**9), [uuid.UUID("11111111-2222-4333-8444-555555555555")]]]


def _all():
    from google.cloud.spanner_v1 import KeySet
    return KeySet(all_=True)


def _keys(keys):
    from google.cloud.spanner_v1 import KeySet
    return KeySet(keys=keys)


def test_delete_by_uuid_key_accepts_any_hex_case(db):
    with db.batch() as batch:
        batch.delete("Things", _keys([[str(U2).upper()]]))
    assert [r[0] for r in query(db, "SELECT Id FROM Things ORDER BY Id")] == [U1, U3]


@pytest.mark.skipif(bool(os.environ.get("SPANNER_EMULATOR_HOST")), reason="starts its own local server")
def test_values_schema_and_search_index_survive_a_restart(tmp_path, monkeypatch):
    from google.cloud import spanner

    from watcher.localspanner.server import LocalSpanner

    def open_db(server, create):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        instance = spanner.Client(project="types-project").instance(
            "types", configuration_name="projects/types-project/instanceConfigs/emulator-config", node_count=1)
        if create:
            instance.create().result(30)
            database = instance.database("types-db", ddl_statements=DDL)
            database.create().result(60)
            return database
        return instance.database("types-db")

    with LocalSpanner(data_dir=str(tmp_path)) as server:
        database = open_db(server, create=True)
        with database.batch() as batch:
            batch.insert("Things", ("Id", "Score", "Span", "Spans"),
                         [(U2, 0.1, Interval(months=-2, nanos=7), [Interval(days=9)])])
        database.reload()
        ddl = list(database.ddl_statements)
        before = query(database, "SELECT Id, Score, Span, Spans FROM Things")
    with LocalSpanner(data_dir=str(tmp_path)) as server:
        database = open_db(server, create=False)
        database.reload()
        assert list(database.ddl_statements) == ddl
        assert query(database, "SELECT Id, Score, Span, Spans FROM Things") == before == [
            [U2, F32_TENTH, Interval(months=-2, nanos=7), [Interval(days=9)]]]


def test_change_stream_records_carry_the_new_types_and_skip_tokenlist(make_database):
    from tests.localspanner.test_change_streams import _now, read_stream

    database = make_database([DDL[0], "CREATE CHANGE STREAM S FOR ALL"])
    start = _now(database)
    with database.batch() as batch:
        batch.insert("Things", ("Id", "Score", "Span", "Ids", "Title"),
                     [(U2, 0.1, Interval(days=2), [U1], "hello world")])
    records = read_stream(database, "S", start, _now(database))
    [record] = records
    types = {name: t for name, t, _, _ in record["column_types"]}
    assert types["Id"] == {"code": "UUID"} and types["Score"] == {"code": "FLOAT32"}
    assert types["Ids"] == {"code": "ARRAY", "array_element_type": {"code": "UUID"}}
    assert "Title_Tokens" not in types
    [mod] = record["mods"]
    assert mod["keys"] == {"Id": str(U2)}
    assert mod["new_values"]["Span"] == "P2D" and mod["new_values"]["Ids"] == [str(U1)]
    assert mod["new_values"]["Score"] == F32_TENTH


def test_interval_normalisation_negation_and_arithmetic(db):
    row = query(db, """SELECT JUSTIFY_HOURS(INTERVAL 50 HOUR), JUSTIFY_DAYS(INTERVAL 35 DAY),
                              JUSTIFY_INTERVAL(MAKE_INTERVAL(day => 35, hour => 50)), -INTERVAL 2 DAY,
                              INTERVAL 1 DAY * 3 + INTERVAL 1 MONTH, INTERVAL '1-2 3 4:5:6.5' YEAR TO SECOND""")[0]
    assert row == [Interval(days=2, nanos=2 * 3600 * 10**9), Interval(months=1, days=5),
                   Interval(months=1, days=7, nanos=2 * 3600 * 10**9), Interval(days=-2),
                   Interval(months=1, days=3), Interval(months=14, days=3, nanos=(4 * 3600 + 5 * 60 + 6) * 10**9 + 5 * 10**8)]
    with pytest.raises(exceptions.InvalidArgument, match="Interval field out of range"):
        query(db, "SELECT INTERVAL 200000 MONTH")


def test_uuid_default_key_and_dml_updates(make_database):
    database = make_database(["CREATE TABLE Auto (Id UUID NOT NULL DEFAULT (NEW_UUID()), Name STRING(MAX), "
                              "Score FLOAT32, Span INTERVAL) PRIMARY KEY (Id)"])
    inserted = database.run_in_transaction(
        lambda tx: tx.execute_update("INSERT INTO Auto (Name, Score) VALUES ('a', 1.5), ('b', 2.5)"))
    updated = database.run_in_transaction(
        lambda tx: tx.execute_update("UPDATE Auto SET Score = Score * 2, Span = INTERVAL 90 MINUTE WHERE Name = 'a'"))
    assert (inserted, updated) == (2, 1)
    rows = query(database, "SELECT Id, Name, Score, Span, CAST(Score AS STRING) FROM Auto ORDER BY Name")
    assert all(isinstance(r[0], uuid.UUID) and r[0].version == 4 for r in rows) and rows[0][0] != rows[1][0]
    assert [r[1:] for r in rows] == [["a", 3.0, Interval(nanos=90 * 60 * 10**9), "3"], ["b", 2.5, None, "2.5"]]


def test_search_index_is_listed_and_float32_sums_widen(db):
    rows = query(db, "SELECT INDEX_NAME, INDEX_TYPE FROM INFORMATION_SCHEMA.INDEXES "
                     "WHERE TABLE_NAME = 'Things' ORDER BY INDEX_NAME")
    assert rows == [["PRIMARY_KEY", "PRIMARY_KEY"], ["ThingsByScore", "INDEX"], ["ThingsSearch", "SEARCH"]]
    columns = query(db, "SELECT COLUMN_NAME, SPANNER_TYPE FROM INFORMATION_SCHEMA.INDEX_COLUMNS "
                        "WHERE INDEX_NAME = 'ThingsSearch' ORDER BY COLUMN_NAME")
    assert columns == [["Score", "FLOAT32"], ["Title_Tokens", "TOKENLIST"]]
    with db.snapshot() as snap:
        results = snap.execute_sql("SELECT SUM(Score), MIN(Score) FROM Things")
        row = list(results)[0]
        codes = [TypeCode(f.type_.code).name for f in results.fields]
    assert codes == ["FLOAT64", "FLOAT32"] and row == [F32_TENTH - 2.5, -2.5]
