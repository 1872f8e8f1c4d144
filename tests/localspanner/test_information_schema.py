"""INFORMATION_SCHEMA as the watcher reads it: the Java library's queries, word for word, and the other views."""

from __future__ import annotations

import datetime as dt

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

# The Java watcher's statements (spanner-change-watcher 1.2.1), including its quirks: the
# missing space before WHERE in the primary-key query, and its join on INDEX_NAME alone.
FIND_COMMIT_TIMESTAMP_COLUMN_QUERY = (
    "SELECT COLUMN_NAME, OPTION_NAME, OPTION_VALUE\n"
    "FROM INFORMATION_SCHEMA.COLUMN_OPTIONS\n"
    "WHERE TABLE_CATALOG = @catalog\n"
    "AND TABLE_SCHEMA = @schema\n"
    "AND TABLE_NAME = @table")
PK_QUERY = (
    "SELECT COLUMN_NAME\n"
    "FROM INFORMATION_SCHEMA.INDEX_COLUMNS\n"
    "INNER JOIN INFORMATION_SCHEMA.INDEXES ON INDEX_COLUMNS.INDEX_NAME=INDEXES.INDEX_NAME AND INDEXES.INDEX_TYPE='PRIMARY_KEY'"
    "WHERE INDEX_COLUMNS.TABLE_CATALOG = @catalog\n"
    "AND INDEX_COLUMNS.TABLE_SCHEMA = @schema\n"
    "AND INDEX_COLUMNS.TABLE_NAME = @table\n"
    "ORDER BY INDEX_COLUMNS.ORDINAL_POSITION")
LIST_TABLE_NAMES_STATEMENT = (
    "SELECT TABLE_NAME\n"
    "FROM INFORMATION_SCHEMA.TABLES\n"
    "WHERE TABLE_NAME NOT IN UNNEST(@excluded)\n"
    "AND (@allTables=TRUE OR TABLE_NAME IN UNNEST(@included))\n"
    "AND TABLE_CATALOG = @catalog\n"
    "AND TABLE_SCHEMA = @schema\n"
    "AND TABLE_NAME IN (SELECT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMN_OPTIONS "
    "WHERE OPTION_NAME='allow_commit_timestamp' AND OPTION_VALUE='TRUE')")
FIND_TABLE_STATEMENT = (
    "SELECT TABLE_NAME\nFROM INFORMATION_SCHEMA.TABLES\nWHERE TABLE_CATALOG=@catalog\nAND TABLE_SCHEMA=@schema\nAND TABLE_NAME=@table")
FIND_COLUMNS_STATEMENT = (
    "SELECT COLUMN_NAME, SPANNER_TYPE\nFROM INFORMATION_SCHEMA.COLUMNS\nWHERE TABLE_CATALOG=@catalog\n"
    "AND TABLE_SCHEMA=@schema\nAND TABLE_NAME=@table\nORDER BY ORDINAL_POSITION")
FIND_PK_COLUMNS_STATEMENT = (
    "SELECT INDEX_COLUMNS.COLUMN_NAME\n"
    "FROM INFORMATION_SCHEMA.INDEXES\n"
    "INNER JOIN INFORMATION_SCHEMA.INDEX_COLUMNS \n"
    "            ON  INDEXES.TABLE_CATALOG=INDEX_COLUMNS.TABLE_CATALOG\n"
    "            AND INDEXES.TABLE_SCHEMA=INDEX_COLUMNS.TABLE_SCHEMA\n"
    "            AND INDEXES.TABLE_NAME=INDEX_COLUMNS.TABLE_NAME\n"
    "            AND INDEXES.INDEX_NAME=INDEX_COLUMNS.INDEX_NAME\n"
    "WHERE INDEXES.TABLE_CATALOG=@catalog\n"
    "AND INDEXES.TABLE_SCHEMA=@schema\n"
    "AND INDEXES.TABLE_NAME=@table\n"
    "AND INDEXES.INDEX_TYPE='PRIMARY_KEY'\n"
    "ORDER BY INDEX_COLUMNS.ORDINAL_POSITION")

LAST_SEEN_DDL = """CREATE TABLE LAST_SEEN_COMMIT_TIMESTAMPS (
    DATABASE_NAME STRING(MAX) NOT NULL, TABLE_CATALOG STRING(MAX) NOT NULL,
    TABLE_SCHEMA STRING(MAX) NOT NULL, TABLE_NAME STRING(MAX) NOT NULL,
    SHARD_ID_BOOL BOOL, SHARD_ID_BYTES BYTES(MAX), SHARD_ID_DATE DATE, SHARD_ID_FLOAT64 FLOAT64,
    SHARD_ID_INT64 INT64, SHARD_ID_STRING STRING(MAX), SHARD_ID_TIMESTAMP TIMESTAMP,
    LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL
) PRIMARY KEY (DATABASE_NAME, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES,
               SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, SHARD_ID_STRING, SHARD_ID_TIMESTAMP)"""

SCHEMA = [
    """CREATE TABLE Singers (
        SingerId INT64 NOT NULL,
        FirstName STRING(200),
        LastName STRING(200) NOT NULL,
        LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true),
        Processed BOOL,
        ShardId INT64 AS (MOD(SingerId, 7)) STORED
    ) PRIMARY KEY (SingerId)""",
    "CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)",
    "CREATE UNIQUE INDEX Idx_Singers_Name ON Singers (LastName, FirstName DESC) STORING (Processed)",
    """CREATE TABLE Albums (
        SingerId INT64 NOT NULL,
        AlbumId STRING(36) NOT NULL,
        Title STRING(MAX),
        Tags ARRAY<STRING(MAX)>,
        Changed TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)
    ) PRIMARY KEY (SingerId, AlbumId DESC), INTERLEAVE IN PARENT Singers ON DELETE CASCADE""",
    "CREATE TABLE NoCommitTs (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)",
]

SCOPE = {"catalog": "", "schema": ""}
SCOPE_TYPES = {"catalog": param_types.STRING, "schema": param_types.STRING}


@pytest.fixture(scope="module")
def db(instance):
    import uuid

    database = instance.database(f"infoschema-{uuid.uuid4().hex[:8]}", ddl_statements=SCHEMA)
    database.create().result(60)
    yield database
    database.drop()


def _query(db, sql: str, params: dict | None = None, types: dict | None = None) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def _table_query(db, sql: str, table: str) -> list[list]:
    return _query(db, sql, {**SCOPE, "table": table}, {**SCOPE_TYPES, "table": param_types.STRING})


def test_java_commit_timestamp_column_lookup(db):
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "Singers") == [["LastUpdated", "allow_commit_timestamp", "TRUE"]]
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "Albums") == [["Changed", "allow_commit_timestamp", "TRUE"]]
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "NoCommitTs") == []
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "Missing") == []


def test_java_primary_key_query_single_table_database(make_database):
    single = make_database(["CREATE TABLE T (B STRING(MAX) NOT NULL, A INT64 NOT NULL, V INT64) PRIMARY KEY (B, A DESC)",
                            "CREATE INDEX T_V ON T (V)"])
    assert _table_query(single, PK_QUERY, "T") == [["B"], ["A"]]


def test_java_primary_key_queries_give_key_order(db):
    # The Java PK_QUERY joins every table's PRIMARY_KEY index row: rows repeat, the order holds.
    for table, key in (("Singers", ["SingerId"]), ("Albums", ["SingerId", "AlbumId"])):
        rows = [r[0] for r in _table_query(db, PK_QUERY, table)]
        assert list(dict.fromkeys(rows)) == key
        assert sorted(rows, key=key.index) == rows
        assert [r[0] for r in _table_query(db, FIND_PK_COLUMNS_STATEMENT, table)] == key


def test_java_table_list_for_database_watcher(db):
    def tables(all_tables: bool, included: list[str], excluded: list[str]) -> set[str]:
        params = {**SCOPE, "allTables": all_tables, "included": included, "excluded": excluded}
        types = {**SCOPE_TYPES, "allTables": param_types.BOOL, "included": param_types.Array(param_types.STRING),
                 "excluded": param_types.Array(param_types.STRING)}
        return {r[0] for r in _query(db, LIST_TABLE_NAMES_STATEMENT, params, types)}

    assert tables(True, [], []) == {"Singers", "Albums"}
    assert tables(True, [], ["Albums"]) == {"Singers"}
    assert tables(False, ["Albums", "NoCommitTs", "Missing"], []) == {"Albums"}
    assert tables(False, [], []) == set()


def test_java_repository_table_checks(db):
    assert _table_query(db, FIND_TABLE_STATEMENT, "Singers") == [["Singers"]]
    assert _table_query(db, FIND_TABLE_STATEMENT, "LAST_SEEN_COMMIT_TIMESTAMPS") == []
    assert _table_query(db, FIND_COLUMNS_STATEMENT, "Albums") == [
        ["SingerId", "INT64"], ["AlbumId", "STRING(36)"], ["Title", "STRING(MAX)"],
        ["Tags", "ARRAY<STRING(MAX)>"], ["Changed", "TIMESTAMP"]]


def test_last_seen_commit_timestamps_table_with_nullable_key_columns(make_database):
    db = make_database([LAST_SEEN_DDL])
    key_names = ["DATABASE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "SHARD_ID_BOOL", "SHARD_ID_BYTES",
                 "SHARD_ID_DATE", "SHARD_ID_FLOAT64", "SHARD_ID_INT64", "SHARD_ID_STRING", "SHARD_ID_TIMESTAMP"]
    assert [r[0] for r in _table_query(db, FIND_PK_COLUMNS_STATEMENT, "LAST_SEEN_COMMIT_TIMESTAMPS")] == key_names
    assert _table_query(db, FIND_COLUMNS_STATEMENT, "LAST_SEEN_COMMIT_TIMESTAMPS")[4:] == [
        ["SHARD_ID_BOOL", "BOOL"], ["SHARD_ID_BYTES", "BYTES(MAX)"], ["SHARD_ID_DATE", "DATE"],
        ["SHARD_ID_FLOAT64", "FLOAT64"], ["SHARD_ID_INT64", "INT64"], ["SHARD_ID_STRING", "STRING(MAX)"],
        ["SHARD_ID_TIMESTAMP", "TIMESTAMP"], ["LAST_SEEN_COMMIT_TIMESTAMP", "TIMESTAMP"]]
    # The repository writes one row per (table, shard), NULL in every unused shard column, with
    # InsertOrUpdate: NULL key columns must match each other as Spanner keys do.
    cols = tuple(key_names) + ("LAST_SEEN_COMMIT_TIMESTAMP",)
    t1 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    t2 = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    no_shard = ["db", "", "", "Singers"] + [None] * 7
    shard_5 = ["db", "", "", "Singers"] + [None] * 4 + [5, None, None]
    for ts in (t1, t2):
        with db.batch() as b:
            b.insert_or_update("LAST_SEEN_COMMIT_TIMESTAMPS", cols, [no_shard + [ts], shard_5 + [ts]])
    with db.snapshot() as snap:
        got = list(snap.read("LAST_SEEN_COMMIT_TIMESTAMPS", ("SHARD_ID_INT64", "LAST_SEEN_COMMIT_TIMESTAMP"),
                             spanner.KeySet(keys=[no_shard])))
    assert got == [[None, t2]]
    assert _query(db, "SELECT SHARD_ID_INT64 FROM LAST_SEEN_COMMIT_TIMESTAMPS ORDER BY SHARD_ID_INT64") == [[None], [5]]
    with pytest.raises(exceptions.AlreadyExists):
        with db.batch() as b:
            b.insert("LAST_SEEN_COMMIT_TIMESTAMPS", cols, [no_shard + [t1]])
    with db.batch() as b:
        b.delete("LAST_SEEN_COMMIT_TIMESTAMPS", spanner.KeySet(keys=[no_shard]))
    assert _query(db, "SELECT SHARD_ID_INT64 FROM LAST_SEEN_COMMIT_TIMESTAMPS") == [[5]]


def test_tables_view(db):
    rows = _query(db, "SELECT TABLE_NAME, PARENT_TABLE_NAME, ON_DELETE_ACTION FROM INFORMATION_SCHEMA.TABLES "
                      "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' ORDER BY TABLE_NAME")
    assert rows == [["Albums", "Singers", "CASCADE"], ["NoCommitTs", None, None], ["Singers", None, None]]
    # Spanner also lists its own views here, under other schemas: the '' filter keeps the user's tables.
    unfiltered = {r[0] for r in _query(db, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES")}
    assert {"Albums", "NoCommitTs", "Singers"} <= unfiltered


def test_columns_view(db):
    rows = _query(db, "SELECT COLUMN_NAME, ORDINAL_POSITION, SPANNER_TYPE, IS_NULLABLE, IS_GENERATED, IS_STORED "
                      "FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = '' AND TABLE_NAME = 'Singers' "
                      "ORDER BY ORDINAL_POSITION")
    assert rows == [
        ["SingerId", 1, "INT64", "NO", "NEVER", None],
        ["FirstName", 2, "STRING(200)", "YES", "NEVER", None],
        ["LastName", 3, "STRING(200)", "NO", "NEVER", None],
        ["LastUpdated", 4, "TIMESTAMP", "YES", "NEVER", None],
        ["Processed", 5, "BOOL", "YES", "NEVER", None],
        ["ShardId", 6, "INT64", "YES", "ALWAYS", "YES"],
    ]
    (expr,) = _query(db, "SELECT GENERATION_EXPRESSION FROM INFORMATION_SCHEMA.COLUMNS "
                         "WHERE TABLE_NAME = 'Singers' AND COLUMN_NAME = 'ShardId'")[0]
    assert "MOD" in expr and "SingerId" in expr


def test_column_options_view_has_only_commit_timestamp_columns(db):
    rows = _query(db, "SELECT TABLE_NAME, COLUMN_NAME, OPTION_NAME, OPTION_TYPE, OPTION_VALUE "
                      "FROM INFORMATION_SCHEMA.COLUMN_OPTIONS WHERE TABLE_SCHEMA = '' ORDER BY TABLE_NAME")
    assert rows == [["Albums", "Changed", "allow_commit_timestamp", "BOOL", "TRUE"],
                    ["Singers", "LastUpdated", "allow_commit_timestamp", "BOOL", "TRUE"]]


def test_indexes_view(db):
    rows = _query(db, "SELECT TABLE_NAME, INDEX_NAME, INDEX_TYPE, PARENT_TABLE_NAME, IS_UNIQUE, IS_NULL_FILTERED "
                      "FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_SCHEMA = '' ORDER BY TABLE_NAME, INDEX_NAME")
    assert rows == [
        ["Albums", "PRIMARY_KEY", "PRIMARY_KEY", "Singers", True, False],  # an interleaved table's key
        ["NoCommitTs", "PRIMARY_KEY", "PRIMARY_KEY", "", True, False],
        ["Singers", "Idx_Singers_Name", "INDEX", "", True, False],
        ["Singers", "Idx_Singers_ShardId_LastUpdated", "INDEX", "", False, True],
        ["Singers", "PRIMARY_KEY", "PRIMARY_KEY", "", True, False],
    ]


def test_index_columns_view(db):
    rows = _query(db, "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_ORDERING, IS_NULLABLE, SPANNER_TYPE "
                      "FROM INFORMATION_SCHEMA.INDEX_COLUMNS WHERE TABLE_NAME = 'Singers' AND INDEX_NAME = 'Idx_Singers_Name' "
                      "ORDER BY ORDINAL_POSITION NULLS LAST, COLUMN_NAME")
    # Key columns in order, then the STORING column with no position or ordering.
    assert rows == [["LastName", 1, "ASC", "NO", "STRING(200)"], ["FirstName", 2, "DESC", "YES", "STRING(200)"],
                    ["Processed", None, None, "YES", "BOOL"]]
    albums = _query(db, "SELECT COLUMN_NAME, COLUMN_ORDERING FROM INFORMATION_SCHEMA.INDEX_COLUMNS "
                        "WHERE TABLE_NAME = 'Albums' AND INDEX_NAME = 'PRIMARY_KEY' ORDER BY ORDINAL_POSITION")
    assert albums == [["SingerId", "ASC"], ["AlbumId", "DESC"]]


def test_table_constraints_and_key_column_usage(db):
    constraints = _query(db, "SELECT CONSTRAINT_NAME, CONSTRAINT_TYPE FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS "
                             "WHERE TABLE_SCHEMA = '' AND TABLE_NAME = 'Albums' AND CONSTRAINT_TYPE = 'PRIMARY KEY'")
    assert len(constraints) == 1
    (name,) = constraints[0][:1]
    usage = _query(db, "SELECT COLUMN_NAME, ORDINAL_POSITION FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE "
                       "WHERE TABLE_SCHEMA = '' AND TABLE_NAME = 'Albums' AND CONSTRAINT_NAME = @name "
                       "ORDER BY ORDINAL_POSITION", {"name": name}, {"name": param_types.STRING})
    assert usage == [["SingerId", 1], ["AlbumId", 2]]


def test_schema_changes_show_up_at_once(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"])
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "T") == []
    db.update_ddl(["ALTER TABLE T ALTER COLUMN Ts SET OPTIONS (allow_commit_timestamp=true)",
                   "ALTER TABLE T ADD COLUMN Extra STRING(10)"]).result(60)
    assert _table_query(db, FIND_COMMIT_TIMESTAMP_COLUMN_QUERY, "T") == [["Ts", "allow_commit_timestamp", "TRUE"]]
    assert _table_query(db, FIND_COLUMNS_STATEMENT, "T")[-1] == ["Extra", "STRING(10)"]
    db.update_ddl(["DROP TABLE T"]).result(60)
    assert _table_query(db, FIND_TABLE_STATEMENT, "T") == []
    assert _table_query(db, FIND_COLUMNS_STATEMENT, "T") == []


def test_database_options_view_gives_the_dialect_as_the_java_client_asks_it(make_database):
    db = make_database(["CREATE TABLE T (Id INT64) PRIMARY KEY (Id)"])
    with db.snapshot() as snap:  # the Java client's DatabaseClient.getDialect(), spelled as it sends it
        rows = list(snap.execute_sql(
            "select option_value from information_schema.database_options where option_name='database_dialect'"))
    assert rows == [["GOOGLE_STANDARD_SQL"]]
