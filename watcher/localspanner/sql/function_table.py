"""GoogleSQL's functions as data: one row per function Spanner documents, supported or refused.

Each :class:`Function` row names the function, its category (as Spanner's reference groups
them), how many arguments it takes, what a NULL argument does, and how the server
evaluates it (``does``): an :class:`~.function_rules.Fn` (a call of one SQLite function), the
name of a translator method, :data:`BUILTIN` (an operator-like node the expression
translator handles itself), or None: refused with UNIMPLEMENTED naming the function and the
statement. ``nodes`` are the sqlglot classes the name parses into; without them sqlglot
leaves the call anonymous and the row is found by name. Queries, DML, generated columns,
DEFAULTs and CHECK constraints all translate through these rows; ``docs/functions.md`` is
generated from them (:mod:`.function_docs`).

Example:
    >>> ROWS_BY_NAME["ARRAY_TO_STRING"].state, ROWS_BY_NAME["ARRAY_TO_STRING"].category
    ('supported', 'Array')
    >>> row_for_node(exp.ArrayToString()).name
    'ARRAY_TO_STRING'
    >>> ROWS_BY_NAME["ML.PREDICT"].state
    'refused'
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..datamodel import types as T
from .function_rules import (  # noqa: F401  (the coercion rules' old home)
    BOOL,
    BYTES,
    DATE,
    FLOAT64,
    INT64,
    STRING,
    Fn,
    TypeRule,
    array_of_arg,
    avg_type,
    comparable,
    fixed,
    float_unless_numeric,
    has_comparison,
    same_as,
    sum_type,
    supertype,
)

#: ``does`` of a function the expression translator evaluates as syntax (CAST, CASE, IF, COALESCE...).
BUILTIN = "builtin"
STRICT = "NULL if any argument is NULL"


@dataclass(frozen=True)
class Function:
    """One GoogleSQL function: name, category, arity, NULL rule, and how it is evaluated."""

    name: str
    category: str
    does: Fn | str | None
    nodes: tuple[type[exp.Expression], ...] = ()
    arity: tuple[int, int | None] = (1, 1)
    nulls: str = STRICT
    aggregate: bool = False
    volatile: bool = False  # a new value per call or per statement: DEFAULTs and DML only
    in_schema: bool = True  # False: queries and DML only here (the translation needs a subquery)

    @property
    def where(self) -> str:
        """Where a statement may call it."""
        if self.does is None:
            return ""
        if self.aggregate:
            return "queries"
        if self.volatile:
            return "queries, DML, DEFAULT"
        if not self.in_schema:
            return "queries, DML"
        return "queries, DML, generated columns, DEFAULT, CHECK"

    @property
    def state(self) -> str:
        return "refused" if self.does is None else "supported"

    @property
    def arity_text(self) -> str:
        low, high = self.arity
        if high == low:
            return str(low)
        return f"{low}+" if high is None else f"{low}-{high}"


def _f(name: str, category: str, does: Fn | str | None, *nodes: type[exp.Expression],
       arity: tuple[int, int | None] = (1, 1), nulls: str = STRICT, aggregate: bool = False,
       volatile: bool = False, in_schema: bool = True) -> Function:
    return Function(name, category, does, tuple(nodes), arity, nulls, aggregate, volatile, in_schema)


def _refused(category: str, names: str, *nodes: type[exp.Expression]) -> tuple[Function, ...]:
    """Refused functions; ``nodes`` are the sqlglot classes of the first names, in order, where sqlglot renames them."""
    return tuple(Function(n, category, None, nodes[i:i + 1], (0, None), "") for i, n in enumerate(names.split()))


def _fn(sql: str, result: TypeRule, *args: str, deterministic: bool = True, extra: tuple[str, ...] = ()) -> Fn:
    return Fn(sql, args or ("*expressions",), result, deterministic, extra)


_ANY = (0, None)
ONE, TWO = (1, 1), (2, 2)
IGNORES = "NULL elements are skipped; NULL if the array is NULL"
ARRAY_NULL = "NULL if the array is NULL"
AGG = "NULL inputs are skipped; NULL for no rows"

AGGREGATES = (
    _f("ANY_VALUE", "Aggregate", Fn("min", ("this",), same_as(0)), exp.AnyValue, aggregate=True, nulls=AGG),
    _f("ARRAY_AGG", "Aggregate", "_array_agg", exp.ArrayAgg, aggregate=True, nulls="NULL values are kept"),
    _f("AVG", "Aggregate", Fn("avg", ("this",), avg_type), exp.Avg, aggregate=True, nulls=AGG),
    _f("COUNT", "Aggregate", Fn("count", ("this",), INT64), exp.Count, aggregate=True, arity=(0, 1),
       nulls="NULL inputs are not counted"),
    _f("COUNTIF", "Aggregate", "_count_if", exp.CountIf, aggregate=True, nulls="NULL conditions are not counted"),
    _f("LOGICAL_AND", "Aggregate", Fn("min", ("this",), BOOL), exp.LogicalAnd, aggregate=True, nulls=AGG),
    _f("LOGICAL_OR", "Aggregate", Fn("max", ("this",), BOOL), exp.LogicalOr, aggregate=True, nulls=AGG),
    _f("MAX", "Aggregate", Fn("max", ("this",), same_as(0)), exp.Max, aggregate=True, nulls=AGG),
    _f("MIN", "Aggregate", Fn("min", ("this",), same_as(0)), exp.Min, aggregate=True, nulls=AGG),
    _f("STRING_AGG", "Aggregate", "_string_agg", exp.GroupConcat, aggregate=True, arity=(1, 2), nulls=AGG),
    _f("SUM", "Aggregate", Fn("sum", ("this",), sum_type), exp.Sum, aggregate=True, nulls=AGG),
    _f("ARRAY_CONCAT_AGG", "Aggregate", "_concat_or_bits_agg", exp.ArrayConcatAgg, aggregate=True, nulls=AGG),
    _f("BIT_AND", "Aggregate", "_concat_or_bits_agg", exp.BitwiseAndAgg, aggregate=True, nulls=AGG),
    _f("BIT_OR", "Aggregate", "_concat_or_bits_agg", exp.BitwiseOrAgg, aggregate=True, nulls=AGG),
    _f("BIT_XOR", "Aggregate", "_concat_or_bits_agg", exp.BitwiseXorAgg, aggregate=True, nulls=AGG),
    _f("APPROX_COUNT_DISTINCT", "Approximate aggregate", "_approx_count_distinct", exp.ApproxDistinct, aggregate=True,
       nulls="NULL inputs are not counted; the count is exact"),
    _f("STDDEV", "Statistical aggregate", "_statistic", exp.Stddev, aggregate=True, nulls=AGG + " or one row"),
    _f("STDDEV_SAMP", "Statistical aggregate", "_statistic", exp.StddevSamp, aggregate=True, nulls=AGG + " or one row"),
    _f("VAR_SAMP", "Statistical aggregate", "_statistic", exp.Variance, aggregate=True, nulls=AGG + " or one row"),
    _f("VARIANCE", "Statistical aggregate", "_statistic", exp.Variance, aggregate=True, nulls=AGG + " or one row"),
)

ARRAYS = (
    _f("ARRAY", "Array", "_array", exp.Array, arity=_ANY, nulls="a subquery's NULLs are kept"),
    _f("ARRAY_CONCAT", "Array", "_array_concat", exp.ArrayConcat, arity=(1, None)),
    _f("ARRAY_FIRST", "Array", "_array_end", exp.ArrayFirst, nulls=ARRAY_NULL + "; an error if empty"),
    _f("ARRAY_INCLUDES", "Array", "_array_includes", arity=TWO),
    _f("ARRAY_INCLUDES_ALL", "Array", "_array_includes", arity=TWO, nulls=STRICT + "; NULL search values are skipped"),
    _f("ARRAY_INCLUDES_ANY", "Array", "_array_includes", arity=TWO, nulls=STRICT + "; NULL search values are skipped"),
    _f("ARRAY_IS_DISTINCT", "Array", "_array_is_distinct", nulls=ARRAY_NULL + "; two NULLs are equal"),
    _f("ARRAY_LAST", "Array", "_array_end", exp.ArrayLast, nulls=ARRAY_NULL + "; an error if empty"),
    _f("ARRAY_LENGTH", "Array", Fn("ls_array_length", ("this",), INT64), exp.ArraySize),
    _f("ARRAY_MAX", "Array", "_array_min_max", exp.ArrayMax, nulls=IGNORES),
    _f("ARRAY_MIN", "Array", "_array_min_max", exp.ArrayMin, nulls=IGNORES),
    _f("ARRAY_REVERSE", "Array", "_array_reverse", exp.ArrayReverse),
    _f("ARRAY_SLICE", "Array", "_array_slice", exp.ArraySlice, arity=(3, 3)),
    _f("ARRAY_TO_STRING", "Array", "_array_to_string", exp.ArrayToString, arity=(2, 3),
       nulls="NULL elements are skipped unless a NULL text is given; NULL if the array or delimiter is NULL"),
    _f("GENERATE_ARRAY", "Array", Fn("ls_generate_array", ("start", "end", "step"), array_of_arg(0)),
       exp.GenerateSeries, arity=(2, 3)),
    _f("GENERATE_DATE_ARRAY", "Array", "_generate_date_array", exp.GenerateDateArray, arity=(2, 3)),
    _f("ARRAY_FILTER", "Array", "_array_lambda", exp.ArrayFilter, arity=TWO, nulls=ARRAY_NULL, in_schema=False),
    _f("ARRAY_TRANSFORM", "Array", "_array_lambda", arity=TWO, nulls=ARRAY_NULL, in_schema=False),
)

BITS = (
    _f("BIT_COUNT", "Bit", Fn("ls_bit_count", ("this",), INT64), exp.BitwiseCount),
    _f("BIT_REVERSE", "Bit", _fn("ls_bit_reverse", INT64), arity=TWO),
)

CONDITIONALS = (
    _f("CASE", "Conditional", BUILTIN, exp.Case, arity=_ANY, nulls="NULL conditions are not true"),
    _f("COALESCE", "Conditional", BUILTIN, exp.Coalesce, arity=(1, None), nulls="the first non-NULL argument"),
    _f("IF", "Conditional", BUILTIN, exp.If, arity=(3, 3), nulls="a NULL condition takes the else branch"),
    _f("IFNULL", "Conditional", BUILTIN, exp.Coalesce, arity=TWO, nulls="the first non-NULL argument"),
    _f("NULLIF", "Conditional", Fn("nullif", ("this", "expression"), same_as(0)), exp.Nullif, arity=TWO,
       nulls="NULL if the arguments are equal"),
)

CONVERSIONS = (
    _f("CAST", "Conversion", BUILTIN, exp.Cast),
    _f("SAFE_CAST", "Conversion", BUILTIN, exp.TryCast, nulls=STRICT + "; NULL where the cast fails"),
    _f("FROM_BASE32", "Conversion", Fn("ls_from_base32", ("this",), BYTES), exp.FromBase32),
    _f("FROM_BASE64", "Conversion", Fn("ls_from_base64", ("this",), BYTES), exp.FromBase64),
    _f("FROM_HEX", "Conversion", Fn("ls_from_hex", ("this",), BYTES), exp.Unhex),
    _f("TO_BASE32", "Conversion", Fn("ls_to_base32", ("this",), STRING), exp.ToBase32),
    _f("TO_BASE64", "Conversion", Fn("ls_to_base64", ("this",), STRING), exp.ToBase64),
    _f("TO_HEX", "Conversion", Fn("ls_to_hex", ("this",), STRING), exp.LowerHex, exp.Hex),
    _f("CODE_POINTS_TO_BYTES", "Conversion", Fn("ls_code_points_to_bytes", ("this",), BYTES), exp.CodePointsToBytes),
    _f("CODE_POINTS_TO_STRING", "Conversion", Fn("ls_code_points_to_string", ("this",), STRING), exp.CodePointsToString),
    _f("SAFE_CONVERT_BYTES_TO_STRING", "Conversion", Fn("ls_safe_bytes_to_string", ("this",), STRING),
       exp.SafeConvertBytesToString),
    _f("TO_CODE_POINTS", "Conversion", Fn("ls_to_code_points", ("this",), fixed(T.array_of(T.INT64))), exp.ToCodePoints),
)

DATES = (
    _f("CURRENT_DATE", "Date", "_current_date", exp.CurrentDate, arity=(0, 1), volatile=True),
    _f("DATE", "Date", "_date", exp.Date, exp.DateFromParts, arity=(1, 3)),
    _f("DATE_ADD", "Date", "_timestamp_add", exp.DateAdd, arity=TWO),
    _f("DATE_DIFF", "Date", "_timestamp_diff", exp.DateDiff, arity=(3, 3)),
    _f("DATE_FROM_UNIX_DATE", "Date", Fn("ls_date_from_unix_date", ("this",), DATE), exp.DateFromUnixDate),
    _f("DATE_SUB", "Date", "_timestamp_add", exp.DateSub, arity=TWO),
    _f("DATE_TRUNC", "Date", "_timestamp_trunc", exp.DateTrunc, arity=TWO),
    _f("EXTRACT", "Date", "_extract", exp.Extract),
    _f("FORMAT_DATE", "Date", "_format_timestamp", exp.TimeToStr, arity=TWO),
    _f("PARSE_DATE", "Date", "_parse_timestamp", exp.StrToDate, arity=TWO),
    _f("UNIX_DATE", "Date", Fn("ls_unix_date", ("this",), INT64), exp.UnixDate),
    _f("ADDDATE", "Date", "_adddate", arity=TWO),
    _f("SUBDATE", "Date", "_adddate", arity=TWO),
)

HASHES = (
    _f("FARM_FINGERPRINT", "Hash", Fn("ls_farm_fingerprint", ("*expressions",), INT64), exp.FarmFingerprint),
    _f("MD5", "Hash", Fn("ls_md5", ("this",), BYTES), exp.MD5Digest),
    _f("SHA1", "Hash", Fn("ls_sha1", ("this",), BYTES), exp.SHA1Digest, exp.SHA),
    _f("SHA256", "Hash", "_sha2", exp.SHA2Digest, exp.SHA2),
    _f("SHA512", "Hash", "_sha2", exp.SHA2Digest, exp.SHA2),
)

INTERVALS = (
    _f("JUSTIFY_DAYS", "Interval", Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL), extra=("1", "0")),
       exp.JustifyDays),
    _f("JUSTIFY_HOURS", "Interval", Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL), extra=("0", "1")),
       exp.JustifyHours),
    _f("JUSTIFY_INTERVAL", "Interval", Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL), extra=("1", "1")),
       exp.JustifyInterval),
    _f("MAKE_INTERVAL", "Interval", "_make_interval", exp.MakeInterval, arity=(0, 6), nulls=STRICT),
)

JSONS = (
    _f("BOOL", "JSON", "_json_convert", exp.JSONBool, nulls=STRICT + "; an error for another JSON type"),
    _f("FLOAT64", "JSON", "_json_convert", exp.Float64, arity=(1, 2), nulls=STRICT + "; an error for another JSON type"),
    _f("INT64", "JSON", "_json_convert", exp.Int64, nulls=STRICT + "; an error for another JSON type"),
    _f("STRING", "JSON", "_json_convert", exp.String, nulls=STRICT + "; an error for another JSON type"),
    _f("JSON_ARRAY", "JSON", "_json_array", exp.JSONArray, arity=_ANY, nulls="NULL becomes JSON null"),
    _f("JSON_KEYS", "JSON", "_json_keys", exp.JSONKeysAtDepth, arity=(1, 2)),
    _f("JSON_OBJECT", "JSON", "_json_object", exp.JSONObject, arity=_ANY, nulls="a NULL value becomes JSON null"),
    _f("JSON_QUERY", "JSON", "_json_value", exp.JSONExtract, arity=TWO, nulls=STRICT + "; NULL for a missing path"),
    _f("JSON_QUERY_ARRAY", "JSON", "_json_array_of", exp.JSONExtractArray, arity=(1, 2),
       nulls=STRICT + "; NULL for a missing path or a non-array"),
    _f("JSON_REMOVE", "JSON", "_json_edit", exp.JSONRemove, arity=(2, None), nulls="NULL if the JSON is NULL"),
    _f("JSON_SET", "JSON", "_json_edit", exp.JSONSet, arity=(3, None), nulls="NULL if the JSON is NULL"),
    _f("JSON_STRIP_NULLS", "JSON", "_json_edit", exp.JSONStripNulls, arity=(1, 4), nulls="NULL if the JSON is NULL"),
    _f("JSON_TYPE", "JSON", Fn("ls_json_type", ("this",), STRING), exp.JSONType),
    _f("JSON_VALUE", "JSON", "_json_value", exp.JSONExtractScalar, arity=(1, 2),
       nulls=STRICT + "; NULL for a missing path or a non-scalar"),
    _f("JSON_VALUE_ARRAY", "JSON", "_json_array_of", exp.JSONValueArray, arity=(1, 2),
       nulls=STRICT + "; NULL for a missing path or a non-array"),
    _f("LAX_BOOL", "JSON", "_json_convert", exp.LaxBool, nulls=STRICT + "; NULL where it cannot convert"),
    _f("LAX_FLOAT64", "JSON", "_json_convert", exp.LaxFloat64, nulls=STRICT + "; NULL where it cannot convert"),
    _f("LAX_INT64", "JSON", "_json_convert", exp.LaxInt64, nulls=STRICT + "; NULL where it cannot convert"),
    _f("LAX_STRING", "JSON", "_json_convert", exp.LaxString, nulls=STRICT + "; NULL where it cannot convert"),
    _f("PARSE_JSON", "JSON", "_parse_json", exp.ParseJSON, arity=(1, 2)),
    _f("TO_JSON", "JSON", "_to_json", exp.JSONFormat, arity=(1, 2), nulls="NULL becomes JSON null"),
    _f("TO_JSON_STRING", "JSON", "_to_json", exp.JSONFormat, arity=(1, 2), nulls="NULL becomes 'null'"),
    *(_f(n, "JSON", "_json_convert_array", nulls=STRICT + "; an error for another JSON type")
      for n in ("BOOL_ARRAY", "FLOAT32_ARRAY", "FLOAT64_ARRAY", "INT64_ARRAY", "STRING_ARRAY")),
    _f("FLOAT32", "JSON", "_json_convert_array", nulls=STRICT + "; an error for another JSON type"),
    _f("JSON_ARRAY_APPEND", "JSON", "_json_edit", exp.JSONArrayAppend, arity=(3, None), nulls="NULL if the JSON is NULL"),
    _f("JSON_ARRAY_INSERT", "JSON", "_json_edit", exp.JSONArrayInsert, arity=(3, None), nulls="NULL if the JSON is NULL"),
    _f("JSON_CONTAINS", "JSON", _fn("ls_json_contains", BOOL), arity=TWO),
    _f("SAFE_TO_JSON", "JSON", "_to_json", nulls="NULL becomes JSON null"),
)

_MATH1: dict[str, type[exp.Expression]] = {"SIN": exp.Sin, "COS": exp.Cos, "TAN": exp.Tan, "ASIN": exp.Asin, "ACOS": exp.Acos, "ATAN": exp.Atan,
          "SINH": exp.Sinh, "COSH": exp.Cosh, "TANH": exp.Tanh, "ASINH": exp.Asinh, "ACOSH": exp.Acosh,
          "ATANH": exp.Atanh}

MATHS = (
    _f("ABS", "Mathematical", Fn("abs", ("this",), same_as(0)), exp.Abs),
    _f("ATAN2", "Mathematical", Fn("ls_math2", ("this", "expression"), FLOAT64, extra=("'ATAN2'",)), exp.Atan2, arity=TWO),
    _f("CEIL", "Mathematical", Fn("ceil", ("this",), float_unless_numeric), exp.Ceil),
    _f("CEILING", "Mathematical", Fn("ceil", ("this",), float_unless_numeric), exp.Ceil),
    _f("DIV", "Mathematical", Fn("ls_div", ("this", "expression"), INT64), exp.IntDiv, arity=TWO),
    _f("EXP", "Mathematical", Fn("ls_math1", ("this",), FLOAT64, extra=("'EXP'",)), exp.Exp),
    _f("FLOOR", "Mathematical", Fn("floor", ("this",), float_unless_numeric), exp.Floor),
    _f("GREATEST", "Mathematical", BUILTIN, exp.Greatest, arity=(1, None)),
    _f("IEEE_DIVIDE", "Mathematical", _fn("ls_ieee_divide", FLOAT64), arity=TWO, nulls=STRICT + "; +/-inf or NaN for x / 0"),
    _f("IS_INF", "Mathematical", Fn("ls_is_inf", ("this",), BOOL), exp.IsInf),
    _f("IS_NAN", "Mathematical", "_is_nan", exp.IsNan),
    _f("LEAST", "Mathematical", BUILTIN, exp.Least, arity=(1, None)),
    _f("LN", "Mathematical", Fn("ls_math1", ("this",), FLOAT64, extra=("'LN'",)), exp.Ln),
    _f("LOG", "Mathematical", "_log", exp.Log, arity=(1, 2)),
    _f("LOG10", "Mathematical", "_log", exp.Log),
    _f("MOD", "Mathematical", BUILTIN, exp.Mod, arity=TWO),
    _f("POW", "Mathematical", Fn("ls_pow", ("this", "expression"), FLOAT64), exp.Pow, arity=TWO),
    _f("POWER", "Mathematical", Fn("ls_pow", ("this", "expression"), FLOAT64), exp.Pow, arity=TWO),
    _f("ROUND", "Mathematical", Fn("round", ("this", "decimals"), float_unless_numeric), exp.Round, arity=(1, 2)),
    _f("SAFE_DIVIDE", "Mathematical", "_safe_divide", exp.SafeDivide, arity=TWO, nulls=STRICT + "; NULL for division by zero"),
    _f("SIGN", "Mathematical", Fn("sign", ("this",), same_as(0)), exp.Sign),
    _f("SQRT", "Mathematical", Fn("ls_math1", ("this",), FLOAT64, extra=("'SQRT'",)), exp.Sqrt),
    _f("TRUNC", "Mathematical", Fn("ls_trunc", ("this", "decimals"), float_unless_numeric), exp.Trunc, arity=(1, 2)),
    *(_f(name, "Mathematical", Fn("ls_math1", ("this",), FLOAT64, extra=(f"'{name}'",)), node) for name, node in _MATH1.items()),
    _f("SAFE_ADD", "Mathematical", "_safe_arithmetic", exp.SafeAdd, arity=TWO, nulls=STRICT + "; NULL on overflow"),
    _f("SAFE_MULTIPLY", "Mathematical", "_safe_arithmetic", exp.SafeMultiply, arity=TWO,
       nulls=STRICT + "; NULL on overflow"),
    _f("SAFE_NEGATE", "Mathematical", "_safe_arithmetic", exp.SafeNegate, nulls=STRICT + "; NULL on overflow"),
    _f("SAFE_SUBTRACT", "Mathematical", "_safe_arithmetic", exp.SafeSubtract, arity=TWO,
       nulls=STRICT + "; NULL on overflow"),
    _f("COSINE_DISTANCE", "Vector", "_vector", exp.CosineDistance, arity=TWO, nulls=STRICT + "; NULL elements are an error"),
    _f("DOT_PRODUCT", "Vector", "_vector", exp.DotProduct, arity=TWO, nulls=STRICT + "; NULL elements are an error"),
    _f("EUCLIDEAN_DISTANCE", "Vector", "_vector", exp.EuclideanDistance, arity=TWO,
       nulls=STRICT + "; NULL elements are an error"),
    *_refused("Vector", "APPROX_COSINE_DISTANCE APPROX_DOT_PRODUCT APPROX_EUCLIDEAN_DISTANCE"),
)

NETS = (
    _f("NET.HOST", "Net", "_net", exp.NetFunc),
    _f("NET.IP_FROM_STRING", "Net", "_net", exp.NetFunc),
    _f("NET.IP_NET_MASK", "Net", "_net", exp.NetFunc, arity=TWO),
    _f("NET.IP_TO_STRING", "Net", "_net", exp.NetFunc),
    _f("NET.IP_TRUNC", "Net", "_net", exp.NetFunc, arity=TWO),
    _f("NET.IPV4_FROM_INT64", "Net", "_net", exp.NetFunc),
    _f("NET.IPV4_TO_INT64", "Net", "_net", exp.NetFunc),
    _f("NET.SAFE_IP_FROM_STRING", "Net", "_net", exp.NetFunc, nulls=STRICT + "; NULL for a malformed address"),
    *_refused("Net", "NET.PUBLIC_SUFFIX NET.REG_DOMAIN"),
)

STRINGS = (
    _f("BYTE_LENGTH", "String", Fn("ls_byte_length", ("this",), INT64), exp.ByteLength),
    _f("CHAR_LENGTH", "String", Fn("ls_char_length", ("this",), INT64), exp.Length),
    _f("CHARACTER_LENGTH", "String", Fn("ls_char_length", ("this",), INT64), exp.Length),
    _f("CONCAT", "String", BUILTIN, exp.Concat, arity=(1, None)),
    _f("ENDS_WITH", "String", Fn("ls_ends_with", ("this", "expression"), BOOL), exp.EndsWith, arity=TWO),
    _f("FORMAT", "String", Fn("ls_format", ("this", "*expressions"), STRING), exp.Format, arity=(1, None),
       nulls="a NULL format is NULL; a NULL value prints NULL"),
    _f("LENGTH", "String", Fn("ls_char_length", ("this",), INT64), exp.Length),
    _f("LOWER", "String", Fn("ls_lower", ("this",), same_as(0)), exp.Lower),
    _f("LPAD", "String", "_pad", exp.Pad, arity=(2, 3)),
    _f("LTRIM", "String", "_trim", exp.Trim, arity=(1, 2)),
    _f("NORMALIZE", "String", "_normalize", exp.Normalize, arity=(1, 2)),
    _f("REGEXP_CONTAINS", "String", Fn("ls_regexp_contains", ("this", "expression"), BOOL), exp.RegexpLike, arity=TWO),
    _f("REGEXP_EXTRACT", "String", Fn("ls_regexp_extract", ("this", "expression"), STRING), exp.RegexpExtract,
       arity=(2, 4)),
    _f("REGEXP_EXTRACT_ALL", "String", Fn("ls_regexp_extract_all", ("this", "expression"), fixed(T.array_of(T.STRING))),
       exp.RegexpExtractAll, arity=TWO),
    _f("REGEXP_REPLACE", "String", Fn("ls_regexp_replace", ("this", "expression", "replacement"), STRING),
       exp.RegexpReplace, arity=(3, 3)),
    _f("REPEAT", "String", Fn("ls_repeat", ("this", "times"), STRING), exp.Repeat, arity=TWO),
    _f("REPLACE", "String", Fn("replace", ("this", "expression", "replacement"), same_as(0)), exp.Replace, arity=(3, 3)),
    _f("REVERSE", "String", Fn("ls_reverse", ("this",), same_as(0)), exp.Reverse),
    _f("RPAD", "String", "_pad", exp.Pad, arity=(2, 3)),
    _f("RTRIM", "String", "_trim", exp.Trim, arity=(1, 2)),
    _f("SOUNDEX", "String", Fn("ls_soundex", ("this",), STRING), exp.Soundex),
    _f("SPLIT", "String", "_split", exp.Split, arity=(1, 2)),
    _f("STARTS_WITH", "String", Fn("ls_starts_with", ("this", "expression"), BOOL), exp.StartsWith, arity=TWO),
    _f("STRPOS", "String", Fn("ls_strpos", ("this", "substr"), INT64), exp.StrPosition, arity=TWO),
    _f("SUBSTR", "String", Fn("ls_substr", ("this", "start", "length"), same_as(0)), exp.Substring, arity=(2, 3)),
    _f("SUBSTRING", "String", Fn("ls_substr", ("this", "start", "length"), same_as(0)), exp.Substring, arity=(2, 3)),
    _f("TRIM", "String", "_trim", exp.Trim, arity=(1, 2)),
    _f("UPPER", "String", Fn("ls_upper", ("this",), same_as(0)), exp.Upper),
    _f("NORMALIZE_AND_CASEFOLD", "String", "_normalize", exp.Normalize, arity=(1, 2)),
)

TIMESTAMPS = (
    _f("CURRENT_TIMESTAMP", "Timestamp", BUILTIN, exp.CurrentTimestamp, arity=(0, 0), nulls="", volatile=True),
    _f("FORMAT_TIMESTAMP", "Timestamp", "_format_timestamp", exp.TimeToStr, arity=(2, 3)),
    _f("PARSE_TIMESTAMP", "Timestamp", "_parse_timestamp", exp.StrToTime, arity=(2, 3)),
    _f("PENDING_COMMIT_TIMESTAMP", "Timestamp", "_pending_commit_timestamp", arity=(0, 0), nulls="", volatile=True),
    _f("TIMESTAMP", "Timestamp", "_timestamp", exp.Timestamp, arity=(1, 2)),
    _f("TIMESTAMP_ADD", "Timestamp", "_timestamp_add", exp.TimestampAdd, arity=TWO),
    _f("TIMESTAMP_DIFF", "Timestamp", "_timestamp_diff", exp.TimestampDiff, arity=(3, 3)),
    _f("TIMESTAMP_MICROS", "Timestamp", "_unix_to_time", exp.UnixToTime),
    _f("TIMESTAMP_MILLIS", "Timestamp", "_unix_to_time", exp.UnixToTime),
    _f("TIMESTAMP_SECONDS", "Timestamp", "_unix_to_time", exp.UnixToTime),
    _f("TIMESTAMP_SUB", "Timestamp", "_timestamp_add", exp.TimestampSub, arity=TWO),
    _f("TIMESTAMP_TRUNC", "Timestamp", "_timestamp_trunc", exp.TimestampTrunc, arity=(2, 3)),
    _f("UNIX_MICROS", "Timestamp", Fn("ls_unix", ("this",), INT64, extra=("6",)), exp.UnixMicros),
    _f("UNIX_MILLIS", "Timestamp", Fn("ls_unix", ("this",), INT64, extra=("3",)), exp.UnixMillis),
    _f("UNIX_SECONDS", "Timestamp", Fn("ls_unix", ("this",), INT64, extra=("0",)), exp.UnixSeconds),
)

UTILITIES = (
    _f("GENERATE_UUID", "Utility", _fn("ls_new_uuid", STRING, deterministic=False), exp.Uuid, arity=(0, 0), nulls="",
       volatile=True),
    _f("NEW_UUID", "Utility", _fn("ls_new_uuid", fixed(T.UUID), deterministic=False), arity=(0, 0), nulls="",
       volatile=True),
    _f("GET_INTERNAL_SEQUENCE_STATE", "Sequence", "_sequence_function", nulls="", volatile=True),
    _f("GET_NEXT_SEQUENCE_VALUE", "Sequence", "_sequence_function", nulls="", volatile=True),
    _f("ERROR", "Utility", _fn("ls_error", lambda args: None), nulls="an error with the message, NULL or not"),
    *_refused("Search", "SCORE SCORE_NGRAMS SEARCH SEARCH_NGRAMS SEARCH_SUBSTRING SNIPPET TOKEN TOKENIZE_BOOL "
                        "TOKENIZE_FULLTEXT TOKENIZE_JSON TOKENIZE_NGRAMS TOKENIZE_NUMBER TOKENIZE_SUBSTRING TOKENLIST_CONCAT"),
    *_refused("ML", "ML.PREDICT AI.CLASSIFY AI.IF AI.SCORE"),
    *_refused("Protocol buffer", "REPLACE_FIELDS"),
)

ROWS: tuple[Function, ...] = (AGGREGATES + ARRAYS + BITS + CONDITIONALS + CONVERSIONS + DATES + HASHES + INTERVALS
                              + JSONS + MATHS + NETS + STRINGS + TIMESTAMPS + UTILITIES)
ROWS_BY_NAME: dict[str, Function] = {r.name: r for r in ROWS}


def _by_node() -> dict[type[exp.Expression], Function]:
    out: dict[type[exp.Expression], Function] = {}
    for row in ROWS:
        for node in row.nodes:
            out.setdefault(node, row)  # classes shared by several names share one handler
    return out


_BY_NODE = _by_node()


#: Names the SQL text's preprocessing gives a function before sqlglot reads it (spanner_syntax: FLOAT32 -> FLOAT4).
_RENAMED = {"FLOAT4": "FLOAT32"}


def row_for_node(node: exp.Expression) -> Function | None:
    """The row evaluating ``node``: by its sqlglot class, or by name for an anonymous call."""
    if isinstance(node, exp.Anonymous):
        return ROWS_BY_NAME.get(function_name(node))
    return _BY_NODE.get(type(node))


def function_name(node: exp.Expression) -> str:
    """The GoogleSQL name of a call, for messages (``SAFE.``, ``NET.`` and sqlglot's renamings included).

    >>> import sqlglot
    >>> function_name(sqlglot.parse_one("ARRAY_FILTER(a, e -> e > 1)", read="bigquery"))
    'ARRAY_FILTER'
    """
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        return _RENAMED.get(name, name)
    if isinstance(node, exp.NetFunc):
        return "NET." + function_name(node.this)
    if isinstance(node, exp.SafeFunc):
        return "SAFE." + function_name(node.this)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):  # AI.CLASSIFY(...)
        return f"{node.this.name.upper()}.{function_name(node.expression)}"
    row = _BY_NODE.get(type(node))
    if row is not None:
        return row.name
    return node.sql_name() if isinstance(node, exp.Func) else node.key.upper()
