"""Turns SQLite constraint failures into the Spanner errors a client expects.

Example:
    >>> import sqlite3
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Catalog, Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("V", T.STRING, not_null=True)), (KeyPart("K"),))
    >>> integrity_error(sqlite3.IntegrityError("NOT NULL constraint failed: T.V"), t, Catalog(tables=(t,))).message
    'T.V must not be NULL in table T.'
"""

from __future__ import annotations

import re
import sqlite3

from .. import errors
from ..errors import SpannerError
from ..information.constraint_information import unique_constraint_name
from ..schema.catalog import Catalog, Table
from . import constraint_storage
from .sqlite_names import KEY_INDEX_PREFIX, quote, user_facing

_UNIQUE = re.compile(r"UNIQUE constraint failed: (?:index '(?P<index>[^']+)'|(?P<cols>.+))")
_NOT_NULL = re.compile(r"NOT NULL constraint failed: (?P<table>[^.]+)\.(?P<col>.+)")


def integrity_error(exc: sqlite3.Error, table: Table | None, catalog: Catalog, key: object = None, *, inserting: bool = True) -> SpannerError:
    """The Spanner error for a constraint failure while writing ``table`` (row ``key`` when known)."""
    text = user_facing(str(exc))
    name = table.name if table is not None else "?"
    failed_check = constraint_storage.check_failure(exc)
    if failed_check is not None:
        return errors.check_violated(*failed_check)
    m = _NOT_NULL.match(text)
    if m:
        t = catalog.table(m.group("table"))
        return errors.null_in_not_null_column(t.name if t else m.group("table"), m.group("col"))
    m = _UNIQUE.match(text)
    if m:
        if m.group("index", ) and m.group("index").startswith(KEY_INDEX_PREFIX) and table is not None:
            return errors.row_already_exists(table.name, key if key is not None else "(key)")
        if m.group("index"):
            return errors.unique_index_violation(m.group("index"), key)
        cols = [c.strip().split(".", 1) for c in m.group("cols").split(",")]
        t = catalog.table(cols[0][0]) if cols and len(cols[0]) == 2 else table
        names = [c[-1].lower() for c in cols]
        if t is not None and names == [k.lower() for k in t.key_names]:
            return errors.row_already_exists(t.name, key if key is not None else "(key)")
        for idx in catalog.indexes_of(t.name if t else name):
            if idx.unique and [p.column.lower() for p in idx.key] == names:
                return errors.unique_index_violation(idx.name, key)
        for _, fk in catalog.foreign_keys_to(t.name if t else name):
            if [c.lower() for c in fk.referenced_columns] == names:  # the foreign key's backing unique index
                return errors.unique_index_violation(unique_constraint_name(catalog, fk), key)
        return errors.row_already_exists(t.name if t else name, key if key is not None else "(key)")
    if "FOREIGN KEY" in text:
        if table is not None and table.parent is not None and inserting:
            return errors.parent_row_missing(name, table.parent, key)
        children = catalog.children_of(name) if table is not None else ()
        return errors.child_rows_exist(name, children[0].name if children else "an interleaved table", key)
    return errors.constraint_failure(name, text)


def orphan_key(conn: sqlite3.Connection, child: Table, catalog: Catalog) -> list | None:
    """The key of a row of the interleaved table ``child`` whose parent row is missing, else None.

    Interleaving is a deferred SQLite foreign key (a commit's mutations may insert a child
    before its parent); this finds a violation at once, and names its row.
    """
    parent = catalog.table(child.parent) if child.parent else None
    if parent is None:
        return None
    match = " AND ".join(f"p.{quote(k)} IS c.{quote(k)}" for k in parent.key_names)
    cols = ", ".join(f"c.{quote(k)}" for k in child.key_names)
    row = conn.execute(f"SELECT {cols} FROM {quote(child.name)} AS c "
                       f"WHERE NOT EXISTS (SELECT 1 FROM {quote(parent.name)} AS p WHERE {match}) LIMIT 1").fetchone()
    return list(row) if row is not None else None


def _no_action_descendants(catalog: Catalog, table: str) -> list[Table]:
    """Interleaved tables below ``table`` that a delete of ``table``'s rows can leave orphaned."""
    found: list[Table] = []
    for child in catalog.children_of(table):
        if not child.on_delete_cascade:
            found.append(child)
        found.extend(_no_action_descendants(catalog, child.name))
    return found


def interleaving_violation(conn: sqlite3.Connection, table: Table, catalog: Catalog, *, deleting: bool) -> SpannerError | None:
    """The Spanner error when writing (or deleting from) ``table`` broke interleaving, else None."""
    if not deleting and table.parent is not None:
        key = orphan_key(conn, table, catalog)
        if key is not None:
            return errors.parent_row_missing(table.name, table.parent, key)
    if deleting:
        for child in _no_action_descendants(catalog, table.name):
            key = orphan_key(conn, child, catalog)
            if key is not None:
                return errors.child_rows_exist(child.parent or table.name, child.name, key[:-1] or key)
    return None


def commit_interleaving_error(conn: sqlite3.Connection, catalog: Catalog, deleted_tables: set[str]) -> SpannerError | None:
    """Which row broke interleaving when a commit failed its deferred foreign keys, as a Spanner error.

    A child whose parent is gone, where the commit deleted from an ancestor table, is a refused
    NO ACTION delete; otherwise it is a child written without its parent.
    """
    for t in catalog.tables:
        key = orphan_key(conn, t, catalog) if t.parent else None
        if key is None:
            continue
        ancestors, up = set(), t.parent
        while up:
            ancestors.add(up.lower())
            parent = catalog.table(up)
            up = parent.parent if parent else None
        if ancestors & deleted_tables:
            return errors.child_rows_exist(t.parent or "?", t.name, key[:-1] or key)
        return errors.parent_row_missing(t.name, t.parent or "?", key)
    return None
