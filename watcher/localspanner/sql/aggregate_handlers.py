"""Translating aggregate calls: SQLite's own aggregates where they fit, ``ls_agg`` for the rest.

``COUNT(DISTINCT x)``, ``SUM(x)``, ``STRING_AGG(x, ',')`` and the like become SQLite's
aggregates. A call with ORDER BY or LIMIT inside, with HAVING MAX|MIN, or of an aggregate
SQLite lacks (ARRAY_CONCAT_AGG, BIT_AND/OR/XOR) becomes ``ls_agg``
(:mod:`.aggregate_functions`), which carries the value's type, the ordering keys and the
HAVING value.

Example:
    >>> from watcher.localspanner.sql.translator import translate_query
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("A", T.INT64), C.Column("B", T.STRING)), (C.KeyPart("A"),))
    >>> translate_query("SELECT ARRAY_AGG(B ORDER BY A DESC LIMIT 2) FROM T", C.Catalog(tables=(t,))).sql
    'SELECT ls_agg(\\'ARRAY\\', "T"."B", \\'STRING(MAX)\\', NULL, 2, 0, \\'\\', NULL, \\'\\', "T"."A", 1, \\'INT64\\') AS "_ls_c0" FROM "T" AS "T"'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from .aggregate_functions import IGNORE_NULLS
from .call_args import CallTranslator
from .context import Typed
from .function_rules import Fn
from .function_table import function_name
from .literals import json_element_sql, sql_string
from .scope import Scope

#: The ls_agg kind of an aggregate class, when the call needs ls_agg.
_KINDS: dict[type[exp.Expression], str] = {
    exp.ArrayAgg: "ARRAY", exp.GroupConcat: "STRING", exp.ArrayConcatAgg: "ARRAY_CONCAT", exp.Min: "MIN",
    exp.Max: "MAX", exp.Sum: "SUM", exp.Avg: "AVG", exp.Count: "COUNT", exp.AnyValue: "ANY_VALUE",
    exp.BitwiseAndAgg: "BIT_AND", exp.BitwiseOrAgg: "BIT_OR", exp.BitwiseXorAgg: "BIT_XOR",
    exp.Stddev: "STDDEV", exp.StddevSamp: "STDDEV", exp.Variance: "VARIANCE",
}
_NUMBERS = (TypeCode.INT64, TypeCode.FLOAT64, TypeCode.FLOAT32, TypeCode.NUMERIC)


@dataclass
class _Parts:
    """An aggregate's argument taken apart: DISTINCT x ORDER BY ... LIMIT n, x HAVING MAX y."""

    value: exp.Expression | None
    distinct: bool = False
    order: list[exp.Ordered] = field(default_factory=list)
    limit: exp.Expression | None = None
    having: exp.HavingMax | None = None

    @property
    def plain(self) -> bool:
        return not self.order and self.limit is None and self.having is None


def _parts(arg: exp.Expression | None) -> _Parts:
    parts = _Parts(arg)
    node = arg
    if isinstance(node, exp.Limit):
        parts.limit, node = node.expression, node.this
    if isinstance(node, exp.Order):
        parts.order, node = list(node.expressions), node.this
    if isinstance(node, exp.HavingMax):
        parts.having, node = node, node.this
    if isinstance(node, exp.Distinct):
        parts.distinct, node = True, node.expressions[0]
    parts.value = node
    return parts


class AggregateTranslator(CallTranslator):
    """Aggregate handlers; the plain ones use SQLite's aggregates."""

    def _aggregate_arg(self, node: exp.Expression, scope: Scope) -> tuple[str, Typed | None]:
        arg = node.this
        if isinstance(arg, exp.Star) or arg is None:
            return "", None
        if isinstance(arg, exp.Distinct):
            return "DISTINCT ", self.expr(arg.expressions[0], scope)
        return "", self.expr(arg, scope)

    def _aggregate(self, spec: Fn, node: exp.Expression, scope: Scope) -> Typed:
        parts = _parts(node.this)
        if not parts.plain:
            arg = self.expr(parts.value, scope) if parts.value is not None else None
            return self.ordered_aggregate(node, parts, arg, spec.result([arg.type if arg else None]), scope)
        distinct, arg = self._aggregate_arg(node, scope)
        if arg is None:
            return Typed(f"{spec.sql}(*)", spec.result([]), is_aggregate=True)
        return Typed(f"{spec.sql}({distinct}{arg.sql})", spec.result([arg.type]), is_aggregate=True)

    def ordered_aggregate(self, node: exp.Expression, parts: _Parts, arg: Typed | None, result: SpannerType | None,
                          scope: Scope, extra: str = "NULL", *, ignore_nulls: bool = False) -> Typed:
        """The call as ``ls_agg``: value, its type, separator, LIMIT, DISTINCT, HAVING, ordering keys."""
        kind = _KINDS.get(type(node))
        if kind is not None and ignore_nulls:
            kind += IGNORE_NULLS
        if kind is None or arg is None:
            raise self.ctx.unsupported(errors.feature_function(function_name(node) + " with ORDER BY, LIMIT or HAVING"))
        limit = "-1" if parts.limit is None else self.coerce(self.expr(parts.limit, scope), T.INT64, parts.limit).sql
        having, having_value, having_code = "''", "NULL", "''"
        if parts.having is not None:
            mark = self.expr(parts.having.expression, scope)
            having = "'MAX'" if parts.having.args.get("max") else "'MIN'"
            having_value, having_code = mark.sql, _code(mark.type)
        keys: list[str] = []
        for o in parts.order:
            key = self.expr(o.this, scope)
            keys += [key.sql, str(int(bool(o.args.get("desc")))), _code(key.type)]
        type_text = "''" if arg.type is None else sql_string(str(arg.type))
        args = [f"'{kind}'", arg.sql, type_text, extra, limit, str(int(parts.distinct)), having, having_value,
                having_code, *keys]
        return Typed(f"ls_agg({', '.join(args)})", result, is_aggregate=True)

    def _ignore_nulls(self, node: exp.IgnoreNulls, scope: Scope) -> Typed:
        """``ARRAY_AGG(x IGNORE NULLS ...)``: NULL values left out of the array."""
        inner = node.this
        if not isinstance(inner, exp.ArrayAgg):
            raise self.ctx.unsupported(errors.feature_function(function_name(inner) + " with IGNORE NULLS"))
        parts = _parts(inner.this)
        if parts.value is None:
            raise self.ctx.invalid(errors.SQL_ARRAY_AGG_NEEDS_ARGUMENT)
        arg = self.expr(parts.value, scope)
        return self.ordered_aggregate(inner, parts, arg, T.array_of(arg.type or T.INT64), scope, ignore_nulls=True)

    def _respect_nulls(self, node: exp.RespectNulls, scope: Scope) -> Typed:
        return self.expr(node.this, scope)  # ARRAY_AGG keeps NULLs anyway

    def _count_if(self, node: exp.CountIf, scope: Scope) -> Typed:
        cond = self.expr(node.this, scope)
        return Typed(f"count(CASE WHEN {cond.sql} THEN 1 END)", T.INT64, is_aggregate=True)

    def _string_agg(self, node: exp.GroupConcat, scope: Scope) -> Typed:
        parts = _parts(node.this)
        arg = self.expr(parts.value, scope) if parts.value is not None else None
        if arg is None or (arg.type is not None and arg.type.code not in (TypeCode.STRING, TypeCode.BYTES)):
            raise self.ctx.invalid(errors.function_signature("STRING_AGG", [arg.type if arg else None]))
        result = arg.type.without_length() if arg.type is not None else T.STRING
        separator = node.args.get("separator")
        sep = self.coerce(self.expr(separator, scope), result, separator).sql if separator is not None else "NULL"
        if not parts.plain or parts.distinct or result.code == TypeCode.BYTES:
            return self.ordered_aggregate(node, parts, arg, result, scope, extra=sep)
        return Typed(f"group_concat({arg.sql}, {sep if separator is not None else repr(',')})", result,
                     is_aggregate=True)

    def _array_agg(self, node: exp.ArrayAgg, scope: Scope) -> Typed:
        parts = _parts(node.this)
        if parts.value is None:
            raise self.ctx.invalid(errors.SQL_ARRAY_AGG_NEEDS_ARGUMENT)
        arg = self.expr(parts.value, scope)
        element = arg.type or T.INT64
        if not parts.plain:
            return self.ordered_aggregate(node, parts, arg, T.array_of(element), scope)
        distinct = "DISTINCT " if parts.distinct else ""
        return Typed(f"json_group_array({distinct}{json_element_sql(arg)})", T.array_of(element), is_aggregate=True)

    def _statistic(self, node: exp.Expression, scope: Scope) -> Typed:
        """STDDEV, STDDEV_SAMP, VARIANCE, VAR_SAMP: the sample statistics, as FLOAT64."""
        parts = _parts(node.this)
        arg = self.expr(parts.value, scope) if parts.value is not None else None
        if arg is None or (arg.type is not None and arg.type.code not in _NUMBERS):
            raise self.ctx.invalid(errors.function_signature(function_name(node), [arg.type if arg else None]))
        return self.ordered_aggregate(node, parts, arg, T.FLOAT64, scope)

    def _approx_count_distinct(self, node: exp.Expression, scope: Scope) -> Typed:
        arg = self.expr(node.this, scope)
        return Typed(f"count(DISTINCT {arg.sql})", T.INT64, is_aggregate=True)

    def _concat_or_bits_agg(self, node: exp.Expression, scope: Scope) -> Typed:
        parts = _parts(node.this)
        arg = self.expr(parts.value, scope) if parts.value is not None else None
        if arg is None:
            raise self.ctx.invalid(errors.function_arity(function_name(node), 0, "1"))
        want = TypeCode.ARRAY if isinstance(node, exp.ArrayConcatAgg) else TypeCode.INT64
        if arg.type is not None and arg.type.code != want:
            raise self.ctx.invalid(errors.function_signature(function_name(node), [arg.type]))
        return self.ordered_aggregate(node, parts, arg, arg.type, scope)


def _code(t: SpannerType | None) -> str:
    return "''" if t is None else f"'{t.storage_code.name}'"
