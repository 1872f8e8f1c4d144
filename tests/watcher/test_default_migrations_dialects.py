"""The packaged default migrations in both dialects (``ddl/watcher``, ``ddl/watcher-postgresql``) make the
same tables, and the watcher's stores work on the PostgreSQL ones without creating their own.

The two folders are written by hand, so they are tied together here: both are applied (by the runner,
which picks the one of the database's dialect) and INFORMATION_SCHEMA of the two databases is compared,
the PostgreSQL side read back as GoogleSQL names (case folded, types through watcher.dialects.types).
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect

from tests.watcher.core_support import Collector, insert_t, wait_until
from tests.watcher.dialect_support import POSTGRES, TABLES
from watcher import (
    MIN_TIMESTAMP,
    ChangeSetWatcher,
    ChangeStreamWatcher,
    RetryPolicy,
    SpannerCommitTimestampRepository,
    State,
    TableWatcher,
)
from watcher.capture.change_streams.spanner_progress import SpannerProgressStore
from watcher.capture.change_streams.stream_info import server_now
from watcher.capture.helper_tables.change_sets import (
    change_set_column_ddl,
    change_sets_table_ddl,
    run_in_change_set_transaction,
)
from watcher.dialects import GOOGLE_SQL, POSTGRESQL
from watcher.dialects.types import column_type
from watcher.schema_tools.migrations import DEFAULT_FOLDER_ID, MIGRATIONS_TABLE, Migrator, default_migrations

FAST = RetryPolicy(initial=0.001, maximum=0.01)
#: The runner's own tables are not part of the default set.
RUNNER_TABLES = {MIGRATIONS_TABLE, f"{MIGRATIONS_TABLE}_LOCK"}
#: GoogleSQL's V002 was applied with a nullable key column (applied files cannot change); a PostgreSQL key is NOT NULL.
KNOWN_DIFFERENCES = {("CHANGE_SETS", "CHANGE_SET_ID", "nullable")}


def _rows(database, sql: str) -> list[list]:
    with database.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


def _schema(database, dialect) -> dict[str, dict]:
    """The tables of the database as comparable facts: columns (GoogleSQL type, nullable, commit timestamps,
    generated and stored), primary key and indexes, every name upper-cased."""
    where = "table_schema = ''" if dialect is GOOGLE_SQL else "table_schema = 'public'"
    commit_ts = {(t.upper(), c.upper()) for t, c, *_ in _rows(
        database, f"SELECT table_name, column_name FROM information_schema.column_options WHERE {where} "
                  "AND option_name = 'allow_commit_timestamp' AND option_value = 'TRUE'")}
    schema: dict[str, dict] = {}
    for table, column, spanner_type, nullable, generated, stored in _rows(
            database, "SELECT table_name, column_name, spanner_type, is_nullable, is_generated, is_stored "
                      f"FROM information_schema.columns WHERE {where} ORDER BY table_name, ordinal_position"):
        table, column = table.upper(), column.upper()
        if table in RUNNER_TABLES:
            continue
        google = "TIMESTAMP" if spanner_type == "spanner.commit_timestamp" else column_type(dialect, spanner_type)
        is_commit_ts = spanner_type == "spanner.commit_timestamp" or (table, column) in commit_ts
        entry = schema.setdefault(table, {"columns": {}, "key": [], "indexes": {}})
        entry["columns"][column] = {"type": google, "nullable": nullable == "YES", "commit_timestamp": is_commit_ts,
                                    "generated": generated, "stored": stored}
    for table, index, kind, column, position, ordering in _rows(
            database, "SELECT table_name, index_name, index_type, column_name, ordinal_position, column_ordering "
                      f"FROM information_schema.index_columns WHERE {where} ORDER BY table_name, index_name, "
                      "ordinal_position"):
        table = table.upper()
        if table in RUNNER_TABLES:
            continue
        if kind == "PRIMARY_KEY":
            schema[table]["key"].append(column.upper())
        else:
            schema[table]["indexes"].setdefault(index.upper(), {"columns": []})["columns"].append(
                (column.upper(), position, ordering))
    for table, index, unique, null_filtered in _rows(
            database, "SELECT table_name, index_name, is_unique, is_null_filtered FROM information_schema.indexes "
                      f"WHERE {where} AND index_type = 'INDEX'"):
        if table.upper() not in RUNNER_TABLES:
            schema[table.upper()]["indexes"][index.upper()].update(
                unique=unique in (True, "YES"), null_filtered=null_filtered in (True, "YES"))
    return schema


@pytest.fixture
def migrated(make_database):
    """A GoogleSQL and a PostgreSQL database, each given the default set (the same object) by the runner."""
    google = make_database()
    postgres = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    for database in (google, postgres):
        Migrator(database).migrate(default_migrations())
    return google, postgres


def test_both_dialects_default_sets_make_the_same_tables(migrated):
    google, postgres = migrated
    ours, theirs = _schema(google, GOOGLE_SQL), _schema(postgres, POSTGRESQL)
    assert set(ours) == {"LAST_SEEN_COMMIT_TIMESTAMPS", "CHANGE_SETS", "WATCHER_CHANGELOG",
                         "WATCHER_CHANGELOG_WATERMARKS", "WATCHER_CHANGE_STREAM_PARTITIONS"}
    assert set(theirs) == set(ours)
    for (table, column, fact) in KNOWN_DIFFERENCES:
        assert ours[table]["columns"][column][fact] != theirs[table]["columns"][column][fact]
        theirs[table]["columns"][column][fact] = ours[table]["columns"][column][fact]
    for table in ours:
        assert list(theirs[table]["columns"]) == list(ours[table]["columns"]), table  # names and order
        assert theirs[table] == ours[table], table
    assert ours["WATCHER_CHANGELOG"]["indexes"]["IDX_WATCHER_CHANGELOG_CHANGELOG_SHARD_COMMIT_TIMESTAMP"]["null_filtered"]
    # Both record their files under one folder id, each its own dialect's files.
    for database, folder in ((google, "watcher/"), (postgres, "watcher-postgresql/")):
        applied = Migrator(database).migrate(default_migrations())
        assert not applied.applied and [p.migrations.folder_id for p in applied.plans] == [DEFAULT_FOLDER_ID]
        assert all(f.location.startswith(f"spanner-watcher:{folder}") for f in applied.plans[0].migrations.files)


def test_the_changelog_shard_column_computes_the_same_shard_in_both(migrated):
    """The generated shard column is written in each dialect's functions: the same row gets the same shard."""
    google, postgres = migrated
    rows = [("Singers", f"[{i}]") for i in range(40)]
    with google.batch() as batch:
        batch.insert("WATCHER_CHANGELOG", ("TABLE_NAME", "KEYS", "COMMIT_TIMESTAMP", "CHANGE_ID", "MOD_TYPE"),
                     [(t, k, spanner.COMMIT_TIMESTAMP, "c", "INSERT") for t, k in rows])
    with postgres.batch() as batch:
        batch.insert("watcher_changelog", ("table_name", "keys", "commit_timestamp", "change_id", "mod_type"),
                     [(t, k, spanner.COMMIT_TIMESTAMP, "c", "INSERT") for t, k in rows])
    ours = _rows(google, "SELECT KEYS, CHANGELOG_SHARD FROM WATCHER_CHANGELOG ORDER BY KEYS")
    theirs = _rows(postgres, "SELECT keys, changelog_shard FROM watcher_changelog ORDER BY keys")
    assert theirs == ours and len({shard for _, shard in ours}) > 5


def test_the_stores_create_in_postgresql_what_the_migrations_create(migrated, make_database):
    """In a database not migrated, the checkpoint and progress stores create their tables themselves, and the
    change-set table comes from its helper: the same tables the PostgreSQL set makes (the helper's
    COMMIT_TIMESTAMP is NOT NULL, the migration's nullable as in GoogleSQL's V002)."""
    _, migrated_db = migrated
    db = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    SpannerCommitTimestampRepository(db).initialize()
    SpannerProgressStore(db).initialize()
    db.update_ddl([change_sets_table_ddl(dialect=POSTGRESQL)]).result(120)
    made, migrated_schema = _schema(db, POSTGRESQL), _schema(migrated_db, POSTGRESQL)
    assert set(made) == {"LAST_SEEN_COMMIT_TIMESTAMPS", "WATCHER_CHANGE_STREAM_PARTITIONS", "CHANGE_SETS"}
    assert made["CHANGE_SETS"]["columns"]["COMMIT_TIMESTAMP"].pop("nullable") is False
    migrated_schema["CHANGE_SETS"]["columns"]["COMMIT_TIMESTAMP"].pop("nullable")
    for table in made:
        assert made[table] == migrated_schema[table], table
    names = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
    spelled = {tuple(r) for r in _rows(db, names)}  # as the stores spell them: lower case, CHANGE_SETS as given
    assert {t for t, _ in spelled} == {"CHANGE_SETS", "last_seen_commit_timestamps", "watcher_change_stream_partitions"}
    assert spelled <= {tuple(r) for r in _rows(migrated_db, names)}


def _ddl(database) -> list[str]:
    database.reload()
    return list(database.ddl_statements)


def test_the_stores_use_the_migrated_postgresql_tables_and_create_none(migrated):
    """A TableWatcher with the database checkpoint store, a ChangeSetWatcher (its default store) and a
    ChangeStreamWatcher (its default progress store) run on the migrated PostgreSQL database; the schema
    holds only what the test made, so each store found its table."""
    _, db = migrated
    orders = 'CREATE TABLE "Orders" ("OrderId" bigint NOT NULL, "Total" double precision, PRIMARY KEY ("OrderId"))'
    db.update_ddl([TABLES[POSTGRES]["T"], orders, *change_set_column_ddl("Orders", dialect=POSTGRESQL),
                   "CREATE CHANGE STREAM everything FOR ALL"]).result(120)
    before = _ddl(db)

    insert_t(db, range(5))
    rows = Collector()
    table_watcher = TableWatcher(db, "T", poll_interval=0.005, retry_policy=FAST, initial_timestamp=MIN_TIMESTAMP,
                                 checkpoints=SpannerCommitTimestampRepository(db))
    table_watcher.add_callback(rows)
    with table_watcher:
        rows.wait_for(5)
        wait_until(lambda: _rows(db, "SELECT count(*) FROM last_seen_commit_timestamps")[0][0] >= 1)
    assert [c.keys for c in rows.changes] == [(i,) for i in range(5)]

    sets = Collector()
    change_sets = ChangeSetWatcher(db, poll_interval=0.01)
    change_sets.add_callback(sets)
    with change_sets:
        def order(txn, cs, order_id):
            txn.insert("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[order_id, 1.5 * order_id, cs]])
            return cs

        ids = [run_in_change_set_transaction(db, order, i) for i in (1, 2)]
        sets.wait_for(2)
    assert [(c.keys, c.row["CHANGE_SET_ID"]) for c in sets.changes] == [((1,), ids[0]), ((2,), ids[1])]
    assert _rows(db, 'SELECT count(*) FROM "CHANGE_SETS"')[0][0] == 2

    start = server_now(db)
    streamed = Collector()
    stream_watcher = ChangeStreamWatcher(db, "everything", heartbeat=dt.timedelta(seconds=1), start=start)
    stream_watcher.add_callback(streamed)
    stream_watcher.start()
    try:
        insert_t(db, [10, 11])
        wait_until(lambda: {(10,), (11,)} <= {c.keys for c in list(streamed.changes) if c.table == "T"}, timeout=30)
        time.sleep(0.2)  # a batch's progress is written after its callbacks returned
    finally:
        stream_watcher.stop()
    assert stream_watcher.failure is None and stream_watcher.state == State.STOPPED
    assert SpannerProgressStore(db).load("everything", "default")

    assert _ddl(db) == before  # no store created or altered a table
