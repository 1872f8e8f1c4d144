"""Translating GoogleSQL's ARRAY functions (ARRAY_TO_STRING, ARRAY_SLICE, ARRAY_INCLUDES...).

The rows of :mod:`.function_table` name these methods; each checks its arguments' types
and calls the matching function of :mod:`.array_functions` with the element's storage code.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("A", T.STRING), C.Column("B", T.STRING)), (C.KeyPart("A"),))
    >>> translate_expression('ARRAY_TO_STRING([A, B], " ")', t, C.Catalog(tables=(t,)))
    'ls_array_to_string(json_array("A", "B"), \\' \\', NULL, 0, \\'STRING\\')'
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from ..storage.sqlite_names import quote
from .call_args import CallTranslator, positional
from .context import Typed
from .function_table import ROWS_BY_NAME, function_name
from .literals import element_sql, json_element_sql
from .scope import Scope, Source, SourceColumn

#: Element types ARRAY_MIN / ARRAY_MAX order (GoogleSQL: the orderable types).
_ORDERABLE = frozenset({TypeCode.INT64, TypeCode.FLOAT64, TypeCode.FLOAT32, TypeCode.NUMERIC, TypeCode.STRING,
                        TypeCode.BYTES, TypeCode.DATE, TypeCode.TIMESTAMP, TypeCode.BOOL, TypeCode.UUID})


class ArrayTranslator(CallTranslator):
    """The ARRAY function handlers."""

    def array_arg(self, node: exp.Expression, scope: Scope, call: exp.Expression, *others: Typed) -> Typed:
        """``node`` translated, which must be an ARRAY (or a NULL) for the function ``call``."""
        typed = self.expr(node, scope)
        if typed.type is not None and not typed.type.is_array:
            raise self.ctx.invalid(errors.function_signature(function_name(call), [typed.type, *(o.type for o in others)]))
        return typed

    def _element(self, arr: Typed) -> SpannerType:
        return arr.type.element if arr.type is not None and arr.type.element is not None else T.INT64

    def _code(self, arr: Typed) -> str:
        return self._element(arr).storage_code.name

    def _array_to_string(self, node: exp.Expression, scope: Scope) -> Typed:
        args = positional(node, "this", "expression", "null")
        self.check_arity(ROWS_BY_NAME["ARRAY_TO_STRING"], len(args))
        arr = self.array_arg(args[0], scope, node)
        element = self._element(arr)
        if element.code not in (TypeCode.STRING, TypeCode.BYTES):
            raise self.ctx.invalid(errors.function_signature("ARRAY_TO_STRING", [arr.type]))
        rest = [self.coerce(self.expr(a, scope), element.without_length(), a) for a in args[1:]]
        null_text = rest[1].sql if len(rest) > 1 else "NULL"
        result = T.BYTES if element.code == TypeCode.BYTES else T.STRING
        return Typed(f"ls_array_to_string({arr.sql}, {rest[0].sql}, {null_text}, {int(len(rest) > 1)}, "
                     f"'{element.storage_code.name}')", result)

    def _array_concat(self, node: exp.Expression, scope: Scope) -> Typed:
        arrays = [self.array_arg(a, scope, node) for a in positional(node, "this", "expressions")]
        arrays, common = self.unify(arrays, "ARRAY_CONCAT")
        return Typed(f"ls_array_concat({', '.join(a.sql for a in arrays)})", common)

    def _array_reverse(self, node: exp.Expression, scope: Scope) -> Typed:
        arr = self.array_arg(node.this, scope, node)
        return Typed(f"ls_array_reverse({arr.sql})", arr.type)

    def _array_end(self, node: exp.Expression, scope: Scope) -> Typed:
        arr = self.array_arg(node.this, scope, node)
        which = "FIRST" if isinstance(node, exp.ArrayFirst) else "LAST"
        return Typed(f"ls_array_end({arr.sql}, '{which}', '{self._code(arr)}')", self._element(arr))

    def _array_includes(self, node: exp.Expression, scope: Scope) -> Typed:
        name = function_name(node)
        args = positional(node)
        self.check_arity(ROWS_BY_NAME[name], len(args))
        arr = self.array_arg(args[0], scope, node)
        if name == "ARRAY_INCLUDES":
            value = self.coerce(self.expr(args[1], scope), self._element(arr), args[1])
            search, mode = f"json_array({json_element_sql(value)})", "ONE"
        else:
            values = self.array_arg(args[1], scope, node, arr)
            search, mode = values.sql, name.removeprefix("ARRAY_INCLUDES_")
        return Typed(f"ls_array_includes({arr.sql}, {search}, '{mode}')", T.BOOL)

    def _array_is_distinct(self, node: exp.Expression, scope: Scope) -> Typed:
        args = positional(node)
        self.check_arity(ROWS_BY_NAME["ARRAY_IS_DISTINCT"], len(args))
        arr = self.array_arg(args[0], scope, node)
        return Typed(f"ls_array_is_distinct({arr.sql})", T.BOOL)

    def _array_min_max(self, node: exp.Expression, scope: Scope) -> Typed:
        arr = self.array_arg(node.this, scope, node)
        element = self._element(arr)
        if element.code not in _ORDERABLE:
            raise self.ctx.invalid(errors.function_signature(function_name(node), [arr.type]))
        which = "MIN" if isinstance(node, exp.ArrayMin) else "MAX"
        return Typed(f"ls_array_min_max({arr.sql}, '{which}', '{element.storage_code.name}')", element)

    def _array_slice(self, node: exp.Expression, scope: Scope) -> Typed:
        args = positional(node, "this", "start", "end")
        self.check_arity(ROWS_BY_NAME["ARRAY_SLICE"], len(args))
        arr = self.array_arg(args[0], scope, node)
        start, end = (self.coerce(self.expr(a, scope), T.INT64, a) for a in args[1:])
        return Typed(f"ls_array_slice({arr.sql}, {start.sql}, {end.sql})", arr.type)

    def _generate_date_array(self, node: exp.Expression, scope: Scope) -> Typed:
        start, end = (self._date_value(node.args[k], scope) for k in ("start", "end"))
        step = node.args.get("step")
        amount, unit = "1", "DAY"
        if isinstance(step, exp.Interval):
            amount = self._step_amount(step.this, scope)
            unit = (step.args["unit"].name if step.args.get("unit") is not None else "DAY").upper()
        return Typed(f"ls_generate_date_array({start.sql}, {end.sql}, {amount}, '{unit}')", T.array_of(T.DATE))

    def _date_value(self, node: exp.Expression, scope: Scope) -> Typed:
        typed = self.expr(node, scope)
        return self.coerce(typed, T.DATE, node) if typed.is_string_literal else typed

    def _step_amount(self, node: exp.Expression, scope: Scope) -> str:
        # sqlglot writes INTERVAL 2 MONTH's amount as the string '2'.
        if isinstance(node, exp.Literal) and node.is_string and node.this.strip().lstrip("-").isdigit():
            return str(int(node.this))
        return self.coerce(self.expr(node, scope), T.INT64, node).sql

    def _array_lambda(self, node: exp.Expression, scope: Scope) -> Typed:
        """ARRAY_FILTER / ARRAY_TRANSFORM(array, e -> ... or (e, i) -> ...): a subquery over the elements."""
        name = function_name(node)
        args = positional(node, "this", "expression")
        self.check_arity(ROWS_BY_NAME[name], len(args))
        if not isinstance(args[1], exp.Lambda) or not 1 <= len(args[1].expressions) <= 2:
            raise self.ctx.invalid(errors.function_signature(name, [self.expr(args[0], scope).type, "a lambda"]))
        if self.ctx.deterministic:  # SQLite allows no subquery in a generated column or CHECK
            raise self.ctx.unsupported(errors.feature_function(name + " in a generated column, DEFAULT or CHECK"))
        arr = self.array_arg(args[0], scope, node)
        element = self._element(arr)
        lam = args[1]
        params = [p.name for p in lam.expressions]
        internal = self.ctx.fresh("lambda")
        inner = Scope(parent=scope)
        value = SourceColumn(params[0], element, element_sql(f"{quote(internal)}.value", element))
        inner.sources.append(Source(params[0], [], value_column=value))
        if len(params) == 2:
            inner.sources.append(Source(params[1], [], value_column=SourceColumn(params[1], T.INT64, f"{quote(internal)}.key")))
        lowered = {p.lower() for p in params}
        body_node = lam.this.transform(
            lambda n: exp.column(n.name) if isinstance(n, exp.Identifier) and n.name.lower() in lowered
            and not isinstance(n.parent, exp.Column) else n)
        body = self.expr(body_node, inner)
        rows = f"(SELECT * FROM json_each({arr.sql}) ORDER BY key) AS {quote(internal)}"
        if name == "ARRAY_FILTER":
            self._require_bool(body, name)
            kept = json_element_sql(Typed(value.sql, element))
            sql = f"(SELECT json_group_array({kept}) FROM {rows} WHERE {body.sql})"
            result = arr.type
        else:
            sql = f"(SELECT json_group_array({json_element_sql(body)}) FROM {rows})"
            result = T.array_of(body.type or T.INT64)
        return Typed(f"(CASE WHEN {arr.sql} IS NULL THEN NULL ELSE coalesce({sql}, '[]') END)", result)
