"""Running GoogleSQL queries and DML on a database's SQLite connection.

Translations are cached (LRU) by statement text, catalog and parameter types, so the
watcher's once-a-second poll never re-parses. Query rows are converted from stored to
wire form lazily, straight off the SQLite cursor: a result of any size streams with flat
memory. SQLite's errors become Spanner errors naming the statement.

Result types are inferred statically (catalog, literals, parameter types, function
rules). A column whose type cannot be known that way (e.g. ``SELECT NULL`` or a column
of NULLs from a subquery) takes the type of its first non-NULL value, looking ahead at
most :data:`TYPE_LOOKAHEAD_ROWS` rows; with none, it is INT64 (what Spanner reports
for an untyped NULL).

Example:
    >>> import sqlite3
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> from watcher.localspanner.common.requests import Statement
    >>> conn = sqlite3.connect(":memory:"); register_functions(conn)
    >>> fields, rows = execute_query(conn, Statement("SELECT 1 + 1 AS two"), Catalog(), now_nanos=0)
    >>> [(f.name, str(f.type)) for f in fields], list(rows)
    ([('two', 'INT64')], [['2']])
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..common import deadlines
from ..common.requests import Field, Statement
from ..datamodel import types as T
from ..datamodel import values
from ..datamodel.types import SpannerType
from ..information import role_visibility
from ..schema.catalog import Catalog
from ..storage import constraint_storage
from ..storage.sqlite_errors import integrity_error, interleaving_violation
from .aggregate_functions import register_aggregates
from .casts import SPECS as CAST_SPECS
from .context import Context
from .dml import PENDING_COMMIT_TIMESTAMP_SENTINEL, DmlTranslation, translate_dml
from .dml_action import SPECS as DML_ACTION_SPECS
from .dml_action import take_action
from .dml_keys import SPECS as DML_KEY_SPECS
from .functions import SPECS as FUNCTION_SPECS
from .interval_functions import SPECS as INTERVAL_SPECS
from .params import Signature, SystemRows, bind, parameter_types
from .protos import SPECS as PROTO_SPECS
from .sequence_functions import SPECS as SEQUENCE_SPECS
from .sequence_functions import check_can_draw, uses_sequences
from .spanner_syntax import is_dml as _is_dml
from .time_functions import SPECS as TIME_SPECS
from .time_functions import set_statement_time
from .translator import QueryTranslation, translate_query
from .udf import register, take_error, take_raised

CACHE_SIZE = 512
TYPE_LOOKAHEAD_ROWS = 1000
FETCH_BATCH = 256


def register_functions(conn: sqlite3.Connection) -> None:
    """Install every SQL function the translations use, and GoogleSQL's case-sensitive LIKE.

    Call it on every connection that reads or writes the database's tables: generated
    columns call these functions too.
    """
    register(conn, FUNCTION_SPECS + TIME_SPECS + CAST_SPECS + INTERVAL_SPECS + SEQUENCE_SPECS + DML_ACTION_SPECS + DML_KEY_SPECS
             + PROTO_SPECS)
    register_aggregates(conn)
    conn.execute("PRAGMA case_sensitive_like = ON")


def is_dml(sql: str) -> bool:
    """True for INSERT / UPDATE / DELETE (looks at the first word only)."""
    return _is_dml(sql)


# --- the translation cache --------------------------------------------------------------------------------

class _Cache:
    """A small thread-safe LRU of translations; an entry keeps its catalog alive, so ids stay unique."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[tuple, tuple[Catalog, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, catalog: Catalog, build: Callable[[], Any]) -> Any:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and hit[0] is catalog:
                self._data.move_to_end(key)
                return hit[1]
        value = build()
        with self._lock:
            self._data[key] = (catalog, value)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_cache = _Cache(CACHE_SIZE)


def _key(kind: str, sql: str, catalog: Catalog, signature: Signature) -> tuple:
    return (kind, sql, id(catalog), catalog.version, signature)


def _guarded_translation(sql: str, build: Callable[[], Any]) -> Any:
    # A construct the translator does not expect must reach the client as a named
    # limitation, never as a Python traceback.
    try:
        return build()
    except errors.SpannerError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise errors.untranslatable_statement(sql, exc) from exc


def translate_cached(statement: Statement, catalog: Catalog) -> QueryTranslation:
    """The (cached) translation of a query statement."""
    types, declared, sig = parameter_types(statement)
    bound = role_visibility.filters(catalog, statement.database_role)
    return _cache.get(_key("q", statement.sql, catalog, sig) + (bound,), catalog, lambda: _guarded_translation(
        statement.sql, lambda: translate_query(statement.sql, catalog, types, declared=declared,
                                               bound_information=bound)))


def translate_dml_cached(statement: Statement, catalog: Catalog) -> DmlTranslation:
    types, declared, sig = parameter_types(statement)
    bound = role_visibility.filters(catalog, statement.database_role)
    return _cache.get(_key("d", statement.sql, catalog, sig) + (bound,), catalog, lambda: _guarded_translation(
        statement.sql, lambda: translate_dml(statement.sql, catalog, types, declared=declared,
                                             bound_information=bound)))


# --- running -----------------------------------------------------------------------------------------

def _sqlite_error(exc: sqlite3.Error, ctx: Context) -> errors.SpannerError:
    text = str(exc)
    raised = take_raised()
    udf_message = take_error()
    if deadlines.expired():
        return errors.statement_deadline_exceeded(ctx.sql)  # the progress handler interrupted it
    if isinstance(raised, errors.SpannerError):
        return raised  # a function that failed with Spanner's own error (e.g. a NULL rowid key)
    if udf_message is not None:
        return errors.sql_runtime_error(ctx.sql, udf_message)
    if "no query solution" in text:
        return _unusable_index(ctx)
    if "integer overflow" in text:
        return errors.int64_overflow(ctx.sql)
    return errors.sqlite_rejected(ctx.sql, text)


def _unusable_index(ctx: Context) -> errors.SpannerError:
    names = []
    for index_name in ctx.forced_indexes:
        index = ctx.catalog.index(index_name)
        if index is not None and index.null_filtered:
            cols = ", ".join(p.column for p in index.key)
            names.append(f"{index.name} is NULL_FILTERED on ({cols})")
    detail = "; ".join(names) or "the forced index cannot answer this query"
    return errors.null_filtered_index_unusable(ctx.sql, detail)


def _run(conn: sqlite3.Connection, sql: str, binds: dict[str, Any], ctx: Context) -> sqlite3.Cursor:
    try:
        return conn.execute(sql, binds)
    except sqlite3.IntegrityError:
        raise
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, ctx) from None


def _converters(types: list[SpannerType], ctx: Context) -> list[Callable[[Any], Any]]:
    return [_converter(t, ctx) for t in types]


def _converter(t: SpannerType, ctx: Context) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        if v is None:
            return None
        try:
            return values.stored_to_wire(t, v)
        except (values.ValueError_, ValueError, TypeError) as exc:
            if v == PENDING_COMMIT_TIMESTAMP_SENTINEL:
                raise errors.pending_commit_timestamp_read(ctx.sql) from None
            raise errors.unreadable_value(ctx.sql, v, str(t), exc) from None

    path = values.wire_fast_path(t)
    if path is None:
        return convert
    # The usual stored type goes straight to its wire form; anything else (NULL too) takes the checks.
    kind, to_wire = path
    if to_wire is None:
        return lambda v: v if type(v) is kind else convert(v)

    def fast(v: Any) -> Any:
        if type(v) is kind:
            try:
                return to_wire(v)
            except (values.ValueError_, ValueError):
                pass  # e.g. a pending commit timestamp: the checks name it
        return convert(v)

    return fast


def _runtime_type(value: Any) -> SpannerType:
    if isinstance(value, bytes):
        return T.BYTES
    if isinstance(value, float):
        return T.FLOAT64
    if isinstance(value, int):
        return T.INT64
    return T.STRING


def _rows(cursor: sqlite3.Cursor, converters: list[Callable[[Any], Any]], ctx: Context,
          first: list[tuple] | None = None) -> Iterator[list[Any]]:
    try:
        if first:
            for row in first:
                yield [c(v) for c, v in zip(converters, row, strict=False)]
        while True:
            try:
                batch = cursor.fetchmany(FETCH_BATCH)
            except sqlite3.Error as exc:
                raise _sqlite_error(exc, ctx) from None
            if not batch:
                return
            for row in batch:
                yield [c(v) for c, v in zip(converters, row, strict=False)]
    finally:
        cursor.close()


def execute_query(conn: sqlite3.Connection, statement: Statement, catalog: Catalog, *, now_nanos: int,
                  system_rows: SystemRows | None = None) -> tuple[list[Field], Iterator[list[Any]]]:
    """Run a query: the result fields, and the rows in wire form, produced lazily.

    ``system_rows`` computes the rows of the SPANNER_SYS tables it reads (None: it reads none).
    """
    q = translate_cached(statement, catalog)
    check_can_draw(q.sql, statement.sql)
    binds = bind(statement, q.ctx, now_nanos, system_rows)
    cursor = _run(conn, q.sql, binds, q.ctx)
    types: list[SpannerType | None] = [c.type for c in q.columns]
    first: list[tuple] | None = None
    if any(t is None for t in types):
        first, types = _infer_types(cursor, types, q.ctx)
    final = [t.without_length() if t is not None else T.INT64 for t in types]
    fields = [Field(c.name, t) for c, t in zip(q.columns, final, strict=False)]
    rows = _rows(cursor, _converters(final, q.ctx), q.ctx, first)
    if uses_sequences(q.sql):
        rows = iter(list(rows))  # read now, while the caller's sequence counters are in reach
    return fields, rows


def describe(statement: Statement, catalog: Catalog) -> list[Field]:
    """The result fields of a query or DML statement (its THEN RETURN columns), without running it.

    For query_mode PLAN. A column whose type only the rows could tell is INT64, as for an
    untyped NULL.
    """
    if is_dml(statement.sql):
        columns = translate_dml_cached(statement, catalog).then_return
    else:
        columns = translate_cached(statement, catalog).columns
    return [Field(c.name, c.type.without_length() if c.type is not None else T.INT64) for c in columns]


def _infer_types(cursor: sqlite3.Cursor, types: list[SpannerType | None], ctx: Context) -> tuple[list[tuple], list[SpannerType | None]]:
    try:
        first = cursor.fetchmany(TYPE_LOOKAHEAD_ROWS)
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, ctx) from None
    types = list(types)
    for i, t in enumerate(types):
        if t is None:
            sample = next((row[i] for row in first if row[i] is not None), None)
            types[i] = _runtime_type(sample) if sample is not None else None
    return first, types


@dataclass
class DmlResult:
    """What one DML statement did.

    ``pending_commit_timestamps`` lists (table, columns, key in stored form) for each row
    that got PENDING_COMMIT_TIMESTAMP(); the transaction replaces the sentinel at commit.
    """

    row_count: int
    pending_commit_timestamps: list[tuple[str, tuple[str, ...], tuple[Any, ...]]] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    #: What the statement adds to its transaction's commit-statistics mutation count.
    mutation_count: int = 0


def execute_dml(conn: sqlite3.Connection, statement: Statement, catalog: Catalog, *, now_nanos: int,
                partitioned: bool = False) -> DmlResult:
    """Run one INSERT / UPDATE / DELETE; integrity failures become Spanner errors.

    ``partitioned``: the statement is a Partitioned DML one, which may not INSERT nor THEN RETURN.
    """
    if not is_dml(statement.sql):
        raise errors.query_is_not_dml(statement.sql)
    d = translate_dml_cached(statement, catalog)
    if partitioned and d.kind == "INSERT":
        raise errors.partitioned_dml_insert()
    if partitioned and d.then_return:
        raise errors.partitioned_dml_then_return()
    check_can_draw(d.sql, statement.sql)
    take_action("")  # no update mark left over from a statement that failed half-way
    binds = bind(statement, d.ctx, now_nanos)
    set_statement_time(now_nanos)
    try:
        result = _execute_dml(conn, d, binds, values.nanos_to_stored(now_nanos))
        _check_interleaving(conn, d, catalog)
        problem = constraint_storage.dml_violation(conn, d.table, d.kind, catalog)
        if problem is not None:
            raise problem
        result.mutation_count = result.row_count * d.cells_per_row
        return result
    except sqlite3.IntegrityError as exc:
        take_error()
        take_raised()
        raise integrity_error(exc, d.table, catalog, inserting=d.kind != "DELETE") from None
    finally:
        set_statement_time(None)


def _check_interleaving(conn: sqlite3.Connection, d: DmlTranslation, catalog: Catalog) -> None:
    """A DML statement must keep interleaving intact when it ends (the storage defers the check to commit)."""
    deleting = d.kind == "DELETE"
    if not deleting and (d.kind != "INSERT" or d.table.parent is None):
        return  # key columns cannot be updated: an UPDATE never orphans a row
    problem = interleaving_violation(conn, d.table, catalog, deleting=deleting)
    if problem is not None:
        raise problem


def _execute_dml(conn: sqlite3.Connection, d: DmlTranslation, binds: dict[str, Any], now_stored: str) -> DmlResult:
    cursor = _run(conn, d.sql, binds, d.ctx)
    try:
        if not d.returning:
            return DmlResult(cursor.rowcount)
        try:
            rows = cursor.fetchall()  # bounded by the statement's own row count
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise _sqlite_error(exc, d.ctx) from None
    finally:
        cursor.close()
    return _dml_result(d, rows, now_stored)


def _dml_result(d: DmlTranslation, rows: list[tuple], now_stored: str) -> DmlResult:
    nk, npend = d.key_count, len(d.pending_columns)
    if d.insert_mode == "UPDATE":
        _check_each_row_once(d, [row[:nk] for row in rows])
    pending = []
    for row in rows:
        for col, v in zip(d.pending_columns, row[nk:nk + npend], strict=False):
            # The commit comes after the statement: a time after now is after the commit too.
            if v is not None and v != PENDING_COMMIT_TIMESTAMP_SENTINEL and v > now_stored:
                raise errors.commit_timestamp_in_future(d.table.name, col, v)
        cols = tuple(c for c, v in zip(d.pending_columns, row[nk:nk + npend], strict=False) if v == PENDING_COMMIT_TIMESTAMP_SENTINEL)
        if cols:
            pending.append((d.table.name, cols, tuple(row[:nk])))
    types = [c.type.without_length() if c.type is not None else T.INT64 for c in d.then_return]
    convert = _converters(types, d.ctx)
    returned = [[c(v) for c, v in zip(convert, row[nk + npend:], strict=False)] for row in rows] if d.then_return else []
    fields = [Field(c.name, t) for c, t in zip(d.then_return, types, strict=False)]
    return DmlResult(len(rows), pending, returned, fields)


def _check_each_row_once(d: DmlTranslation, keys: list[tuple]) -> None:
    """INSERT OR UPDATE may write each row once: two values for one key are refused, as on Spanner."""
    seen: set[tuple] = set()
    for key in keys:
        if key in seen:
            raise errors.upsert_row_twice(d.table.name, [values.stored_to_wire(c.type, v) if v is not None else None
                                                         for c, v in zip(d.table.key_columns, key, strict=False)])
        seen.add(key)


def clear_cache() -> None:
    """Forget every cached translation (tests)."""
    _cache.clear()


__all__ = ["DmlResult", "clear_cache", "describe", "execute_dml", "execute_query", "is_dml", "register_functions"]
