"""Reads by key (the Read / StreamingRead RPCs): a key set over a table or a secondary index.

Rows come back in key order (the index's key order for an index read), lazily.

Example (with a storage connection ``conn`` and catalog ``cat``)::

    fields, rows = read_rows(conn, cat, "Singers", ["SingerId"], KeySet(all=True))
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from .. import errors
from ..common.requests import Field, KeySet
from ..datamodel import values
from ..datamodel.types import NOT_ON_WIRE
from ..schema.catalog import Catalog, Column, KeyPart
from ..storage.mutations import keyset_condition
from ..storage.sqlite_names import quote


def read_rows(conn: sqlite3.Connection, catalog: Catalog, table_name: str, columns: list[str], key_set: KeySet, *,
              index: str = "", limit: int = 0) -> tuple[list[Field], Iterator[list[Any]]]:
    table = catalog.table(table_name)
    if table is None:
        raise errors.table_not_found(table_name)
    cols: list[Column] = []
    for name in columns:
        col = table.column(name)
        if col is None:
            raise errors.column_not_found(table.name, name)
        if col.type.code in NOT_ON_WIRE:
            raise errors.tokenlist_not_readable(col.name)
        cols.append(col)
    if index:
        idx = catalog.index(index)
        if idx is None or idx.table.lower() != table.name.lower():
            raise errors.index_not_found(index)
        covered = {p.column.lower() for p in idx.key} | {c.lower() for c in idx.storing} | {k.lower() for k in table.key_names}
        for c in cols:
            if c.name.lower() not in covered:
                raise errors.index_does_not_cover(idx.name, table.name, c.name)
        key_parts: tuple[KeyPart, ...] = idx.key
        key_cols = tuple(table.column(p.column) for p in idx.key)
        order = list(idx.key) + [p for p in table.primary_key if p.column.lower() not in {k.column.lower() for k in idx.key}]
        hint = f" INDEXED BY {quote(idx.name)}"
        extra = " AND ".join(f"{quote(p.column)} IS NOT NULL" for p in idx.key) if idx.null_filtered else ""
    else:
        key_parts = table.primary_key
        key_cols = table.key_columns
        order = list(table.primary_key)
        hint = ""
        extra = ""
    cond, params = keyset_condition(table, key_parts, key_cols, key_set)  # type: ignore[arg-type]
    if extra:
        cond = f"({cond}) AND {extra}"
    select = ", ".join(quote(c.name) for c in cols) or "1"
    order_by = ", ".join(quote(p.column) + (" DESC" if p.descending else "") for p in order)
    sql = f"SELECT {select} FROM {quote(table.name)}{hint} WHERE {cond}"
    if order_by:
        sql += f" ORDER BY {order_by}"
    if limit:
        sql += f" LIMIT {int(limit)}"
    try:
        cursor = conn.execute(sql, params)
    except sqlite3.OperationalError as exc:
        raise errors.read_failed(table.name, str(exc)) from None
    fields = [Field(c.name, c.type) for c in cols]
    types = [c.type for c in cols]
    return fields, _rows(cursor, types)


def _rows(cursor: sqlite3.Cursor, types: list[Any]) -> Iterator[list[Any]]:
    to_wire = values.stored_to_wire
    for row in cursor:
        yield [to_wire(t, v) for t, v in zip(types, row, strict=True)] if types else []
