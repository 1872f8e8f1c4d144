"""Translating GoogleSQL function calls: table-driven ones, date/time, aggregates, arrays, JSON.

A subclass of :class:`~.operators.OperatorTranslator`: :meth:`FunctionTranslator.function`
returns None for nodes that are not function calls it knows, so the caller reports them
as unsupported.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner import catalog as C, types as T
    >>> t = C.Table("T", (C.Column("S", T.STRING),), (C.KeyPart("S"),))
    >>> translate_expression("FARM_FINGERPRINT(S)", t, C.Catalog(tables=(t,)))
    'ls_farm_fingerprint("S")'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from .. import errors, intervals
from .. import types as T
from ..sqlite_names import quote
from ..types import SpannerType, TypeCode
from . import interval_functions, sequence_functions
from .context import NOW_PARAM, Typed
from .function_table import AGGREGATES, ANONYMOUS, EXTRA_ARGS, SIMPLE, Fn
from .literals import json_element_sql, sql_string, stored_literal_sql
from .operators import OperatorTranslator
from .scope import Scope
from .udf import UdfError, take_error

_TIME_TYPES = (TypeCode.TIMESTAMP, TypeCode.DATE, TypeCode.STRING)


class FunctionTranslator(OperatorTranslator):
    def function(self, node: exp.Expression, scope: Scope) -> Typed | None:
        handler = _SPECIAL.get(type(node))
        if handler is not None:
            return handler(self, node, scope)
        spec = SIMPLE.get(type(node))
        if spec is not None:
            return self.call(spec, self._args(node, spec.args, scope), EXTRA_ARGS.get(type(node), ()))
        return None

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
        sql_args = [a.sql for a in args] + list(extra)
        return Typed(f"{spec.sql}({', '.join(sql_args)})", spec.result([a.type for a in args]),
                     is_aggregate=any(a.is_aggregate for a in args))

    def _anonymous(self, node: exp.Anonymous, scope: Scope) -> Typed:
        name = str(node.this).upper()
        if name == "PENDING_COMMIT_TIMESTAMP":
            raise errors.pending_commit_timestamp_misused()
        if name in sequence_functions.FUNCTIONS:
            return self._sequence_function(name, node)
        spec = ANONYMOUS.get(name)
        if spec is None:
            raise self.ctx.unsupported(errors.feature_function(name))
        return self.call(spec, [self.expr(e, scope) for e in node.expressions])

    def _sequence_function(self, name: str, node: exp.Anonymous) -> Typed:
        args = node.expressions
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
            raise errors.sequence_argument_invalid(self.ctx.sql, name)
        return Typed(sequence_functions.translate(name, args[0].this, self.ctx.catalog), T.INT64)

    def _sha2(self, node: exp.SHA2Digest, scope: Scope) -> Typed:
        length = int(node.args["length"].this) if node.args.get("length") is not None else 256
        if length not in (256, 512):
            raise self.ctx.unsupported(errors.feature_sha2_length(length))
        return Typed(f"ls_sha{length}({self.expr(node.this, scope).sql})", T.BYTES)

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

    def _date(self, node: exp.Date, scope: Scope) -> Typed:
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

    # --- aggregates -----------------------------------------------------------------------------------

    def _aggregate_arg(self, node: exp.Expression, scope: Scope) -> tuple[str, Typed | None]:
        arg = node.this
        if isinstance(arg, exp.Star):
            return "", None
        if isinstance(arg, exp.Distinct):
            inner = self.expr(arg.expressions[0], scope)
            return "DISTINCT ", inner
        if arg is None:
            return "", None
        return "", self.expr(arg, scope)

    def _aggregate(self, node: exp.Expression, scope: Scope) -> Typed:
        fn, rule = AGGREGATES[type(node)]
        distinct, arg = self._aggregate_arg(node, scope)
        if arg is None:
            return Typed(f"{fn}(*)", rule([]), is_aggregate=True)
        return Typed(f"{fn}({distinct}{arg.sql})", rule([arg.type]), is_aggregate=True)

    def _count_if(self, node: exp.CountIf, scope: Scope) -> Typed:
        cond = self.expr(node.this, scope)
        return Typed(f"count(CASE WHEN {cond.sql} THEN 1 END)", T.INT64, is_aggregate=True)

    def _string_agg(self, node: exp.GroupConcat, scope: Scope) -> Typed:
        distinct, arg = self._aggregate_arg(node, scope)
        if arg is None or (arg.type is not None and arg.type.code != TypeCode.STRING):
            raise self.ctx.unsupported(errors.SQL_STRING_AGG_NON_STRING)
        sep = self.expr(node.args["separator"], scope).sql if node.args.get("separator") is not None else "','"
        if distinct:
            if sep != "','":
                raise self.ctx.unsupported(errors.SQL_STRING_AGG_DISTINCT_SEPARATOR)
            return Typed(f"group_concat(DISTINCT {arg.sql})", T.STRING, is_aggregate=True)
        return Typed(f"group_concat({arg.sql}, {sep})", T.STRING, is_aggregate=True)

    def _array_agg(self, node: exp.ArrayAgg, scope: Scope) -> Typed:
        if isinstance(node.this, (exp.Limit, exp.Order)):
            raise self.ctx.unsupported(errors.SQL_ARRAY_AGG_ORDER_LIMIT)
        distinct, arg = self._aggregate_arg(node, scope)
        if arg is None:
            raise self.ctx.invalid(errors.SQL_ARRAY_AGG_NEEDS_ARGUMENT)
        element = arg.type or T.INT64
        return Typed(f"json_group_array({distinct}{json_element_sql(arg)})", T.array_of(element), is_aggregate=True)

    # --- arrays and JSON -------------------------------------------------------------------------------

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
        if arr.type is None or not arr.type.is_array or len(node.expressions) != 1:
            raise self.ctx.unsupported(errors.feature_subscripts(arr.type))
        index = self.coerce(self.expr(node.expressions[0], scope), T.INT64, node.expressions[0])
        accessor = ("SAFE_" if node.args.get("safe") else "") + ("ORDINAL" if node.args.get("offset") == 1 else "OFFSET")
        element = arr.type.element
        assert element is not None
        return Typed(f"ls_array_at({arr.sql}, {index.sql}, '{accessor}', '{element.storage_code.name}')", element)

    def _json_path(self, node: exp.Expression) -> str:
        path = node.args.get("expression")
        if path is None:
            return "'$'"
        if isinstance(path, exp.Literal):
            return sql_string(path.this)
        text = path.sql("bigquery")
        if text.startswith("'") and text.endswith("'"):
            text = text[1:-1].replace("\\'", "'")
        return sql_string(text)

    def _json_value(self, node: exp.Expression, scope: Scope) -> Typed:
        subject = self.expr(node.this, scope)
        if isinstance(node, exp.JSONExtractScalar):
            return Typed(f"ls_json_value({subject.sql}, {self._json_path(node)})", T.STRING)
        return Typed(f"ls_json_query({subject.sql}, {self._json_path(node)})", T.JSON)

    def _parse_json(self, node: exp.ParseJSON, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        if value.is_string_literal:
            return self.constant_cast(value, T.JSON)
        return Typed(f"ls_cast({value.sql}, 'STRING', 'JSON', 0)", T.JSON)

    def _to_json_string(self, node: exp.JSONFormat, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        if value.type is None or value.type.code != TypeCode.JSON:
            raise self.ctx.unsupported(errors.SQL_TO_JSON_STRING_NON_JSON)
        return Typed(value.sql, T.STRING)

    def _unsupported(self, node: exp.Expression, scope: Scope) -> Typed:
        raise self.ctx.unsupported(errors.feature_node(node.key.upper(), node.sql("bigquery")[:60]))


_SPECIAL: dict[type[exp.Expression], Callable[[Any, Any, Scope], Typed]] = {
    exp.Anonymous: FunctionTranslator._anonymous,
    exp.SHA2Digest: FunctionTranslator._sha2,
    exp.SHA2: FunctionTranslator._sha2,
    exp.Trim: FunctionTranslator._trim,
    exp.SafeDivide: FunctionTranslator._safe_divide,
    exp.IsNan: FunctionTranslator._is_nan,
    exp.TimestampAdd: FunctionTranslator._timestamp_add,
    exp.TimestampSub: FunctionTranslator._timestamp_add,
    exp.DateAdd: FunctionTranslator._timestamp_add,
    exp.DateSub: FunctionTranslator._timestamp_add,
    exp.TimestampDiff: FunctionTranslator._timestamp_diff,
    exp.DateDiff: FunctionTranslator._timestamp_diff,
    exp.TimestampTrunc: FunctionTranslator._timestamp_trunc,
    exp.DateTrunc: FunctionTranslator._timestamp_trunc,
    exp.Extract: FunctionTranslator._extract,
    exp.Interval: FunctionTranslator._interval,
    exp.MakeInterval: FunctionTranslator._make_interval,
    exp.TimeToStr: FunctionTranslator._format_timestamp,
    exp.StrToTime: FunctionTranslator._parse_timestamp,
    exp.StrToDate: FunctionTranslator._parse_timestamp,
    exp.Date: FunctionTranslator._date,
    exp.Timestamp: FunctionTranslator._timestamp,
    exp.UnixToTime: FunctionTranslator._unix_to_time,
    exp.CurrentDate: FunctionTranslator._current_date,
    exp.TsOrDsToTimestamp: FunctionTranslator._passthrough,
    exp.TsOrDsToDate: FunctionTranslator._passthrough,
    exp.CountIf: FunctionTranslator._count_if,
    exp.GroupConcat: FunctionTranslator._string_agg,
    exp.ArrayAgg: FunctionTranslator._array_agg,
    exp.Array: FunctionTranslator._array,
    exp.Bracket: FunctionTranslator._bracket,
    exp.JSONExtractScalar: FunctionTranslator._json_value,
    exp.JSONExtract: FunctionTranslator._json_value,
    exp.ParseJSON: FunctionTranslator._parse_json,
    exp.JSONFormat: FunctionTranslator._to_json_string,
    exp.SafeFunc: FunctionTranslator._unsupported,
    exp.Window: FunctionTranslator._unsupported,
    **{cls: FunctionTranslator._aggregate for cls in AGGREGATES},
}

__all__ = ["FunctionTranslator", "stored_literal_sql"]
