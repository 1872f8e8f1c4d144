"""The DDL helpers: what they generate, that it runs on Spanner with the intended effect, and their guard rails."""

from __future__ import annotations

import base64
import datetime as dt
import os
import re
import time
import warnings

import pytest
from google.api_core import exceptions as gexc
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import param_types

from tests.watcher.core_support import Collector
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, RetryPolicy, TableWatcher
from watcher.cli.main import main
from watcher.dialects import GOOGLE_SQL, POSTGRESQL
from watcher.errors import DdlError, HotspotError, InvalidIdentifierError
from watcher.schema_tools import ddl
from watcher.schema_tools.ddl import ColumnDef, ShardCountWarning, ShardSource
from watcher.schema_tools.migrations import MigrationSet, Migrator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTC = dt.UTC
PAST = dt.datetime(2020, 1, 1, tzinfo=UTC)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
#: The pure tests of the printed DDL run once per dialect.
DIALECTS = pytest.mark.parametrize("dialect", [GOOGLE_SQL, POSTGRESQL], ids=str)


# --- what is generated ----------------------------------------------------------------------------------

#: What the example below prints in each dialect.
EXAMPLE = {
    "GoogleSQL": ("ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS "
                  "(MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') || `LastName`), 19)) STORED",
                  "CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)",
                  "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"),
    "PostgreSQL": ('ALTER TABLE "Singers" ADD COLUMN "ShardId" bigint GENERATED ALWAYS AS '
                   "(MOD(spanner.farm_fingerprint(COALESCE(\"FirstName\" || ' ', '') || \"LastName\"), 19)) STORED",
                   'CREATE INDEX "Idx_Singers_ShardId_LastUpdated" ON "Singers" ("ShardId", "LastUpdated") '
                   'WHERE "ShardId" IS NOT NULL AND "LastUpdated" IS NOT NULL',
                   "/*@ FORCE_INDEX=Idx_Singers_ShardId_LastUpdated */"),
}


@DIALECTS
def test_the_example_for_an_existing_table(dialect):
    setup = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], dialect=dialect)
    *statements, hint = EXAMPLE[dialect.name]
    assert setup.statements == tuple(statements)
    assert setup.table_hint == hint
    assert list(setup.shard_provider.values) == list(range(-18, 19))
    assert setup.watcher_options()["table_hint"] == setup.table_hint


#: The processed variant with a converted commit-timestamp column, then an added one, and the option removed.
PROCESSED = {
    "GoogleSQL": ("ALTER TABLE `T` ALTER COLUMN `Ts` SET OPTIONS (allow_commit_timestamp=true)",
                  "ALTER TABLE `T` ADD COLUMN `Done` BOOL",
                  "ALTER TABLE `T` ADD COLUMN `ShardId` INT64 AS "
                  "(CASE WHEN `Done` THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(`A`, '')), 7) END) STORED",
                  "CREATE NULL_FILTERED INDEX `Idx_T_ShardId_Ts` ON `T` (`ShardId`, `Ts`) STORING (`A`)",
                  "ALTER TABLE `T` ADD COLUMN `LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)",
                  "ALTER TABLE `T` ALTER COLUMN `Ts` SET OPTIONS (allow_commit_timestamp=null)"),
    "PostgreSQL": ('ALTER TABLE "T" ALTER COLUMN "Ts" TYPE spanner.commit_timestamp',
                   'ALTER TABLE "T" ADD COLUMN "Done" boolean',
                   'ALTER TABLE "T" ADD COLUMN "ShardId" bigint GENERATED ALWAYS AS '
                   "(CASE WHEN \"Done\" THEN NULL ELSE MOD(spanner.farm_fingerprint(COALESCE(\"A\", '')), 7) END) STORED",
                   'CREATE INDEX "Idx_T_ShardId_Ts" ON "T" ("ShardId", "Ts") INCLUDE ("A") '
                   'WHERE "ShardId" IS NOT NULL AND "Ts" IS NOT NULL',
                   'ALTER TABLE "T" ADD COLUMN "LastUpdated" spanner.commit_timestamp',
                   'ALTER TABLE "T" ALTER COLUMN "Ts" TYPE timestamptz'),
}


@DIALECTS
def test_processed_variant_and_commit_timestamp_steps(dialect):
    *steps, added_column, removed = PROCESSED[dialect.name]
    setup = ddl.sharded_polling("T", ["A"], shards=7, commit_timestamp="convert", commit_timestamp_column="Ts",
                                processed_column="Done", storing=["A"], dialect=dialect)
    assert setup.statements == tuple(steps)
    added = ddl.sharded_polling("T", ["A"], commit_timestamp="add", processed_column="Done", add_processed_column=False,
                                dialect=dialect)
    assert added.statements[0] == added_column
    assert not any(f"ADD COLUMN {dialect.quote('Done')}" in s for s in added.statements)
    assert ddl.disable_commit_timestamp("T", "Ts", dialect=dialect) == removed


def test_sources_of_other_types_are_made_strings():
    column = ddl.shard_column("S", [ShardSource("Id", "INT64", not_null=True), ShardSource("Pic", "BYTES(MAX)"),
                                    ShardSource("Born", "date"), ShardSource("Flag", "BOOL", not_null=True)], 5)
    assert column.fingerprint_input == ("CAST(`Id` AS STRING) || ' ' || COALESCE(TO_BASE64(`Pic`) || ' ', '') || "
                                        "COALESCE(CAST(`Born` AS STRING) || ' ', '') || CAST(`Flag` AS STRING)")
    without_bytes = ddl.shard_column("S", [s for s in column.sources if s.type != "BYTES"], 5)
    assert without_bytes.fingerprint_input_in(POSTGRESQL) == (
        "CAST(\"Id\" AS varchar) || ' ' || COALESCE(CAST(\"Born\" AS varchar) || ' ', '') || CAST(\"Flag\" AS varchar)")
    # No base64 text function may compute a PostgreSQL generated column, so a BYTES source is refused by name.
    with pytest.raises(DdlError, match="Pic is BYTES: in a PostgreSQL database"):
        ddl.add_column("S", column, dialect=POSTGRESQL)


def test_types_may_be_written_the_postgresql_way():
    assert ColumnDef("A", "varchar(20)").definition(POSTGRESQL) == '"A" varchar(20)'
    assert ColumnDef("A", "bigint[]").sql == "`A` ARRAY<INT64>"
    assert ColumnDef("A", "timestamptz", commit_timestamp=True).definition(POSTGRESQL) == '"A" spanner.commit_timestamp'
    assert ShardSource("Id", "int8").type == "INT64"
    for bad in ("bigint(3)", "varchar(0)", "integer"):
        with pytest.raises(DdlError, match="invalid column type"):
            ColumnDef("A", bad)


@DIALECTS
def test_new_tables_and_literals_in_the_dialect(dialect):
    columns = [ColumnDef("Id", "STRING(36)", not_null=True), ColumnDef("Tags", "ARRAY<STRING(MAX)>"),
               ColumnDef("At", "TIMESTAMP", not_null=True, commit_timestamp=True)]
    expected = {
        "GoogleSQL": ("CREATE TABLE IF NOT EXISTS `E` (\n  `Id` STRING(36) NOT NULL,\n  `Tags` ARRAY<STRING(MAX)>,\n"
                      "  `At` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),\n) PRIMARY KEY (`Id`)",
                      "'a\\\\b\\'c'"),
        "PostgreSQL": ('CREATE TABLE IF NOT EXISTS "E" (\n  "Id" varchar(36) NOT NULL,\n  "Tags" varchar[],\n'
                       '  "At" spanner.commit_timestamp NOT NULL,\n  PRIMARY KEY ("Id")\n)',
                       "'a\\b''c'"),
    }[dialect.name]
    assert ddl.create_table("E", columns, ["Id"], if_not_exists=True, dialect=dialect) == expected[0]
    assert ddl.string_literal("a\\b'c", dialect) == expected[1]


def test_the_sample_schema_is_what_the_helpers_generate(make_database):
    """ddl/samples/singers (and the benchmark's table) is exactly the output of ``spanner-watcher ddl table``."""
    columns = [ColumnDef("SingerId", "INT64", not_null=True), ColumnDef("FirstName", "STRING(200)"),
               ColumnDef("LastName", "STRING(200)", not_null=True), ColumnDef("BirthDate", "DATE"),
               ColumnDef("Picture", "BYTES(MAX)")]
    setup = ddl.sharded_table("Singers", columns, ["SingerId"], ["FirstName", ShardSource("LastName", not_null=True)],
                              processed_column="Processed")
    from_helpers = make_database(list(setup.statements))
    from_files = make_database([])
    Migrator(from_files).migrate(MigrationSet.from_directory(os.path.join(ROOT, "ddl", "samples", "singers")))
    from_files.reload()
    from_helpers.reload()
    # The schema as the server prints it back; a generated column keeps its expression's text, and
    # the helpers back-quote every name, so quotes are dropped before comparing.
    ours = [s for s in from_files.ddl_statements if "SPANNER_WATCHER_MIGRATIONS" not in s]
    assert ours == [s.replace("`", "") for s in from_helpers.ddl_statements]


# --- the statements run and do what they say ------------------------------------------------------------------

LEGACY_TABLE = ("CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), LastName STRING(200) NOT NULL, "
                "LastUpdated TIMESTAMP) PRIMARY KEY (SingerId)")
LEGACY_COLUMNS = ("SingerId", "FirstName", "LastName", "LastUpdated")


def _apply(database, statements):
    for statement in statements:
        database.update_ddl([statement]).result(60)


def _rows(database, sql, params=None, types=None):
    with database.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def _poll(database, setup, since):
    """The watcher's poll through the shard index: what the watcher sees."""
    f = setup.shard_provider.shard_filter()
    sql = (f"SELECT `SingerId` FROM `Singers`{setup.table_hint} WHERE `{setup.commit_timestamp_column}` > @since{f.sql} "
           f"ORDER BY `{setup.commit_timestamp_column}`, `SingerId`")
    return [r[0] for r in _rows(database, sql, {"since": since, **f.params}, {"since": param_types.TIMESTAMP, **f.types})]


def test_existing_table_gets_commit_timestamps_shards_and_index(make_database):
    database = make_database([LEGACY_TABLE])
    with database.batch() as batch:   # an existing application: explicit timestamps, no shard
        batch.insert("Singers", LEGACY_COLUMNS, [(1, "Ann", "Lee", PAST), (2, None, "Bo", PAST), (3, "Cy", "Dee", None)])
    with pytest.raises(gexc.GoogleAPICallError):   # not a commit-timestamp column yet
        with database.batch() as batch:
            batch.update("Singers", ("SingerId", "LastUpdated"), [(3, spanner.COMMIT_TIMESTAMP)])

    setup = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], commit_timestamp="convert")
    _apply(database, setup.statements)

    # Existing rows got their shard computed; a writer that never mentions ShardId gets one too.
    with database.batch() as batch:
        batch.insert("Singers", LEGACY_COLUMNS, [(4, "Di", "Eve", spanner.COMMIT_TIMESTAMP)])
        batch.update("Singers", ("SingerId", "LastUpdated"), [(3, spanner.COMMIT_TIMESTAMP)])
    rows = _rows(database, "SELECT SingerId, FirstName, LastName, ShardId FROM Singers ORDER BY SingerId")
    for singer_id, first, last, shard in rows:
        assert shard == setup.shard_column.shard_of({"FirstName": first, "LastName": last}), singer_id
        assert shard in setup.shard_column.values
    options = _rows(database, "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.COLUMN_OPTIONS WHERE TABLE_NAME = 'Singers' "
                              "AND COLUMN_NAME = 'LastUpdated' AND OPTION_NAME = 'allow_commit_timestamp'")
    assert options == [("TRUE",)]

    # The poll through the index sees the rows with a commit timestamp, newest last.
    assert _poll(database, setup, EPOCH)[:2] == [1, 2]
    assert set(_poll(database, setup, EPOCH)) == {1, 2, 3, 4}
    assert set(_poll(database, setup, PAST)) == {3, 4}

    # Removing the option again: the column stays, with its values, but takes no commit timestamps.
    _apply(database, [ddl.disable_commit_timestamp("Singers", "LastUpdated")])
    assert _rows(database, "SELECT COUNT(*) FROM Singers WHERE LastUpdated IS NOT NULL") == [(4,)]
    with pytest.raises(gexc.GoogleAPICallError):
        with database.batch() as batch:
            batch.update("Singers", ("SingerId", "LastUpdated"), [(1, spanner.COMMIT_TIMESTAMP)])


def test_added_commit_timestamp_column_and_null_filtered_index(make_database):
    database = make_database(["CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), "
                              "LastName STRING(200) NOT NULL) PRIMARY KEY (SingerId)"])
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName"), [(1, "Ann", "Lee")])
    setup = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], commit_timestamp="add")
    _apply(database, setup.statements)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"), [(2, "Bo", "Ng", spanner.COMMIT_TIMESTAMP)])
    # Row 1 has no commit timestamp (NULL): it is not in the NULL_FILTERED index, so the poll never sees it.
    assert _rows(database, "SELECT COUNT(*) FROM Singers") == [(2,)]
    assert _poll(database, setup, EPOCH) == [2]


def test_processed_rows_leave_the_index(make_database):
    database = make_database([LEGACY_TABLE.replace("LastUpdated TIMESTAMP", "LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true)")])
    setup = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], processed_column="Processed")
    _apply(database, setup.statements)
    with database.batch() as batch:   # inserts need not mention Processed (NULL counts as not processed)
        batch.insert("Singers", LEGACY_COLUMNS, [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 6)])
    assert _poll(database, setup, EPOCH) == [1, 2, 3, 4, 5]
    database.run_in_transaction(lambda tx: tx.execute_update("UPDATE Singers SET Processed = TRUE WHERE SingerId IN (2, 4)"))
    assert _poll(database, setup, EPOCH) == [1, 3, 5]
    assert _rows(database, "SELECT SingerId, ShardId IS NULL, LastUpdated IS NULL FROM Singers WHERE SingerId IN (2, 4)") == [
        (2, True, False), (4, True, False)]
    # An update that sets Processed back to false brings the row back.
    with database.batch() as batch:
        batch.update("Singers", ("SingerId", "Processed", "LastUpdated"), [(2, False, spanner.COMMIT_TIMESTAMP)])
    assert _poll(database, setup, EPOCH) == [1, 3, 5, 2]


def test_non_string_sources_compute_what_python_computes(make_database):
    database = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Pic BYTES(MAX), Born DATE, Flag BOOL NOT NULL, "
                              "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    sources = [ShardSource("Id", "INT64", not_null=True), ShardSource("Pic", "BYTES"), ShardSource("Born", "DATE"),
               ShardSource("Flag", "BOOL", not_null=True)]
    setup = ddl.sharded_polling("T", sources, shards=13, commit_timestamp_column="Ts")
    _apply(database, setup.statements)
    rows = [(1, b"\x00\xffpic", dt.date(1999, 12, 31), True), (-7, None, None, False), (2**62, b"", dt.date(2024, 2, 29), False)]
    with database.batch() as batch:
        batch.insert("T", ("Id", "Pic", "Born", "Flag", "Ts"),
                     [(i, base64.b64encode(p) if p is not None else None, d, f, spanner.COMMIT_TIMESTAMP) for i, p, d, f in rows])
    got = dict(_rows(database, "SELECT Id, ShardId FROM T"))
    for i, p, d, f in rows:
        assert got[i] == setup.shard_column.shard_of({"Id": i, "Pic": p, "Born": d, "Flag": f})


def test_hostile_separator_is_a_literal(make_database):
    database = make_database([LEGACY_TABLE])
    hostile = "'), 3)) STORED; DROP TABLE Singers; -- \\"
    column = ddl.shard_column("ShardId", ["FirstName", "LastName"], 5, separator=hostile)
    _apply(database, [ddl.add_column("Singers", column)])
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName"), [(1, "Ann", "Lee")])
    assert _rows(database, "SELECT ShardId FROM Singers") == [(column.shard_of({"FirstName": "Ann", "LastName": "Lee"}),)]


def test_new_table_with_storing_index_runs(make_database):
    setup = ddl.sharded_table("Events", [ColumnDef("Id", "STRING(36)", not_null=True), ColumnDef("Kind", "STRING(MAX)")],
                              ["Id"], ["Id"], shards=4, commit_timestamp_column="At", storing=["Kind"])
    database = make_database(list(setup.statements))
    with database.batch() as batch:
        batch.insert("Events", ("Id", "Kind", "At"), [("a", "x", spanner.COMMIT_TIMESTAMP)])
    f = setup.shard_provider.shard_filter()
    sql = f"SELECT Id, Kind FROM Events{setup.table_hint} WHERE At > @since{f.sql}"
    assert _rows(database, sql, {"since": EPOCH, **f.params}, {"since": param_types.TIMESTAMP, **f.types}) == [("a", "x")]


PG_LEGACY_TABLE = ('CREATE TABLE "Singers" ("SingerId" bigint NOT NULL, "FirstName" varchar(200), '
                   '"LastName" varchar(200) NOT NULL, "Born" date, "Active" boolean, PRIMARY KEY ("SingerId"))')
PG_COLUMNS = ("SingerId", "FirstName", "LastName", "Born", "Active")
PG_SOURCES = ["SingerId:INT64:not_null", "FirstName", "LastName:STRING:not_null", "Born:DATE", "Active:BOOL"]


def _printed_statements(printed: str) -> list[str]:
    """The statements of what ``spanner-watcher ddl`` printed, its comment lines left out."""
    text = "\n".join(line for line in printed.splitlines() if not line.startswith("--"))
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", text) if s.strip()]


def test_setup_printed_for_a_postgresql_table_runs_there_and_a_watcher_captures_through_its_index(make_database, capsys):
    database = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    database.update_ddl([PG_LEGACY_TABLE]).result(60)
    with database.batch() as batch:   # rows from before the setup: no commit timestamp, so never polled
        batch.insert("Singers", PG_COLUMNS, [(1, "Ann", "Lee", dt.date(1990, 5, 17), True), (2, None, "Bo", None, None)])

    assert main(["ddl", "setup", "Singers", *(a for src in PG_SOURCES for a in ("--source", src)), "--shards", "7",
                 "--commit-timestamp", "add", "--dialect", "postgresql"]) == 0
    printed = capsys.readouterr().out
    statements = _printed_statements(printed)
    sources = [ShardSource("SingerId", "INT64", not_null=True), "FirstName", ShardSource("LastName", not_null=True),
               ShardSource("Born", "DATE"), ShardSource("Active", "BOOL")]
    setup = ddl.sharded_polling("Singers", sources, shards=7, commit_timestamp="add", dialect=POSTGRESQL)
    assert statements == list(setup.statements) and len(statements) == 3
    assert "table_hint='/*@ FORCE_INDEX=Idx_Singers_ShardId_LastUpdated */'" in printed
    database.update_ddl(statements).result(120)

    # The server computed every existing row's shard as Python does (the casts to varchar included).
    def shards() -> dict[int, int]:
        rows = _rows(database, 'SELECT "SingerId", "FirstName", "LastName", "Born", "Active", "ShardId" FROM "Singers"')
        for *values, shard in rows:
            assert shard == setup.shard_column.shard_of(dict(zip(PG_COLUMNS, values, strict=True))), values
        return {r[0]: r[-1] for r in rows}

    assert set(shards()) == {1, 2}

    got = Collector()
    watcher = TableWatcher(database, "Singers", **setup.watcher_options(), initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=InMemoryCommitTimestampRepository(), poll_interval=0.005,
                           retry_policy=RetryPolicy(initial=0.001, maximum=0.01), limit=3)
    watcher.add_callback(got)
    watcher.start()
    try:
        with database.batch() as batch:   # writers that never mention the shard column
            batch.insert("Singers", (*PG_COLUMNS, "LastUpdated"),
                         [(i, f"F{i}", f"L{i}", dt.date(2000, 1, i), i % 2 == 0, spanner.COMMIT_TIMESTAMP)
                          for i in range(3, 11)])
            batch.update("Singers", ("SingerId", "LastUpdated"), [(1, spanner.COMMIT_TIMESTAMP)])
        got.wait_for(9)
        time.sleep(0.05)
    finally:
        watcher.stop(timeout=5)
    assert sorted(got.keys()) == [(i,) for i in (1, *range(3, 11))]   # row 2 has no commit timestamp
    assert set(shards()) == set(range(1, 11))
    assert all(shard in setup.shard_column.values for shard in shards().values())


# --- guard rails ------------------------------------------------------------------------------------------

HOSTILE = ["x`; DROP TABLE t; --", 'x"; DROP TABLE t; --', "", "1abc", "a b", "a-b", "Ä", "x" * 129, "x\ny", "`x`",
           '"x"', None, 42]


@DIALECTS
@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("build", [
    lambda n, d: ddl.sharded_polling(n, ["A"], dialect=d),
    lambda n, d: ddl.sharded_polling("T", [n], dialect=d),
    lambda n, d: ddl.sharded_polling("T", ["A"], commit_timestamp_column=n, dialect=d),
    lambda n, d: ddl.sharded_polling("T", ["A"], shard_column_name=n, dialect=d),
    lambda n, d: ddl.sharded_polling("T", ["A"], processed_column=n, dialect=d),
    lambda n, d: ddl.sharded_polling("T", ["A"], index_name=n, dialect=d),
    lambda n, d: ddl.sharded_polling("T", ["A"], storing=[n], dialect=d),
    lambda n, d: ddl.enable_commit_timestamp(n, "Ts", dialect=d),
    lambda n, d: ddl.disable_commit_timestamp("T", n, dialect=d),
    lambda n, d: ddl.add_commit_timestamp_column("T", n, dialect=d),
    lambda n, d: ddl.create_table("T", [ColumnDef(n, "INT64")], [n], dialect=d),
    lambda n, d: ddl.create_index("I", "T", ["A", n], dialect=d),
    lambda n, d: ddl.force_index_hint(n, d),
    lambda n, d: ddl.shard_provider(n, 19),
], ids=["table", "source", "ts", "shard", "processed", "index", "storing", "enable", "disable", "add", "create", "create_index",
        "hint", "provider"])
def test_hostile_identifiers_are_refused(request, name, build, dialect):
    if name is None and request.node.callspec.id.startswith(("processed-", "index-")):
        pytest.skip("None means 'not given' for this option")
    with pytest.raises((InvalidIdentifierError, DdlError)) as info:
        build(name, dialect)
    assert "invalid" in str(info.value)


def test_a_trailing_newline_is_not_a_name():
    with pytest.raises(InvalidIdentifierError):
        ddl.enable_commit_timestamp("Singers\n", "LastUpdated")


@pytest.mark.parametrize("bad", ["STRING", "INT", "STRING(0)", "STRING(MAX); DROP TABLE T", "ARRAY<ARRAY<INT64>>", "", None])
def test_invalid_types_are_refused(bad):
    with pytest.raises(DdlError, match="invalid column type"):
        ColumnDef("A", bad)


def test_unhashable_source_types_are_refused():
    for bad in ("FLOAT64", "JSON", "ARRAY<INT64>", "TIMESTAMP"):
        with pytest.raises(DdlError, match="a shard can be computed from"):
            ShardSource("A", bad)


@pytest.mark.parametrize("shards", [0, -3, ddl.MAX_SHARDS + 1, 1.5, True, "19", None])
def test_impossible_shard_counts_are_refused(shards):
    with pytest.raises(DdlError, match="shard count"):
        ddl.shard_column("S", ["A"], shards)


@pytest.mark.parametrize("shards, warns", [(1, True), (2, False), (19, False), (1000, False), (1001, True)])
def test_unusual_shard_counts_warn(shards, warns):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        column = ddl.shard_column("S", ["A"], shards)
    assert any(issubclass(w.category, ShardCountWarning) for w in caught) == warns
    assert len(column.values) == 2 * shards - 1


def test_commit_timestamp_cannot_lead_a_key_or_an_index_unless_insisted():
    columns = [ddl.commit_timestamp_column("Ts", not_null=True), ColumnDef("Id", "INT64", not_null=True)]
    with pytest.raises(HotspotError, match="primary key of table Users"):
        ddl.create_table("Users", columns, ["Ts", "Id"])
    assert "PRIMARY KEY (`Ts`, `Id`)" in ddl.create_table("Users", columns, ["Ts", "Id"], allow_hotspot=True)
    assert "PRIMARY KEY (`Id`, `Ts`)" in ddl.create_table("Users", columns, ["Id", "Ts"])
    with pytest.raises(HotspotError, match="index UsersByLastAccess"):
        ddl.create_index("UsersByLastAccess", "Users", ["Ts", "Id"], commit_timestamp_columns=["Ts"])
    assert ddl.create_index("I", "Users", ["Ts"], commit_timestamp_columns=["Ts"], allow_hotspot=True)
    with pytest.raises(HotspotError):
        ddl.shard_index("Users", "Ts", "Ts")
    with pytest.raises(HotspotError):
        ddl.sharded_table("Users", columns, ["Ts", "Id"], ["Id"], commit_timestamp_column="Ts")


def test_other_invalid_options():
    with pytest.raises(DdlError, match="commit_timestamp must be one of"):
        ddl.sharded_polling("T", ["A"], commit_timestamp="maybe")
    with pytest.raises(DdlError, match="commit-timestamp column"):
        ddl.sharded_polling("T", ["LastUpdated"])
    with pytest.raises(DdlError, match="at least one source"):
        ddl.shard_column("S", [])
    with pytest.raises(DdlError, match="repeat"):
        ddl.shard_column("S", ["A", "a"])
    with pytest.raises(DdlError, match="from itself"):
        ddl.shard_column("S", ["S"])
    with pytest.raises(DdlError, match="control characters"):
        ddl.shard_column("S", ["A"], separator="\n")
    with pytest.raises(DdlError, match="only TIMESTAMP"):
        ColumnDef("A", "DATE", commit_timestamp=True)
    with pytest.raises(DdlError, match="not a column"):
        ddl.create_table("T", [ColumnDef("A", "INT64")], ["B"])
    with pytest.raises(DdlError, match="not columns of table"):
        ddl.sharded_table("T", [ColumnDef("A", "INT64")], ["A"], ["B"])
    with pytest.raises(DdlError, match="store its own key"):
        ddl.shard_index("T", storing=["ShardId"])
    with pytest.raises(InvalidIdentifierError, match="index name"):
        ddl.sharded_polling("T" * 60, ["A"], commit_timestamp_column="C" * 60)


def test_cli_prints_the_statements(capsys):
    from watcher.cli.main import main

    assert main(["ddl", "setup", "Singers", "--source", "FirstName", "--source", "LastName:STRING:not_null"]) == 0
    out = capsys.readouterr().out
    assert out.count(";\n") == 2
    assert "FixedShardProvider('ShardId', range(-18, 19))" in out and "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}" in out
    assert main(["ddl", "commit-timestamp", "Bad`Name", "--convert"]) == 2
    assert "invalid table 'Bad`Name'" in capsys.readouterr().err
    assert main(["ddl", "shard-column", "T", "--source", "A", "--shards", "2000"]) == 0
    assert capsys.readouterr().out.startswith("-- warning: 2000 shard(s)")


@pytest.mark.parametrize("kind", [["commit-timestamp", "T", "--convert"], ["shard-column", "T", "--source", "A"],
                                  ["index", "T"], ["setup", "T", "--source", "A"],
                                  ["table", "T", "--column", "A:STRING(10)", "--primary-key", "A", "--source", "A"]],
                         ids=lambda kind: kind[0])
def test_cli_prints_each_kind_in_the_dialect_asked_for_googlesql_by_default(capsys, kind):
    printed = {}
    for dialect in ([], ["--dialect", "googlesql"], ["--dialect", "PostgreSQL"]):
        assert main(["ddl", *kind, *dialect]) == 0
        printed[tuple(dialect)] = capsys.readouterr().out
    assert printed[()] == printed[("--dialect", "googlesql")]
    assert "`T`" in printed[()] and '"T"' not in printed[()]
    postgres = printed[("--dialect", "PostgreSQL")]
    assert '"T"' in postgres and "`" not in postgres and "OPTIONS" not in postgres and "NULL_FILTERED" not in postgres
    with pytest.raises(SystemExit):
        main(["ddl", *kind, "--help"])
    assert "default googlesql" in " ".join(capsys.readouterr().out.split())
