"""INFORMATION_SCHEMA rows for the benchmark schema plus an interleaved child."""

from __future__ import annotations

import pytest

from watcher.localspanner.information import information_schema as IS
from watcher.localspanner.schema.catalog import Catalog
from watcher.localspanner.schema.schema_updater import apply_statements

SCHEMA = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), LastName STRING(200) NOT NULL, "
    "BirthDate DATE, Picture BYTES(MAX), LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
    "Processed BOOL, ShardId INT64 AS (CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT("
    "COALESCE(FirstName || ' ', '') || LastName), 19) END) STORED) PRIMARY KEY (SingerId)",
    "CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX) DEFAULT ('untitled'), "
    "Modified TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true)) PRIMARY KEY (SingerId, AlbumId DESC), "
    "INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE UNIQUE INDEX AlbumsByTitle ON Albums (SingerId, Title DESC) STORING (Modified), INTERLEAVE IN Singers",
]
SHARD_EXPR = "CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(FirstName || ' ', '') || LastName), 19) END"


@pytest.fixture(scope="module")
def views() -> dict[str, list[tuple]]:
    return IS.rows(apply_statements(Catalog(), SCHEMA)[0])


def as_dicts(view: str, rows: list[tuple]) -> list[dict]:
    names = [c.name for c in IS.VIEWS[view].columns]
    for row in rows:
        assert len(row) == len(names), (view, row)
    return [dict(zip(names, row, strict=True)) for row in rows]


def test_every_view_has_a_definition_rows_and_a_sqlite_table(views: dict[str, list[tuple]]) -> None:
    assert set(views) == set(IS.VIEWS)
    assert {"SCHEMATA", "TABLES", "COLUMNS", "COLUMN_OPTIONS", "INDEXES", "INDEX_COLUMNS",
            "TABLE_CONSTRAINTS", "KEY_COLUMN_USAGE"} <= set(IS.VIEWS)
    for name, table in IS.VIEWS.items():
        assert table.name == name == name.upper()
        assert IS.sqlite_table_name(name.lower()) == f"_ls_information_schema_{name}"
        as_dicts(name, views[name])


def test_schemata(views: dict[str, list[tuple]]) -> None:
    assert [r["SCHEMA_NAME"] for r in as_dicts("SCHEMATA", views["SCHEMATA"])] == ["", "INFORMATION_SCHEMA", "SPANNER_SYS"]


def test_tables(views: dict[str, list[tuple]]) -> None:
    assert views["TABLES"] == [
        ("", "", "Singers", "BASE TABLE", None, None, "COMMITTED", None, None),
        ("", "", "Albums", "BASE TABLE", "Singers", "CASCADE", "COMMITTED", "IN PARENT", None),
    ]


def test_columns(views: dict[str, list[tuple]]) -> None:
    rows = {(r["TABLE_NAME"], r["COLUMN_NAME"]): r for r in as_dicts("COLUMNS", views["COLUMNS"])}
    assert [k for k in rows if k[0] == "Singers"] == [
        ("Singers", c) for c in ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed", "ShardId")
    ]
    assert rows[("Singers", "SingerId")] == {
        "TABLE_CATALOG": "", "TABLE_SCHEMA": "", "TABLE_NAME": "Singers", "COLUMN_NAME": "SingerId",
        "ORDINAL_POSITION": 1, "COLUMN_DEFAULT": None, "DATA_TYPE": None, "IS_NULLABLE": "NO", "SPANNER_TYPE": "INT64",
        "IS_GENERATED": "NEVER", "GENERATION_EXPRESSION": None, "IS_STORED": None, "SPANNER_STATE": "COMMITTED",
    }
    first = rows[("Singers", "FirstName")]
    assert (first["ORDINAL_POSITION"], first["IS_NULLABLE"], first["SPANNER_TYPE"]) == (2, "YES", "STRING(200)")
    assert rows[("Singers", "Picture")]["SPANNER_TYPE"] == "BYTES(MAX)"
    shard = rows[("Singers", "ShardId")]
    assert (shard["ORDINAL_POSITION"], shard["IS_GENERATED"], shard["GENERATION_EXPRESSION"], shard["IS_STORED"]) == (
        8, "ALWAYS", SHARD_EXPR, "YES")
    title = rows[("Albums", "Title")]
    assert (title["COLUMN_DEFAULT"], title["ORDINAL_POSITION"]) == ("'untitled'", 3)


def test_column_options_list_commit_timestamp_columns(views: dict[str, list[tuple]]) -> None:
    assert views["COLUMN_OPTIONS"] == [
        ("", "", "Singers", "LastUpdated", "allow_commit_timestamp", "BOOL", "TRUE"),
        ("", "", "Albums", "Modified", "allow_commit_timestamp", "BOOL", "TRUE"),
    ]


def test_indexes(views: dict[str, list[tuple]]) -> None:
    assert views["INDEXES"] == [
        ("", "", "Singers", "PRIMARY_KEY", "PRIMARY_KEY", "", 1, 0, None, 0),
        ("", "", "Singers", "Idx_Singers_ShardId_LastUpdated", "INDEX", "", 0, 1, "READ_WRITE", 0),
        ("", "", "Albums", "PRIMARY_KEY", "PRIMARY_KEY", "Singers", 1, 0, None, 0),
        ("", "", "Albums", "AlbumsByTitle", "INDEX", "Singers", 1, 0, "READ_WRITE", 0),
    ]


def test_index_columns(views: dict[str, list[tuple]]) -> None:
    assert views["INDEX_COLUMNS"] == [
        ("", "", "Singers", "PRIMARY_KEY", "PRIMARY_KEY", "SingerId", 1, "ASC", "NO", "INT64"),
        ("", "", "Singers", "Idx_Singers_ShardId_LastUpdated", "INDEX", "ShardId", 1, "ASC", "NO", "INT64"),
        ("", "", "Singers", "Idx_Singers_ShardId_LastUpdated", "INDEX", "LastUpdated", 2, "ASC", "NO", "TIMESTAMP"),
        ("", "", "Albums", "PRIMARY_KEY", "PRIMARY_KEY", "SingerId", 1, "ASC", "NO", "INT64"),
        ("", "", "Albums", "PRIMARY_KEY", "PRIMARY_KEY", "AlbumId", 2, "DESC", "NO", "INT64"),
        ("", "", "Albums", "AlbumsByTitle", "INDEX", "SingerId", 1, "ASC", "NO", "INT64"),
        ("", "", "Albums", "AlbumsByTitle", "INDEX", "Title", 2, "DESC", "YES", "STRING(MAX)"),
        ("", "", "Albums", "AlbumsByTitle", "INDEX", "Modified", None, None, "NO", "TIMESTAMP"),
    ]


def test_primary_key_query_of_the_watcher(views: dict[str, list[tuple]]) -> None:
    """What schema discovery does: INDEX_COLUMNS of the PRIMARY_KEY index, by ORDINAL_POSITION."""
    cols = as_dicts("INDEX_COLUMNS", views["INDEX_COLUMNS"])
    pk = sorted((r for r in cols if r["TABLE_NAME"] == "Albums" and r["INDEX_TYPE"] == "PRIMARY_KEY"),
                key=lambda r: r["ORDINAL_POSITION"])
    assert [r["COLUMN_NAME"] for r in pk] == ["SingerId", "AlbumId"]


def test_constraints_and_key_column_usage(views: dict[str, list[tuple]]) -> None:
    constraints = as_dicts("TABLE_CONSTRAINTS", views["TABLE_CONSTRAINTS"])
    assert [(r["CONSTRAINT_NAME"], r["TABLE_NAME"], r["CONSTRAINT_TYPE"]) for r in constraints] == [
        ("PK_Singers", "Singers", "PRIMARY KEY"),
        ("CK_IS_NOT_NULL_Singers_SingerId", "Singers", "CHECK"),
        ("CK_IS_NOT_NULL_Singers_LastName", "Singers", "CHECK"),
        ("PK_Albums", "Albums", "PRIMARY KEY"),
        ("CK_IS_NOT_NULL_Albums_SingerId", "Albums", "CHECK"),
        ("CK_IS_NOT_NULL_Albums_AlbumId", "Albums", "CHECK"),
        ("CK_IS_NOT_NULL_Albums_Modified", "Albums", "CHECK"),
    ]
    checks = as_dicts("CHECK_CONSTRAINTS", views["CHECK_CONSTRAINTS"])
    assert checks[0]["CHECK_CLAUSE"] == "SingerId IS NOT NULL"
    assert views["KEY_COLUMN_USAGE"] == [
        ("", "", "PK_Singers", "", "", "Singers", "SingerId", 1, None),
        ("", "", "PK_Albums", "", "", "Albums", "SingerId", 1, None),
        ("", "", "PK_Albums", "", "", "Albums", "AlbumId", 2, None),
    ]


def test_empty_catalog_has_only_schemata_the_dialect_and_the_system_roles() -> None:
    rows = IS.rows(Catalog())
    assert rows["ROLES"] == [("public", 1), ("spanner_info_reader", 1), ("spanner_sys_reader", 1)]
    assert len(rows["SCHEMATA"]) == 3
    assert rows["DATABASE_OPTIONS"] == [("", "", "database_dialect", "STRING", "GOOGLE_STANDARD_SQL")]
    assert all(not r for name, r in rows.items() if name not in ("SCHEMATA", "DATABASE_OPTIONS", "ROLES"))
    kind = IS.rows(Catalog(default_sequence_kind="bit_reversed_positive"))["DATABASE_OPTIONS"][1]
    assert kind == ("", "", "default_sequence_kind", "STRING", "bit_reversed_positive")


def test_rows_follow_schema_changes() -> None:
    cat, _ = apply_statements(Catalog(), SCHEMA[:2] + [
        "ALTER TABLE Singers ALTER COLUMN LastUpdated SET OPTIONS (allow_commit_timestamp = null)",
        "ALTER TABLE Singers ADD COLUMN Seen TIMESTAMP OPTIONS (allow_commit_timestamp = true)",
    ])
    assert [r[3] for r in IS.rows(cat)["COLUMN_OPTIONS"]] == ["Seen"]
