"""CHECK and FOREIGN KEY constraints in SQLite, and the Spanner errors for the rows that break them.

A CHECK is a SQLite CHECK over the translated expression, wrapped in ``_ls_check(ok,
table, name, key...)``: the function passes a TRUE or NULL result and, on FALSE,
remembers which row failed (SQLite's own message names only the constraint), so the
error can name the key as Spanner does. A foreign key is a deferred SQLite foreign key
(checked at COMMIT for mutations, and by :func:`dml_violation` at the end of each DML
statement, as Spanner checks them), with ON DELETE CASCADE done by SQLite, so versions
and change streams capture the cascaded deletes like interleaving's. SQLite needs a
unique index on the referenced columns; Spanner keeps them unique too (its backing
index), so one is added when they are not the referenced table's primary key.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("R", T.INT64)), (KeyPart("K"),),
    ...           foreign_keys=(ForeignKey("FK", ("R",), "T", ("K",)),))
    >>> print(foreign_key_sql(t.foreign_keys[0]))
    CONSTRAINT "FK" FOREIGN KEY ("R") REFERENCES "T" ("K") ON DELETE NO ACTION DEFERRABLE INITIALLY DEFERRED
    >>> referenced_index(Catalog(tables=(t,)), t.foreign_keys[0]) is None
    True
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .. import errors
from ..schema.catalog import Catalog, CheckConstraint, ForeignKey, Index, KeyPart, Table
from .sqlite_names import FK_INDEX_PREFIX, quote

CHECK_FUNCTION = "_ls_check"
_CHECK_FAILED = re.compile(r"CHECK constraint failed: (?P<name>.+)")

_last = threading.local()  # (table, constraint, key) of the row the last failed CHECK was about


def _check(ok: Any, table: str, name: str, *key: Any) -> int:
    if ok is None or ok:
        return 1
    _last.failure = (table, name, key)
    return 0


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the function CHECK constraints call."""
    conn.create_function(CHECK_FUNCTION, -1, _check, deterministic=True)


def format_key(key: Iterable[Any]) -> str:
    """A stored key as Spanner's messages show it.

    >>> format_key([1, "a"])
    '(1, a)'
    """
    return "(" + ", ".join("NULL" if v is None else str(v) for v in key) + ")"


def check_sql(table: Table, check: CheckConstraint, translated: str) -> str:
    """The SQLite table constraint for ``check``, whose expression translated to ``translated``."""
    keys = "".join(f", {quote(k)}" for k in table.key_names)
    return f"CONSTRAINT {quote(check.name)} CHECK ({CHECK_FUNCTION}(({translated}), '{table.name}', '{check.name}'{keys}))"


def foreign_key_sql(fk: ForeignKey) -> str:
    action = "CASCADE" if fk.on_delete_cascade else "NO ACTION"
    return (f"CONSTRAINT {quote(fk.name)} FOREIGN KEY ({', '.join(quote(c) for c in fk.columns)}) "
            f"REFERENCES {quote(fk.referenced_table)} ({', '.join(quote(c) for c in fk.referenced_columns)}) "
            f"ON DELETE {action} DEFERRABLE INITIALLY DEFERRED")


def table_constraints_sql(table: Table, catalog: Catalog, translate: Callable[[str, Table, Catalog], str]) -> list[str]:
    """The SQLite table constraints of ``table``'s CHECKs and enforced foreign keys."""
    out = [check_sql(table, c, translate(c.expression, table, catalog)) for c in table.checks]
    out.extend(foreign_key_sql(fk) for fk in table.foreign_keys if fk.enforced)
    return out


def referenced_index(catalog: Catalog, fk: ForeignKey) -> Index | None:
    """The unique index on the referenced columns SQLite needs, None when they are the referenced key."""
    referenced = catalog.table(fk.referenced_table)
    if not fk.enforced or referenced is None:
        return None
    if {c.lower() for c in fk.referenced_columns} == {c.lower() for c in referenced.key_names}:
        return None
    return Index(FK_INDEX_PREFIX + fk.name, referenced.name, tuple(KeyPart(c) for c in fk.referenced_columns), unique=True)


def referenced_indexes(catalog: Catalog) -> dict[str, Index]:
    """Every foreign key's referenced-column index, by lower-case name."""
    found = (referenced_index(catalog, fk) for t in catalog.tables for fk in t.foreign_keys)
    return {i.name.lower(): i for i in found if i is not None}


# --- finding the rows that break a constraint -------------------------------------------------------


def check_failure(exc: sqlite3.Error) -> tuple[str, str, str] | None:
    """(table, constraint, key) when ``exc`` is a failed CHECK constraint, else None."""
    m = _CHECK_FAILED.match(str(exc))
    if m is None:
        return None
    last = getattr(_last, "failure", None)
    if last is not None and last[1] == m.group("name"):
        return last[0], last[1], format_key(last[2])
    return "?", m.group("name"), "(?)"


def orphan(conn: sqlite3.Connection, table: Table, fk: ForeignKey) -> list | None:
    """The key of a row of ``table`` whose non-NULL referencing values ``fk`` cannot find, else None."""
    present = " AND ".join(f"c.{quote(c)} IS NOT NULL" for c in fk.columns)
    match = " AND ".join(f"p.{quote(r)} = c.{quote(c)}" for c, r in zip(fk.columns, fk.referenced_columns, strict=True))
    keys = ", ".join(f"c.{quote(k)}" for k in table.key_names) or "1"
    row = conn.execute(f"SELECT {keys} FROM {quote(table.name)} AS c WHERE {present} AND NOT EXISTS "
                       f"(SELECT 1 FROM {quote(fk.referenced_table)} AS p WHERE {match}) LIMIT 1").fetchone()
    return list(row) if row is not None else None


def violation(conn: sqlite3.Connection, catalog: Catalog, written: set[str], *, only: Iterable[tuple[Table, ForeignKey]] | None = None) -> errors.SpannerError | None:
    """The error for the first enforced foreign key some row breaks, else None.

    ``written`` holds the (lower-case) tables the failing change inserted into or updated: a
    broken key of such a table misses its referenced row; otherwise a referenced row went away.
    """
    pairs = only if only is not None else [(t, fk) for t in catalog.tables for fk in t.foreign_keys]
    for table, fk in pairs:
        if not fk.enforced or orphan(conn, table, fk) is None:
            continue
        if table.name.lower() in written:
            return errors.foreign_key_missing_referenced(fk.name, table.name, fk.referenced_table, fk.referenced_columns)
        return errors.foreign_key_referenced_in_use(fk.name, fk.referenced_table, table.name, fk.columns)
    return None


def deleted_by_cascade(catalog: Catalog, table: Table) -> list[Table]:
    """``table`` and every table whose rows a delete from it can delete too: interleaved
    children and referencing tables with ON DELETE CASCADE, transitively."""
    found: dict[str, Table] = {}
    todo = [table]
    while todo:
        t = todo.pop()
        if t.name.lower() in found:
            continue
        found[t.name.lower()] = t
        todo.extend(c for c in catalog.children_of(t.name) if c.on_delete_cascade)
        todo.extend(r for r, fk in catalog.foreign_keys_to(t.name) if fk.on_delete_cascade and fk.enforced)
    return list(found.values())


def dml_violation(conn: sqlite3.Connection, table: Table, kind: str, catalog: Catalog) -> errors.SpannerError | None:
    """The error when a DML statement of ``kind`` on ``table`` left a foreign key broken, else None.

    An INSERT or UPDATE may write values that find no referenced row; an UPDATE may change
    referenced values; a DELETE may take referenced rows away, also from the tables its
    cascades reach.
    """
    pairs: list[tuple[Table, ForeignKey]] = []
    if kind != "DELETE":
        pairs.extend((table, fk) for fk in table.foreign_keys)
    if kind == "UPDATE":
        pairs.extend(catalog.foreign_keys_to(table.name))
    if kind == "DELETE":
        for t in deleted_by_cascade(catalog, table):
            pairs.extend((r, fk) for r, fk in catalog.foreign_keys_to(t.name) if not fk.on_delete_cascade)
    if not pairs:
        return None
    return violation(conn, catalog, {table.name.lower()} if kind != "DELETE" else set(), only=pairs)


def validation_error(conn: sqlite3.Connection, catalog: Catalog, statement: str) -> errors.SpannerError | None:
    """For a schema change: the first existing row an enforced foreign key does not accept, else None."""
    for table in catalog.tables:
        for fk in table.foreign_keys:
            key = orphan(conn, table, fk) if fk.enforced else None
            if key is not None:
                return errors.foreign_key_validation_failed(statement, fk.name, table.name, format_key(key), fk.referenced_table)
    return None
