"""Translating the string, math and NET functions that need more than a plain call.

LPAD/RPAD (one sqlglot node for both), SPLIT (its result's element type follows the
input), NORMALIZE (a mode keyword), LOG/LOG10, the SAFE_ arithmetic, the vector distances
and the NET functions (one node class, the name inside), each named by a row of
:mod:`.function_table`.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("S", T.STRING),), (C.KeyPart("S"),))
    >>> translate_expression("LPAD(S, 5, '*')", t, C.Catalog(tables=(t,)))
    'ls_pad("S", 5, \\'*\\', 1)'
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from .call_args import CallTranslator, positional
from .context import Typed
from .function_table import ROWS_BY_NAME, function_name
from .scope import Scope

#: NET.<name> -> its result type (the implementations are net_functions.NET).
_NET_RESULTS: dict[str, SpannerType] = {
    "HOST": T.STRING, "IP_FROM_STRING": T.BYTES, "SAFE_IP_FROM_STRING": T.BYTES, "IP_TO_STRING": T.STRING,
    "IP_NET_MASK": T.BYTES, "IP_TRUNC": T.BYTES, "IPV4_FROM_INT64": T.BYTES, "IPV4_TO_INT64": T.INT64,
}


#: SAFE_<op> sqlglot class -> the operation ls_safe_arithmetic applies.
_SAFE_OPS: dict[type[exp.Expression], str] = {
    exp.SafeAdd: "ADD", exp.SafeSubtract: "SUBTRACT", exp.SafeMultiply: "MULTIPLY", exp.SafeNegate: "NEGATE",
}
_NUMBERS = (TypeCode.INT64, TypeCode.FLOAT64, TypeCode.FLOAT32, TypeCode.NUMERIC)


class TextTranslator(CallTranslator):
    """String, math and NET handlers."""

    def _pad(self, node: exp.Pad, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        length = self.coerce(self.expr(node.expression, scope), T.INT64, node.expression)
        fill = node.args.get("fill_pattern")
        pattern = "NULL" if fill is None else self.coerce(self.expr(fill, scope), value.type, fill).sql
        return Typed(f"ls_pad({value.sql}, {length.sql}, {pattern}, {int(bool(node.args.get('is_left')))})",
                     value.type.without_length() if value.type is not None else T.STRING)

    def _split(self, node: exp.Split, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        kind = value.type.without_length() if value.type is not None else T.STRING
        delimiter = node.args.get("expression")
        delim_sql = "','" if delimiter is None else self.coerce(self.expr(delimiter, scope), kind, delimiter).sql
        if kind.code == TypeCode.BYTES and delimiter is None:
            delim_sql = "X'2C'"
        return Typed(f"ls_split({value.sql}, {delim_sql})", T.array_of(kind))

    def _normalize(self, node: exp.Normalize, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        form = node.args.get("form")
        mode = form.name.upper() if isinstance(form, exp.Expression) else "NFC"
        fn = "ls_normalize_and_casefold" if node.args.get("is_casefold") else "ls_normalize"
        return Typed(f"{fn}({value.sql}, '{mode}')", T.STRING)

    def _log(self, node: exp.Log, scope: Scope) -> Typed:
        # sqlglot keeps LOG(X, Y) as this=Y (the base), expression=X; LOG10(X) as this=10.
        value = self.coerce(self.expr(node.expression, scope), T.FLOAT64, node.expression)
        base = self.coerce(self.expr(node.this, scope), T.FLOAT64, node.this)
        return Typed(f"ls_log({value.sql}, {base.sql})", T.FLOAT64)

    def _net(self, node: exp.NetFunc, scope: Scope) -> Typed:
        name = function_name(node)
        short = name.removeprefix("NET.")
        row = ROWS_BY_NAME.get(name)
        if row is None or row.does is None or short not in _NET_RESULTS:
            raise self.ctx.unsupported(errors.feature_function(name))
        inner = node.this
        args = positional(inner, "this", "expression", "expressions")
        self.check_arity(row, len(args))
        sql = [self.expr(a, scope).sql for a in args]
        return Typed(f"ls_net('{short}', {', '.join(sql)})", _NET_RESULTS[short])

    def _safe_arithmetic(self, node: exp.Expression, scope: Scope) -> Typed:
        args = [self.expr(a, scope) for a in positional(node, "this", "expression")]
        args, common = self.unify(args, function_name(node))
        if common is not None and common.code not in _NUMBERS:
            raise self.ctx.invalid(errors.function_signature(function_name(node), [a.type for a in args]))
        result = T.FLOAT64 if common is not None and common.code == TypeCode.FLOAT32 else (common or T.INT64)
        second = args[1].sql if len(args) > 1 else "NULL"
        return Typed(f"ls_safe_arithmetic({args[0].sql}, {second}, '{_SAFE_OPS[type(node)]}', "
                     f"'{result.code.name}')", result)

    def _vector(self, node: exp.Expression, scope: Scope) -> Typed:
        name = function_name(node)
        args = [self.expr(a, scope) for a in positional(node, "this", "expression")]
        for a in args:
            element = a.type.element if a.type is not None and a.type.is_array else None
            if a.type is not None and (element is None or element.code not in _NUMBERS):
                raise self.ctx.invalid(errors.function_signature(name, [x.type for x in args]))
        return Typed(f"ls_vector({args[0].sql}, {args[1].sql}, '{name}')", T.FLOAT64)
