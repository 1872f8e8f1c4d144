"""Translating GoogleSQL's JSON functions: extractors, converters, constructors, mutators, TO_JSON.

The rows of :mod:`.function_table` name these methods; the work is done by
:mod:`.json_functions`. A value turned into JSON carries its Spanner type to ``ls_to_json``
as type text, so every type (ARRAY, STRUCT, BYTES, TIMESTAMP...) converts as GoogleSQL does.

Example:
    >>> from watcher.localspanner.sql.translator import translate_expression
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("J", T.JSON),), (C.KeyPart("J"),))
    >>> translate_expression("LAX_INT64(JSON_QUERY(J, '$.a'))", t, C.Catalog(tables=(t,)))
    'ls_json_convert(ls_json_query("J", \\'$.a\\'), \\'LAX_INT64\\')'
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import TypeCode
from .call_args import CallTranslator, positional
from .context import Typed
from .function_table import ROWS_BY_NAME, function_name
from .literals import sql_string
from .scope import Scope

#: sqlglot class of a converter -> (mode passed to ls_json_convert, result type).
_CONVERTERS: dict[type[exp.Expression], tuple[str, T.SpannerType]] = {
    exp.JSONBool: ("BOOL", T.BOOL), exp.Int64: ("INT64", T.INT64), exp.Float64: ("FLOAT64", T.FLOAT64),
    exp.String: ("STRING", T.STRING), exp.LaxBool: ("LAX_BOOL", T.BOOL), exp.LaxInt64: ("LAX_INT64", T.INT64),
    exp.LaxFloat64: ("LAX_FLOAT64", T.FLOAT64), exp.LaxString: ("LAX_STRING", T.STRING),
}


_ARRAY_ELEMENTS = {"BOOL_ARRAY": T.BOOL, "INT64_ARRAY": T.INT64, "FLOAT64_ARRAY": T.FLOAT64,
                   "FLOAT32_ARRAY": T.FLOAT32, "STRING_ARRAY": T.STRING}
#: JSON functions taking the JSON value then path, value pairs -> the ls_ function.
_PATH_VALUE_PAIRS = {"JSON_SET": "ls_json_set", "JSON_ARRAY_APPEND": "ls_json_array_append",
                     "JSON_ARRAY_INSERT": "ls_json_array_insert"}


class JsonTranslator(CallTranslator):
    """The JSON function handlers."""

    def json_arg(self, node: exp.Expression, scope: Scope, call: exp.Expression, *, strings: bool = True) -> Typed:
        typed = self.expr(node, scope)
        allowed = (TypeCode.JSON, TypeCode.STRING) if strings else (TypeCode.JSON,)
        if typed.type is not None and typed.type.code not in allowed:
            raise self.ctx.invalid(errors.function_signature(function_name(call), [typed.type]))
        return typed

    def to_json_sql(self, typed: Typed, *, sort: bool = True) -> str:
        """SQL giving the JSON text of ``typed`` (TO_JSON's conversion)."""
        if typed.type is not None and typed.type.code == TypeCode.JSON and sort:
            return f"coalesce({typed.sql}, 'null')"
        type_text = "NULL" if typed.type is None else sql_string(str(typed.type))
        return f"ls_to_json({typed.sql}, {type_text}, {int(sort)})"

    def json_member(self, subject: Typed, key: Typed) -> Typed:
        """``json.name``, ``json['name']`` or ``json[i]``: a JSON value, NULL where there is none."""
        if key.type is not None and key.type.code not in (TypeCode.STRING, TypeCode.INT64):
            raise self.ctx.invalid(errors.function_signature("the JSON subscript operator", [subject.type, key.type]))
        return Typed(f"ls_json_subscript({subject.sql}, {key.sql})", T.JSON)

    def _json_path(self, node: exp.Expression, key: str = "expression") -> str:
        path = node.args.get(key)
        if path is None:
            return "'$'"
        if isinstance(path, exp.Literal):
            return sql_string(path.this)
        text = path.sql("bigquery")
        if text.startswith("'") and text.endswith("'"):
            text = text[1:-1].replace("\\'", "'")
        return sql_string(text)

    def _json_value(self, node: exp.Expression, scope: Scope) -> Typed:
        subject = self.json_arg(node.this, scope, node)
        if isinstance(node, exp.JSONExtractScalar):
            return Typed(f"ls_json_value({subject.sql}, {self._json_path(node)})", T.STRING)
        result = T.STRING if subject.type is not None and subject.type.code == TypeCode.STRING else T.JSON
        return Typed(f"ls_json_query({subject.sql}, {self._json_path(node)})", result)

    def _json_array_of(self, node: exp.Expression, scope: Scope) -> Typed:
        subject = self.json_arg(node.this, scope, node)
        if isinstance(node, exp.JSONValueArray):
            return Typed(f"ls_json_value_array({subject.sql}, {self._json_path(node)})", T.array_of(T.STRING))
        element = T.STRING if subject.type is not None and subject.type.code == TypeCode.STRING else T.JSON
        return Typed(f"ls_json_query_array({subject.sql}, {self._json_path(node)})", T.array_of(element))

    def _json_keys(self, node: exp.Expression, scope: Scope) -> Typed:
        subject = self.json_arg(node.this, scope, node, strings=False)
        depth = node.args.get("expression")
        depth_sql = "NULL" if depth is None else self.coerce(self.expr(depth, scope), T.INT64, depth).sql
        return Typed(f"ls_json_keys({subject.sql}, {depth_sql})", T.array_of(T.STRING))

    def _json_convert(self, node: exp.Expression, scope: Scope) -> Typed:
        mode, result = _CONVERTERS[type(node)]
        value = self.expr(node.this, scope)
        if isinstance(node, exp.String) and value.type is not None and value.type.code == TypeCode.TIMESTAMP:
            zone = node.args.get("zone")  # STRING(timestamp[, zone]), the timestamp function
            if zone is None:
                return self.cast(value, T.STRING, safe=False)
            return Typed(f"ls_timestamp_string({value.sql}, {self.expr(zone, scope).sql})", T.STRING)
        if value.type is not None and value.type.code != TypeCode.JSON:
            raise self.ctx.invalid(errors.function_signature(function_name(node), [value.type]))
        if node.args.get("expression") is not None:
            raise self.ctx.unsupported(errors.feature_function(function_name(node) + " with wide_number_mode"))
        return Typed(f"ls_json_convert({value.sql}, '{mode}')", result)

    def _json_convert_array(self, node: exp.Anonymous, scope: Scope) -> Typed:
        """BOOL_ARRAY, INT64_ARRAY, FLOAT64_ARRAY, FLOAT32_ARRAY, STRING_ARRAY and FLOAT32 of JSON."""
        name = function_name(node)
        self.check_arity(ROWS_BY_NAME[name], len(node.expressions))
        value = self.json_arg(node.expressions[0], scope, node, strings=False)
        if name == "FLOAT32":
            return Typed(f"ls_cast(ls_json_convert({value.sql}, 'FLOAT64'), 'FLOAT64', 'FLOAT32', 0)", T.FLOAT32)
        element = _ARRAY_ELEMENTS[name]
        return Typed(f"ls_json_convert_array({value.sql}, '{name}')", T.array_of(element))

    def _json_array(self, node: exp.Expression, scope: Scope) -> Typed:
        parts = [self.to_json_sql(self.expr(e, scope)) for e in node.expressions]
        return Typed(f"ls_json_array({', '.join(parts)})", T.JSON)

    def _json_object(self, node: exp.Expression, scope: Scope) -> Typed:
        parts: list[str] = []
        for pair in node.expressions:
            if not isinstance(pair, exp.JSONKeyValue):
                raise self.ctx.unsupported(errors.feature_function("JSON_OBJECT with arrays of keys and values"))
            key = self.coerce(self.expr(pair.this, scope), T.STRING, pair.this)
            if key.type is not None and key.type.code != TypeCode.STRING:
                raise self.ctx.invalid(errors.function_signature("JSON_OBJECT", [key.type]))
            parts += [key.sql, self.to_json_sql(self.expr(pair.expression, scope))]
        return Typed(f"ls_json_object({', '.join(parts)})", T.JSON)

    def _json_edit(self, node: exp.Expression, scope: Scope) -> Typed:
        name = function_name(node)
        args = positional(node, "this", "expressions", "expression", "include_arrays", "remove_empty")
        self.check_arity(ROWS_BY_NAME[name], len(args))
        subject = self.json_arg(args[0], scope, node, strings=False)
        rest = [self.expr(a, scope) for a in args[1:]]
        if name in _PATH_VALUE_PAIRS:
            if len(rest) % 2:
                raise self.ctx.invalid(errors.function_arity(name, len(args), "a JSON value and path, value pairs"))
            sql = [subject.sql]
            for path, value in zip(rest[::2], rest[1::2], strict=True):
                sql += [path.sql, self.to_json_sql(value)]
            return Typed(f"{_PATH_VALUE_PAIRS[name]}({', '.join(sql)})", T.JSON)
        if name == "JSON_REMOVE":
            return Typed(f"ls_json_remove({', '.join([subject.sql] + [p.sql for p in rest])})", T.JSON)
        options = []  # JSON_STRIP_NULLS: the path, include_arrays, remove_empty, each by position or by name
        for key in ("expression", "include_arrays", "remove_empty"):
            option = node.args.get(key)
            option = option.expression if isinstance(option, exp.Kwarg) else option
            options.append("NULL" if option is None else self.expr(option, scope).sql)
        return Typed(f"ls_json_strip_nulls({subject.sql}, {', '.join(options)})", T.JSON)

    def _parse_json(self, node: exp.ParseJSON, scope: Scope) -> Typed:
        value = self.expr(node.this, scope)
        if value.is_string_literal:
            return self.constant_cast(value, T.JSON)
        return Typed(f"ls_cast({value.sql}, 'STRING', 'JSON', 0)", T.JSON)

    def _to_json(self, node: exp.Expression, scope: Scope) -> Typed:
        """TO_JSON, SAFE_TO_JSON (anonymous to sqlglot; nothing here fails) and TO_JSON_STRING."""
        if isinstance(node, exp.Anonymous):
            self.check_arity(ROWS_BY_NAME[function_name(node)], len(node.expressions))
            return Typed(self.to_json_sql(self.expr(node.expressions[0], scope)), T.JSON)
        if node.args.get("options") or node.expressions:
            raise self.ctx.unsupported(errors.feature_function(function_name(node) + " with options"))
        value = self.expr(node.this, scope)
        if node.args.get("to_json"):
            return Typed(self.to_json_sql(value), T.JSON)
        if value.type is not None and value.type.code == TypeCode.JSON:
            return Typed(f"coalesce({value.sql}, 'null')", T.STRING)
        return Typed(self.to_json_sql(value, sort=False), T.STRING)
