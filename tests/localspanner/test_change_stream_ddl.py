"""Change streams as schema objects, through the official client: DDL, INFORMATION_SCHEMA, rules, restart."""

from __future__ import annotations

import os

import pytest
from google.api_core import exceptions
from google.cloud import spanner

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")

TABLES = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX), LastName STRING(MAX), Notes STRING(MAX)) "
    "PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]


def _query(db, sql: str) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


def _update(db, *statements: str) -> None:
    db.update_ddl(list(statements)).result(60)


def test_streams_print_back_and_show_in_information_schema(make_database):
    db = make_database(TABLES)
    _update(db,
            "CREATE CHANGE STREAM Everything FOR ALL",
            "CREATE CHANGE STREAM Names FOR Singers(FirstName, LastName), Albums() "
            "OPTIONS (retention_period = '36h', value_capture_type = 'NEW_ROW', exclude_delete = true)")
    db.reload()
    ddl = list(db.ddl_statements)
    assert ddl[-2:] == [
        "CREATE CHANGE STREAM Everything FOR ALL",
        "CREATE CHANGE STREAM Names FOR Singers(FirstName, LastName), Albums() OPTIONS (\n"
        "  retention_period = '36h',\n  value_capture_type = 'NEW_ROW',\n  exclude_delete = true\n)",
    ]
    assert _query(db, "SELECT CHANGE_STREAM_NAME, `ALL` FROM INFORMATION_SCHEMA.CHANGE_STREAMS "
                      "ORDER BY CHANGE_STREAM_NAME") == [["Everything", True], ["Names", False]]
    assert _query(db, "SELECT TABLE_NAME, ALL_COLUMNS FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
                      "WHERE CHANGE_STREAM_NAME = 'Names' ORDER BY TABLE_NAME") == [["Albums", False], ["Singers", False]]
    assert _query(db, "SELECT TABLE_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAM_COLUMNS "
                      "WHERE CHANGE_STREAM_NAME = 'Names' ORDER BY COLUMN_NAME") == [["Singers", "FirstName"],
                                                                                      ["Singers", "LastName"]]
    assert _query(db, "SELECT OPTION_NAME, OPTION_TYPE, OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS "
                      "WHERE CHANGE_STREAM_NAME = 'Names' ORDER BY OPTION_NAME") == [
        ["exclude_delete", "BOOL", "TRUE"], ["retention_period", "STRING", "36h"], ["value_capture_type", "STRING", "NEW_ROW"]]


def test_alter_and_drop_change_what_a_stream_watches(make_database):
    db = make_database(TABLES)
    _update(db, "CREATE CHANGE STREAM S FOR Singers(Notes) OPTIONS (exclude_insert = true)")
    _update(db, "ALTER CHANGE STREAM S SET FOR Albums",
            "ALTER CHANGE STREAM S SET OPTIONS (exclude_insert = null, retention_period = '7d')")
    db.reload()
    assert db.ddl_statements[-1] == "CREATE CHANGE STREAM S FOR Albums OPTIONS (\n  retention_period = '7d'\n)"
    # Singers.Notes is no longer named by the stream, so it may go now.
    _update(db, "ALTER TABLE Singers DROP COLUMN Notes", "ALTER CHANGE STREAM S DROP FOR ALL")
    db.reload()
    assert db.ddl_statements[-1] == "CREATE CHANGE STREAM S OPTIONS (\n  retention_period = '7d'\n)"
    assert _query(db, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES") == [[0]]
    _update(db, "DROP CHANGE STREAM S")
    db.reload()
    assert not any("CHANGE STREAM" in s for s in db.ddl_statements)
    assert _query(db, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.CHANGE_STREAMS") == [[0]]


def _rejected(db, statement: str) -> str:
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        _update(db, statement)
    return str(info.value)


@pytest.mark.parametrize(
    ("statement", "error", "words"),
    [
        ("CREATE CHANGE STREAM X FOR Nowhere", exceptions.NotFound, ["X", "Nowhere"]),
        ("CREATE CHANGE STREAM X FOR Singers(Nothing)", exceptions.NotFound, ["X", "Singers.Nothing"]),
        ("CREATE CHANGE STREAM X FOR Singers(SingerId)", exceptions.FailedPrecondition, ["X", "key column Singers.SingerId"]),
        ("CREATE CHANGE STREAM X FOR Singers, singers", exceptions.FailedPrecondition, ["X", "more than once"]),
        ("CREATE CHANGE STREAM X OPTIONS (retention_period = '8d')", exceptions.InvalidArgument, ["X", "retention_period"]),
        ("CREATE CHANGE STREAM X OPTIONS (retention_period = '23h')", exceptions.InvalidArgument, ["X", "1d and 7d"]),
        ("CREATE CHANGE STREAM X OPTIONS (retention_period = 'soon')", exceptions.InvalidArgument, ["X", "timespan"]),
        ("CREATE CHANGE STREAM X OPTIONS (value_capture_type = 'OLD_ROW')", exceptions.InvalidArgument, ["X", "OLD_ROW"]),
        ("CREATE CHANGE STREAM X OPTIONS (exclude_insert = 'yes')", exceptions.InvalidArgument, ["X", "exclude_insert"]),
        ("CREATE CHANGE STREAM X OPTIONS (colour = 'red')", exceptions.InvalidArgument, ["X", "colour"]),
        ("CREATE CHANGE STREAM Singers FOR ALL", exceptions.FailedPrecondition, ["Duplicate name", "Singers"]),
        ("ALTER CHANGE STREAM Missing SET FOR ALL", exceptions.NotFound, ["Missing"]),
        ("DROP CHANGE STREAM Missing", exceptions.NotFound, ["Missing"]),
    ],
)
def test_bad_change_stream_ddl_is_refused_naming_stream_and_statement(make_database, statement, error, words):
    db = make_database(TABLES)
    with pytest.raises(error) as info:
        _update(db, statement)
    message = str(info.value)
    for word in words:
        assert word in message
    assert statement in message or _EXTERNAL  # the official emulator words its messages differently


def test_tracked_tables_and_columns_cannot_be_dropped(make_database):
    db = make_database([*TABLES, "CREATE TABLE Other (K INT64) PRIMARY KEY (K)"])
    _update(db, "CREATE CHANGE STREAM Watch FOR Singers(FirstName), Albums()", "CREATE CHANGE STREAM Everything FOR ALL")
    for statement in ("DROP TABLE Albums", "ALTER TABLE Singers DROP COLUMN FirstName"):
        with pytest.raises(exceptions.FailedPrecondition) as info:
            _update(db, statement)
        assert "Watch" in str(info.value)
    # FOR ALL follows the schema: it does not hold on to anything; unnamed columns go freely.
    _update(db, "ALTER TABLE Singers DROP COLUMN Notes", "DROP TABLE Other")
    # A table cannot take a stream's name either: the namespace is shared.
    with pytest.raises(exceptions.FailedPrecondition, match="Watch"):
        _update(db, "CREATE TABLE Watch (K INT64) PRIMARY KEY (K)")


def test_create_database_with_a_change_stream(make_database):
    db = make_database([*TABLES, "CREATE CHANGE STREAM S FOR Singers"])
    assert _query(db, "SELECT CHANGE_STREAM_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAMS") == [["S"]]


@pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")
def test_change_streams_survive_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    statements = [*TABLES, "CREATE CHANGE STREAM S FOR Singers(LastName) OPTIONS (value_capture_type = 'NEW_VALUES')"]
    with LocalSpanner(data_dir=data_dir) as server:
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        instance = spanner.Client(project="p").instance("cs-instance", configuration_name="projects/p/instanceConfigs/emulator-config",
                                                         display_name="cs", node_count=1)
        instance.create().result(30)
        db = instance.database("cs-db", ddl_statements=statements)
        db.create().result(60)
        db.reload()
        before = list(db.ddl_statements)
    with LocalSpanner(data_dir=data_dir) as server:
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        db = spanner.Client(project="p").instance("cs-instance").database("cs-db")
        db.reload()
        assert list(db.ddl_statements) == before
        assert _query(db, "SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS") == [["NEW_VALUES"]]
        with pytest.raises(exceptions.FailedPrecondition, match="change stream S"):
            _update(db, "ALTER TABLE Singers DROP COLUMN LastName")
