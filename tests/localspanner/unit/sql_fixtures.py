"""Shared test fixtures for the SQL layer: the Singers schema on a plain in-memory SQLite.

The storage layout mirrors storage/store.py's contract: one WITHOUT ROWID table per Spanner
table with untyped columns, generated columns from ``translate_expression``, a
NULL_FILTERED index as a partial index, INFORMATION_SCHEMA views as real tables.
"""

from __future__ import annotations

import sqlite3

from watcher.localspanner.datamodel import types as T
from watcher.localspanner.information import information_schema
from watcher.localspanner.schema.catalog import Catalog, Column, Index, KeyPart, Table
from watcher.localspanner.sql import register_functions, translate_expression
from watcher.localspanner.storage.sqlite_names import quote, rowid_key

SHARD_EXPR = "CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(FirstName || ' ', '') || LastName), 19) END"

SINGERS = Table(
    "Singers",
    (
        Column("SingerId", T.INT64, not_null=True),
        Column("FirstName", T.SpannerType(T.TypeCode.STRING, length=200)),
        Column("LastName", T.SpannerType(T.TypeCode.STRING, length=200), not_null=True),
        Column("BirthDate", T.DATE),
        Column("Picture", T.BYTES),
        Column("LastUpdated", T.TIMESTAMP, allow_commit_timestamp=True),
        Column("Processed", T.BOOL),
        Column("ShardId", T.INT64, generated=SHARD_EXPR, stored=True),
    ),
    (KeyPart("SingerId"),),
)
ALBUMS = Table(
    "Albums",
    (
        Column("SingerId", T.INT64, not_null=True),
        Column("AlbumId", T.INT64, not_null=True),
        Column("Title", T.STRING),
        Column("Tags", T.array_of(T.STRING)),
        Column("Price", T.NUMERIC),
        Column("Score", T.FLOAT64),
        Column("Meta", T.JSON),
    ),
    (KeyPart("SingerId"), KeyPart("AlbumId")),
    parent="Singers",
)
SHARD_INDEX = Index("Idx_Singers_ShardId_LastUpdated", "Singers", (KeyPart("ShardId"), KeyPart("LastUpdated")), null_filtered=True)
CATALOG = Catalog(tables=(SINGERS, ALBUMS), indexes=(SHARD_INDEX,), version=1)


def create_table(conn: sqlite3.Connection, table: Table, catalog: Catalog) -> None:
    cols = []
    for c in table.columns:
        if c.generated:
            cols.append(f"{quote(c.name)} GENERATED ALWAYS AS ({translate_expression(c.generated, table, catalog)}) STORED")
        else:
            rowid = rowid_key(table) and c.name == table.primary_key[0].column  # the server's layout
            cols.append(quote(c.name) + (" INTEGER" if rowid else "") + (" NOT NULL" if c.not_null else ""))
    pk = ", ".join(quote(p.column) + (" DESC" if p.descending else "") for p in table.primary_key)
    fk = ""
    if table.parent:
        parent = catalog.table(table.parent)
        assert parent is not None
        keys = ", ".join(quote(k) for k in parent.key_names)
        fk = f", FOREIGN KEY ({keys}) REFERENCES {quote(parent.name)} ({keys})"
    layout = "" if rowid_key(table) else " WITHOUT ROWID"
    conn.execute(f"CREATE TABLE {quote(table.name)} ({', '.join(cols)}, PRIMARY KEY ({pk}){fk}){layout}")


def create_index(conn: sqlite3.Connection, index: Index) -> None:
    cols = ", ".join(quote(p.column) + (" DESC" if p.descending else "") for p in index.key)
    where = ""
    if index.null_filtered:
        where = " WHERE " + " AND ".join(f"{quote(p.column)} IS NOT NULL" for p in index.key)
    conn.execute(f"CREATE {'UNIQUE ' if index.unique else ''}INDEX {quote(index.name)} ON {quote(index.table)} ({cols}){where}")


def build(catalog: Catalog = CATALOG) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    register_functions(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    for t in catalog.tables:
        create_table(conn, t, catalog)
    for i in catalog.indexes:
        create_index(conn, i)
    for name, rows in information_schema.rows(catalog).items():
        view = information_schema.VIEWS[name]
        sql_name = quote(information_schema.sqlite_table_name(name))
        conn.execute(f"CREATE TABLE {sql_name} ({', '.join(quote(c.name) for c in view.columns)})")
        if rows:
            marks = ", ".join("?" for _ in view.columns)
            conn.executemany(f"INSERT INTO {sql_name} VALUES ({marks})", rows)
    return conn
