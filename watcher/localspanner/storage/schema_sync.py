"""Keeps the SQLite tables of a database in step with its catalog.

Given the catalog before and after a schema change, :func:`sync_schema` issues the
SQLite DDL that makes storage match: new tables and indexes are created, dropped ones
dropped, and a table whose columns changed is altered in place when SQLite can
(a plain nullable column added) or rebuilt otherwise (copy, drop, rename), which
also recomputes generated columns for existing rows, as Spanner backfills them.

Interleaving is a SQLite foreign key from the child's parent-key columns to the
parent's primary key (ON DELETE CASCADE or NO ACTION), so deletes cascade and an
orphan child is refused. The caller must run this with foreign keys off (a rebuild
drops the old parent table) inside one transaction.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Catalog, Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("V", T.STRING)), (KeyPart("K"),))
    >>> print(create_table_sql(t, Catalog(tables=(t,))))
    CREATE TABLE "T" ("K" INTEGER NOT NULL, "V", PRIMARY KEY ("K"))
    >>> s = Table("S", (Column("K", T.STRING, not_null=True),), (KeyPart("K"),))
    >>> print(create_table_sql(s, Catalog(tables=(s,))))
    CREATE TABLE "S" ("K" NOT NULL, PRIMARY KEY ("K")) WITHOUT ROWID

A table keyed by one NOT NULL INT64 column is a rowid table (``sqlite_names.rowid_key``);
a data directory written before that layout existed has such tables WITHOUT ROWID, and
:func:`upgrade_layout` rebuilds them when the database opens.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..datamodel.types import TypeCode
from ..schema.catalog import Catalog, Column, Index, Table
from ..sql import translate_default_expression, translate_expression
from . import constraint_storage
from .sqlite_names import KEY_INDEX_PREFIX, REBUILD_PREFIX, UNIQUE_NULLS_PREFIX, has_nullable_key, quote, rowid_key

ExpressionTranslator = Callable[[str, Table, Catalog], str]


def column_sql(column: Column, table: Table, catalog: Catalog, translate: ExpressionTranslator | None = None) -> str:
    parts = [quote(column.name)]
    if rowid_key(table) and column.name == table.primary_key[0].column:
        parts.append("INTEGER")  # exactly INTEGER: only that makes the PRIMARY KEY an alias of the rowid
    if column.not_null:
        parts.append("NOT NULL")
    if column.type.code == TypeCode.TOKENLIST:
        # Tokens are never read back (queries refuse TOKENLIST) and SEARCH is not answered,
        # so the TOKENIZE_... expression is kept in the schema only; storage holds NULL.
        return " ".join(parts)
    if column.generated is not None:
        expr = (translate or translate_expression)(column.generated, table, catalog)
        parts.append(f"GENERATED ALWAYS AS ({expr}) {'STORED' if column.stored else 'VIRTUAL'}")
    elif column.default is not None:
        expr = (translate or translate_default_expression)(column.default, table, catalog)
        parts.append(f"DEFAULT ({expr})")
    return " ".join(parts)


def create_table_sql(table: Table, catalog: Catalog, name: str | None = None, translate: ExpressionTranslator | None = None) -> str:
    cols = [column_sql(c, table, catalog, translate) for c in table.columns]
    if table.primary_key and has_nullable_key(table):
        # SQLite makes PRIMARY KEY columns of a WITHOUT ROWID table NOT NULL; Spanner
        # allows NULL in a key column, so such a table keeps its key in unique indexes.
        without_rowid = ""
    elif table.primary_key:
        key = ", ".join(quote(p.column) + (" DESC" if p.descending else "") for p in table.primary_key)
        cols.append(f"PRIMARY KEY ({key})")
        without_rowid = "" if rowid_key(table) else " WITHOUT ROWID"
    else:
        # PRIMARY KEY (): a table of at most one row; SQLite needs a rowid for that.
        without_rowid = ""
    if table.parent is not None:
        parent = catalog.table(table.parent)
        assert parent is not None
        pk = ", ".join(quote(p.column) for p in parent.primary_key)
        action = "CASCADE" if table.on_delete_cascade else "NO ACTION"
        cols.append(f"FOREIGN KEY ({pk}) REFERENCES {quote(parent.name)} ({pk}) ON DELETE {action} DEFERRABLE INITIALLY DEFERRED")
    cols.extend(constraint_storage.table_constraints_sql(table, catalog, translate or translate_expression))
    return f"CREATE TABLE {quote(name or table.name)} ({', '.join(cols)}){without_rowid}"


def key_index_sql(table: Table) -> list[str]:
    """The unique indexes that stand in for the primary key of a table with a nullable key column.

    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64),), (KeyPart("K"),))
    >>> for sql in key_index_sql(t): print(sql)
    CREATE UNIQUE INDEX "_ls_pk_T" ON "T" ("K")
    CREATE UNIQUE INDEX "_ls_nulls__ls_pk_T" ON "T" (("K" IS NULL), IFNULL("K", 0)) WHERE "K" IS NULL
    """
    if not table.primary_key or not has_nullable_key(table):
        return []
    index = Index(KEY_INDEX_PREFIX + table.name, table.name, table.primary_key, unique=True)
    return [create_index_sql(index), unique_nulls_index_sql(index) or ""]


def create_index_sql(index: Index) -> str:
    cols = ", ".join(quote(p.column) + (" DESC" if p.descending else "") for p in index.key)
    unique = "UNIQUE " if index.unique else ""
    where = ""
    if index.null_filtered:
        where = " WHERE " + " AND ".join(f"{quote(p.column)} IS NOT NULL" for p in index.key)
    return f"CREATE {unique}INDEX {quote(index.name)} ON {quote(index.table)} ({cols}){where}"


def unique_nulls_index_sql(index: Index) -> str | None:
    """The companion of a UNIQUE index that is not NULL_FILTERED, else None.

    Spanner compares NULL index keys as equal, SQLite's UNIQUE as distinct; this
    partial index covers only rows with a NULL key column and indexes a NULL as
    ``(1, 0)``, a value ``v`` as ``(0, v)``, so two such rows collide exactly when Spanner's do.

    >>> from watcher.localspanner.schema.catalog import Index, KeyPart
    >>> print(unique_nulls_index_sql(Index("U", "T", (KeyPart("V"),), unique=True)))
    CREATE UNIQUE INDEX "_ls_nulls_U" ON "T" (("V" IS NULL), IFNULL("V", 0)) WHERE "V" IS NULL
    """
    if not index.unique or index.null_filtered:
        return None
    exprs = ", ".join(f"({quote(p.column)} IS NULL), IFNULL({quote(p.column)}, 0)" for p in index.key)
    where = " OR ".join(f"{quote(p.column)} IS NULL" for p in index.key)
    return f"CREATE UNIQUE INDEX {quote(UNIQUE_NULLS_PREFIX + index.name)} ON {quote(index.table)} ({exprs}) WHERE {where}"


def _drop_index(conn: sqlite3.Connection, index: Index) -> None:
    conn.execute(f"DROP INDEX IF EXISTS {quote(index.name)}")
    conn.execute(f"DROP INDEX IF EXISTS {quote(UNIQUE_NULLS_PREFIX + index.name)}")


def _addable_in_place(old: Table, new: Table) -> list[Column] | None:
    """The columns to ADD when ``new`` only appends plain nullable columns to ``old``, else None."""
    if new.primary_key != old.primary_key or new.parent != old.parent or new.on_delete_cascade != old.on_delete_cascade:
        return None
    if _constraint_shape(old) != _constraint_shape(new):
        return None
    if len(new.columns) < len(old.columns):
        return None
    for o, n in zip(old.columns, new.columns, strict=False):  # new columns may follow
        if (o.name, o.not_null, o.generated, o.default, o.stored) != (n.name, n.not_null, n.generated, n.default, n.stored):
            return None
    added = list(new.columns[len(old.columns):])
    if any(c.not_null or c.generated is not None or c.default is not None for c in added):
        return None
    return added


def _storage_shape(t: Table) -> tuple:
    """What of a table matters to SQLite (types and options do not: columns are untyped)."""
    return (
        tuple((c.name.lower(), c.not_null, c.generated, c.default, c.stored) for c in t.columns),
        t.primary_key,
        t.parent,
        t.on_delete_cascade,
        _constraint_shape(t),
        rowid_key(t),
    )


def _constraint_shape(t: Table) -> tuple:
    """What of a table's constraints SQLite holds: CHECKs and enforced foreign keys (not whether a name was generated)."""
    fks = tuple((f.name, f.columns, f.referenced_table.lower(), f.referenced_columns, f.on_delete_cascade)
                for f in t.foreign_keys if f.enforced)
    return tuple((c.name, c.expression) for c in t.checks), fks


def sync_schema(conn: sqlite3.Connection, old: Catalog, new: Catalog, translate: ExpressionTranslator | None = None) -> None:
    """Issue the SQLite DDL that turns storage for ``old`` into storage for ``new``."""
    old_indexes = {i.name.lower(): i for i in old.indexes}
    new_indexes = {i.name.lower(): i for i in new.indexes}
    for name, idx in old_indexes.items():
        if name not in new_indexes or new_indexes[name] != idx:
            _drop_index(conn, idx)
    new_tables = {t.name.lower() for t in new.tables}
    for t in reversed(old.tables):
        if t.name.lower() not in new_tables:
            conn.execute(f"DROP TABLE IF EXISTS {quote(t.name)}")
    rebuilt: list[Table] = []
    for t in new.tables:
        before = old.table(t.name)
        if before is None:
            conn.execute(create_table_sql(t, new, translate=translate))
            for sql in key_index_sql(t):
                conn.execute(sql)
        elif _storage_shape(before) != _storage_shape(t):
            added = _addable_in_place(before, t)
            if added is not None:
                for c in added:
                    conn.execute(f"ALTER TABLE {quote(t.name)} ADD COLUMN {column_sql(c, t, new, translate)}")
            else:
                _rebuild(conn, before, t, new, translate)
                rebuilt.append(t)
    rebuilt_names = {t.name.lower() for t in rebuilt}
    for name, idx in new_indexes.items():
        if name not in old_indexes or old_indexes[name] != idx or idx.table.lower() in rebuilt_names:
            _remake_index(conn, idx)
    _sync_referenced_indexes(conn, old, new, rebuilt_names)


def _remake_index(conn: sqlite3.Connection, idx: Index) -> None:
    """Drop ``idx`` (if stored) and create it, with its NULL-aware unique companion where it has one."""
    _drop_index(conn, idx)
    conn.execute(create_index_sql(idx))
    companion = unique_nulls_index_sql(idx)
    if companion is not None:
        conn.execute(companion)


def _sync_referenced_indexes(conn: sqlite3.Connection, old: Catalog, new: Catalog, rebuilt: set[str]) -> None:
    """Foreign keys' unique indexes on referenced columns: dropped with their key, (re)made with it or its table."""
    before, after = constraint_storage.referenced_indexes(old), constraint_storage.referenced_indexes(new)
    for name, idx in before.items():
        if after.get(name) != idx:
            conn.execute(f"DROP INDEX IF EXISTS {quote(idx.name)}")
    for name, idx in after.items():
        if before.get(name) != idx or idx.table.lower() in rebuilt:
            conn.execute(f"DROP INDEX IF EXISTS {quote(idx.name)}")
            conn.execute(create_index_sql(idx))


def _rebuild(conn: sqlite3.Connection, old: Table, new: Table, catalog: Catalog, translate: ExpressionTranslator | None) -> None:
    temp = f"{REBUILD_PREFIX}{new.name}"
    conn.execute(create_table_sql(new, catalog, name=temp, translate=translate))
    kept = [c.name for c in new.columns if c.generated is None and old.column(c.name) is not None and old.column(c.name).generated is None]  # type: ignore[union-attr]
    cols = ", ".join(quote(c) for c in kept)
    conn.execute(f"INSERT INTO {quote(temp)} ({cols}) SELECT {cols} FROM {quote(old.name)}")
    conn.execute(f"DROP TABLE {quote(old.name)}")
    conn.execute(f"ALTER TABLE {quote(temp)} RENAME TO {quote(new.name)}")
    for sql in key_index_sql(new):  # named after the table, so created only once the old one is gone
        conn.execute(sql)


def stored_without_rowid(conn: sqlite3.Connection, catalog: Catalog) -> list[Table]:
    """Tables that should be rowid tables (``rowid_key``) but are stored WITHOUT ROWID (an older data directory)."""
    found = []
    for t in catalog.tables:
        if not rowid_key(t):
            continue
        row = conn.execute("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                           (t.name,)).fetchone()
        if row is not None and row[0].rstrip().upper().endswith("WITHOUT ROWID"):
            found.append(t)
    return found


def upgrade_layout(conn: sqlite3.Connection, catalog: Catalog, tables: list[Table],
                   translate: ExpressionTranslator | None = None) -> None:
    """Rebuild ``tables`` (see :func:`stored_without_rowid`) in the layout ``catalog`` gives them now,
    with their indexes; the caller runs this inside one transaction with foreign keys off."""
    names = {t.name.lower() for t in tables}
    for t in tables:
        _rebuild(conn, t, t, catalog, translate)
    for idx in catalog.indexes:
        if idx.table.lower() in names:
            _remake_index(conn, idx)
    _sync_referenced_indexes(conn, catalog, catalog, names)
