"""The change stream DDL helpers and ``ddl change-stream``: what they print, and that Spanner takes it as meant."""

from __future__ import annotations

import pytest
from google.cloud.spanner_admin_database_v1 import DatabaseDialect

from watcher.cli.commands.ddl import tracked_table
from watcher.cli.main import main
from watcher.dialects import GOOGLE_SQL, POSTGRESQL
from watcher.errors import DdlError, InvalidIdentifierError
from watcher.schema_tools import ddl
from watcher.schema_tools.ddl.change_streams import VALUE_CAPTURE_TYPES, tracking_clause

TABLES = ["CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(100), LastName STRING(100)) "
          "PRIMARY KEY (SingerId)",
          "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(100), Year INT64) "
          "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE"]
#: The same tables in a PostgreSQL database (names double-quoted, so they keep their case).
PG_TABLES = ['CREATE TABLE "Singers" ("SingerId" bigint NOT NULL, "FirstName" varchar(100), PRIMARY KEY ("SingerId"))',
             'CREATE TABLE "Albums" ("SingerId" bigint NOT NULL, "AlbumId" bigint NOT NULL, "Title" varchar(100), '
             'PRIMARY KEY ("SingerId", "AlbumId")) INTERLEAVE IN PARENT "Singers" ON DELETE CASCADE']
DIALECTS = pytest.mark.parametrize("dialect", [GOOGLE_SQL, POSTGRESQL], ids=str)


def _rows(database, sql: str) -> list[list]:
    with database.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


# --- what is printed ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("tracking", "clause"), [
    (ddl.ALL, "FOR ALL"),
    ("all", "FOR ALL"),
    (None, ""),
    ({"Singers": None}, "FOR `Singers`"),
    ({"Singers": []}, "FOR `Singers`()"),
    ({"Singers": None, "Albums": ("Title", "Year")}, "FOR `Singers`, `Albums`(`Title`, `Year`)"),
])
@DIALECTS
def test_tracking_clauses(tracking, clause, dialect):
    assert tracking_clause(tracking, dialect) == clause.replace("`", dialect.quote_char)


@pytest.mark.parametrize("bad", [{}, "SOME", {"Singers": "Title"}, {"Albums": ["Title", "title"]}])
def test_bad_tracking_is_refused_with_the_table_named(bad):
    with pytest.raises(DdlError) as info:
        tracking_clause(bad)
    if isinstance(bad, dict) and bad:
        assert next(iter(bad)) in str(info.value)


@DIALECTS
@pytest.mark.parametrize("name", ["S-1", "1S", "S; DROP TABLE Singers", "S`", 'S"'])
def test_hostile_stream_table_and_column_names_are_refused(name, dialect):
    for build in (lambda: ddl.create_change_stream(name, dialect=dialect),
                  lambda: ddl.create_change_stream("S", {name: None}, dialect=dialect),
                  lambda: ddl.create_change_stream("S", {"T": [name]}, dialect=dialect),
                  lambda: ddl.drop_change_stream(name, dialect=dialect),
                  lambda: ddl.alter_change_stream_tracking(name, ddl.ALL, dialect=dialect)):
        with pytest.raises(InvalidIdentifierError):
            build()


@DIALECTS
def test_every_option_is_written_only_when_given(dialect):
    stream, table = dialect.quote("S"), dialect.quote("Singers")
    options = {"GoogleSQL": "OPTIONS", "PostgreSQL": "WITH"}[dialect.name]
    assert ddl.create_change_stream("S", dialect=dialect) == f"CREATE CHANGE STREAM {stream} FOR ALL"
    full = ddl.create_change_stream("S", {"Singers": None}, retention_period="7D", value_capture_type="new_values",
                                    exclude_insert=True, exclude_update=False, exclude_delete=True,
                                    exclude_ttl_deletes=False, allow_txn_exclusion=True, dialect=dialect)
    assert full == (f"CREATE CHANGE STREAM {stream} FOR {table} {options} (retention_period = '7d', "
                    "value_capture_type = 'NEW_VALUES', exclude_insert = true, exclude_update = false, "
                    "exclude_delete = true, exclude_ttl_deletes = false, allow_txn_exclusion = true)")


@pytest.mark.parametrize("retention", ["1w", "0d", "36", "1.5d", "", "1d'); DROP", "-1h"])
def test_bad_retention_is_refused_before_spanner(retention):
    with pytest.raises(DdlError, match="retention_period"):
        ddl.create_change_stream("S", retention_period=retention)


@pytest.mark.parametrize(("text", "parsed"), [
    ("Singers", ("Singers", None)), ("Albums(Title)", ("Albums", ("Title",))),
    ("Albums( Title , Year )", ("Albums", ("Title", "Year"))), ("Songs()", ("Songs", ())),
])
def test_cli_table_forms(text, parsed):
    assert tracked_table(text) == parsed


@pytest.mark.parametrize("text", ["", "A(B", "A(B,,C)", "A B"])
def test_cli_bad_table_forms(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        tracked_table(text)


def test_cli_refuses_conflicting_or_repeated_tables(capsys):
    assert main(["ddl", "change-stream", "S", "--table", "Singers", "--table", "singers"]) == 2
    assert "twice" in capsys.readouterr().err
    assert main(["ddl", "change-stream", "S", "--table", "Singers", "--none"]) == 2
    assert "--none" in capsys.readouterr().err


# --- what Spanner makes of it ---------------------------------------------------------------------------

def test_printed_statements_create_alter_and_drop_the_stream(make_database, capsys):
    database = make_database(TABLES)
    assert main(["ddl", "change-stream", "SingersStream", "--table", "Singers", "--table", "Albums(Title)",
                 "--retention", "36h", "--value-capture-type", "new_row_and_old_values", "--exclude-delete"]) == 0
    created = capsys.readouterr().out.strip().rstrip(";")
    database.update_ddl([created]).result(60)
    options = dict((n, v) for n, v in _rows(database, "SELECT OPTION_NAME, OPTION_VALUE FROM "
                   "INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS WHERE CHANGE_STREAM_NAME = 'SingersStream'"))
    assert options["retention_period"] == "36h"
    assert options["value_capture_type"] == "NEW_ROW_AND_OLD_VALUES"
    assert options["exclude_delete"].lower() == "true"
    tables = _rows(database, "SELECT TABLE_NAME, ALL_COLUMNS FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
                             "WHERE CHANGE_STREAM_NAME = 'SingersStream' ORDER BY TABLE_NAME")
    assert tables == [["Albums", False], ["Singers", True]]
    columns = _rows(database, "SELECT TABLE_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAM_COLUMNS "
                              "WHERE CHANGE_STREAM_NAME = 'SingersStream' AND TABLE_NAME = 'Albums'")
    assert columns == [["Albums", "Title"]]

    database.update_ddl([ddl.alter_change_stream_tracking("SingersStream", {"Albums": []})]).result(60)
    assert _rows(database, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
                           "WHERE CHANGE_STREAM_NAME = 'SingersStream'") == [["Albums"]]
    database.update_ddl([ddl.alter_change_stream_tracking("SingersStream", None)]).result(60)
    assert _rows(database, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
                           "WHERE CHANGE_STREAM_NAME = 'SingersStream'") == [[0]]
    database.update_ddl([ddl.drop_change_stream("SingersStream")]).result(60)
    assert _rows(database, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.CHANGE_STREAMS") == [[0]]


@pytest.mark.parametrize("capture", VALUE_CAPTURE_TYPES)
def test_every_capture_type_and_for_all_is_taken(make_database, capture):
    database = make_database(TABLES)
    database.update_ddl([ddl.create_change_stream("Everything", ddl.ALL, value_capture_type=capture)]).result(60)
    assert _rows(database, "SELECT `ALL` FROM INFORMATION_SCHEMA.CHANGE_STREAMS") == [[True]]
    database.reload()
    printed = [s for s in database.ddl_statements if "CHANGE STREAM" in s]
    assert len(printed) == 1 and "FOR ALL" in printed[0]
    assert _rows(database, "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS "
                           "WHERE OPTION_NAME = 'value_capture_type'") == [[capture]]


def test_printed_postgresql_statements_create_alter_and_drop_the_stream(make_database, capsys):
    database = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    database.update_ddl(PG_TABLES).result(60)
    assert main(["ddl", "change-stream", "SingersStream", "--table", "Singers", "--table", "Albums(Title)",
                 "--retention", "36h", "--value-capture-type", "new_row", "--exclude-delete",
                 "--dialect", "postgresql"]) == 0
    created = capsys.readouterr().out.strip().rstrip(";")
    assert created.startswith('CREATE CHANGE STREAM "SingersStream" FOR "Singers", "Albums"("Title") WITH (')
    database.update_ddl([created]).result(60)
    options = dict((n, v) for n, v in _rows(database, "SELECT option_name, option_value FROM "
                   "information_schema.change_stream_options WHERE change_stream_name = 'SingersStream'"))
    assert (options["retention_period"], options["value_capture_type"]) == ("36h", "NEW_ROW")
    assert options["exclude_delete"].lower() == "true"
    tables = _rows(database, "SELECT table_name FROM information_schema.change_stream_tables "
                             "WHERE change_stream_name = 'SingersStream' ORDER BY table_name")
    assert tables == [["Albums"], ["Singers"]]

    database.update_ddl([ddl.alter_change_stream_tracking("SingersStream", {"Albums": []}, dialect=POSTGRESQL)]).result(60)
    assert _rows(database, "SELECT table_name FROM information_schema.change_stream_tables "
                           "WHERE change_stream_name = 'SingersStream'") == [["Albums"]]
    database.update_ddl([ddl.drop_change_stream("SingersStream", dialect=POSTGRESQL)]).result(60)
    assert _rows(database, "SELECT COUNT(*) FROM information_schema.change_streams") == [[0]]
