"""Translating GoogleSQL queries (SELECT, set operations, WITH) into SQLite, with result types.

The output is SQLite text with ``:name`` parameters whose values must be bound in
stored form, and one :class:`~.context.OutputColumn` per result column carrying the
Spanner name and type. Table hints become ``INDEXED BY``; INFORMATION_SCHEMA views are
read from their materialised tables; a user's view is inlined as a subquery of its definition.

Example:
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("A", T.INT64), C.Column("B", T.STRING)), (C.KeyPart("A"),))
    >>> q = translate_query("SELECT * FROM T WHERE A > @a", C.Catalog(tables=(t,)), {"a": T.INT64})
    >>> q.sql
    'SELECT "T"."A" AS "A", "T"."B" AS "B" FROM "T" AS "T" WHERE ("T"."A" > :a)'
    >>> [(c.name, str(c.type)) for c in q.columns]
    [('A', 'INT64'), ('B', 'STRING(MAX)')]
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType
from ..information import information_schema, spanner_sys
from ..schema.catalog import Catalog, Table
from ..storage.sqlite_names import KEY_INDEX_PREFIX, has_nullable_key, quote, rowid_key
from .context import INFORMATION_VIEW_PARAM_PREFIX, SYSTEM_VIEW_PARAM_PREFIX, CompiledQuery, Context, OutputColumn, Typed
from .function_table import supertype
from .literals import element_sql
from .protos import ProtoTranslator, rewrite_casts
from .scope import ResolveError, Scope, Source, SourceColumn
from .spanner_syntax import Preprocessed, preprocess

_SET_OPS = (exp.Union, exp.Intersect, exp.Except)
_SET_OP_KEYWORDS: dict[type[exp.Expression], str] = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}


def parse(pre: Preprocessed, original: str) -> exp.Expression:
    """Parse preprocessed GoogleSQL with sqlglot; syntax errors become INVALID_ARGUMENT."""
    try:
        trees = sqlglot.parse(rewrite_casts(pre.sql), read="bigquery")
    except (ParseError, TokenError) as exc:
        detail = str(exc).split("\n")[0]
        raise errors.sql_syntax_error(original, detail) from None
    found = [t for t in trees if isinstance(t, exp.Expression)]
    if len(found) != 1:
        raise errors.sql_syntax_error(original, errors.SQL_ONE_STATEMENT)
    return found[0]


class Translator(ProtoTranslator):
    """Translates one statement; holds its :class:`Context`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # --- queries -------------------------------------------------------------------------------

    def compile_query(self, node: exp.Expression, parent: Scope | None) -> CompiledQuery:
        if isinstance(node, exp.Subquery):
            if node.args.get("order") or node.args.get("limit"):
                inner = self.compile_query(node.this, parent)
                return self._wrap_modifiers(node, inner, parent)
            return self.compile_query(node.this, parent)
        frame = self._with(node, parent)
        try:
            if isinstance(node, exp.Select):
                query = self._select(node, parent)
            elif isinstance(node, _SET_OPS):
                query = self._set_operation(node, parent)
            else:
                raise self.ctx.unsupported(errors.feature_statements(type(node).__name__))
        finally:
            if frame is not None:
                self.ctx.ctes.pop()
        if frame:
            prefix = "WITH " + ", ".join(f"{quote(name)} AS ({sql})" for name, sql in frame)
            query = CompiledQuery(prefix + " " + query.sql, query.columns)
        return query

    def _with(self, node: exp.Expression, parent: Scope | None) -> list[tuple[str, str]] | None:
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is None:
            return None
        if with_.args.get("recursive"):
            raise self.ctx.unsupported(errors.SQL_WITH_RECURSIVE)
        self.ctx.ctes.append({})
        out: list[tuple[str, str]] = []
        for cte in with_.expressions:
            query = self.compile_query(cte.this, parent)
            self.ctx.ctes[-1][cte.alias.lower()] = query
            out.append((cte.alias, query.sql))
        return out

    def _select(self, node: exp.Select, parent: Scope | None) -> CompiledQuery:
        kind = str(node.args.get("kind") or "").upper()
        if kind not in ("", "STRUCT"):
            raise self.ctx.unsupported(errors.feature_select_as(kind))
        scope = Scope(parent=parent)
        from_sql = self._from(node, scope)
        items = self._select_items(node, scope)
        # SELECT AS STRUCT: one anonymous column holding each row as a STRUCT value.
        columns = _output_columns([(self.struct_of(items), "")] if kind else items)
        select_sql = ", ".join(f"{c.expr_sql} AS {quote(c.sql_name)}" for c in columns)
        parts = ["SELECT", "DISTINCT" if node.args.get("distinct") else "", select_sql, from_sql]
        where = node.args.get("where")
        if where is not None:
            cond = self.expr(where.this, scope)
            self._require_bool(cond, "WHERE")
            parts.append(f"WHERE {cond.sql}")
        group = node.args.get("group")
        if group is not None:
            parts.append("GROUP BY " + ", ".join(self._group_term(g, scope, items) for g in group.expressions))
        having = node.args.get("having")
        if having is not None:
            parts.append(f"HAVING {self.expr(having.this, scope).sql}")
        parts.append(self._order_and_limit(node, scope, items, columns, compound=False))
        return CompiledQuery(" ".join(p for p in parts if p), tuple(columns))

    def _select_items(self, node: exp.Select, scope: Scope) -> list[tuple[Typed, str]]:
        items: list[tuple[Typed, str]] = []
        for e in node.expressions:
            star = e.this if isinstance(e, exp.Column) and isinstance(e.this, exp.Star) else e if isinstance(e, exp.Star) else None
            if star is not None:
                if star.args.get("except_") or star.args.get("except") or star.args.get("replace"):
                    raise self.ctx.unsupported(errors.SQL_STAR_EXCEPT_REPLACE)
                try:
                    cols = scope.star(e.table if isinstance(e, exp.Column) and e.table else None)
                except ResolveError as exc:
                    raise self.ctx.invalid(str(exc)) from None
                if not cols and not scope.sources:
                    raise self.ctx.invalid(errors.SQL_STAR_WITHOUT_FROM)
                items.extend((Typed(c.sql, c.type), c.name) for c in cols)
                continue
            if isinstance(e, exp.Dot) and isinstance(e.expression, exp.Star):  # struct_value.*
                items.extend(self.struct_star(e, scope))
            elif isinstance(e, exp.Alias):
                items.append((self.expr(e.this, scope), e.alias))
            elif isinstance(e, exp.Column):
                items.append((self.expr(e, scope), e.name))
            elif isinstance(e, exp.Dot):  # a field path (@p.f) is named after its last field
                items.append((self.expr(e, scope), e.expression.name))
            else:
                items.append((self.expr(e, scope), ""))
        return items

    def _group_term(self, g: exp.Expression, scope: Scope, items: list[tuple[Typed, str]]) -> str:
        if isinstance(g, exp.Literal) and not g.is_string:
            return g.this
        if isinstance(g, exp.Column) and not g.table:
            try:
                return self.expr(g, scope).sql
            except errors.SpannerError:
                alias = _find_alias(items, g.name)
                if alias is None:
                    raise
                return alias.sql
        return self.expr(g, scope).sql

    def _order_and_limit(self, node: exp.Expression, scope: Scope | None, items: list[tuple[Typed, str]],
                         columns: list[OutputColumn], *, compound: bool) -> str:
        parts: list[str] = []
        order = node.args.get("order")
        if order is not None:
            terms = []
            for o in order.expressions:
                terms.append(self._order_term(o, scope, items, columns, compound))
            parts.append("ORDER BY " + ", ".join(terms))
        limit, offset = node.args.get("limit"), node.args.get("offset")
        if limit is not None or offset is not None:
            limit_sql = self._count(limit.expression, scope) if limit is not None else "-1"
            parts.append(f"LIMIT {limit_sql}")
            if offset is not None:
                parts.append(f"OFFSET {self._count(offset.expression, scope)}")
        return " ".join(parts)

    def _count(self, node: exp.Expression, scope: Scope | None) -> str:
        typed = self.coerce(self.expr(node, scope or Scope()), T.INT64, node)
        if typed.type is not None and typed.type.code != T.TypeCode.INT64:
            raise self.ctx.invalid(errors.limit_not_int64(typed.type))
        return typed.sql

    def _order_term(self, o: exp.Ordered, scope: Scope | None, items: list[tuple[Typed, str]],
                    columns: list[OutputColumn], compound: bool) -> str:
        target = o.this
        if isinstance(target, exp.Literal) and not target.is_string:
            sql = target.this
        elif isinstance(target, exp.Column) and not target.table and _find_alias(items, target.name) is not None:
            found = _find_alias(items, target.name)
            assert found is not None
            sql = str(1 + [c.name.lower() for c in columns].index(target.name.lower())) if compound else found.sql
        elif compound:
            raise self.ctx.unsupported(errors.SQL_ORDER_BY_AFTER_SET_OP)
        else:
            sql = self.expr(target, scope or Scope()).sql
        desc = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        suffix = " DESC" if desc else ""
        # SQLite's defaults (NULLs first ascending, last descending) are Spanner's; only say otherwise.
        if nulls_first is not None and bool(nulls_first) == desc:
            suffix += " NULLS FIRST" if nulls_first else " NULLS LAST"
        return sql + suffix

    def _wrap_modifiers(self, node: exp.Expression, inner: CompiledQuery, parent: Scope | None) -> CompiledQuery:
        alias = self.ctx.fresh("q")
        items = [(Typed(f"{quote(alias)}.{quote(c.sql_name)}", c.type), c.name) for c in inner.columns]
        tail = self._order_and_limit(node, None, items, list(inner.columns), compound=True)
        return CompiledQuery(f"SELECT * FROM ({inner.sql}) AS {quote(alias)} {tail}", inner.columns)

    def _set_operation(self, node: exp.Expression, parent: Scope | None) -> CompiledQuery:
        distinct = node.args.get("distinct")
        keyword = _SET_OP_KEYWORDS[type(node)]
        if not distinct and keyword != "UNION":
            raise self.ctx.unsupported(errors.feature_all(keyword))
        op = keyword if distinct else "UNION ALL"
        left = self.compile_query(node.this, parent)
        right = self.compile_query(node.expression, parent)
        if len(left.columns) != len(right.columns):
            raise self.ctx.invalid(errors.set_op_column_count(op, len(left.columns), len(right.columns)))
        columns = []
        for lc, rc in zip(left.columns, right.columns, strict=False):
            try:
                t = supertype([lc.type, rc.type])
            except TypeError as exc:
                raise self.ctx.invalid(errors.set_op_incompatible_column(lc.name, op, exc)) from None
            columns.append(OutputColumn(lc.name, t, lc.sql_name))
        left_sql = _member_sql(node.this, left, wrap_set_ops=False)
        right_sql = _member_sql(node.expression, right, wrap_set_ops=True)
        items = [(Typed(quote(c.sql_name), c.type), c.name) for c in columns]
        tail = self._order_and_limit(node, None, items, columns, compound=True)
        return CompiledQuery(f"{left_sql} {op} {right_sql}" + (f" {tail}" if tail else ""), tuple(columns))

    # --- FROM ------------------------------------------------------------------------------------

    def _from(self, node: exp.Select, scope: Scope) -> str:
        from_ = node.args.get("from_") or node.args.get("from")
        if from_ is None:
            if node.args.get("joins"):
                raise self.ctx.invalid(errors.SQL_JOIN_WITHOUT_FROM)
            return ""
        parts = [self._from_item(from_.this, scope)]
        for join in node.args.get("joins") or []:
            parts.append(self._join(join, scope))
        return "FROM " + " ".join(parts)

    def _join(self, join: exp.Join, scope: Scope) -> str:
        before = len(scope.sources)
        item = self._from_item(join.this, scope)
        side = str(join.args.get("side") or "").upper()
        kind = str(join.args.get("kind") or "").upper()
        if kind in ("SEMI", "ANTI") or join.args.get("method"):
            raise self.ctx.unsupported(errors.feature_join(kind or join.args.get("method")))
        keyword = {"LEFT": "LEFT JOIN", "RIGHT": "RIGHT JOIN", "FULL": "FULL JOIN"}.get(side, "JOIN")
        using = join.args.get("using")
        if using:
            names = [u.name for u in using]
            for s in scope.sources[before:]:
                s.hidden = frozenset(n.lower() for n in names)
            return f"{keyword} {item} USING ({', '.join(quote(n) for n in names)})"
        on = join.args.get("on")
        if on is not None:
            cond = self.expr(on, scope)
            return f"{keyword} {item} ON {cond.sql}"
        if side:
            raise self.ctx.invalid(errors.join_needs_condition(side))
        return f"{keyword} {item}"

    def _from_item(self, item: exp.Expression, scope: Scope) -> str:
        if isinstance(item, exp.Table):
            return self._table(item, scope)
        if isinstance(item, exp.Subquery):
            query = self.compile_query(item.this, scope.parent)
            internal = item.alias or self.ctx.fresh("sub")
            cols = [SourceColumn(c.name, c.type, f"{quote(internal)}.{quote(c.sql_name)}") for c in query.columns]
            scope.sources.append(Source(item.alias or None, cols))  # unaliased: columns resolve by bare name
            return f"({query.sql}) AS {quote(internal)}"
        if isinstance(item, exp.Unnest):
            return self._unnest(item, scope)
        raise self.ctx.unsupported(errors.feature_in_from(type(item).__name__))

    def _table(self, item: exp.Table, scope: Scope) -> str:
        name, db = item.name, item.db
        if not db and "." in name:  # sqlglot's BigQuery dialect keeps INFORMATION_SCHEMA.X as one name
            db, name = name.rsplit(".", 1)
        alias = item.alias or name
        if isinstance(item.this, exp.Anonymous) or item.args.get("joins"):
            raise self.ctx.unsupported(errors.feature_from_item(item.sql("bigquery")))
        if db:
            return self._system_table(db, name, alias, scope)
        cte = self.ctx.cte(name) if not item.args.get("catalog") else None
        if cte is not None:
            cols = [SourceColumn(c.name, c.type, f"{quote(alias)}.{quote(c.sql_name)}") for c in cte.columns]
            scope.sources.append(Source(alias, cols))
            return f"{quote(name)} AS {quote(alias)}"
        view = self.ctx.catalog.view(name)
        if view is not None:
            return self._view(view.name, view.definition, alias, scope)
        table = self.ctx.catalog.table(name)
        if table is None:
            raise errors.query_table_not_found(name)
        scope.sources.append(table_source(table, alias))
        return f"{quote(table.name)} AS {quote(alias)}" + self._index_hint(table)

    def _view(self, name: str, definition: str, alias: str, scope: Scope) -> str:
        """A view in FROM: its query inlined as a subquery, typed by its own translation.

        The view's query sees the catalog only: the WITH names of the outer query are hidden.
        """
        if name.lower() in self.ctx.views_open:
            raise self.ctx.invalid(errors.view_reads_itself(name))
        tree = parse(preprocess(definition), definition)
        saved, self.ctx.ctes = self.ctx.ctes, []
        self.ctx.views_open.append(name.lower())
        try:
            query = self.compile_query(tree, None)
        finally:
            self.ctx.ctes = saved
            self.ctx.views_open.pop()
        internal = self.ctx.fresh("view")
        cols = [SourceColumn(c.name, c.type, f"{quote(internal)}.{quote(c.sql_name)}") for c in query.columns]
        scope.sources.append(Source(alias, cols))
        return f"({query.sql}) AS {quote(internal)}"

    def _index_hint(self, table: Table) -> str:
        hints = self.ctx.table_hints
        for i, (hinted, pairs) in enumerate(hints):
            if hinted == table.name.lower():
                del hints[i]
                index = pairs.get("FORCE_INDEX")
                if index is None:
                    return ""
                if index.upper() == "_BASE_TABLE":
                    return _base_table_hint(table)
                found = next((ix for ix in self.ctx.catalog.indexes_of(table.name) if ix.name.lower() == index.lower()), None)
                if found is None:
                    raise errors.unknown_index_in_hint(table.name, index)
                self.ctx.forced_indexes.append(found.name)
                return f" INDEXED BY {quote(found.name)}"
        return ""

    def _system_table(self, db: str, name: str, alias: str, scope: Scope) -> str:
        if db.upper() == spanner_sys.SCHEMA_NAME:
            return self._spanner_sys_table(db, name, alias, scope)
        if db.upper() != "INFORMATION_SCHEMA":
            raise errors.query_table_not_found(f"{db}.{name}")
        view = information_schema.views_of(self.ctx.catalog).get(name.upper())
        if view is None:
            raise errors.query_table_not_found(f"INFORMATION_SCHEMA.{name}")
        scope.sources.append(table_source(view, alias))
        if self.ctx.bound_information:
            self.ctx.information_views.add(name.upper())
            return _bound_rows(view, INFORMATION_VIEW_PARAM_PREFIX + name.upper(), alias)
        return f"{quote(information_schema.sqlite_table_name(view.name))} AS {quote(alias)}"

    def _spanner_sys_table(self, db: str, name: str, alias: str, scope: Scope) -> str:
        """A SPANNER_SYS table: its rows, computed when the query runs, arrive as one JSON parameter."""
        view = spanner_sys.VIEWS.get(name.upper())
        if view is None:
            raise self.ctx.unsupported(errors.feature_spanner_sys(db, name))
        self.ctx.system_views.add(view.name)
        scope.sources.append(table_source(view, alias))
        return _bound_rows(view, SYSTEM_VIEW_PARAM_PREFIX + view.name, alias)

    def _unnest(self, item: exp.Unnest, scope: Scope) -> str:
        if len(item.expressions) != 1:
            raise self.ctx.unsupported(errors.SQL_UNNEST_SEVERAL_ARRAYS)
        arr = self.expr(item.expressions[0], scope)
        if arr.type is not None and not arr.type.is_array:
            raise self.ctx.invalid(errors.unnest_not_array(arr.type))
        element = arr.type.element if arr.type is not None else None
        alias_node = item.args.get("alias")
        name = ""
        if alias_node is not None:
            name = alias_node.columns[0].name if alias_node.columns else alias_node.name
        internal = self.ctx.fresh("u")
        value = SourceColumn(name, element, element_sql(f"{quote(internal)}.value", element))
        scope.sources.append(Source(name or None, [], value_column=value))
        offset = item.args.get("offset")
        if isinstance(offset, exp.Expression):
            off = SourceColumn(offset.name, T.INT64, f"{quote(internal)}.key")
            scope.sources.append(Source(offset.name, [], value_column=off))
        return f"json_each({arr.sql}) AS {quote(internal)}"


def _bound_rows(view: Table, param: str, alias: str) -> str:
    """A system view whose rows arrive as one JSON parameter (an array of rows, each in column order)."""
    cols = ", ".join(f"json_extract(value, '$[{i}]') AS {quote(c.name)}" for i, c in enumerate(view.columns))
    return f"(SELECT {cols} FROM json_each(:{param})) AS {quote(alias)}"


def _base_table_hint(table: Table) -> str:
    """``FORCE_INDEX=_BASE_TABLE``: read the table's own key-ordered storage, never a secondary index.

    Without a hint SQLite may still pick a (partial) secondary index, and ``NOT INDEXED`` does not
    stop it on a WITHOUT ROWID table; naming the primary-key b-tree does.
    """
    if not table.primary_key:
        return " NOT INDEXED"
    if has_nullable_key(table):
        return f" INDEXED BY {quote(KEY_INDEX_PREFIX + table.name)}"
    if rowid_key(table):
        return " NOT INDEXED"  # the rowid b-tree is the table's key order
    return f" INDEXED BY {quote(f'sqlite_autoindex_{table.name}_1')}"


def table_source(table: Table, alias: str, *, qualify: bool = True) -> Source:
    """A FROM item over a catalog table; ``qualify`` False refers to columns by bare name."""
    prefix = quote(alias) + "." if qualify else ""
    return Source(alias, [SourceColumn(c.name, c.type, prefix + quote(c.name)) for c in table.columns],
                  hidden=frozenset(c.name.lower() for c in table.columns if c.hidden))


def _find_alias(items: list[tuple[Typed, str]], name: str) -> Typed | None:
    low = name.lower()
    hits = [t for t, n in items if n.lower() == low]
    return hits[0] if hits else None


def _output_columns(items: list[tuple[Typed, str]]) -> list[OutputColumn]:
    counts: dict[str, int] = {}
    for _, name in items:
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
    out = []
    for i, (typed, name) in enumerate(items):
        unique = name and counts[name.lower()] == 1 and not name.lower().startswith("_ls_")
        out.append(OutputColumn(name, typed.type, name if unique else f"_ls_c{i}", typed.sql))
    return out


def _member_sql(node: exp.Expression, query: CompiledQuery, *, wrap_set_ops: bool) -> str:
    inner = node.this if isinstance(node, exp.Subquery) else node
    needs_wrap = isinstance(node, exp.Subquery) and (node.args.get("order") or node.args.get("limit"))
    needs_wrap = needs_wrap or bool(inner.args.get("order") or inner.args.get("limit") or inner.args.get("with_"))
    needs_wrap = needs_wrap or (wrap_set_ops and isinstance(inner, _SET_OPS))
    return f"SELECT * FROM ({query.sql})" if needs_wrap else query.sql


@dataclass(frozen=True)
class QueryTranslation:
    """A translated query plus what translation learned (parameters used, expected types)."""

    sql: str
    columns: tuple[OutputColumn, ...]
    ctx: Context


def translate_query(sql: str, catalog: Catalog, param_types: dict[str, SpannerType] | None = None, *,
                    declared: frozenset[str] | None = None, bound_information: bool = False) -> QueryTranslation:
    """Translate a GoogleSQL query; ``param_types`` maps lower-case parameter names to types.

    ``bound_information``: INFORMATION_SCHEMA views read rows bound at execution (a role's filtered rows).
    """
    pre = preprocess(sql)
    tree = parse(pre, sql)
    types = dict(param_types or {})
    ctx = Context(catalog, sql, types, declared if declared is not None else frozenset(types),
                  table_hints=[(name, dict(pairs)) for name, pairs in pre.table_hints],
                  bound_information=bound_information)
    if not isinstance(tree, (exp.Select, exp.Subquery, *_SET_OPS)):
        raise errors.sql_invalid(sql, errors.SQL_EXPECTED_QUERY)
    query = Translator(ctx).compile_query(tree, None)
    return QueryTranslation(query.sql, query.columns, ctx)


def translate_default_expression(expr: str, table: Table, catalog: Catalog) -> str:
    """:func:`translate_expression` for a column DEFAULT, which may also call NEW_UUID() and the like."""
    return translate_expression(expr, table, catalog, volatile_ok=True)


def translate_expression(expr: str, table: Table, catalog: Catalog, *, volatile_ok: bool = False) -> str:
    """A GoogleSQL scalar expression over ``table``'s columns as SQLite SQL (generated columns, DEFAULTs).

    Only deterministic functions are used (unless ``volatile_ok``, for DEFAULTs);
    CURRENT_TIMESTAMP() becomes ``ls_current_timestamp()`` (the time of the running statement).
    """
    text = f"SELECT {expr}"
    tree = parse(preprocess(text), text)
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1 or tree.args.get("from_"):
        raise errors.sql_syntax_error(expr, errors.SQL_ONE_SCALAR_EXPRESSION)
    ctx = Context(catalog, expr, deterministic=True, volatile_ok=volatile_ok)
    scope = Scope([table_source(table, table.name, qualify=False)])
    return Translator(ctx).expr(tree.expressions[0], scope).sql
