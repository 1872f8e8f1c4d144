"""Translating GoogleSQL scalar expressions (sqlglot trees) into typed SQLite text.

:class:`ExpressionTranslator` turns one expression node into a :class:`~.context.Typed`:
SQLite text producing the *stored* form of the value (``values.py``) and its Spanner
type. This module holds literals, names, parameters, coercion, CAST and the conditionals;
operators are in ``operators.py``, functions in ``function_handlers.py``; FROM/SELECT are in ``translator.py``, which subclasses
both. Anything not handled is an UNIMPLEMENTED error naming the construct.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("A", T.INT64),), (C.KeyPart("A"),))
    >>> translate_expression("MOD(A, 19) = 3", t, C.Catalog(tables=(t,)))
    '(("A" % 19) = 3)'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel import values
from ..datamodel.types import SpannerType, TypeCode
from ..datamodel.values import array_to_stored
from .casts import can_cast, cast_value
from .context import NOW_PARAM, CompiledQuery, Context, Typed
from .function_table import comparable, supertype
from .literals import clip, json_element_sql, spanner_type_of, sql_string, stored_literal_sql
from .scope import ResolveError, Scope
from .udf import UdfError, take_error

_COERCIBLE_FROM_STRING = (TypeCode.TIMESTAMP, TypeCode.DATE, TypeCode.NUMERIC, TypeCode.JSON, TypeCode.BYTES,
                          TypeCode.UUID, TypeCode.INTERVAL)
#: Numeric literals coerce to FLOAT32 (rounded), as GoogleSQL's literal coercion allows.
_FLOAT32_LITERAL_FROM = (TypeCode.INT64, TypeCode.FLOAT64)
#: (type of an untyped parameter's wire value, type the statement wants) pairs where the
#: wire value wins: a JSON number with a fraction (FLOAT64) must not be truncated to INT64.
_PARAM_KEEPS_WIRE_TYPE = frozenset({(TypeCode.FLOAT64, TypeCode.INT64)})


class ExpressionTranslator:
    """Scalar expressions; subclasses supply :meth:`compile_query` for subqueries."""

    ctx: Context
    #: Expression node class -> the method translating it; subclasses extend the table.
    handlers: ClassVar[dict[type[exp.Expression], Callable[[Any, Any, Scope], Typed]]] = {}

    def compile_query(self, node: exp.Expression, parent: Scope | None) -> CompiledQuery:
        raise NotImplementedError

    # --- dispatch -----------------------------------------------------------------------------

    def expr(self, node: exp.Expression, scope: Scope) -> Typed:
        handler = self.handlers.get(type(node))
        if handler is not None:
            return handler(self, node, scope)
        special = getattr(self, "function", None)
        if special is not None:
            result = special(node, scope)
            if result is not None:
                return result
        raise self.ctx.unsupported(errors.feature_expressions(type(node).__name__, clip(node)))

    # --- leaves -------------------------------------------------------------------------------

    def _column(self, node: exp.Column, scope: Scope) -> Typed:
        qualifier = node.table or None
        if node.args.get("db"):
            raise self.ctx.unsupported(errors.feature_path(clip(node)))
        try:
            col = scope.resolve(qualifier, node.name)
        except ResolveError as exc:
            raise self.ctx.invalid(str(exc)) from None
        if col.type is not None and col.type.code in T.NOT_ON_WIRE:
            raise errors.tokenlist_not_readable(col.name)
        return Typed(col.sql, col.type)

    def _literal(self, node: exp.Literal, scope: Scope) -> Typed:
        text = node.this
        if node.is_string:
            return Typed(sql_string(text), T.STRING, literal=text, is_string_literal=True)
        if re.fullmatch(r"\d+", text):
            value = int(text)
            if value > 2**63:
                raise self.ctx.invalid(errors.invalid_integer_literal(text))
            return Typed(text, T.INT64, literal=value)
        try:
            f = float(text)
        except ValueError:
            raise self.ctx.invalid(errors.invalid_literal(text)) from None
        return Typed(repr(f), T.FLOAT64, literal=f)

    def _raw_string(self, node: exp.RawString, scope: Scope) -> Typed:
        return Typed(sql_string(node.this), T.STRING, literal=node.this, is_string_literal=True)

    def _byte_string(self, node: exp.ByteString, scope: Scope) -> Typed:
        text = node.this
        # sqlglot decodes escapes (b'\xff') into code points < 256: one byte each.
        value = text.encode("latin-1") if all(ord(ch) < 256 for ch in text) else text.encode("utf-8")
        return Typed(stored_literal_sql(value), T.BYTES, literal=value)

    def _hex_string(self, node: exp.HexString, scope: Scope) -> Typed:
        value = int(node.this, 16)
        return Typed(str(value), T.INT64, literal=value)

    def _boolean(self, node: exp.Boolean, scope: Scope) -> Typed:
        return Typed("1" if node.this else "0", T.BOOL, literal=int(bool(node.this)))

    def _null(self, node: exp.Null, scope: Scope) -> Typed:
        return Typed("NULL", None, literal=None, is_null=True)

    def _parameter(self, node: exp.Parameter, scope: Scope) -> Typed:
        name = node.name.lower()
        t = self.ctx.param_types.get(name)
        if t is None:
            raise errors.unbound_parameter(self.ctx.sql, node.name)
        self.ctx.used_params.add(name)
        return Typed(":" + name, t)

    def _current_timestamp(self, node: exp.Expression, scope: Scope) -> Typed:
        if self.ctx.deterministic:
            return Typed("ls_current_timestamp()", T.TIMESTAMP)
        self.ctx.uses_now = True
        return Typed(":" + NOW_PARAM, T.TIMESTAMP)

    def _paren(self, node: exp.Paren, scope: Scope) -> Typed:
        inner = self.expr(node.this, scope)
        return Typed(f"({inner.sql})", inner.type, literal=inner.literal, is_null=inner.is_null,
                     is_string_literal=inner.is_string_literal, is_aggregate=inner.is_aggregate)

    # --- coercion -------------------------------------------------------------------------------

    def coerce(self, typed: Typed, target: SpannerType | None, node: exp.Expression | None = None) -> Typed:
        """``typed`` as ``target`` where GoogleSQL coerces implicitly (literals, INT64 -> FLOAT64)."""
        if target is None:
            return typed
        if isinstance(node, exp.Parameter) and node.name.lower() not in self.ctx.declared:
            if typed.type is not None and (typed.type.code, target.code) in _PARAM_KEEPS_WIRE_TYPE:
                return typed
            # An untyped parameter takes the type the statement needs; binding converts to it.
            self.ctx.expect_param(node.name.lower(), target)
            return Typed(typed.sql, target)
        if typed.type is None or typed.type.same_kind(target):
            return typed
        if target.is_array and typed.literal == ():  # [] fits every array type
            return Typed(typed.sql, target, literal=())
        if typed.is_string_literal and target.code in _COERCIBLE_FROM_STRING:
            if target.code == TypeCode.NUMERIC:  # a literal must be a NUMERIC as written, not rounded to one
                try:
                    values.canonical_numeric(typed.literal, exact=True)
                except values.ValueError_ as exc:
                    raise self.ctx.invalid(errors.numeric_literal_coercion(typed.literal, exc)) from None
            return self.constant_cast(typed, target)
        if target.code == TypeCode.FLOAT32 and typed.type.code in _FLOAT32_LITERAL_FROM and typed.is_literal:
            return self.constant_cast(typed, target)
        if typed.type.code == TypeCode.INT64 and target.code == TypeCode.FLOAT64:
            if typed.is_literal:
                return Typed(repr(float(typed.literal)), T.FLOAT64, literal=float(typed.literal))
            return Typed(f"CAST({typed.sql} AS REAL)", T.FLOAT64)
        if typed.type.code == TypeCode.INT64 and target.code == TypeCode.NUMERIC:
            return self.cast(typed, T.NUMERIC, safe=False)
        return typed

    def constant_cast(self, typed: Typed, target: SpannerType) -> Typed:
        assert typed.type is not None
        try:
            value = cast_value(typed.literal, typed.type.code.name, target.code.name, 0)
        except UdfError:
            raise self.ctx.invalid(errors.literal_cast_failed(typed.sql, target, take_error())) from None
        return Typed(stored_literal_sql(value), target, literal=value)

    def cast(self, typed: Typed, target: SpannerType, *, safe: bool) -> Typed:
        if typed.is_null:
            return Typed("NULL", target, literal=None, is_null=True)
        source = typed.type
        if source is None or source.same_kind(target):
            return Typed(typed.sql, target, literal=typed.literal)
        if target.is_array or source.is_array:
            raise self.ctx.invalid(errors.invalid_cast(source, target))
        if not can_cast(source.code.name, target.code.name):
            raise self.ctx.invalid(errors.invalid_cast(source.code.name, target.code.name))
        if typed.is_literal and not safe:
            return self.constant_cast(typed, target)
        if source.code == TypeCode.INT64 and target.code == TypeCode.FLOAT64:
            return Typed(f"CAST({typed.sql} AS REAL)", target)
        return Typed(f"ls_cast({typed.sql}, '{source.code.name}', '{target.code.name}', {int(safe)})", target)

    def _cast(self, node: exp.Cast, scope: Scope) -> Typed:
        target = spanner_type_of(node.args["to"], self.ctx)
        if isinstance(node.this, exp.Array) and target.is_array:
            return self.array_literal(node.this, scope, target.element)
        inner = self.expr(node.this, scope)
        return self.cast(inner, target, safe=isinstance(node, exp.TryCast) or bool(node.args.get("safe")))

    def _require_bool(self, typed: Typed, what: str) -> None:
        if typed.type is not None and typed.type.code != TypeCode.BOOL:
            raise self.ctx.invalid(errors.expects_bool(what, typed.type))

    # --- operators -------------------------------------------------------------------------------

    def pair(self, left_node: exp.Expression, right_node: exp.Expression, scope: Scope, op: str) -> tuple[Typed, Typed]:
        return self.pair_typed(left_node, right_node, self.expr(left_node, scope), self.expr(right_node, scope), op)

    def pair_typed(self, left_node: exp.Expression, right_node: exp.Expression, left: Typed, right: Typed,
                   op: str) -> tuple[Typed, Typed]:
        """:meth:`pair` for operands already translated: coerce literals and parameters, check the types."""
        left = self.coerce(left, right.type, left_node) if left.is_string_literal or isinstance(left_node, exp.Parameter) else left
        right = self.coerce(right, left.type, right_node)
        if not comparable(left.type, right.type):
            raise self.ctx.invalid(errors.operator_signature(op, left.type, right.type))
        return left, right

    # --- conditionals -----------------------------------------------------------------------------

    def unify(self, values: list[Typed], what: str) -> tuple[list[Typed], SpannerType | None]:
        try:
            common = supertype([v.type for v in values])
        except TypeError as exc:
            raise self.ctx.invalid(errors.no_common_supertype(what, exc)) from None
        return [self.coerce(v, common) for v in values], common

    def _case(self, node: exp.Case, scope: Scope) -> Typed:
        operand = self.expr(node.this, scope) if node.this is not None else None
        whens: list[tuple[Typed, exp.Expression]] = []
        for branch in node.args.get("ifs") or []:
            cond = self.expr(branch.this, scope)
            if operand is not None:
                cond = self.coerce(cond, operand.type, branch.this)
            whens.append((cond, branch.args["true"]))
        results = [self.expr(value, scope) for _, value in whens]
        default = node.args.get("default")
        if default is not None:
            results.append(self.expr(default, scope))
        results, common = self.unify(results, "CASE")
        parts = ["CASE"] + ([operand.sql] if operand is not None else [])
        for (cond, _), result in zip(whens, results, strict=False):
            parts.append(f"WHEN {cond.sql} THEN {result.sql}")
        if default is not None:
            parts.append(f"ELSE {results[-1].sql}")
        parts.append("END")
        return Typed(" ".join(parts), common)

    def _if(self, node: exp.If, scope: Scope) -> Typed:
        cond = self.expr(node.this, scope)
        self._require_bool(cond, "IF")
        branches = [self.expr(node.args["true"], scope)]
        if node.args.get("false") is not None:
            branches.append(self.expr(node.args["false"], scope))
        branches, common = self.unify(branches, "IF")
        otherwise = branches[1].sql if len(branches) > 1 else "NULL"
        return Typed(f"CASE WHEN {cond.sql} THEN {branches[0].sql} ELSE {otherwise} END", common)

    def _coalesce(self, node: exp.Coalesce, scope: Scope) -> Typed:
        args, common = self.unify([self.expr(e, scope) for e in [node.this, *node.expressions]], "COALESCE")
        if len(args) == 1:
            return Typed(args[0].sql, common)
        return Typed(f"coalesce({', '.join(a.sql for a in args)})", common)

    def _greatest(self, node: exp.Expression, scope: Scope) -> Typed:
        args, common = self.unify([self.expr(e, scope) for e in [node.this, *node.expressions]], "GREATEST/LEAST")
        fn = "max" if isinstance(node, exp.Greatest) else "min"
        if len(args) == 1:
            return Typed(args[0].sql, common)
        return Typed(f"{fn}({', '.join(a.sql for a in args)})", common)

    def _subquery(self, node: exp.Subquery, scope: Scope) -> Typed:
        query = self.compile_query(node.this, scope)
        if len(query.columns) != 1:
            raise self.ctx.invalid(errors.SQL_SCALAR_SUBQUERY_COLUMNS)
        return Typed(f"({query.sql})", query.columns[0].type)

    def _exists(self, node: exp.Exists, scope: Scope) -> Typed:
        query = self.compile_query(node.this.this if isinstance(node.this, exp.Subquery) else node.this, scope)
        return Typed(f"(EXISTS ({query.sql}))", T.BOOL)

    # --- arrays --------------------------------------------------------------------------------------

    def array_literal(self, node: exp.Array, scope: Scope, element: SpannerType | None = None) -> Typed:
        items = [self.expr(e, scope) for e in node.expressions]
        items, common = self.unify(items, "array elements")
        element = element or common or T.INT64
        items = [self.coerce(i, element) for i in items]
        if all(i.is_literal for i in items):
            literal = () if not items else _NOT_EMPTY
            return Typed(sql_string(array_to_stored([i.literal for i in items], element)), T.array_of(element), literal=literal)
        return Typed(f"json_array({', '.join(json_element_sql(i) for i in items)})", T.array_of(element))


_NOT_EMPTY = object()


ExpressionTranslator.handlers = {
    exp.Column: ExpressionTranslator._column,
    exp.Literal: ExpressionTranslator._literal,
    exp.RawString: ExpressionTranslator._raw_string,
    exp.ByteString: ExpressionTranslator._byte_string,
    exp.HexString: ExpressionTranslator._hex_string,
    exp.Boolean: ExpressionTranslator._boolean,
    exp.Null: ExpressionTranslator._null,
    exp.Parameter: ExpressionTranslator._parameter,
    exp.CurrentTimestamp: ExpressionTranslator._current_timestamp,
    exp.Paren: ExpressionTranslator._paren,
    exp.Cast: ExpressionTranslator._cast,
    exp.TryCast: ExpressionTranslator._cast,
    exp.Case: ExpressionTranslator._case,
    exp.If: ExpressionTranslator._if,
    exp.Coalesce: ExpressionTranslator._coalesce,
    exp.Greatest: ExpressionTranslator._greatest,
    exp.Least: ExpressionTranslator._greatest,
    exp.Subquery: ExpressionTranslator._subquery,
    exp.Exists: ExpressionTranslator._exists,
}
