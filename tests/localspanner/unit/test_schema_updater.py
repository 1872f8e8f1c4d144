"""apply_ddl / apply_statements: the new catalogs and every schema rule."""

from __future__ import annotations

import pytest

from watcher.localspanner.datamodel import types as T
from watcher.localspanner.ddl import nodes
from watcher.localspanner.ddl.parser import parse_ddl
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.schema.catalog import Catalog, Column, Index, KeyPart
from watcher.localspanner.schema.schema_updater import MAX_INTERLEAVE_DEPTH, apply_ddl, apply_statement, apply_statements

SINGERS = (
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), LastName STRING(200) NOT NULL, "
    "BirthDate DATE, Picture BYTES(MAX), LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
    "Processed BOOL, ShardId INT64 AS (CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT("
    "COALESCE(FirstName || ' ', '') || LastName), 19) END) STORED) PRIMARY KEY (SingerId)"
)
BASE = [
    SINGERS,
    "CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX), Tags ARRAY<STRING(MAX)>, "
    "Meta JSON) PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]


@pytest.fixture(scope="module")
def base() -> Catalog:
    return apply_statements(Catalog(), BASE)[0]


def apply(catalog: Catalog, *statements: str) -> Catalog:
    return apply_statements(catalog, list(statements))[0]


def rejected(catalog: Catalog, statement: str, code: Code = Code.FAILED_PRECONDITION) -> str:
    with pytest.raises(SpannerError) as info:
        apply(catalog, statement)
    assert info.value.code == code, info.value
    assert statement.split()[0] in info.value.message  # the statement is named
    return info.value.message


# --- catalogs produced ---------------------------------------------------------------------------

def test_base_catalog_shape(base: Catalog) -> None:
    assert [t.name for t in base.tables] == ["Singers", "Albums"]
    assert base.version == 3
    albums = base.table("albums")
    assert albums is not None and albums.parent == "Singers" and albums.on_delete_cascade
    singers = base.table("Singers")
    assert singers is not None and [c.name for c in singers.commit_timestamp_columns] == ["LastUpdated"]
    assert base.index("idx_singers_shardid_lastupdated") == Index(
        "Idx_Singers_ShardId_LastUpdated", "Singers", (KeyPart("ShardId"), KeyPart("LastUpdated")), null_filtered=True
    )


def test_references_take_the_declared_case(base: Catalog) -> None:
    cat = apply(base, "CREATE INDEX i ON albums (singerid, title DESC) STORING (tags), INTERLEAVE IN singers")
    assert cat.index("I") == Index("i", "Albums", (KeyPart("SingerId"), KeyPart("Title", True)), ("Tags",),
                                   interleave_in="Singers")


def test_apply_ddl_bumps_version_and_leaves_the_input_alone(base: Catalog) -> None:
    node = nodes.AlterTableAddColumn("Singers", Column("Nick", T.STRING))
    after = apply_ddl(base, node)
    assert after.version == base.version + 1
    assert base.table("Singers").column("Nick") is None  # type: ignore[union-attr]
    assert after.table("Singers").columns[-1] == Column("Nick", T.STRING)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE IF NOT EXISTS singers (X INT64) PRIMARY KEY (X)",
        "CREATE INDEX IF NOT EXISTS IDX_SINGERS_SHARDID_LASTUPDATED ON Albums (Title)",
        "ALTER TABLE Singers ADD COLUMN IF NOT EXISTS firstname INT64",
        "DROP TABLE IF EXISTS Nope",
        "DROP INDEX IF EXISTS Nope",
    ],
)
def test_if_exists_clauses_make_no_ops(base: Catalog, statement: str) -> None:
    assert apply_ddl(base, parse_ddl(statement)) is base


def test_if_not_exists_creates_when_absent(base: Catalog) -> None:
    cat = apply(base, "CREATE TABLE IF NOT EXISTS Fresh (X INT64) PRIMARY KEY (X)",
                "CREATE INDEX IF NOT EXISTS FreshX ON Fresh (X)", "ALTER TABLE Fresh ADD COLUMN IF NOT EXISTS Y BOOL")
    assert cat.table("Fresh").column("Y") is not None and cat.index("FreshX") is not None  # type: ignore[union-attr]


def test_alter_statements_change_columns(base: Catalog) -> None:
    cat = apply(
        base,
        "ALTER TABLE Singers ALTER COLUMN LastUpdated SET OPTIONS (allow_commit_timestamp = null)",
        "ALTER TABLE Singers ALTER COLUMN FirstName STRING(MAX) NOT NULL DEFAULT ('')",
        "ALTER TABLE Singers ALTER COLUMN Picture STRING(100)",
        "ALTER TABLE Singers ALTER COLUMN BirthDate SET DEFAULT (DATE '2000-01-01')",
        "ALTER TABLE Albums ALTER COLUMN Tags ARRAY<BYTES(10)>",
        "ALTER TABLE Albums DROP COLUMN Meta",
    )
    singers, albums = cat.table("Singers"), cat.table("Albums")
    assert singers is not None and albums is not None
    assert singers.commit_timestamp_columns == ()
    assert singers.column("FirstName") == Column("FirstName", T.STRING, not_null=True, default="''")
    assert singers.column("Picture") == Column("Picture", T.SpannerType(T.TypeCode.STRING, length=100))
    assert singers.column("BirthDate").default == "DATE '2000-01-01'"  # type: ignore[union-attr]
    assert str(albums.column("Tags").type) == "ARRAY<BYTES(10)>"  # type: ignore[union-attr]
    assert [c.name for c in albums.columns] == ["SingerId", "AlbumId", "Title", "Tags"]
    dropped = apply(cat, "ALTER TABLE Singers ALTER COLUMN BirthDate DROP DEFAULT")
    assert dropped.table("Singers").column("BirthDate").default is None  # type: ignore[union-attr]


def test_alter_column_type_keeps_options_unless_given(base: Catalog) -> None:
    kept = apply(base, "ALTER TABLE Singers ALTER COLUMN LastUpdated TIMESTAMP NOT NULL")
    assert kept.table("Singers").column("LastUpdated").allow_commit_timestamp  # type: ignore[union-attr]
    cleared = apply(base, "ALTER TABLE Singers ALTER COLUMN LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp = false)")
    assert not cleared.table("Singers").column("LastUpdated").allow_commit_timestamp  # type: ignore[union-attr]


def test_drop_in_dependency_order(base: Catalog) -> None:
    cat = apply(base, "DROP TABLE Albums", "DROP INDEX Idx_Singers_ShardId_LastUpdated", "DROP TABLE Singers")
    assert cat.tables == () and cat.indexes == () and cat.version == base.version + 3


# --- rules -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("statement", "code", "fragment"),
    [
        # names
        ("CREATE TABLE singers (X INT64) PRIMARY KEY (X)", Code.FAILED_PRECONDITION, "Duplicate name in schema: singers (a table"),
        ("CREATE TABLE IDX_SINGERS_SHARDID_LASTUPDATED (X INT64) PRIMARY KEY (X)", Code.FAILED_PRECONDITION,
         "(a index of that name"),
        ("CREATE INDEX ALBUMS ON Singers (FirstName)", Code.FAILED_PRECONDITION, "Duplicate name in schema: ALBUMS (a table"),
        ("CREATE INDEX Idx_Singers_ShardId_LastUpdated ON Singers (FirstName)", Code.FAILED_PRECONDITION, "Duplicate name"),
        ("CREATE TABLE `My Table` (X INT64) PRIMARY KEY (X)", Code.FAILED_PRECONDITION, "Invalid table name 'My Table'"),
        ("CREATE TABLE T (`_x` INT64) PRIMARY KEY ()", Code.FAILED_PRECONDITION, "Invalid column name '_x'"),
        ("CREATE TABLE T (X INT64, x STRING(MAX)) PRIMARY KEY (X)", Code.FAILED_PRECONDITION, "Duplicate column name T.x"),
        ("ALTER TABLE Singers ADD COLUMN firstname INT64", Code.FAILED_PRECONDITION, "Duplicate column name Singers.firstname"),
        # unknown objects
        ("CREATE INDEX I ON Nope (X)", Code.NOT_FOUND, "Table not found: Nope"),
        ("ALTER TABLE Nope ADD COLUMN X INT64", Code.NOT_FOUND, "Table not found: Nope"),
        ("ALTER TABLE Singers DROP COLUMN Nope", Code.NOT_FOUND, "Column not found in table Singers: Nope"),
        ("ALTER TABLE Singers ALTER COLUMN Nope SET OPTIONS (allow_commit_timestamp = true)", Code.NOT_FOUND,
         "Column not found in table Singers: Nope"),
        ("DROP TABLE Nope", Code.NOT_FOUND, "Table not found: Nope"),
        ("DROP INDEX Nope", Code.NOT_FOUND, "Index not found: Nope"),
        ("CREATE TABLE C (X INT64) PRIMARY KEY (X), INTERLEAVE IN PARENT Nope", Code.NOT_FOUND, "Table not found: Nope"),
        # primary keys
        ("CREATE TABLE T (X INT64) PRIMARY KEY (Y)", Code.FAILED_PRECONDITION,
         "The primary key of table T names column Y, which table T does not have"),
        ("CREATE TABLE T (X INT64) PRIMARY KEY (X, x)", Code.FAILED_PRECONDITION, "names column T.X twice"),
        ("CREATE TABLE T (X ARRAY<INT64>) PRIMARY KEY (X)", Code.FAILED_PRECONDITION,
         "cannot use column T.X of type ARRAY<INT64> as a key"),
        ("CREATE TABLE T (X JSON) PRIMARY KEY (X)", Code.FAILED_PRECONDITION, "column T.X of type JSON as a key"),
        # column rules
        ("CREATE TABLE T (X INT64, D DATE OPTIONS (allow_commit_timestamp = true)) PRIMARY KEY (X)",
         Code.FAILED_PRECONDITION, "Column T.D has type DATE: allow_commit_timestamp is only allowed on TIMESTAMP"),
        ("ALTER TABLE Singers ALTER COLUMN BirthDate SET OPTIONS (allow_commit_timestamp = true)", Code.FAILED_PRECONDITION,
         "Column Singers.BirthDate has type DATE"),
        ("ALTER TABLE Singers ADD COLUMN Ts ARRAY<TIMESTAMP> OPTIONS (allow_commit_timestamp = true)",
         Code.FAILED_PRECONDITION, "only allowed on TIMESTAMP"),
        ("CREATE TABLE T (X INT64, Y INT64 AS (X + Z) STORED) PRIMARY KEY (X)", Code.FAILED_PRECONDITION,
         "Generated column T.Y references unknown column Z"),
        ("CREATE TABLE T (X INT64, Y INT64 AS (`Q` * 2)) PRIMARY KEY (X)", Code.FAILED_PRECONDITION, "unknown column Q"),
        ("CREATE TABLE T (X INT64, Y INT64 AS (Y + 1) STORED) PRIMARY KEY (X)", Code.FAILED_PRECONDITION,
         "Generated column T.Y cannot reference itself"),
        ("CREATE TABLE T (X INT64, Y INT64 DEFAULT (X + 1)) PRIMARY KEY (X)", Code.FAILED_PRECONDITION,
         "The DEFAULT of column T.Y cannot reference column X"),
        ("ALTER TABLE Singers ADD COLUMN Country STRING(2) NOT NULL", Code.FAILED_PRECONDITION,
         "Cannot add NOT NULL column Singers.Country to an existing table without a DEFAULT"),
        ("ALTER TABLE Singers ALTER COLUMN ShardId SET DEFAULT (1)", Code.FAILED_PRECONDITION,
         "Column Singers.ShardId is generated, so it cannot have a DEFAULT"),
        # interleaving
        ("CREATE TABLE C (AlbumId INT64 NOT NULL) PRIMARY KEY (AlbumId), INTERLEAVE IN PARENT Singers",
         Code.FAILED_PRECONDITION, "Key column C.AlbumId has a different name than parent key column Singers.SingerId"),
        ("CREATE TABLE C (X INT64) PRIMARY KEY (), INTERLEAVE IN PARENT Singers", Code.FAILED_PRECONDITION,
         "its primary key must start with Singers's key (SingerId)"),
        ("CREATE TABLE C (SingerId STRING(MAX) NOT NULL) PRIMARY KEY (SingerId), INTERLEAVE IN PARENT Singers",
         Code.FAILED_PRECONDITION, "Key column C.SingerId has type STRING(MAX), not INT64"),
        ("CREATE TABLE C (SingerId INT64 NOT NULL) PRIMARY KEY (SingerId DESC), INTERLEAVE IN PARENT Singers",
         Code.FAILED_PRECONDITION, "has a different sort order"),
        ("CREATE TABLE C (SingerId INT64) PRIMARY KEY (SingerId), INTERLEAVE IN PARENT Singers",
         Code.FAILED_PRECONDITION, "has a different nullability"),
        ("CREATE TABLE C (SingerId INT64 NOT NULL, X INT64) PRIMARY KEY (SingerId, X), INTERLEAVE IN PARENT Albums",
         Code.FAILED_PRECONDITION, "Key column C.X has a different name than parent key column Albums.AlbumId"),
        # drops
        ("DROP TABLE Singers", Code.FAILED_PRECONDITION, "Cannot drop table Singers: it has indexes (Idx_Singers_ShardId_LastUpdated)"),
        ("ALTER TABLE Singers DROP COLUMN SingerId", Code.FAILED_PRECONDITION, "Cannot drop key column Singers.SingerId"),
        ("ALTER TABLE Singers DROP COLUMN LastUpdated", Code.FAILED_PRECONDITION,
         "Cannot drop column Singers.LastUpdated: index Idx_Singers_ShardId_LastUpdated uses it"),
        ("ALTER TABLE Singers DROP COLUMN Processed", Code.FAILED_PRECONDITION,
         "Cannot drop column Singers.Processed: generated column ShardId uses it"),
        # indexes
        ("CREATE INDEX I ON Albums (Tags)", Code.FAILED_PRECONDITION, "Index I cannot use column Albums.Tags of type ARRAY<STRING(MAX)> as a key"),
        ("CREATE INDEX I ON Albums (Meta)", Code.FAILED_PRECONDITION, "Albums.Meta of type JSON as a key"),
        ("CREATE INDEX I ON Albums (Nope)", Code.FAILED_PRECONDITION, "Index I names column Nope, which table Albums does not have"),
        ("CREATE INDEX I ON Albums (Title) STORING (Nope)", Code.FAILED_PRECONDITION,
         "Index I stores column Nope, which table Albums does not have"),
        ("CREATE INDEX I ON Albums (Title) STORING (AlbumId)", Code.FAILED_PRECONDITION,
         "Index I cannot store key column Albums.AlbumId"),
        ("CREATE INDEX I ON Albums (Title) STORING (title)", Code.FAILED_PRECONDITION, "cannot store key column Albums.Title"),
        ("CREATE INDEX I ON Albums (Title) STORING (Meta, meta)", Code.FAILED_PRECONDITION, "stores column Albums.Meta twice"),
        ("CREATE INDEX I ON Singers (FirstName), INTERLEAVE IN Albums", Code.FAILED_PRECONDITION,
         "cannot be interleaved in Albums: it is not Singers or one of its ancestors"),
        ("CREATE INDEX I ON Albums (Title), INTERLEAVE IN Singers", Code.FAILED_PRECONDITION,
         "its key must start with Singers's key (SingerId)"),
        # alter column type
        ("ALTER TABLE Singers ALTER COLUMN BirthDate TIMESTAMP", Code.FAILED_PRECONDITION,
         "Cannot change the type of column Singers.BirthDate from DATE to TIMESTAMP"),
        ("ALTER TABLE Albums ALTER COLUMN Tags STRING(MAX)", Code.FAILED_PRECONDITION, "from ARRAY<STRING(MAX)> to STRING(MAX)"),
        ("ALTER TABLE Singers ALTER COLUMN SingerId INT64", Code.FAILED_PRECONDITION,
         "Cannot change the type or nullability of key column Singers.SingerId"),
        ("ALTER TABLE Singers ALTER COLUMN ShardId INT64", Code.FAILED_PRECONDITION, "Column Singers.ShardId is generated"),
        ("ALTER TABLE Singers ALTER COLUMN Picture BYTES(MAX) OPTIONS (allow_commit_timestamp = true)",
         Code.FAILED_PRECONDITION, "only allowed on TIMESTAMP"),
        # CREATE DATABASE belongs to CreateDatabase only
        ("CREATE DATABASE other", Code.FAILED_PRECONDITION, "CREATE DATABASE is only allowed as the create statement"),
    ],
)
def test_rule_violations_are_named(base: Catalog, statement: str, code: Code, fragment: str) -> None:
    message = rejected(base, statement, code)
    assert fragment in message
    assert statement in message


def test_drop_table_with_interleaved_child(base: Catalog) -> None:
    cat = apply(base, "DROP INDEX Idx_Singers_ShardId_LastUpdated")
    assert "Cannot drop table Singers: table Albums is interleaved in it" in rejected(cat, "DROP TABLE Singers")


def test_struct_columns_are_refused() -> None:
    node = nodes.CreateTable("T", (Column("S", T.struct_of(("a", T.INT64))),), ())
    with pytest.raises(SpannerError, match="STRUCT columns are not allowed"):
        apply_ddl(Catalog(), node)


def test_interleave_depth_is_limited() -> None:
    statements = ["CREATE TABLE T0 (K0 INT64 NOT NULL) PRIMARY KEY (K0)"]
    for level in range(1, MAX_INTERLEAVE_DEPTH + 2):
        keys = ", ".join(f"K{i} INT64 NOT NULL" for i in range(level + 1))
        names = ", ".join(f"K{i}" for i in range(level + 1))
        statements.append(f"CREATE TABLE T{level} ({keys}) PRIMARY KEY ({names}), INTERLEAVE IN PARENT T{level - 1}")
    cat = apply(Catalog(), *statements[:-1])
    assert len(cat.tables) == MAX_INTERLEAVE_DEPTH + 1
    assert f"at most {MAX_INTERLEAVE_DEPTH} are allowed" in rejected(cat, statements[-1])


def test_key_columns_of_nested_children_must_match_through_the_chain(base: Catalog) -> None:
    cat = apply(base, "CREATE TABLE Songs (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, TrackId INT64 NOT NULL) "
                      "PRIMARY KEY (SingerId, AlbumId, TrackId), INTERLEAVE IN PARENT Albums")
    songs = cat.table("Songs")
    assert songs is not None and songs.parent == "Albums" and not songs.on_delete_cascade
    cat = apply(cat, "CREATE INDEX SongsByTrack ON Songs (SingerId, TrackId), INTERLEAVE IN Singers")
    assert cat.index("SongsByTrack").interleave_in == "Singers"  # type: ignore[union-attr]


def test_apply_statements_stops_at_the_first_error_and_names_it(base: Catalog) -> None:
    with pytest.raises(SpannerError) as info:
        apply_statements(base, ["ALTER TABLE Singers ADD COLUMN A INT64", "DROP TABLE Nope", "DROP TABLE Albums"])
    assert info.value.code == Code.NOT_FOUND
    assert info.value.message == "Table not found: Nope (statement: DROP TABLE Nope)"


def test_parse_errors_pass_through_apply_statements(base: Catalog) -> None:
    with pytest.raises(SpannerError) as info:
        apply_statements(base, ["DROP TABLE"])
    assert info.value.code == Code.INVALID_ARGUMENT and "Expecting table name" in info.value.message


def test_apply_ddl_names_the_printed_statement() -> None:
    with pytest.raises(SpannerError) as info:
        apply_ddl(Catalog(), nodes.DropIndex("Gone"))
    assert info.value.message == "Index not found: Gone (statement: DROP INDEX Gone)"


def test_apply_statement_quotes_the_text_as_written(base: Catalog) -> None:
    with pytest.raises(SpannerError) as info:
        apply_statement(base, "drop   index\n  nope")
    assert info.value.message == "Index not found: nope (statement: drop index nope)"
    cat, node = apply_statement(base, "drop index if exists nope")
    assert cat is base and node == nodes.DropIndex("nope", if_exists=True)
