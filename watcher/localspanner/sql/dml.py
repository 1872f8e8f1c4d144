"""Translating GoogleSQL DML (INSERT, UPDATE, DELETE, THEN RETURN) into SQLite.

Spanner's rules are checked here, before SQLite sees anything: UPDATE and DELETE need a
WHERE clause, generated and key columns cannot be set, values must have the column's
type, and ``PENDING_COMMIT_TIMESTAMP()`` may only be the whole value of an
``allow_commit_timestamp`` column. That value is written as
:data:`PENDING_COMMIT_TIMESTAMP_SENTINEL`, and the statement RETURNs the primary key
of each row so that the transaction can put the real commit timestamp there at commit.

Example:
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("K", T.INT64, not_null=True), C.Column("V", T.STRING)), (C.KeyPart("K"),))
    >>> d = translate_dml("UPDATE T SET V = 'x' WHERE K = 1", C.Catalog(tables=(t,)))
    >>> d.sql
    'UPDATE "T" AS "T" SET "V" = \\'x\\' WHERE ("T"."K" = 1)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel import values
from ..datamodel.types import SpannerType, TypeCode
from ..schema.catalog import Catalog, Column, Table
from ..storage.sqlite_names import quote, rowid_key
from . import dml_keys
from .context import Context, OutputColumn, Typed
from .function_table import comparable
from .literals import sql_string
from .scope import Scope
from .spanner_syntax import preprocess
from .translator import Translator, _output_columns, parse, table_source, translate_default_expression

PENDING_COMMIT_TIMESTAMP_SENTINEL = "9999-12-31T23:59:59.999999999Z~pending"
_WITH_ACTION = re.compile(r"WITH\s+ACTION(?:\s+AS\s+(`[^`]+`|[A-Za-z_]\w*))?(?=\s|\*|$)", re.IGNORECASE)
ACTION_COLUMN = "ACTION"


@dataclass(frozen=True)
class DmlTranslation:
    """A translated DML statement.

    When ``returning`` is true the SQLite statement has a RETURNING clause whose columns
    are: the primary key (``key_count`` columns), then the pending-commit-timestamp
    columns (``pending_columns``: every ``allow_commit_timestamp`` column the statement
    writes, whether with PENDING_COMMIT_TIMESTAMP() or a value), then the THEN RETURN
    columns (``then_return``, the ACTION column last for WITH ACTION). An INSERT OR
    UPDATE always returns its keys: Spanner refuses one that writes a row twice.
    """

    sql: str
    table: Table
    ctx: Context
    key_count: int = 0
    pending_columns: tuple[str, ...] = ()
    then_return: tuple[OutputColumn, ...] = ()
    returning: bool = False
    kind: str = "INSERT"
    insert_mode: str | None = None  # "UPDATE" or "IGNORE" for INSERT OR UPDATE / OR IGNORE
    #: Mutations one written row counts for commit statistics (``transactions.mutation_count``'s rule).
    cells_per_row: int = 1


@dataclass
class _Build:
    table: Table
    pending: list[str] = field(default_factory=list)
    cells: int = 1  # columns one row writes: the INSERT's columns, an UPDATE's key and SET columns, 1 for a DELETE

    def note_pending(self, column: Column) -> None:
        if column.name not in self.pending:
            self.pending.append(column.name)


def translate_dml(sql: str, catalog: Catalog, param_types: dict[str, SpannerType] | None = None, *,
                  declared: frozenset[str] | None = None, bound_information: bool = False) -> DmlTranslation:
    """Translate one INSERT / UPDATE / DELETE statement (``bound_information`` as for ``translate_query``)."""
    pre = preprocess(sql)
    tree = parse(pre, sql)
    types = dict(param_types or {})
    ctx = Context(catalog, sql, types, declared if declared is not None else frozenset(types),
                  table_hints=[(name, dict(pairs)) for name, pairs in pre.table_hints],
                  bound_information=bound_information)
    tr = Translator(ctx)
    with_action = pre.then_return is not None and _WITH_ACTION.match(pre.then_return) is not None
    if isinstance(tree, exp.Insert):
        body, build = _insert(tr, tree, pre.insert_mode, mark_updates=with_action)
        kind = "INSERT"
    elif isinstance(tree, exp.Update):
        body, build = _update(tr, tree)
        kind = "UPDATE"
    elif isinstance(tree, exp.Delete):
        body, build = _delete(tr, tree)
        kind = "DELETE"
    else:
        raise errors.query_is_not_dml(sql)
    table = build.table
    then_return: list[OutputColumn] = []
    returning_sql: list[str] = []
    keys = bool(build.pending) or (kind == "INSERT" and pre.insert_mode == "UPDATE")
    if keys:
        returning_sql += [quote(k) for k in table.key_names] + [quote(c) for c in build.pending]
    if pre.then_return is not None:
        then_return = _then_return(tr, pre.then_return, table, kind)
        returning_sql += [c.expr_sql for c in then_return]
    if returning_sql:
        body += " RETURNING " + ", ".join(returning_sql)
    return DmlTranslation(body, table, ctx, len(table.key_names) if keys else 0, tuple(build.pending),
                          tuple(then_return), bool(returning_sql), kind, pre.insert_mode if kind == "INSERT" else None,
                          build.cells)


def _target(tr: Translator, node: exp.Expression | None) -> tuple[Table, str]:
    if not isinstance(node, exp.Table):
        raise tr.ctx.unsupported(errors.SQL_DML_TARGET)
    if node.db:
        raise tr.ctx.invalid(errors.cannot_modify(node.db, node.name))
    table = tr.ctx.catalog.table(node.name)
    if table is None:
        view = tr.ctx.catalog.view(node.name)
        raise errors.view_written(view.name, in_sql=True) if view else errors.query_table_not_found(node.name)
    return table, node.alias or table.name


def _writable(tr: Translator, table: Table, name: str, *, allow_key: bool) -> Column:
    column = table.column(name)
    if column is None:
        raise tr.ctx.invalid(errors.column_not_in_table(name, table.name))
    if column.is_generated:
        raise errors.generated_column_written(table.name, column.name)
    if not allow_key and column.name in table.key_names:
        raise tr.ctx.invalid(errors.key_column_not_writable(column.name))
    return column


def _is_pending(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).upper() == "PENDING_COMMIT_TIMESTAMP"


def _is_default(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Var, exp.Column)) and not getattr(node, "table", None) and node.name.upper() == "DEFAULT"


def _value(tr: Translator, build: _Build, column: Column, node: exp.Expression, scope: Scope) -> str:
    """The SQL for one written value, checked against the column."""
    if _is_pending(node):
        if not column.allow_commit_timestamp:
            raise errors.pending_commit_timestamp_not_allowed(build.table.name, column.name)
        if node.expressions:
            raise tr.ctx.invalid(errors.SQL_PENDING_COMMIT_TIMESTAMP_ARGS)
        build.note_pending(column)
        return sql_string(PENDING_COMMIT_TIMESTAMP_SENTINEL)
    if _is_default(node):
        if column.default is None:
            return "NULL"
        return translate_default_expression(column.default, build.table, tr.ctx.catalog)
    value = tr.expr(node, scope)
    if value.is_string_literal and column.type.code == TypeCode.NUMERIC:
        _check_numeric_literal(build.table, column, value.literal)
    if value.is_string_literal and column.type.code in _NAMED_LITERAL_TYPES:
        try:
            typed = tr.coerce(value, column.type, node)
        except errors.SpannerError:
            raise errors.bad_value(build.table.name, column.name, str(column.type), value.literal) from None
    else:
        typed = tr.coerce(value, column.type, node)
    _check_type(tr, build.table, column, typed)
    if column.allow_commit_timestamp:
        build.note_pending(column)  # returned too, so that a time after the commit can be refused
    return typed.sql


#: Column types whose text literals a DML statement may write; a bad one is refused naming the column.
_NAMED_LITERAL_TYPES = frozenset({TypeCode.UUID, TypeCode.INTERVAL})


def _check_numeric_literal(table: Table, column: Column, literal: Any) -> None:
    """A text literal written to a NUMERIC column must be one exactly (Spanner does not round it)."""
    try:
        values.canonical_numeric(literal, exact=True)
    except values.ValueError_:
        raise errors.bad_value(table.name, column.name, str(column.type), literal) from None


def _check_type(tr: Translator, table: Table, column: Column, typed: Typed) -> None:
    if typed.type is None or typed.type.same_kind(column.type):
        return
    if column.type.code == TypeCode.FLOAT64 and comparable(typed.type, column.type) and typed.type.code == TypeCode.INT64:
        return
    raise tr.ctx.invalid(errors.value_not_assignable(typed.type, column.name, table.name, column.type))


def _insert(tr: Translator, tree: exp.Insert, mode: str | None, *, mark_updates: bool = False) -> tuple[str, _Build]:
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise tr.ctx.invalid(errors.SQL_INSERT_NEEDS_COLUMNS)
    table, _ = _target(tr, schema.this)
    columns = [_writable(tr, table, ident.name, allow_key=True) for ident in schema.expressions]
    build = _Build(table, cells=len(columns))
    seen = set()
    for c in columns:
        if c.name in seen:
            raise tr.ctx.invalid(errors.insert_duplicate_column(c.name))
        seen.add(c.name)
    source = tree.expression
    head = f"INSERT INTO {quote(table.name)} ({', '.join(quote(c.name) for c in columns)})"
    key_at = _rowid_key_position(table, columns)
    if isinstance(source, exp.Values):
        rows = []
        for row in source.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            if len(items) != len(columns):
                raise tr.ctx.invalid(errors.insert_column_count(len(items), len(columns)))
            sqls = [_value(tr, build, c, v, Scope()) for c, v in zip(columns, items, strict=False)]
            if key_at is not None:
                sqls[key_at] = dml_keys.wrap(sqls[key_at], table.name, columns[key_at].name)
            rows.append("(" + ", ".join(sqls) + ")")
        body = f"{head} VALUES {', '.join(rows)}"
    else:
        query = tr.compile_query(source, None)
        if len(query.columns) != len(columns):
            raise tr.ctx.invalid(errors.insert_column_count(len(query.columns), len(columns)))
        for c, out in zip(columns, query.columns, strict=False):
            _check_type(tr, table, c, Typed("", out.type))
        # "WHERE true" keeps SQLite from reading ON CONFLICT as a join constraint.
        body = f"{head} SELECT {_selected(key_at, table, columns)} FROM ({_named(query.sql, key_at, len(columns))}) WHERE true"
    if mode is not None:
        keys = ", ".join(quote(k) for k in table.key_names)
        # Only the columns named are updated; with the key alone the row is still "updated"
        # (counted and returned), as Spanner counts it.
        updates = [c.name for c in columns if c.name not in table.key_names] or list(table.key_names[:1])
        if mode == "UPDATE":
            sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in updates)
            body += f" ON CONFLICT ({keys}) DO UPDATE SET {sets}"
            if mark_updates:
                body += " WHERE ls_dml_mark_update()"
        else:
            body += f" ON CONFLICT ({keys}) DO NOTHING"
    return body, build


def _rowid_key_position(table: Table, columns: list[Column]) -> int | None:
    """Where the key of a rowid table (``sqlite_names.rowid_key``) is among ``columns``, else None.

    Left out without a DEFAULT, it would be NULL, which SQLite would turn into a new rowid:
    refused here with the error a NOT NULL column gives."""
    if not rowid_key(table):
        return None
    key = table.primary_key[0].column.lower()
    for i, c in enumerate(columns):
        if c.name.lower() == key:
            return i
    column = table.column(key)
    if column is not None and column.default is None:
        raise errors.null_in_not_null_column(table.name, column.name)
    return None  # its DEFAULT (a sequence) gives the key


def _named(query_sql: str, key_at: int | None, width: int) -> str:
    """The INSERT's source query; with a rowid key, its columns named by position (a compound
    takes its column names from its first, empty, arm), so the key can be checked."""
    if key_at is None:
        return query_sql
    names = ", ".join(f"NULL AS {_position(i)}" for i in range(width))
    return f"SELECT {names} WHERE 0 UNION ALL SELECT * FROM ({query_sql})"


def _selected(key_at: int | None, table: Table, columns: list[Column]) -> str:
    if key_at is None:
        return "*"
    return ", ".join(dml_keys.wrap(_position(i), table.name, c.name) if i == key_at else _position(i)
                     for i, c in enumerate(columns))


def _position(i: int) -> str:
    return quote(f"_ls_c{i}")


def _require_where(tr: Translator, tree: exp.Expression, verb: str) -> exp.Expression:
    where = tree.args.get("where")
    if where is None:
        raise tr.ctx.invalid(errors.dml_needs_where(verb))
    return where.this


def _update(tr: Translator, tree: exp.Update) -> tuple[str, _Build]:
    if tree.args.get("from") or tree.args.get("from_") or tree.args.get("joins"):
        raise tr.ctx.unsupported(errors.SQL_UPDATE_FROM)
    table, alias = _target(tr, tree.this)
    build = _Build(table)
    scope = Scope([table_source(table, alias)])
    cond_node = _require_where(tr, tree, "UPDATE")
    sets = []
    for assignment in tree.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise tr.ctx.invalid(errors.invalid_set_item(assignment.sql("bigquery")))
        target = assignment.this
        if target.table and target.table.lower() != alias.lower():
            raise tr.ctx.invalid(errors.unrecognized_name(target.table))
        column = _writable(tr, table, target.name, allow_key=False)
        sets.append(f"{quote(column.name)} = {_value(tr, build, column, assignment.expression, scope)}")
    cond = tr.expr(cond_node, scope)
    tr._require_bool(cond, "WHERE")
    build.cells = len(table.key_names) + len(sets)  # the key counts as written, as Spanner counts an update
    return f"UPDATE {quote(table.name)} AS {quote(alias)} SET {', '.join(sets)} WHERE {cond.sql}", build


def _delete(tr: Translator, tree: exp.Delete) -> tuple[str, _Build]:
    target = tree.this if isinstance(tree.this, exp.Table) else (tree.args.get("tables") or [None])[0]
    table, alias = _target(tr, target)
    scope = Scope([table_source(table, alias)])
    cond = tr.expr(_require_where(tr, tree, "DELETE"), scope)
    tr._require_bool(cond, "WHERE")
    return f"DELETE FROM {quote(table.name)} AS {quote(alias)} WHERE {cond.sql}", _Build(table)


def _then_return(tr: Translator, text: str, table: Table, kind: str) -> list[OutputColumn]:
    action = _WITH_ACTION.match(text)
    if action is not None:
        text = text[action.end():].strip()
    select = parse(preprocess(f"SELECT {text}"), tr.ctx.sql)
    if not isinstance(select, exp.Select) or select.args.get("from_"):
        raise tr.ctx.invalid(errors.invalid_then_return(text))
    # RETURNING sees the modified table only, by bare column names.
    scope = Scope([table_source(table, table.name, qualify=False)])
    items = tr._select_items(select, scope)
    for typed, _ in items:
        if typed.is_aggregate or "SELECT" in typed.sql.upper():
            raise tr.ctx.invalid(errors.SQL_THEN_RETURN_AGGREGATES)
    columns = _output_columns(items)
    if action is not None:
        # An INSERT OR UPDATE learns row by row which rows it updated (sql/dml_action.py).
        name = (action.group(1) or ACTION_COLUMN).strip("`")
        columns.append(OutputColumn(name, T.STRING, tr.ctx.fresh("action"), f"ls_dml_action({sql_string(kind)})"))
    return columns
