"""The DDL helpers: what they generate, that it runs on Spanner with the intended effect, and their guard rails."""

from __future__ import annotations

import base64
import datetime as dt
import os
import warnings

import pytest
from google.api_core import exceptions as gexc
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from watcher.errors import DdlError, HotspotError, InvalidIdentifierError
from watcher.schema_tools import ddl
from watcher.schema_tools.ddl import ColumnDef, ShardCountWarning, ShardSource
from watcher.schema_tools.migrations import MigrationSet, Migrator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTC = dt.UTC
PAST = dt.datetime(2020, 1, 1, tzinfo=UTC)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


# --- what is generated ----------------------------------------------------------------------------------

def test_seed_example_for_an_existing_table():
    setup = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)])
    assert setup.statements == (
        "ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS "
        "(MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') || `LastName`), 19)) STORED",
        "CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)",
    )
    assert setup.table_hint == "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
    assert list(setup.shard_provider.values) == list(range(-18, 19))
    assert setup.watcher_options()["table_hint"] == setup.table_hint


def test_processed_variant_and_commit_timestamp_steps():
    setup = ddl.sharded_polling("T", ["A"], shards=7, commit_timestamp="convert", commit_timestamp_column="Ts",
                                processed_column="Done", storing=["A"])
    assert setup.statements == (
        "ALTER TABLE `T` ALTER COLUMN `Ts` SET OPTIONS (allow_commit_timestamp=true)",
        "ALTER TABLE `T` ADD COLUMN `Done` BOOL",
        "ALTER TABLE `T` ADD COLUMN `ShardId` INT64 AS "
        "(CASE WHEN `Done` THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(`A`, '')), 7) END) STORED",
        "CREATE NULL_FILTERED INDEX `Idx_T_ShardId_Ts` ON `T` (`ShardId`, `Ts`) STORING (`A`)",
    )
    added = ddl.sharded_polling("T", ["A"], commit_timestamp="add", processed_column="Done", add_processed_column=False)
    assert added.statements[0] == "ALTER TABLE `T` ADD COLUMN `LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)"
    assert not any("`Done` BOOL" in s for s in added.statements)
    assert ddl.disable_commit_timestamp("T", "Ts") == "ALTER TABLE `T` ALTER COLUMN `Ts` SET OPTIONS (allow_commit_timestamp=null)"


def test_sources_of_other_types_are_made_strings():
    column = ddl.shard_column("S", [ShardSource("Id", "INT64", not_null=True), ShardSource("Pic", "BYTES(MAX)"),
                                    ShardSource("Born", "date"), ShardSource("Flag", "BOOL", not_null=True)], 5)
    assert column.fingerprint_input == ("CAST(`Id` AS STRING) || ' ' || COALESCE(TO_BASE64(`Pic`) || ' ', '') || "
                                        "COALESCE(CAST(`Born` AS STRING) || ' ', '') || CAST(`Flag` AS STRING)")


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


# --- guard rails ------------------------------------------------------------------------------------------

HOSTILE = ["x`; DROP TABLE t; --", "", "1abc", "a b", "a-b", "Ä", "x" * 129, "x\ny", "`x`", None, 42]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("build", [
    lambda n: ddl.sharded_polling(n, ["A"]),
    lambda n: ddl.sharded_polling("T", [n]),
    lambda n: ddl.sharded_polling("T", ["A"], commit_timestamp_column=n),
    lambda n: ddl.sharded_polling("T", ["A"], shard_column_name=n),
    lambda n: ddl.sharded_polling("T", ["A"], processed_column=n),
    lambda n: ddl.sharded_polling("T", ["A"], index_name=n),
    lambda n: ddl.sharded_polling("T", ["A"], storing=[n]),
    lambda n: ddl.enable_commit_timestamp(n, "Ts"),
    lambda n: ddl.disable_commit_timestamp("T", n),
    lambda n: ddl.add_commit_timestamp_column("T", n),
    lambda n: ddl.create_table("T", [ColumnDef(n, "INT64")], [n]),
    lambda n: ddl.create_index("I", "T", ["A", n]),
    lambda n: ddl.force_index_hint(n),
    lambda n: ddl.shard_provider(n, 19),
], ids=["table", "source", "ts", "shard", "processed", "index", "storing", "enable", "disable", "add", "create", "create_index",
        "hint", "provider"])
def test_hostile_identifiers_are_refused(request, name, build):
    if name is None and request.node.callspec.id.startswith(("processed-", "index-")):
        pytest.skip("None means 'not given' for this option")
    with pytest.raises((InvalidIdentifierError, DdlError)) as info:
        build(name)
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
