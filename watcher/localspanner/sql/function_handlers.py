"""Translating GoogleSQL function calls as the rows of function_table say; date/time and aggregates.

:meth:`FunctionTranslator.function` finds a call's row in :mod:`.function_table` and
evaluates it: a plain call of a SQLite function, one of the handler methods (here for
date/time and hashing; the aggregate, array, JSON and string ones in their own
modules), or UNIMPLEMENTED naming a refused function. It returns None for nodes that
are not calls, so the caller reports them as unsupported.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("S", T.STRING),), (C.KeyPart("S"),))
    >>> translate_expression("FARM_FINGERPRINT(S)", t, C.Catalog(tables=(t,)))
    'ls_farm_fingerprint("S")'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from .. import errors
from ..datamodel import intervals
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from ..storage.sqlite_names import quote
from . import interval_functions, sequence_functions
from .aggregate_handlers import AggregateTranslator
from .array_handlers import ArrayTranslator
from .context import NOW_PARAM, Typed
from .function_rules import Fn
from .function_table import BUILTIN, ROWS_BY_NAME, Function, function_name, row_for_node
from .json_handlers import JsonTranslator
from .literals import json_element_sql, stored_literal_sql
from .scope import Scope
from .text_handlers import TextTranslator
from .udf import UdfError, take_error

_TIME_TYPES = (TypeCode.TIMESTAMP, TypeCode.DATE, TypeCode.STRING)
#: Arguments sqlglot fills in itself when a call leaves them out: (class, key) -> the values' SQL
#: (the REGEXP_EXTRACT family's group: 1 when the pattern has a capturing group, else 0).
_SQLGLOT_DEFAULTS: dict[tuple[type[exp.Expression], str], frozenset[str]] = {
    (exp.RegexpExtractAll, "group"): frozenset({"0", "1"}),
    (exp.RegexpExtract, "group"): frozenset({"0", "1"}),
}


class FunctionTranslator(AggregateTranslator, ArrayTranslator, JsonTranslator, TextTranslator):
    def function(self, node: exp.Expression, scope: Scope) -> Typed | None:
        syntax = _SYNTAX.get(type(node))
        if syntax is not None:
            return syntax(self, node, scope)
        row = row_for_node(node)
        if row is None or row.does == BUILTIN:
            if isinstance(node, exp.Func):
                raise self.ctx.unsupported(errors.feature_function(function_name(node)))
            return None
        return self.evaluate(row, node, scope)

    def evaluate(self, row: Function, node: exp.Expression, scope: Scope) -> Typed:
        """``node`` evaluated as the table's ``row`` says: a plain call, a method, or refused."""
        if row.does is None or row.does == BUILTIN:
            raise self.ctx.unsupported(errors.feature_function(row.name))
        if isinstance(row.does, str):
            handler: Callable[[exp.Expression, Scope], Typed] = getattr(self, row.does)
            return handler(node, scope)
        if row.aggregate:
            return self._aggregate(row.does, node, scope)  # SQLite's aggregate, or ls_agg
        if isinstance(node, exp.Anonymous):
            args = [self.expr(e, scope) for e in node.expressions]
        else:
            self._refuse_unread_arguments(row, node)
            args = self._args(node, row.does.args, scope)
        self.check_arity(row, len(args))
        return self.call(row.does, args)

    def _refuse_unread_arguments(self, row: Function, node: exp.Expression) -> None:
        """UNIMPLEMENTED for an argument the row's call would drop (INSTR's position, say), never a silent wrong value."""
        assert isinstance(row.does, Fn)
        read = {k.lstrip("*") for k in row.does.args}
        for key, value in node.args.items():
            if isinstance(value, exp.Expression) and value.sql() in _SQLGLOT_DEFAULTS.get((type(node), key), ()):
                continue
            if key not in read and (isinstance(value, exp.Expression) or (isinstance(value, list) and value)):
                raise self.ctx.unsupported(errors.feature_function(f"{row.name} with its {key} argument"))

    def _args(self, node: exp.Expression, keys: tuple[str, ...], scope: Scope) -> list[Typed]:
        out: list[Typed] = []
        for key in keys:
            if key.startswith("*"):
                out.extend(self.expr(e, scope) for e in node.args.get(key[1:]) or [])
                continue
            value = node.args.get(key)
            if value is None:
                break  # trailing optional argument left out
            out.append(self.expr(value, scope))
        return out

    def call(self, spec: Fn, args: list[Typed], extra: tuple[str, ...] = ()) -> Typed:
        if self.ctx.deterministic and not spec.deterministic and not self.ctx.volatile_ok:
            raise self.ctx.invalid(errors.not_deterministic(spec.sql))
        sql_args = [a.sql for a in args] + list(spec.extra) + list(extra)
        return Typed(f"{spec.sql}({', '.join(sql_args)})", spec.result([a.type for a in args]),
                     is_aggregate=any(a.is_aggregate for a in args))

    def _anonymous(self, node: exp.Anonymous, scope: Scope) -> Typed:
        row = row_for_node(node)
        if row is None:
            raise self.ctx.unsupported(errors.feature_function(function_name(node)))
        return self.evaluate(row, node, scope)

    def _pending_commit_timestamp(self, node: exp.Expression, scope: Scope) -> Typed:
        raise errors.pending_commit_timestamp_misused()

    def _sequence_function(self, node: exp.Anonymous, scope: Scope) -> Typed:
        name = str(node.this).upper()
        args = node.expressions
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
            raise errors.sequence_argument_invalid(self.ctx.sql, name)
        return Typed(sequence_functions.translate(name, args[0].this, self.ctx.catalog), T.INT64)

    def _sha2(self, node: exp.SHA2Digest, scope: Scope) -> Typed:
        length = int(node.args["length"].this) if node.args.get("length") is not None else 256
        if length not in (256, 512):
            raise self.ctx.unsupported(errors.feature_sha2_length(length))
        return Typed(f"ls_sha{length}({self.expr(node.this, scope).sql})", T.BYTES)

    def _md5_hex(self, node: exp.MD5, scope: Scope) -> Typed:
        """TO_HEX(MD5(x)), which sqlglot reads as one node."""
        return Typed(f"ls_to_hex(ls_md5({self.expr(node.this, scope).sql}))", T.STRING)

    def _trim(self, node: exp.Trim, scope: Scope) -> Typed:
        subject = self.expr(node.this, scope)
        chars = self.expr(node.expression, scope).sql if node.args.get("expression") is not None else "NULL"
        mode = str(node.args.get("position") or "BOTH").upper()
        return Typed(f"ls_trim({subject.sql}, {chars}, '{mode}')", subject.type)

    def _safe_divide(self, node: exp.SafeDivide, scope: Scope) -> Typed:
        a, b = self.expr(node.this, scope), self.expr(node.expression, scope)
        return Typed(f"(CASE WHEN {b.sql} = 0 THEN NULL ELSE ls_fdiv({a.sql}, {b.sql}) END)", T.FLOAT64)

    def _is_nan(self, node: exp.IsNan, scope: Scope) -> Typed:
        return Typed(f"({self.expr(node.this, scope).sql} = 'NaN')", T.BOOL)

    # --- date and time ------------------------------------------------------------------------------

    def _unit(self, node: exp.Expression | None, default: str = "") -> str:
        if node is None:
            return default
        if isinstance(node, exp.WeekStart):
            return f"WEEK({node.name.upper()})"
        text = node.name if isinstance(node, (exp.Var, exp.Literal)) else node.sql("bigquery")
        return text.upper()

    def _zone(self, node: exp.Expression | None, scope: Scope) -> str:
        return "NULL" if node is None else self.expr(node, scope).sql

    def _amount(self, node: exp.Expression, scope: Scope) -> Typed:
        # sqlglot turns INTERVAL 45 SECOND into the string '45'.
        if isinstance(node, exp.Literal) and node.is_string and re.fullmatch(r"\s*-?\d+\s*", node.this):
            return Typed(str(int(node.this)), T.INT64, literal=int(node.this))
        amount = self.expr(node, scope)
        return self.coerce(amount, T.INT64, node)

    def _time_arg(self, node: exp.Expression, scope: Scope, want: SpannerType) -> Typed:
        typed = self.expr(node, scope)
        return self.coerce(typed, want, node) if typed.is_string_literal else typed

    def _timestamp_add(self, node: exp.Expression, scope: Scope) -> Typed:
        ts = self._time_arg(node.this, scope, T.TIMESTAMP)
        amount = self._amount(node.expression, scope)
        sign = "-" if isinstance(node, (exp.TimestampSub, exp.DateSub)) else ""
        unit = self._unit(node.args.get("unit"), "DAY")
        if ts.type is not None and ts.type.code == TypeCode.DATE:
            return Typed(f"ls_date_add({ts.sql}, {sign}({amount.sql}), '{unit}')", T.DATE)
        return Typed(f"ls_timestamp_add({ts.sql}, {sign}({amount.sql}), '{unit}')", T.TIMESTAMP)

    def _adddate(self, node: exp.Anonymous, scope: Scope) -> Typed:
        """ADDDATE / SUBDATE: DATE_ADD / DATE_SUB under other names."""
        name = str(node.this).upper()
        self.check_arity(ROWS_BY_NAME[name], len(node.expressions))
        value, step = node.expressions
        if not isinstance(step, exp.Interval):
            raise self.ctx.invalid(errors.function_signature(name, [self.expr(step, scope).type]))
        cls = exp.DateAdd if name == "ADDDATE" else exp.DateSub
        return self._timestamp_add(cls(this=value, expression=step.this, unit=step.args.get("unit")), scope)

    def _timestamp_diff(self, node: exp.Expression, scope: Scope) -> Typed:
        a = self._time_arg(node.this, scope, T.TIMESTAMP)
        b = self._time_arg(node.expression, scope, T.TIMESTAMP)
        unit = self._unit(node.args.get("unit"), "DAY")
        fn = "ls_date_diff" if isinstance(node, exp.DateDiff) else "ls_timestamp_diff"
        return Typed(f"{fn}({a.sql}, {b.sql}, '{unit}')", T.INT64)

    def _timestamp_trunc(self, node: exp.Expression, scope: Scope) -> Typed:
        ts = self._time_arg(node.this, scope, T.TIMESTAMP)
        unit = self._unit(node.args.get("unit"), "DAY")
        if isinstance(node, exp.DateTrunc) and (ts.type is None or ts.type.code == TypeCode.DATE):
            return Typed(f"ls_date_trunc({ts.sql}, '{unit}')", T.DATE)
        return Typed(f"ls_timestamp_trunc({ts.sql}, '{unit}', {self._zone(node.args.get('zone'), scope)})", T.TIMESTAMP)

    def _extract(self, node: exp.Extract, scope: Scope) -> Typed:
        part = self._unit(node.this)
        target = node.expression
        zone = "NULL"
        if isinstance(target, exp.AtTimeZone):
            zone = self.expr(target.args["zone"], scope).sql
            target = target.this
        value = self.expr(target, scope)
        if value.type is not None and value.type.code == TypeCode.INTERVAL:
            return Typed(f"ls_interval_extract('{part}', {value.sql})", T.INT64)
        return Typed(f"ls_extract('{part}', {value.sql}, {zone})", T.DATE if part == "DATE" else T.INT64)

    def _interval(self, node: exp.Interval, scope: Scope) -> Typed:
        """``INTERVAL n UNIT`` and ``INTERVAL 'Y-M D H:M:S' YEAR TO SECOND`` as INTERVAL values."""
        unit = node.args.get("unit")
        if isinstance(unit, exp.IntervalSpan):
            text = self.coerce(self.expr(node.this, scope), T.STRING, node.this)
            return Typed(f"ls_interval_from_text({text.sql}, '{unit.sql('bigquery')}')", T.INTERVAL)
        amount = self._amount(node.this, scope)
        name = self._unit(unit, "DAY")
        if amount.is_literal and name in intervals.UNITS:
            try:
                return Typed(interval_functions.literal_sql(amount.literal, name), T.INTERVAL)
            except UdfError:
                raise self.ctx.invalid(take_error() or "") from None
        return Typed(f"ls_interval({amount.sql}, '{name}')", T.INTERVAL)

    def _make_interval(self, node: exp.Expression, scope: Scope) -> Typed:
        parts = []
        for key in ("year", "month", "day", "hour", "minute", "second"):
            arg = node.args.get(key)
            if isinstance(arg, exp.Kwarg):
                arg = arg.expression
            parts.append("0" if arg is None else self.coerce(self.expr(arg, scope), T.INT64, arg).sql)
        return Typed(f"ls_make_interval({', '.join(parts)})", T.INTERVAL)

    def _format_timestamp(self, node: exp.TimeToStr, scope: Scope) -> Typed:
        subject = node.this
        if isinstance(subject, (exp.TsOrDsToTimestamp, exp.TsOrDsToDate)):
            subject = subject.this
        fmt = self.expr(node.args["format"], scope)
        value = self._time_arg(subject, scope, T.TIMESTAMP)
        return Typed(f"ls_format_timestamp({fmt.sql}, {value.sql}, {self._zone(node.args.get('zone'), scope)})", T.STRING)

    def _parse_timestamp(self, node: exp.Expression, scope: Scope) -> Typed:
        fmt = self.expr(node.args["format"], scope)
        text = self.expr(node.this, scope)
        zone = self._zone(node.args.get("zone"), scope)
        if isinstance(node, exp.StrToDate):
            return Typed(f"ls_date(ls_parse_timestamp({fmt.sql}, {text.sql}, 'UTC'), 'UTC')", T.DATE)
        return Typed(f"ls_parse_timestamp({fmt.sql}, {text.sql}, {zone})", T.TIMESTAMP)

    def _date(self, node: exp.Expression, scope: Scope) -> Typed:
        if isinstance(node, exp.DateFromParts):  # DATE(year, month, day)
            parts = [self.expr(node.args[k], scope).sql for k in ("year", "month", "day")]
            return Typed(f"ls_date_from_parts({', '.join(parts)})", T.DATE)
        args = node.expressions
        if len(args) >= 2:  # DATE(year, month, day)
            parts = [self.expr(e, scope).sql for e in [node.this, *args][:3]]
            return Typed(f"ls_date_from_parts({', '.join(parts)})", T.DATE)
        value = self.expr(node.this, scope)
        if value.type is not None and value.type.code not in _TIME_TYPES:
            raise self.ctx.invalid(errors.date_signature(value.type))
        return Typed(f"ls_date({value.sql}, {self._zone(node.args.get('zone'), scope)})", T.DATE)

    def _timestamp(self, node: exp.Timestamp, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        if value.type is not None and value.type.code == TypeCode.TIMESTAMP:
            return value
        return Typed(f"ls_timestamp({value.sql}, {self._zone(node.args.get('zone'), scope)})", T.TIMESTAMP)

    def _unix_to_time(self, node: exp.UnixToTime, scope: Scope) -> Typed:
        scale = node.args.get("scale")
        digits = int(scale.this) if scale is not None else 0
        if digits not in (0, 3, 6):
            raise self.ctx.unsupported(errors.feature_timestamp_units(digits))
        return Typed(f"ls_from_unix({self.expr(node.this, scope).sql}, {digits})", T.TIMESTAMP)

    def _current_date(self, node: exp.CurrentDate, scope: Scope) -> Typed:
        if self.ctx.deterministic:
            return Typed("ls_date(ls_current_timestamp(), NULL)", T.DATE)
        self.ctx.uses_now = True
        zone = self._zone(node.this, scope) if isinstance(node.this, exp.Expression) else "NULL"
        return Typed(f"ls_date(:{NOW_PARAM}, {zone})", T.DATE)

    def _passthrough(self, node: exp.Expression, scope: Scope) -> Typed:
        return self.expr(node.this, scope)

    # --- arrays -------------------------------------------------------------------------------

    def _array(self, node: exp.Array, scope: Scope) -> Typed:
        if len(node.expressions) == 1 and isinstance(node.expressions[0], (exp.Select, exp.Union, exp.Subquery)):
            inner = node.expressions[0]
            query = self.compile_query(inner.this if isinstance(inner, exp.Subquery) else inner, scope)
            if len(query.columns) != 1:
                raise self.ctx.invalid(errors.SQL_ARRAY_SUBQUERY_COLUMNS)
            col = query.columns[0]
            element = json_element_sql(Typed(quote(col.sql_name), col.type))
            alias = self.ctx.fresh("arr")
            return Typed(f"(SELECT json_group_array({element}) FROM ({query.sql}) AS {quote(alias)})", T.array_of(col.type or T.INT64))
        return self.array_literal(node, scope)

    def _bracket(self, node: exp.Bracket, scope: Scope) -> Typed:
        arr = self.expr(node.this, scope)
        if arr.type is not None and arr.type.code == TypeCode.JSON and len(node.expressions) == 1 \
                and not node.args.get("offset") and not node.args.get("safe"):
            return self.json_member(arr, self.expr(node.expressions[0], scope))
        if arr.type is None or not arr.type.is_array or len(node.expressions) != 1:
            raise self.ctx.unsupported(errors.feature_subscripts(arr.type))
        index = self.coerce(self.expr(node.expressions[0], scope), T.INT64, node.expressions[0])
        accessor = ("SAFE_" if node.args.get("safe") else "") + ("ORDINAL" if node.args.get("offset") == 1 else "OFFSET")
        element = arr.type.element
        assert element is not None
        return Typed(f"ls_array_at({arr.sql}, {index.sql}, '{accessor}', '{element.storage_code.name}')", element)

    def _unsupported(self, node: exp.Expression, scope: Scope) -> Typed:
        if isinstance(node, exp.SafeFunc):
            raise self.ctx.unsupported(errors.feature_function(function_name(node)))
        raise self.ctx.unsupported(errors.feature_node(node.key.upper(), node.sql("bigquery")[:60]))


#: Nodes that are syntax rather than calls of a named function (the rows of function_table name the rest).
_SYNTAX: dict[type[exp.Expression], Callable[[Any, Any, Scope], Typed]] = {
    exp.Interval: FunctionTranslator._interval,
    exp.Bracket: FunctionTranslator._bracket,
    exp.TsOrDsToTimestamp: FunctionTranslator._passthrough,
    exp.TsOrDsToDate: FunctionTranslator._passthrough,
    exp.MD5: FunctionTranslator._md5_hex,
    exp.IgnoreNulls: FunctionTranslator._ignore_nulls,
    exp.RespectNulls: FunctionTranslator._respect_nulls,
    exp.SafeFunc: FunctionTranslator._unsupported,
    exp.Window: FunctionTranslator._unsupported,
}

__all__ = ["FunctionTranslator", "stored_literal_sql"]
