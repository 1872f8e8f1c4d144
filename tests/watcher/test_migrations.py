"""The migration runner: files, folders, the packaged default set, and runs against the local Spanner."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import uuid

import pytest

from watcher.errors import ConfigurationError, MigrationChangedError, MigrationError, MigrationStatementError
from watcher.schema_tools import migration_files as mf
from watcher.schema_tools import migrations as m
from watcher.schema_tools.migrations import MigrationSet, Migrator, split_statements

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DDL_WATCHER = os.path.join(ROOT, "ddl", "watcher")
DDL_SINGERS = os.path.join(ROOT, "ddl", "samples", "singers")
#: A second copy of ddl/ inside the package would go stale; only a built wheel carries one.
PACKAGED_COPY = os.path.join(ROOT, "watcher", "schema_tools", mf.PACKAGED_DATA)


# --- statements -------------------------------------------------------------------------------------

def test_split_keeps_semicolons_in_strings_names_and_comments():
    text = """-- header; with a semicolon
CREATE TABLE `A;B` (K INT64, S STRING(MAX) DEFAULT ('x;y')) PRIMARY KEY (K);  # trailing; comment

/* block;
   comment */ INSERT INTO `A;B` (K, S) VALUES (1, "a\\";b"), (2, '''multi;
line''');
;
UPDATE X SET S = r'a\\b' WHERE TRUE"""
    statements = split_statements(text)
    assert [(s.line, s.kind) for s in statements] == [(2, "ddl"), (5, "dml"), (8, "dml")]
    assert statements[0].sql == "CREATE TABLE `A;B` (K INT64, S STRING(MAX) DEFAULT ('x;y')) PRIMARY KEY (K)"
    assert statements[1].sql.startswith("INSERT INTO `A;B`") and "'''multi;\nline'''" in statements[1].sql
    assert statements[2].sql == "UPDATE X SET S = r'a\\b' WHERE TRUE"


@pytest.mark.parametrize("text, line, what", [
    ("CREATE TABLE A (S STRING(MAX) DEFAULT ('x)) PRIMARY KEY (K);", 1, "unterminated string"),
    ("\n\nSELECT 1 /* never closed", 3, "unterminated /* comment"),
    ("\nCREATE TABLE `A (K INT64) PRIMARY KEY (K)", 2, "unterminated quoted name"),
    ("INSERT INTO T VALUES ('''open\n\n", 1, "unterminated string"),
])
def test_split_reports_unterminated_text_with_its_line(text, line, what):
    with pytest.raises(MigrationError, match="^" + re.escape(f"f.sql:{line}: {what}")):
        split_statements(text, "f.sql")


def test_checksum_ignores_line_ends_and_bom_only():
    assert m.checksum(b"\xef\xbb\xbfA;\r\nB;") == m.checksum(b"A;\nB;")
    assert m.checksum(b"A;\nB;") != m.checksum(b"A;\nB; ")
    assert m.checksum(b"x").startswith("sha256:")


# --- files and folders -----------------------------------------------------------------------------------

def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


@pytest.mark.parametrize("name, text, message", [
    ("V1_missing_underscore.sql", "DROP TABLE A", "are named V<version>__<name>.sql"),
    ("001__no_v.sql", "DROP TABLE A", "are named V<version>__<name>.sql"),
    ("V1__empty.sql", "-- only a comment\n", "holds no statement"),
    ("V1__select.sql", "CREATE TABLE A (K INT64) PRIMARY KEY (K);\n\nSELECT 1", r"V1__select.sql:3: only schema statements"),
])
def test_bad_files_are_refused_with_their_name(tmp_path, name, text, message):
    write(tmp_path, name, text)
    with pytest.raises(MigrationError, match=message) as info:
        MigrationSet.from_directory(tmp_path)
    assert name in str(info.value)


def test_folder_loading(tmp_path):
    write(tmp_path, "V2__second.sql", "DROP TABLE B")
    write(tmp_path, "V10__tenth.sql", "DROP TABLE C")
    write(tmp_path, "V1__first.sql", "DROP TABLE A")
    write(tmp_path, "README.md", "not a migration")
    loaded = MigrationSet.from_directory(tmp_path)
    assert loaded.folder_id == tmp_path.name
    assert [(f.version, f.name) for f in loaded.files] == [(1, "first"), (2, "second"), (10, "tenth")]
    assert MigrationSet.from_directory(tmp_path, "custom").folder_id == "custom"
    with pytest.raises(MigrationError, match="invalid migration folder id"):
        MigrationSet.from_directory(tmp_path, "bad id; --")
    with pytest.raises(MigrationError, match="does not exist"):
        MigrationSet.from_directory(tmp_path / "nope")
    write(tmp_path, "V001__again.sql", "DROP TABLE D")
    with pytest.raises(MigrationError, match="have the same version 1"):
        MigrationSet.from_directory(tmp_path)


def test_a_parent_folder_names_the_migration_folders_inside():
    with pytest.raises(MigrationError, match="holds no V<version>__<name>.sql file; the folders in it with migrations: "
                                             ".*ddl/samples/singers, .*ddl/watcher"):
        MigrationSet.from_directory(os.path.join(ROOT, "ddl"))


def test_the_default_set_is_read_from_ddl_watcher_the_one_copy_in_the_tree():
    assert not os.path.exists(PACKAGED_COPY), "ddl/ is the only copy of the migrations; setup.py puts them into the wheel"
    packaged = m.default_migrations()
    assert [f.filename for f in packaged.files] == sorted(n for n in os.listdir(DDL_WATCHER) if n.endswith(".sql"))
    assert [f.checksum for f in packaged.files] == [f.checksum for f in MigrationSet.from_directory(DDL_WATCHER).files]
    assert packaged.folder_id == MigrationSet.from_directory(DDL_WATCHER).folder_id == "watcher"


# --- runs against the server -----------------------------------------------------------------------------------

def tables(database):
    with database.snapshot() as snap:
        return {r[0] for r in snap.execute_sql("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = ''")}


def records(database, table=m.MIGRATIONS_TABLE):
    with database.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql(
            f"SELECT FOLDER_ID, VERSION, NAME, CHECKSUM, APPLIED_AT IS NOT NULL FROM {table} ORDER BY FOLDER_ID, VERSION")]


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "app"
    path.mkdir()
    write(path, "V001__singers.sql", "-- the table\nCREATE TABLE Singers (\n  Id INT64 NOT NULL,\n  Name STRING(MAX),\n) PRIMARY KEY (Id);\n")
    write(path, "V002__seed_and_index.sql",
          "CREATE INDEX SingersByName ON Singers (Name);\nINSERT INTO Singers (Id, Name) VALUES (1, 'Ann; the first');\n")
    return path


def test_fresh_run_then_rerun_then_new_file(make_database, folder):
    database = make_database([])
    report = Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert [(fid, f.version) for fid, f, _ in report.applied] == [("app", 1), ("app", 2)]
    assert {"Singers", m.MIGRATIONS_TABLE} <= tables(database)
    files = MigrationSet.from_directory(folder).files
    assert records(database) == [("app", 1, "singers", files[0].checksum, True), ("app", 2, "seed_and_index", files[1].checksum, True)]
    with database.snapshot() as snap:
        assert list(snap.execute_sql("SELECT Name FROM Singers@{FORCE_INDEX=SingersByName}")) == [["Ann; the first"]]

    database.reload()
    ddl_before = list(database.ddl_statements)
    again = Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert again.applied == [] and again.plans[0].pending == ()
    database.reload()
    assert list(database.ddl_statements) == ddl_before
    with database.snapshot() as snap:   # the DML did not run twice
        assert list(snap.execute_sql("SELECT COUNT(*) FROM Singers")) == [[1]]

    write(folder, "V003__albums.sql", "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    third = Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert [f.filename for _, f, _ in third.applied] == ["V003__albums.sql"]
    assert "Albums" in tables(database)


def test_an_edited_applied_file_is_refused(make_database, folder):
    database = make_database([])
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    write(folder, "V001__singers.sql", "CREATE TABLE Singers (Id INT64 NOT NULL, Name STRING(100)) PRIMARY KEY (Id);\n")
    write(folder, "V003__albums.sql", "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    with pytest.raises(MigrationChangedError, match="V001__singers.sql of folder 'app' was changed after it was applied"):
        Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert "Albums" not in tables(database)   # nothing ran


def test_a_failing_statement_names_file_and_line_and_keeps_what_was_applied(make_database, folder):
    database = make_database([])
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    bad = write(folder, "V003__broken.sql",
                "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id);\n\n-- oops:\nCREATE INDEX AlbumsByTitle ON Albums (Title);\n")
    write(folder, "V004__later.sql", "CREATE TABLE Later (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    with pytest.raises(MigrationStatementError) as info:
        Migrator(database).migrate(MigrationSet.from_directory(folder))
    error = info.value
    assert (error.path, error.line, error.applied_before) == (bad, 4, 1)
    assert str(error).startswith(f"{bad}:4: statement failed: ") and "Title" in str(error)
    assert "CREATE INDEX AlbumsByTitle ON Albums (Title)" in str(error)
    assert [r[1] for r in records(database)] == [1, 2]           # earlier migrations kept, V003 not recorded
    assert "Albums" in tables(database) and "Later" not in tables(database)


def test_the_failing_third_of_four_schema_statements_is_named_and_the_first_two_stay(make_database, folder):
    database = make_database([])
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    bad = write(folder, "V003__four.sql", "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id);\n"
                                          "CREATE TABLE Songs (Id INT64 NOT NULL) PRIMARY KEY (Id);\n"
                                          "-- the third one names a column Albums does not have:\n"
                                          "CREATE INDEX AlbumsByTitle\n  ON Albums (Title);\n"
                                          "CREATE TABLE Tours (Id INT64 NOT NULL) PRIMARY KEY (Id);\n")
    with pytest.raises(MigrationStatementError) as info:
        Migrator(database).migrate(MigrationSet.from_directory(folder))
    error = info.value
    assert (error.path, error.line, error.applied_before) == (bad, 4, 2)
    assert str(error).startswith(f"{bad}:4: statement failed: ") and "Title" in str(error)
    assert "The 2 statement(s) before it in this file stay applied" in str(error)
    assert {"Albums", "Songs"} <= tables(database) and "Tours" not in tables(database)
    assert [r[1] for r in records(database)] == [1, 2]           # V003 is not marked applied


def schema_requests(database):
    """The statements of each schema-change request the database received, oldest first."""
    return [list(op.metadata.statements) for op in database.list_database_operations()
            if type(op.metadata).__name__ == "UpdateDatabaseDdlMetadata"]


def test_each_file_is_one_schema_change_request(make_database, folder):
    database = make_database([])
    write(folder, "V003__three.sql", "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id);\n"
                                     "CREATE TABLE Songs (Id INT64 NOT NULL) PRIMARY KEY (Id);\n"
                                     "CREATE INDEX SongsById ON Songs (Id)")
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    files = MigrationSet.from_directory(folder).files
    requests = [r for r in schema_requests(database) if m.MIGRATIONS_TABLE not in r[0]]   # not the runner's own tables
    ddl = [[st.sql for st in f.statements if st.kind == "ddl"] for f in files]
    assert requests == ddl and len(requests) == 3
    assert len(ddl[2]) == 3


def test_folders_are_tracked_on_their_own(make_database, folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    write(other, "V001__other.sql", "CREATE TABLE Other (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    database = make_database([])
    report = Migrator(database).migrate([MigrationSet.from_directory(folder), MigrationSet.from_directory(other)])
    assert len(report.applied) == 3
    assert [(r[0], r[1]) for r in records(database)] == [("app", 1), ("app", 2), ("other", 1)]
    with pytest.raises(MigrationError, match="share a folder id"):
        Migrator(database).migrate([MigrationSet.from_directory(folder), MigrationSet.from_directory(other, "app")])


def test_a_new_file_below_an_applied_version_is_refused(make_database, folder):
    os.rename(folder / "V002__seed_and_index.sql", folder / "V005__seed_and_index.sql")
    database = make_database([])
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    write(folder, "V003__between.sql", "CREATE TABLE Between (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    with pytest.raises(MigrationError, match="V003__between.sql is new, but version 5 of folder 'app' is already applied"):
        Migrator(database).migrate(MigrationSet.from_directory(folder))


def test_a_removed_file_is_reported_not_fatal(make_database, folder):
    database = make_database([])
    Migrator(database).migrate(MigrationSet.from_directory(folder))
    os.remove(folder / "V002__seed_and_index.sql")
    plan = Migrator(database).plan(MigrationSet.from_directory(folder))
    assert [a.version for a in plan.missing] == [2]
    assert any("no longer in the folder" in line for line in plan.describe())


def test_dry_run_changes_nothing(make_database, folder):
    database = make_database([])
    report = Migrator(database).migrate(MigrationSet.from_directory(folder), dry_run=True)
    assert report.dry_run and [f.version for f in report.plans[0].pending] == [1, 2] and report.applied == []
    assert tables(database) == set()
    lines = report.plans[0].describe(statements=True)
    assert any(line.endswith("V002__seed_and_index.sql:2") for line in lines)
    assert "    CREATE INDEX SingersByName ON Singers (Name);" in lines


def test_default_set_creates_the_checkpoint_table_of_the_repository(make_database):
    from google.api_core.datetime_helpers import DatetimeWithNanoseconds

    from watcher.checkpoints import SpannerCommitTimestampRepository
    from watcher.model import Checkpoint, TableId

    ts = DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.UTC)
    database = make_database([])
    Migrator(database).migrate(m.default_migrations())
    assert {"LAST_SEEN_COMMIT_TIMESTAMPS", "CHANGE_SETS", "WATCHER_CHANGELOG", "WATCHER_CHANGELOG_WATERMARKS"} <= tables(database)
    repo = SpannerCommitTimestampRepository(database, create_if_missing=False)
    repo.initialize()   # verifies every Java column, the key order and the position column
    repo.set(TableId("Singers"), Checkpoint(ts, key=(7,)), shard=[-1, 0, 1])
    assert repo.get(TableId("Singers"), shard=[-1, 0, 1]) == Checkpoint(ts, key=(7,))
    assert repo.oldest(TableId("Singers")) == ts


def test_checkpoint_migration_is_the_repository_table_ddl():
    from watcher.checkpoints.java_table import create_table_ddl
    from watcher.localspanner.ddl.parser import parse_ddl

    ours = parse_ddl(m.default_migrations().files[0].statements[0].sql)   # a pure parse, no server involved
    assert ours.if_not_exists
    assert dataclasses.replace(ours, if_not_exists=False) == parse_ddl(create_table_ddl())


JAVA_KEY = ("DATABASE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "SHARD_ID_BOOL", "SHARD_ID_BYTES", "SHARD_ID_DATE",
            "SHARD_ID_FLOAT64", "SHARD_ID_INT64", "SHARD_ID_STRING", "SHARD_ID_TIMESTAMP")


def test_default_set_on_a_table_the_java_library_created(make_database):
    java = ("CREATE TABLE LAST_SEEN_COMMIT_TIMESTAMPS (DATABASE_NAME STRING(MAX) NOT NULL, TABLE_CATALOG STRING(MAX) NOT NULL, "
            "TABLE_SCHEMA STRING(MAX) NOT NULL, TABLE_NAME STRING(MAX) NOT NULL, SHARD_ID_BOOL BOOL, SHARD_ID_BYTES BYTES(MAX), "
            "SHARD_ID_DATE DATE, SHARD_ID_FLOAT64 FLOAT64, SHARD_ID_INT64 INT64, SHARD_ID_STRING STRING(MAX), "
            "SHARD_ID_TIMESTAMP TIMESTAMP, LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL) PRIMARY KEY (DATABASE_NAME, "
            "TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES, SHARD_ID_DATE, SHARD_ID_FLOAT64, "
            "SHARD_ID_INT64, SHARD_ID_STRING, SHARD_ID_TIMESTAMP)")
    database = make_database([java])
    with database.batch() as batch:
        batch.insert("LAST_SEEN_COMMIT_TIMESTAMPS", JAVA_KEY + ("LAST_SEEN_COMMIT_TIMESTAMP",),
                     [("db", "", "", "T", *[None] * 7, dt.datetime(2024, 1, 1, tzinfo=dt.UTC))])
    Migrator(database).migrate(m.default_migrations())
    with database.snapshot() as snap:   # the Java row is kept, and the position column was added
        assert list(snap.execute_sql("SELECT TABLE_NAME, LAST_SEEN_POSITION FROM LAST_SEEN_COMMIT_TIMESTAMPS")) == [["T", None]]


# --- the command and the connection ----------------------------------------------------------------------------------

@pytest.fixture
def cli_database(instance):
    """A database id for the command to create on the test server; dropped afterwards."""
    database_id = f"cli-{uuid.uuid4().hex[:12]}"
    yield database_id
    db = instance.database(database_id)
    if db.exists():
        db.drop()


def run_cli(*argv):
    from watcher.cli.main import main

    return main(["migrate", *argv])


def test_command_against_the_emulator_creates_the_database(capsys, spanner_client, instance, folder, cli_database):
    names = ["--project", spanner_client.project, "--instance", instance.instance_id, "--database", cli_database]
    assert run_cli("--dir", str(folder), "--dry-run", *names) == 0
    out = capsys.readouterr().out
    assert "on the emulator at" in out and "app (" in out and "0 applied, 2 pending" in out and "dry run" in out
    assert instance.database(cli_database).exists()        # created, as the Java emulator helper does
    assert run_cli("--dir", str(folder), *names) == 0
    out = capsys.readouterr().out
    assert "app: applied V001__singers.sql" in out and "done: 2 file(s) applied" in out
    assert run_cli("--dir", str(folder), *names) == 0
    assert "up to date" in capsys.readouterr().out
    write(folder, "V001__singers.sql", "CREATE TABLE Changed (Id INT64) PRIMARY KEY (Id)")
    assert run_cli("--dir", str(folder), *names) == 1
    err = capsys.readouterr().err
    assert "V001__singers.sql of folder 'app' was changed after it was applied" in err


def test_command_with_bad_options(capsys, folder, tmp_path):
    assert run_cli("--dir", str(folder), "--dir", str(folder), "--folder-id", "x") == 2
    assert "--folder-id needs exactly one --dir" in capsys.readouterr().err
    write(folder, "oops.sql", "DROP TABLE A")
    assert run_cli("--dir", str(folder)) == 1
    assert "oops.sql: migration files are named" in capsys.readouterr().err


def test_command_on_the_embedded_default(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("SPANNER_EMULATOR_HOST", raising=False)
    data = tmp_path / "data"
    assert run_cli("--embedded", "--data-dir", str(data)) == 0
    out = capsys.readouterr().out
    assert "on the embedded local Spanner" in out and "watcher: applied V003__watcher_changelog.sql" in out
    assert run_cli("--data-dir", str(data)) == 0      # the data dir kept the database and its records
    assert "up to date" in capsys.readouterr().out


def test_real_spanner_needs_all_three_names(monkeypatch):
    from watcher.cli.connection import open_database

    monkeypatch.delenv("SPANNER_EMULATOR_HOST", raising=False)
    with pytest.raises(ConfigurationError, match="--instance, --database missing"):
        with open_database(project="p"):
            pass


def test_emulator_creates_a_missing_instance(spanner_client):
    from watcher.cli.connection import open_database

    instance_id = f"inst-{uuid.uuid4().hex[:8]}"
    with open_database(spanner_client.project, instance_id, "created-db") as target:
        assert target.kind == "emulator" and target.instance.exists() and target.database.exists()
        target.database.drop()
        target.instance.delete()


def test_emulator_creates_a_missing_database_in_the_dialect_asked(spanner_client, instance):
    from watcher.cli.connection import open_database
    from watcher.dialects import GOOGLE_SQL, POSTGRESQL, dialect_of

    database_id = f"pg-{uuid.uuid4().hex[:8]}"
    with open_database(spanner_client.project, instance.instance_id, database_id, dialect=POSTGRESQL) as target:
        assert dialect_of(target.database) is POSTGRESQL
    try:
        with pytest.raises(ConfigurationError, match=f"{database_id} is a PostgreSQL database, not GoogleSQL"):
            with open_database(spanner_client.project, instance.instance_id, database_id, dialect=GOOGLE_SQL):
                pass
    finally:
        instance.database(database_id).drop()


def test_the_samples_are_read_from_ddl_samples():
    assert [f.checksum for f in m.sample_migrations("singers").files] == \
        [f.checksum for f in MigrationSet.from_directory(DDL_SINGERS).files]
    assert m.sample_migrations("singers").folder_id == "singers"


def test_an_unknown_sample_is_refused_by_name():
    with pytest.raises(MigrationError, match="no sample schema 'albums' in the package"):
        m.sample_migrations("albums")


# --- both dialects ---------------------------------------------------------------------------------------------------

#: A folder's two files in each dialect: a table, then an index and a row (DML) in one file.
DIALECT_FILES = {
    "GoogleSQL": {"V001__singers.sql": "CREATE TABLE Singers (\n  Id INT64 NOT NULL,\n  Name STRING(MAX),\n) PRIMARY KEY (Id);\n",
                  "V002__seed_and_index.sql": "CREATE INDEX SingersByName ON Singers (Name);\n"
                                              "INSERT INTO Singers (Id, Name) VALUES (1, 'Ann; the first');\n"},
    "PostgreSQL": {"V001__singers.sql": "CREATE TABLE singers (\n  id bigint NOT NULL,\n  name varchar,\n  PRIMARY KEY (id)\n);\n",
                   "V002__seed_and_index.sql": "CREATE INDEX singers_by_name ON singers (name);\n"
                                               "INSERT INTO singers (id, name) VALUES (1, 'Ann; the first');\n"},
}
#: The runner's own tables as each dialect names them.
RUNNER_TABLES = {"GoogleSQL": {m.MIGRATIONS_TABLE, m.MIGRATIONS_TABLE + "_LOCK"},
                 "PostgreSQL": {m.MIGRATIONS_TABLE.lower(), m.MIGRATIONS_TABLE.lower() + "_lock"}}


def dialect_folder(tmp_path, dialect):
    path = tmp_path / f"app-{dialect.lower()}"
    path.mkdir()
    for name, text in DIALECT_FILES[dialect].items():
        write(path, name, text)
    return path


def tables_of(database):
    from watcher.dialects import dialect_of
    from watcher.dialects.schema import tables_query

    statement = tables_query(dialect_of(database))
    with database.snapshot() as snap:
        return {r[0] for r in snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types)}


@pytest.mark.parametrize("dialect", ["GoogleSQL", "PostgreSQL"])
def test_a_folder_in_the_databases_dialect_applies_once(make_database, tmp_path, dialect):
    from tests.watcher.dialect_support import database_maker

    database = database_maker(make_database, dialect)()
    folder = dialect_folder(tmp_path, dialect)
    report = Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert [f.version for _, f, _ in report.applied] == [1, 2]
    assert RUNNER_TABLES[dialect] <= tables_of(database) and {"Singers", "singers"} & tables_of(database)
    files = MigrationSet.from_directory(folder).files
    # Unquoted names read the runner's table in both: PostgreSQL folds them to its lower-case names.
    assert records(database) == [(folder.name, 1, "singers", files[0].checksum, True),
                                 (folder.name, 2, "seed_and_index", files[1].checksum, True)]
    with database.snapshot() as snap:
        assert list(snap.execute_sql(f"SELECT COUNT(*) FROM {m.MIGRATIONS_TABLE}_LOCK")) == [[0]]
    again = Migrator(database).migrate(MigrationSet.from_directory(folder))
    assert again.applied == [] and again.plans[0].pending == ()
    with database.snapshot() as snap:   # the DML ran once
        assert list(snap.execute_sql("SELECT COUNT(*) FROM Singers")) == [[1]]
    write(folder, "V001__singers.sql", DIALECT_FILES[dialect]["V001__singers.sql"] + "\n")
    with pytest.raises(MigrationChangedError, match="V001__singers.sql of folder .* was changed after it was applied"):
        Migrator(database).migrate(MigrationSet.from_directory(folder))


@pytest.mark.parametrize("dialect, other", [("GoogleSQL", "PostgreSQL"), ("PostgreSQL", "GoogleSQL")])
def test_files_in_the_other_dialect_are_refused_before_anything_runs(make_database, tmp_path, dialect, other):
    from tests.watcher.dialect_support import database_maker

    database = database_maker(make_database, dialect)()
    folder = dialect_folder(tmp_path, other)
    write(folder, "V000__neutral.sql", "DROP TABLE IF EXISTS Nothing")   # no dialect's own spelling: not refused
    with pytest.raises(MigrationError) as info:
        Migrator(database).migrate(MigrationSet.from_directory(folder))
    message = str(info.value)
    assert message == (f"{folder}/V001__singers.sql:1: written in {other}, but the database is {dialect}; "
                       f"give it migration files in {dialect}")
    assert tables_of(database) == set()   # not even the runner's tables


def test_migrate_command_on_a_postgresql_database(capsys, spanner_client, instance, tmp_path):
    from google.cloud.spanner_admin_database_v1 import DatabaseDialect

    database_id = f"cli-pg-{uuid.uuid4().hex[:8]}"
    database = instance.database(database_id, database_dialect=DatabaseDialect.POSTGRESQL)
    database.create().result(60)
    try:
        names = ["--project", spanner_client.project, "--instance", instance.instance_id, "--database", database_id]
        folder = dialect_folder(tmp_path, "PostgreSQL")
        assert run_cli("--dir", str(folder), *names) == 0
        assert "done: 2 file(s) applied" in capsys.readouterr().out
        assert run_cli("--dir", str(folder), *names) == 0
        assert "up to date" in capsys.readouterr().out
        # The packaged default set in the database's dialect: ddl/watcher-postgresql, recorded as "watcher".
        assert run_cli(*names) == 0
        out = capsys.readouterr().out
        assert "done: 4 file(s) applied" in out
        assert [r[:2] for r in records(database)] == [(folder.name, 1), (folder.name, 2),
                                                      *(("watcher", v) for v in range(1, 5))]
        assert {"last_seen_commit_timestamps", "watcher_change_stream_partitions", "CHANGE_SETS"} <= tables_of(database)
        assert run_cli(*names) == 0 and "up to date" in capsys.readouterr().out
    finally:
        database.drop()
