"""PostgreSQL-dialect databases: creation, the dialect reported, DDL in PostgreSQL form and back, INFORMATION_SCHEMA.

One PostgreSQL database for the module (its schema built once), through the official client.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import param_types

SINGERS = """CREATE TABLE Singers (
  SingerId bigint NOT NULL,
  FirstName varchar(200),
  "LastName" character varying(200) NOT NULL,
  BirthDate date,
  Picture bytea,
  LastUpdated spanner.commit_timestamp,
  Processed boolean,
  ShardId bigint GENERATED ALWAYS AS (CASE WHEN Processed THEN NULL
    ELSE mod(spanner.farm_fingerprint(coalesce(FirstName || ' ', '') || "LastName"), 19) END) STORED,
  PRIMARY KEY (SingerId)
)"""
SCHEMA = [
    SINGERS,
    "CREATE INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated) INCLUDE (FirstName) "
    "WHERE ShardId IS NOT NULL AND LastUpdated IS NOT NULL",
    "CREATE TABLE Albums (SingerId int8 NOT NULL, AlbumId int8 NOT NULL, Title text, Price numeric, "
    "Tags text[], Info jsonb, Score float8, Ratio real, Ok bool, PRIMARY KEY (SingerId, AlbumId)) "
    "INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE UNIQUE INDEX AlbumsByTitle ON Albums (Title)",
    "ALTER TABLE Albums ADD COLUMN Extra bigint",
    "ALTER TABLE Albums DROP COLUMN Extra",
    "CREATE TABLE Gone (K bigint NOT NULL, PRIMARY KEY (K))",
    "DROP TABLE Gone",
    "CREATE INDEX Gone_Idx ON Albums (Score)",
    "DROP INDEX Gone_Idx",
    "CREATE SEQUENCE ids BIT_REVERSED_POSITIVE",
    "CREATE TABLE Numbered (Id bigint DEFAULT nextval('ids'), Name text, SingerId bigint, "
    "CONSTRAINT name_set CHECK (Name IS NOT NULL), "
    "CONSTRAINT numbered_singer FOREIGN KEY (SingerId) REFERENCES Singers (SingerId), PRIMARY KEY (Id))",
    "CREATE VIEW singer_names SQL SECURITY INVOKER AS SELECT singers.singerid, singers.firstname FROM singers",
    "CREATE CHANGE STREAM Everything FOR ALL WITH (retention_period = '1d', value_capture_type = 'NEW_ROW')",
    "CREATE CHANGE STREAM SomeColumns FOR Singers(FirstName), Albums",
]


def _new_pg_database(instance, statements=()):
    db = instance.database(f"pg-{uuid.uuid4().hex[:12]}", database_dialect=DatabaseDialect.POSTGRESQL)
    db.create().result(60)
    if statements:
        db.update_ddl(list(statements)).result(120)
    return db


@pytest.fixture(scope="module")
def pg_db(instance):
    db = _new_pg_database(instance, SCHEMA)
    yield db
    db.drop()


def _rows(db, sql, **kwargs):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, **kwargs)]


def test_the_dialect_is_reported_by_get_and_list_databases(pg_db, instance, make_database):
    google = make_database()
    fresh = instance.database(pg_db.database_id)
    fresh.reload()
    assert fresh.database_dialect == DatabaseDialect.POSTGRESQL
    google.reload()
    assert google.database_dialect == DatabaseDialect.GOOGLE_STANDARD_SQL
    listed = {d.name.rsplit("/", 1)[-1]: d.database_dialect for d in instance.list_databases()}
    assert listed[pg_db.database_id] == DatabaseDialect.POSTGRESQL
    assert listed[google.database_id] == DatabaseDialect.GOOGLE_STANDARD_SQL


def test_database_options_say_postgresql(pg_db):
    assert _rows(pg_db, "SELECT option_value FROM information_schema.database_options "
                        "WHERE option_name = 'database_dialect'") == [["POSTGRESQL"]]


def test_get_database_ddl_prints_postgresql_that_recreates_the_schema(pg_db, instance):
    pg_db.reload()
    ddl = list(pg_db.ddl_statements)
    text = "\n".join(ddl)
    for spelling in ("spanner.commit_timestamp", "GENERATED ALWAYS AS", "STORED", "INTERLEAVE IN PARENT",
                     "ON DELETE CASCADE", "INCLUDE", "IS NOT NULL", '"LastName"', "jsonb", "numeric",
                     "CREATE CHANGE STREAM", "FOR ALL", "spanner.farm_fingerprint", "CREATE SEQUENCE", "nextval",
                     "CHECK", "FOREIGN KEY", "CREATE VIEW"):
        assert spelling in text, spelling
    assert "gone" not in text.lower() and "extra" not in text.lower()
    assert "`" not in text and "INT64" not in text and "STRING(" not in text
    copy = _new_pg_database(instance, ddl)
    try:
        copy.reload()
        assert list(copy.ddl_statements) == ddl
    finally:
        copy.drop()


def test_alter_database_sets_options_the_postgresql_way(instance):
    db = _new_pg_database(instance)
    try:
        db.update_ddl([f'ALTER DATABASE "{db.database_id}" SET spanner.version_retention_period = \'2d\'']).result(60)
        db.reload()
        assert db.version_retention_period == "2d"
        assert list(db.ddl_statements) == [f'ALTER DATABASE "{db.database_id}" SET spanner.version_retention_period = \'2d\'']
    finally:
        db.drop()


def test_information_schema_tables_in_schema_public(pg_db):
    assert _rows(pg_db, "SELECT table_name, parent_table_name FROM information_schema.tables "
                        "WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name") == [
        ["albums", "singers"], ["numbered", None], ["singers", None]]
    assert sorted(t.table_id for t in pg_db.list_tables()) == ["albums", "numbered", "singer_names", "singers"]
    assert pg_db.table("singers").exists() and not pg_db.table("Singers").exists()
    assert [f.name for f in pg_db.table("singers").schema][:3] == ["singerid", "firstname", "LastName"]


def test_information_schema_columns_spell_types_the_postgresql_way(pg_db):
    rows = _rows(pg_db, "SELECT column_name, data_type, spanner_type, is_nullable, is_generated "
                        "FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 "
                        "ORDER BY ordinal_position", params={"p1": "singers"}, param_types={"p1": param_types.STRING})
    assert [r[:3] for r in rows] == [
        ["singerid", "bigint", "bigint"],
        ["firstname", "character varying", "character varying(200)"],
        ["LastName", "character varying", "character varying(200)"],
        ["birthdate", "date", "date"],
        ["picture", "bytea", "bytea"],
        ["lastupdated", "timestamp with time zone", "spanner.commit_timestamp"],
        ["processed", "boolean", "boolean"],
        ["shardid", "bigint", "bigint"],
    ]
    assert [r[3] for r in rows] == ["NO", "YES", "NO", "YES", "YES", "YES", "YES", "YES"]
    assert rows[-1][4] == "ALWAYS"
    # The commit-timestamp column says so by its type; no column option.
    assert _rows(pg_db, "SELECT option_name FROM information_schema.column_options WHERE table_name = 'singers'") == []
    albums = dict(_rows(pg_db, "SELECT column_name, spanner_type FROM information_schema.columns "
                               "WHERE table_name = 'albums'"))
    assert albums["tags"] == "character varying[]" and albums["info"] == "jsonb"
    assert albums["score"] == "double precision" and albums["ratio"] == "real" and albums["ok"] == "boolean"


def test_information_schema_keys_and_indexes(pg_db):
    key = _rows(pg_db, "SELECT kcu.column_name FROM information_schema.key_column_usage kcu "
                       "JOIN information_schema.table_constraints tc ON tc.constraint_name = kcu.constraint_name "
                       "AND tc.table_name = kcu.table_name "
                       "WHERE tc.constraint_type = 'PRIMARY KEY' AND kcu.table_schema = 'public' "
                       "AND kcu.table_name = 'albums' ORDER BY kcu.ordinal_position")
    assert key == [["singerid"], ["albumid"]]
    columns = _rows(pg_db, "SELECT column_name, ordinal_position, spanner_type FROM information_schema.index_columns "
                           "WHERE table_schema = 'public' AND index_name = 'idx_singers_shardid_lastupdated' "
                           "ORDER BY ordinal_position NULLS LAST")
    assert [(c[0], c[2]) for c in columns] == [("shardid", "bigint"), ("lastupdated", "spanner.commit_timestamp"),
                                               ("firstname", "character varying(200)")]
    indexes = _rows(pg_db, "SELECT index_name, index_type FROM information_schema.indexes "
                           "WHERE table_schema = 'public' AND table_name = 'albums' ORDER BY index_name")
    assert indexes == [["PRIMARY_KEY", "PRIMARY_KEY"], ["albumsbytitle", "INDEX"]]


def test_the_watcher_poll_reads_the_null_filtered_index_by_hint(pg_db):
    with pg_db.batch() as batch:
        batch.insert("singers", ("singerid", "firstname", "LastName", "lastupdated", "processed"),
                     [[1, "Ann", "Lee", spanner.COMMIT_TIMESTAMP, False], [2, "Bo", "Ray", spanner.COMMIT_TIMESTAMP, True]])
    poll = ("SELECT singerid, shardid FROM singers /*@ FORCE_INDEX=idx_singers_shardid_lastupdated */ "
            "WHERE shardid IS NOT NULL AND shardid = ANY($1) AND lastupdated > $2 "
            "ORDER BY lastupdated, singerid LIMIT $3")
    rows = _rows(pg_db, poll, params={"p1": list(range(-18, 19)), "p2": batch.committed - dt.timedelta(seconds=1), "p3": 10},
                 param_types={"p1": param_types.Array(param_types.INT64), "p2": param_types.TIMESTAMP,
                              "p3": param_types.INT64})
    (shard,) = _rows(pg_db, "SELECT mod(spanner.farm_fingerprint('Ann ' || 'Lee'), 19)")[0]
    assert rows == [[1, shard]]  # Bo is processed: no shard, not in the index


@pytest.mark.parametrize("statement, words", [
    ("CREATE TABLE Bad (K INT64 NOT NULL, PRIMARY KEY (K))", "int64"),
    ("CREATE TABLE `Bad` (K bigint NOT NULL, PRIMARY KEY (K))", "`"),
    ("CREATE TABLE Bad (K bigint NOT NULL) PRIMARY KEY (K)", "primary key"),
    ("CREATE TABLE Bad (K timestamp without time zone, PRIMARY KEY (K))", "timestamp"),
])
def test_google_sql_ddl_in_a_postgresql_database_is_refused(pg_db, statement, words):
    with pytest.raises(exceptions.InvalidArgument) as caught:
        pg_db.update_ddl([statement]).result(60)
    assert words in str(caught.value).lower()


def test_postgresql_ddl_in_a_google_sql_database_is_refused(make_database):
    db = make_database()
    with pytest.raises(exceptions.InvalidArgument) as caught:
        db.update_ddl(["CREATE TABLE T (K bigint NOT NULL, PRIMARY KEY (K))"]).result(60)
    assert "CREATE TABLE T" in str(caught.value)

