"""Applies a commit's mutations to SQLite storage, with Spanner's checks and errors.

Mutations apply in order at commit. Consecutive mutations of the same kind, table and
columns run as one ``executemany`` (a client commits 100 single-row mutations as 100
mutations). ``spanner.commit_timestamp()`` becomes the commit timestamp, only in
columns that allow it; a commit-timestamp column given a time after the commit is
refused, as Spanner refuses it.

Example (with a storage connection ``conn`` and catalog ``cat``)::

    apply_mutations(conn, cat, [Mutation("insert", "T", ("K",), [["1"]])], commit_nanos=ts)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby
from typing import Any

from .. import errors
from ..common.requests import EncodedRows, KeySet, Mutation, RowWidthError
from ..datamodel import values
from ..datamodel.types import TypeCode
from ..schema.catalog import Catalog, Column, Table
from .column_converters import STAMP, column_converter
from .keys import point_condition, range_condition
from .sqlite_errors import integrity_error
from .sqlite_names import has_nullable_key, quote, rowid_key

_WRITE_OPS = ("insert", "update", "insert_or_update", "replace")


@dataclass(frozen=True)
class _RowShape:
    """How to turn one mutation row (wire values) into SQL parameters, for a table and column list."""

    table: Table
    columns: tuple[Column, ...]
    key_positions: tuple[int, ...]
    converters: tuple[Callable[[Any], Any], ...]
    commit_ts_positions: tuple[int, ...]
    #: Position of a rowid key (``sqlite_names.rowid_key``) whose NULL this write must refuse, else -1.
    null_key_position: int = -1


@lru_cache(maxsize=512)
def _shape(catalog: Catalog, table_name: str, column_names: tuple[str, ...], op: str) -> _RowShape:
    table = catalog.table(table_name)
    if table is None:
        raise _unknown_table(catalog, table_name)
    cols: list[Column] = []
    seen: set[str] = set()
    for name in column_names:
        col = table.column(name)
        if col is None:
            raise errors.column_not_found(table.name, name)
        if col.is_generated:
            raise errors.generated_column_written(table.name, col.name)
        if col.name.lower() in seen:
            raise errors.duplicate_mutation_column(table.name, col.name)
        seen.add(col.name.lower())
        cols.append(col)
    lowered = [c.name.lower() for c in cols]
    key_positions = []
    for key_column in table.key_columns:
        if key_column.name.lower() not in lowered:
            if op == "insert" and key_column.default is not None:
                continue  # an insert may leave a key column with a DEFAULT (e.g. a sequence) to it
            raise errors.key_column_missing(table.name, key_column.name)
        key_positions.append(lowered.index(key_column.name.lower()))
    if op == "insert":
        for c in table.columns:
            if c.not_null and not c.is_generated and c.default is None and c.name.lower() not in seen:
                raise errors.null_in_not_null_column(table.name, c.name)
    commit_ts = tuple(i for i, c in enumerate(cols) if c.type.code == TypeCode.TIMESTAMP)
    # SQLite would store a NULL rowid key as a new rowid; an update of a NULL key finds no row anyway.
    null_key = key_positions[0] if rowid_key(table) and op != "update" and key_positions else -1
    return _RowShape(table, tuple(cols), tuple(key_positions), tuple(column_converter(table, c) for c in cols), commit_ts,
                     null_key)


def _convert_rows(shape: _RowShape, batch: Sequence[Mutation]) -> list[list[Any]]:
    width = len(shape.columns)
    converters = shape.converters
    encoded = type(batch[0].rows)
    if issubclass(encoded, EncodedRows) and all(type(m.rows) is encoded for m in batch):
        # Rows as the frontend received them: decoded and converted in one pass per value.
        try:
            return encoded.convert_all([m.rows for m in batch], [c.type for c in shape.columns], converters)  # type: ignore[misc]
        except RowWidthError as exc:
            raise errors.mutation_column_count(shape.table.name, width, exc.values) from None
    out = []
    for row in (r for m in batch for r in m.wire_rows()):
        if len(row) != width:
            raise errors.mutation_column_count(shape.table.name, width, len(row))
        out.append([conv(wire) for conv, wire in zip(converters, row)])  # noqa: B905 - lengths checked above
    return out


@dataclass
class _PreparedWrite:
    """One run of same-kind mutations, its rows already in their stored form (commit timestamps to fill)."""

    op: str
    shape: _RowShape | None  # None for deletes
    rows: list[list[Any]]
    source: list[Mutation]  # the mutations of the run (deletes are applied from them)
    stamp_cells: list[tuple[int, int]]  # (row, column) of spanner.commit_timestamp()
    check_cells: list[tuple[int, int]]  # commit-timestamp columns given a time: not after the commit

    def wire_value(self, row: int, column: int) -> Any:
        """The value the client sent for a cell (decoded again: only an error needs it)."""
        return [r for m in self.source for r in m.wire_rows()][row][column]


@dataclass
class PreparedMutations:
    """A commit's mutations checked and converted for one catalog (see :func:`prepare_mutations`)."""

    catalog: Catalog
    mutations: list[Mutation]
    writes: list[_PreparedWrite]


def prepare_mutations(catalog: Catalog, mutations: Sequence[Mutation]) -> PreparedMutations:
    """Check ``mutations`` against ``catalog`` and convert their values to the stored form, without
    touching storage, so the work is done before the database's writer is taken; the commit
    timestamp is filled in by :func:`apply_mutations`.

    >>> from ..schema.catalog import Catalog
    >>> prepare_mutations(Catalog(), []).writes
    []
    """
    writes: list[_PreparedWrite] = []
    for (op, _table, columns), group in groupby(mutations, key=lambda m: (m.op, m.table.lower(), m.columns)):
        batch = list(group)
        if op == "delete":
            writes.append(_PreparedWrite(op, None, [], batch, [], []))
            continue
        if op not in _WRITE_OPS:
            raise errors.unknown_mutation_operation(op, batch[0].table)
        shape = _shape(catalog, batch[0].table, tuple(columns), op)
        rows = _convert_rows(shape, batch)
        if shape.null_key_position >= 0:
            _refuse_null_key(shape, rows)
        allowed = [i for i in shape.commit_ts_positions if shape.columns[i].allow_commit_timestamp]
        stamps: list[tuple[int, int]] = []
        checks: list[tuple[int, int]] = []
        for r, row in enumerate(rows) if allowed else ():
            for i in allowed:
                if row[i] is STAMP:
                    stamps.append((r, i))
                elif row[i] is not None:
                    checks.append((r, i))
        writes.append(_PreparedWrite(op, shape, rows, batch, stamps, checks))
    return PreparedMutations(catalog, list(mutations), writes)


def _refuse_null_key(shape: _RowShape, rows: list[list[Any]]) -> None:
    """A rowid key column (NOT NULL) given NULL: Spanner's error, before SQLite could invent a key."""
    at = shape.null_key_position
    for row in rows:
        if row[at] is None:
            raise errors.null_in_not_null_column(shape.table.name, shape.columns[at].name)


def _key_of(shape: _RowShape, row: list[Any]) -> list[Any]:
    return [row[i] for i in shape.key_positions]


#: Writes that change exactly the rows they name (a replace deletes first, and a delete may cascade).
_ROW_WRITES = frozenset({"insert", "update", "insert_or_update"})
#: Wraps a write of the rows with the given keys of a table (the row-version capture's bulk copy of their images).
RowsWritten = Callable[[Table, list[list[Any]]], AbstractContextManager[None]]


def apply_mutations(conn: sqlite3.Connection, catalog: Catalog, mutations: Sequence[Mutation] | PreparedMutations, *,
                    commit_nanos: int, rows_written: RowsWritten | None = None) -> int:
    """Apply ``mutations`` (or what :func:`prepare_mutations` made of them for ``catalog``) in order
    inside the caller's SQLite transaction; returns the count of mutated rows/keys.

    ``rows_written`` wraps each batch of inserts and updates, given the keys it writes."""
    prepared = mutations if isinstance(mutations, PreparedMutations) else prepare_mutations(catalog, mutations)
    if prepared.catalog is not catalog:  # prepared before a schema change
        prepared = prepare_mutations(catalog, prepared.mutations)
    commit_stored = values.nanos_to_stored(commit_nanos)
    count = 0
    for w in prepared.writes:
        if w.shape is None:
            for m in w.source:
                count += _delete(conn, catalog, m.table, m.key_set or KeySet())
            continue
        shape, rows = w.shape, w.rows
        for r, i in w.stamp_cells:
            rows[r][i] = commit_stored
        for r, i in w.check_cells:
            if rows[r][i] > commit_stored:
                raise errors.commit_timestamp_in_future(shape.table.name, shape.columns[i].name, str(w.wire_value(r, i)))
        count += len(rows)
        # A key column left out (its DEFAULT draws a sequence value) is only known after the write: triggers then.
        if rows_written is not None and w.op in _ROW_WRITES and len(shape.key_positions) == len(shape.table.key_names):
            with rows_written(shape.table, [_key_of(shape, r) for r in rows]):
                _WRITERS[w.op](conn, catalog, shape, rows)
        else:
            _WRITERS[w.op](conn, catalog, shape, rows)
    return count


def _column_list(shape: _RowShape) -> str:
    return ", ".join(quote(c.name) for c in shape.columns)


def _run_many(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, sql: str, rows: list[list[Any]]) -> None:
    try:
        conn.executemany(sql, rows)
    except sqlite3.IntegrityError as exc:
        # Find the offending row so the error can name its key.
        key = _failing_key(conn, shape, sql, rows)
        raise integrity_error(exc, shape.table, catalog, key) from None


def _failing_key(conn: sqlite3.Connection, shape: _RowShape, sql: str, rows: list[list[Any]]) -> Any:
    conn.execute("SAVEPOINT ls_probe")
    try:
        for row in rows:
            try:
                conn.execute(sql, row)
            except sqlite3.IntegrityError:
                return _key_of(shape, row)
        return None
    finally:
        conn.execute("ROLLBACK TO ls_probe")
        conn.execute("RELEASE ls_probe")


def _insert(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    marks = ", ".join("?" * len(shape.columns))
    _run_many(conn, catalog, shape, f"INSERT INTO {quote(shape.table.name)} ({_column_list(shape)}) VALUES ({marks})", rows)


def _insert_or_update(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    marks = ", ".join("?" * len(shape.columns))
    keys = ", ".join(quote(k) for k in shape.table.key_names)
    non_key = [c for i, c in enumerate(shape.columns) if i not in shape.key_positions]
    if not shape.table.key_names:
        conn.execute(f"DELETE FROM {quote(shape.table.name)}")
        return _insert(conn, catalog, shape, rows)
    if has_nullable_key(shape.table):
        return _insert_or_update_by_row(conn, catalog, shape, rows)
    action = ", ".join(f"{quote(c.name)} = excluded.{quote(c.name)}" for c in non_key) if non_key else None
    tail = f"ON CONFLICT ({keys}) DO UPDATE SET {action}" if action else f"ON CONFLICT ({keys}) DO NOTHING"
    _check_not_null_on_insert(conn, catalog, shape, rows)
    _run_many(conn, catalog, shape, f"INSERT INTO {quote(shape.table.name)} ({_column_list(shape)}) VALUES ({marks}) {tail}", rows)


def _insert_or_update_by_row(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    """insert_or_update for a table whose key may hold NULL (no SQLite PRIMARY KEY for ON CONFLICT to use)."""
    for row in rows:
        if not _update_row(conn, catalog, shape, row):
            _check_not_null_on_insert(conn, catalog, shape, [row])
            _insert(conn, catalog, shape, [row])


def _check_not_null_on_insert(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    """insert_or_update of a new row must name every NOT NULL column, as Spanner requires."""
    given = {c.name.lower() for c in shape.columns}
    missing = [c for c in shape.table.columns if c.not_null and not c.is_generated and c.default is None and c.name.lower() not in given]
    if not missing:
        return
    cond, _ = point_condition(shape.table.primary_key, [None] * len(shape.key_positions))
    for row in rows:
        _, params = point_condition(shape.table.primary_key, _key_of(shape, row))
        if conn.execute(f"SELECT 1 FROM {quote(shape.table.name)} WHERE {cond}", params).fetchone() is None:
            raise errors.null_in_not_null_column(shape.table.name, missing[0].name)


def _update_row(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, row: list[Any]) -> bool:
    """Update the row with ``row``'s key; False when there is no such row."""
    non_key = [(i, c) for i, c in enumerate(shape.columns) if i not in shape.key_positions]
    cond, _ = point_condition(shape.table.primary_key, [None] * len(shape.key_positions))
    table = quote(shape.table.name)
    if not non_key:
        sql = f"SELECT 1 FROM {table} WHERE {cond}"
    else:
        sets = ", ".join(f"{quote(c.name)} = ?" for _, c in non_key)
        sql = f"UPDATE {table} SET {sets} WHERE {cond}"
    key = _key_of(shape, row)
    params = ([row[i] for i, _ in non_key] if non_key else []) + key
    try:
        cur = conn.execute(sql, params)
    except sqlite3.IntegrityError as exc:
        raise integrity_error(exc, shape.table, catalog, key) from None
    return cur.rowcount > 0 if non_key else cur.fetchone() is not None


def _update(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    for row in rows:
        if not _update_row(conn, catalog, shape, row):
            raise errors.row_not_found(shape.table.name, _key_of(shape, row))


def _replace(conn: sqlite3.Connection, catalog: Catalog, shape: _RowShape, rows: list[list[Any]]) -> None:
    cond, _ = point_condition(shape.table.primary_key, [None] * len(shape.key_positions))
    conn.executemany(f"DELETE FROM {quote(shape.table.name)} WHERE {cond}", [_key_of(shape, r) for r in rows])
    _insert(conn, catalog, shape, rows)


_WRITERS: dict[str, Callable[[sqlite3.Connection, Catalog, _RowShape, list[list[Any]]], None]] = {
    "insert": _insert,
    "update": _update,
    "insert_or_update": _insert_or_update,
    "replace": _replace,
}


def stored_key(table: Table, key_columns: Sequence[Column], wire_key: list[Any], *, prefix_ok: bool = False) -> list[Any]:
    """A key (or key prefix) from wire values to stored values, by the key columns' types."""
    if len(wire_key) > len(key_columns) or (not prefix_ok and len(wire_key) != len(key_columns)):
        raise errors.wrong_key_arity(table.name, len(key_columns), len(wire_key))
    out = []
    for col, wire in zip(key_columns, wire_key, strict=False):  # a key prefix may be shorter
        try:
            out.append(values.wire_to_stored(col.type, wire))
        except values.ValueError_:
            raise errors.bad_value(table.name, col.name, str(col.type), wire) from None
    return out


def keyset_condition(table: Table, parts: Sequence[Any], key_columns: Sequence[Column], key_set: KeySet) -> tuple[str, list[Any]]:
    """SQL condition selecting the rows of ``key_set`` over key ``parts`` (a table's or an index's key).

    A range bound is a key prefix: a closed start takes every key with that prefix, an
    open start none of them, and likewise for the end.
    """
    if key_set.all:
        return "1", []
    alternatives: list[str] = []
    params: list[Any] = []
    for key in key_set.keys:
        cond, p = point_condition(parts, stored_key(table, key_columns, key))
        alternatives.append(cond)
        params.extend(p)
    for r in key_set.ranges:
        conds: list[str] = []
        for bound, op in ((r.start, ">=" if r.start_closed else ">"), (r.end, "<=" if r.end_closed else "<")):
            if bound is None:
                continue
            c, p = range_condition(parts, stored_key(table, key_columns, bound, prefix_ok=True), op)
            conds.append(f"({c})")
            params.extend(p)
        alternatives.append("(" + (" AND ".join(conds) or "1") + ")")
    return " OR ".join(alternatives) or "0", params


def _delete(conn: sqlite3.Connection, catalog: Catalog, table_name: str, key_set: KeySet) -> int:
    table = catalog.table(table_name)
    if table is None:
        raise _unknown_table(catalog, table_name)
    cond, params = keyset_condition(table, table.primary_key, table.key_columns, key_set)
    try:
        cur = conn.execute(f"DELETE FROM {quote(table.name)} WHERE {cond}", params)
    except sqlite3.IntegrityError as exc:
        raise integrity_error(exc, table, catalog, inserting=False) from None
    return max(cur.rowcount, 0)


def _unknown_table(catalog: Catalog, name: str) -> errors.SpannerError:
    """A mutation's table that is not one: a view says so, anything else is not found."""
    view = catalog.view(name)
    return errors.view_written(view.name, in_sql=False) if view else errors.table_not_found(name)
