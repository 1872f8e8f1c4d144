"""Translating GoogleSQL operators: comparisons, AND/OR/NOT, IS, IN, BETWEEN, LIKE, arithmetic, ||.

:class:`OperatorTranslator` adds these to the leaves, casts and conditionals of
:class:`~.expressions.ExpressionTranslator`; each operator checks its operand types as
GoogleSQL does ("No matching signature for operator ...").

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("A", T.INT64), C.Column("S", T.STRING)), (C.KeyPart("A"),))
    >>> print(translate_expression("A BETWEEN 1 AND 3 AND S != 'x'", t, C.Catalog(tables=(t,))))
    (("A" BETWEEN 1 AND 3) AND ("S" != 'x'))
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from . import interval_functions
from .context import Typed
from .expressions import ExpressionTranslator
from .function_table import comparable, has_comparison, supertype
from .literals import clip, element_sql
from .scope import Scope

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
    exp.NullSafeEQ: "IS", exp.NullSafeNEQ: "IS NOT",
}
_ARITHMETIC: dict[type[exp.Expression], str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*"}
_NUMERIC_CODES = (TypeCode.INT64, TypeCode.FLOAT64, TypeCode.NUMERIC, TypeCode.FLOAT32)


class OperatorTranslator(ExpressionTranslator):
    """Operators over the scalar expressions of :class:`ExpressionTranslator`."""

    def _comparison(self, node: exp.Expression, scope: Scope) -> Typed:
        op = _COMPARISONS[type(node)]
        left, right = self.pair(node.this, node.expression, scope, op)
        self._require_comparison(op, left, right)
        if interval_functions.involves_interval(left, right):
            lsql, rsql = interval_functions.comparison_operands(left, right)
        else:
            lsql, rsql = _numeric_operands(left, right, op)
        return Typed(f"({lsql} {op} {rsql})", T.BOOL, is_aggregate=left.is_aggregate or right.is_aggregate)

    def _logical(self, node: exp.Expression, scope: Scope) -> Typed:
        op = "AND" if isinstance(node, exp.And) else "OR"
        left, right = self.expr(node.this, scope), self.expr(node.expression, scope)
        for side in (left, right):
            self._require_bool(side, op)
        return Typed(f"({left.sql} {op} {right.sql})", T.BOOL)

    def _not(self, node: exp.Not, scope: Scope) -> Typed:
        inner_node = node.this
        # "x IS NOT NULL" (not "NOT (x IS NULL)") keeps SQLite able to prove that a
        # NULL_FILTERED partial index is usable.
        if isinstance(inner_node, exp.Is):
            return self._is(inner_node, scope, negate=True)
        if isinstance(inner_node, exp.In):
            return self._in(inner_node, scope, negate=True)
        if isinstance(inner_node, exp.Between):
            return self._between(inner_node, scope, negate=True)
        inner = self.expr(inner_node, scope)
        self._require_bool(inner, "NOT")
        return Typed(f"(NOT {inner.sql})", T.BOOL)

    def _is(self, node: exp.Is, scope: Scope, negate: bool = False) -> Typed:
        subject = self.expr(node.this, scope)
        target = node.expression
        keyword = "IS NOT" if negate else "IS"
        if isinstance(target, exp.Null):
            return Typed(f"({subject.sql} {keyword} NULL)", T.BOOL)
        if isinstance(target, exp.Boolean):
            self._require_bool(subject, "IS TRUE/FALSE")
            return Typed(f"({subject.sql} {keyword} {1 if target.this else 0})", T.BOOL)
        raise self.ctx.unsupported(errors.feature_is(clip(target)))

    def _in(self, node: exp.In, scope: Scope, negate: bool = False) -> Typed:
        subject_node = node.this
        subject = self.expr(subject_node, scope)
        op = "NOT IN" if negate else "IN"
        if node.args.get("unnest") is not None:
            unnest = node.args["unnest"]
            arr_node = unnest.expressions[0]
            arr = self.expr(arr_node, scope)
            if isinstance(arr_node, exp.Parameter) and subject.type is not None:
                arr = self.coerce(arr, T.array_of(subject.type), arr_node)
            if arr.type is not None and not arr.type.is_array:
                raise self.ctx.invalid(errors.unnest_not_array(arr.type))
            element = arr.type.element if arr.type is not None else None
            if subject.is_literal and element is not None:  # 'ROCK' IN UNNEST(genres): the literal takes the element type
                subject = self.coerce(subject, element, subject_node)
            if not comparable(subject.type, element):
                raise self.ctx.invalid(errors.in_unnest_signature(subject.type, arr.type))
            self._require_comparison(op, subject)
            return Typed(f"({subject.sql} {op} (SELECT {element_sql('value', element)} FROM json_each({arr.sql})))", T.BOOL)
        if node.args.get("query") is not None:
            query = self.compile_query(node.args["query"].this if isinstance(node.args["query"], exp.Subquery) else node.args["query"], scope)
            if len(query.columns) != 1:
                raise self.ctx.invalid(errors.SQL_IN_SUBQUERY_COLUMNS)
            return Typed(f"({subject.sql} {op} ({query.sql}))", T.BOOL)
        self._require_comparison(op, subject)
        items = []
        for item_node in node.expressions:
            item = self.coerce(self.expr(item_node, scope), subject.type, item_node)
            if not comparable(subject.type, item.type):
                raise self.ctx.invalid(errors.in_signature(subject.type, item.type))
            items.append(item.sql)
        return Typed(f"({subject.sql} {op} ({', '.join(items)}))", T.BOOL)

    def _require_comparison(self, op: str, *operands: Typed) -> None:
        for operand in operands:
            if not has_comparison(operand.type):
                raise self.ctx.invalid(errors.comparison_undefined(op, operand.type))

    def _between(self, node: exp.Between, scope: Scope, negate: bool = False) -> Typed:
        subject = self.expr(node.this, scope)
        low = self.coerce(self.expr(node.args["low"], scope), subject.type, node.args["low"])
        high = self.coerce(self.expr(node.args["high"], scope), subject.type, node.args["high"])
        op = "NOT BETWEEN" if negate else "BETWEEN"
        return Typed(f"({subject.sql} {op} {low.sql} AND {high.sql})", T.BOOL)

    def _like(self, node: exp.Like, scope: Scope) -> Typed:
        subject, pattern = self.pair(node.this, node.expression, scope, "LIKE")
        negate = " NOT" if node.args.get("negate") else ""
        # Backslash escapes as in GoogleSQL; case-sensitive via PRAGMA case_sensitive_like.
        return Typed(f"({subject.sql}{negate} LIKE {pattern.sql} ESCAPE '\\')", T.BOOL)

    def _arithmetic(self, node: exp.Expression, scope: Scope) -> Typed:
        op = _ARITHMETIC[type(node)]
        left, right = self.expr(node.this, scope), self.expr(node.expression, scope)
        codes = {t.type.code for t in (left, right) if t.type is not None}
        if TypeCode.INTERVAL in codes or (codes == {TypeCode.TIMESTAMP} and op == "-"):
            # TIMESTAMP +/- INTERVAL, INTERVAL +/- INTERVAL, INTERVAL * INT64, TIMESTAMP - TIMESTAMP
            left, right = (self.coerce(t, T.TIMESTAMP, n) if t.is_string_literal else t
                           for t, n in ((left, node.this), (right, node.expression)))
            temporal = interval_functions.arithmetic_sql(op, left, right)
            if temporal is None:
                raise self.ctx.invalid(errors.operator_signature(op, left.type, right.type))
            return temporal
        left, right = self.pair_typed(node.this, node.expression, left, right, op)
        result = self._numeric_result(left, right, op)
        return Typed(f"({left.sql} {op} {right.sql})", result, is_aggregate=left.is_aggregate or right.is_aggregate)

    def _numeric_result(self, left: Typed, right: Typed, op: str) -> SpannerType | None:
        for side in (left, right):
            if side.type is not None and side.type.code not in _NUMERIC_CODES:
                raise self.ctx.invalid(errors.operator_signature(op, left.type, right.type))
        return supertype([left.type, right.type]) or T.INT64

    def _div(self, node: exp.Div, scope: Scope) -> Typed:
        left, right = self.pair(node.this, node.expression, scope, "/")
        result = self._numeric_result(left, right, "/")
        t = T.NUMERIC if result is not None and result.code == TypeCode.NUMERIC else T.FLOAT64
        return Typed(f"ls_fdiv({left.sql}, {right.sql})", t)

    def _mod(self, node: exp.Mod, scope: Scope) -> Typed:
        left, right = self.pair(node.this, node.expression, scope, "MOD")
        result = self._numeric_result(left, right, "MOD")
        if right.is_literal and isinstance(right.literal, int) and right.literal != 0 and left.type is not None and left.type.code == TypeCode.INT64:
            # SQLite's % has the sign of the dividend, like MOD; a constant divisor cannot be 0.
            return Typed(f"({left.sql} % {right.sql})", result)
        return Typed(f"ls_mod({left.sql}, {right.sql})", result)

    def _neg(self, node: exp.Neg, scope: Scope) -> Typed:
        inner = self.expr(node.this, scope)
        if inner.type is not None and inner.type.code == TypeCode.INTERVAL:
            return Typed(f"ls_interval_mul({inner.sql}, -1)", T.INTERVAL)
        if inner.type is not None and inner.type.code not in _NUMERIC_CODES:
            raise self.ctx.invalid(errors.negation_signature(inner.type))
        if inner.is_literal and isinstance(inner.literal, (int, float)):
            return Typed(f"(-{inner.sql})", inner.type, literal=-inner.literal)
        return Typed(f"(-{inner.sql})", inner.type)

    def concat(self, parts: list[Typed]) -> Typed:
        kinds = {p.type.code for p in parts if p.type is not None}
        if kinds - {TypeCode.STRING, TypeCode.BYTES} or len(kinds) > 1:
            raise self.ctx.invalid(errors.concat_signature(p.type for p in parts))
        if TypeCode.BYTES in kinds:
            return Typed(f"ls_concat({', '.join(p.sql for p in parts)})", T.BYTES)
        return Typed("(" + " || ".join(p.sql for p in parts) + ")", T.STRING)

    def _dpipe(self, node: exp.DPipe, scope: Scope) -> Typed:
        return self.concat([self.expr(node.this, scope), self.expr(node.expression, scope)])

    def _concat(self, node: exp.Concat, scope: Scope) -> Typed:
        return self.concat([self.expr(e, scope) for e in node.expressions])


def _numeric_operands(left: Typed, right: Typed, op: str) -> tuple[str, str]:
    """NUMERIC is stored as canonical text: equal texts are equal values, but ordering needs numbers."""
    codes = {t.code for t in (left.type, right.type) if t is not None}
    if TypeCode.NUMERIC in codes and (codes != {TypeCode.NUMERIC} or op not in ("=", "!=", "IS", "IS NOT")):
        return f"CAST({left.sql} AS REAL)", f"CAST({right.sql} AS REAL)"
    return left.sql, right.sql


OperatorTranslator.handlers = {
    **ExpressionTranslator.handlers,
    exp.And: OperatorTranslator._logical,
    exp.Or: OperatorTranslator._logical,
    exp.Not: OperatorTranslator._not,
    exp.Is: OperatorTranslator._is,
    exp.In: OperatorTranslator._in,
    exp.Between: OperatorTranslator._between,
    exp.Like: OperatorTranslator._like,
    exp.Div: OperatorTranslator._div,
    exp.Mod: OperatorTranslator._mod,
    exp.Neg: OperatorTranslator._neg,
    exp.DPipe: OperatorTranslator._dpipe,
    exp.Concat: OperatorTranslator._concat,
    **{cls: OperatorTranslator._comparison for cls in _COMPARISONS},
    **{cls: OperatorTranslator._arithmetic for cls in _ARITHMETIC},
}
