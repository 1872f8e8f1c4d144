"""GoogleSQL functions as data: SQLite name, arguments, and the rule for the result type.

Functions whose translation is "call this SQLite function with these arguments" live in
:data:`SIMPLE`, keyed by the sqlglot expression class (sqlglot normalises GoogleSQL names,
e.g. INSTR and STRPOS both become ``StrPosition``). The translator handles the rest
(operators, CAST, date parts, aggregates) itself. :func:`supertype` and
:func:`comparable` are GoogleSQL's coercion rules for the types this server supports.

Example:
    >>> from watcher.localspanner import types as T
    >>> SIMPLE[exp.StrPosition].result([T.STRING, T.STRING]) == T.INT64
    True
    >>> supertype([T.INT64, T.FLOAT64]) == T.FLOAT64
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from .. import types as T
from ..types import SpannerType, TypeCode

TypeRule = Callable[[Sequence["SpannerType | None"]], "SpannerType | None"]

_NUMERIC_RANK = {TypeCode.INT64: 0, TypeCode.NUMERIC: 1, TypeCode.FLOAT32: 2, TypeCode.FLOAT64: 2}


def fixed(t: SpannerType) -> TypeRule:
    return lambda args: t


def same_as(i: int) -> TypeRule:
    return lambda args: args[i] if i < len(args) else None


def float_unless_numeric(args: Sequence[SpannerType | None]) -> SpannerType:
    return T.NUMERIC if args and args[0] is not None and args[0].code == TypeCode.NUMERIC else T.FLOAT64


def array_of_arg(i: int) -> TypeRule:
    return lambda args: T.array_of(args[i] or T.INT64) if i < len(args) else None


def supertype(types: Sequence[SpannerType | None]) -> SpannerType | None:
    """The common type of ``types`` (None entries are NULLs); raises TypeError when there is none."""
    known = [t for t in types if t is not None]
    if not known:
        return None
    first = known[0]
    if all(t.same_kind(first) for t in known):
        return first.without_length()
    if all(t.code in _NUMERIC_RANK for t in known):
        if any(t.code == TypeCode.FLOAT32 for t in known):  # FLOAT32 with anything else widens to FLOAT64
            return T.FLOAT64
        return max(known, key=lambda t: _NUMERIC_RANK[t.code]).without_length()
    raise TypeError(", ".join(str(t) for t in known))


#: Types GoogleSQL defines neither equality nor order for: =, !=, <, IN on them are errors.
_WITHOUT_COMPARISON = frozenset({TypeCode.JSON})


def has_comparison(t: SpannerType | None) -> bool:
    """False for a type that cannot be compared at all (JSON); None (a NULL) can.

    >>> has_comparison(T.JSON), has_comparison(T.STRING), has_comparison(None)
    (False, True, True)
    """
    return t is None or t.code not in _WITHOUT_COMPARISON


def comparable(a: SpannerType | None, b: SpannerType | None) -> bool:
    if a is None or b is None:
        return True
    if a.code in _NUMERIC_RANK and b.code in _NUMERIC_RANK:
        return True
    return a.same_kind(b)


@dataclass(frozen=True)
class Fn:
    """A function translated as ``sql(arg1, arg2, ...)``.

    ``args`` are sqlglot argument keys in call order ("*expressions" spreads a list); a
    missing trailing argument is left out (the SQLite function is registered for each
    arity). ``deterministic`` False keeps it out of generated columns.
    """

    sql: str
    args: tuple[str, ...]
    result: TypeRule
    deterministic: bool = True


STRING, BYTES, INT64, BOOL = fixed(T.STRING), fixed(T.BYTES), fixed(T.INT64), fixed(T.BOOL)

SIMPLE: dict[type[exp.Expression], Fn] = {
    exp.FarmFingerprint: Fn("ls_farm_fingerprint", ("*expressions",), INT64),
    exp.SHA1Digest: Fn("ls_sha1", ("this",), BYTES),
    exp.SHA: Fn("ls_sha1", ("this",), BYTES),
    exp.MD5Digest: Fn("ls_md5", ("this",), BYTES),
    exp.ToBase64: Fn("ls_to_base64", ("this",), STRING),
    exp.FromBase64: Fn("ls_from_base64", ("this",), BYTES),
    exp.LowerHex: Fn("ls_to_hex", ("this",), STRING),
    exp.Hex: Fn("ls_to_hex", ("this",), STRING),
    exp.Unhex: Fn("ls_from_hex", ("this",), BYTES),
    exp.Lower: Fn("ls_lower", ("this",), same_as(0)),
    exp.Upper: Fn("ls_upper", ("this",), same_as(0)),
    exp.StartsWith: Fn("ls_starts_with", ("this", "expression"), BOOL),
    exp.EndsWith: Fn("ls_ends_with", ("this", "expression"), BOOL),
    exp.StrPosition: Fn("ls_strpos", ("this", "substr"), INT64),
    exp.Replace: Fn("replace", ("this", "expression", "replacement"), same_as(0)),
    exp.RegexpLike: Fn("ls_regexp_contains", ("this", "expression"), BOOL),
    exp.RegexpExtract: Fn("ls_regexp_extract", ("this", "expression"), STRING),
    exp.RegexpReplace: Fn("ls_regexp_replace", ("this", "expression", "replacement"), STRING),
    exp.ByteLength: Fn("ls_byte_length", ("this",), INT64),
    exp.Length: Fn("ls_char_length", ("this",), INT64),
    exp.ArraySize: Fn("ls_array_length", ("this",), INT64),
    exp.Substring: Fn("ls_substr", ("this", "start", "length"), same_as(0)),
    exp.Reverse: Fn("ls_reverse", ("this",), same_as(0)),
    exp.Repeat: Fn("ls_repeat", ("this", "times"), STRING),
    exp.Format: Fn("ls_format", ("this", "*expressions"), STRING),
    exp.Abs: Fn("abs", ("this",), same_as(0)),
    exp.Sign: Fn("sign", ("this",), same_as(0)),
    exp.Floor: Fn("floor", ("this",), float_unless_numeric),
    exp.Ceil: Fn("ceil", ("this",), float_unless_numeric),
    exp.Round: Fn("round", ("this", "decimals"), float_unless_numeric),
    exp.Sqrt: Fn("sqrt", ("this",), fixed(T.FLOAT64)),
    exp.Ln: Fn("ln", ("this",), fixed(T.FLOAT64)),
    exp.Exp: Fn("exp", ("this",), fixed(T.FLOAT64)),
    exp.Pow: Fn("pow", ("this", "expression"), fixed(T.FLOAT64)),
    exp.Nullif: Fn("nullif", ("this", "expression"), same_as(0)),
    exp.IntDiv: Fn("ls_div", ("this", "expression"), INT64),
    exp.UnixSeconds: Fn("ls_unix", ("this",), INT64),
    exp.UnixMillis: Fn("ls_unix", ("this",), INT64),
    exp.UnixMicros: Fn("ls_unix", ("this",), INT64),
    exp.DateFromParts: Fn("ls_date_from_parts", ("year", "month", "day"), fixed(T.DATE)),
    exp.GenerateSeries: Fn("ls_generate_array", ("start", "end", "step"), array_of_arg(0)),
    exp.JustifyDays: Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL)),
    exp.JustifyHours: Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL)),
    exp.JustifyInterval: Fn("ls_interval_justify", ("this",), fixed(T.INTERVAL)),
}

# Extra constant arguments appended for some classes (the UDF is shared).
EXTRA_ARGS: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.UnixSeconds: ("0",),
    exp.UnixMillis: ("3",),
    exp.UnixMicros: ("6",),
    exp.JustifyDays: ("1", "0"),
    exp.JustifyHours: ("0", "1"),
    exp.JustifyInterval: ("1", "1"),
}

# Functions sqlglot leaves as exp.Anonymous, by upper-case GoogleSQL name.
ANONYMOUS: dict[str, Fn] = {
    "SHA256": Fn("ls_sha256", ("*expressions",), BYTES),
    "SHA512": Fn("ls_sha512", ("*expressions",), BYTES),
    "IEEE_DIVIDE": Fn("ls_fdiv", ("*expressions",), fixed(T.FLOAT64)),
    "CHAR_LENGTH": Fn("ls_char_length", ("*expressions",), INT64),
    "BYTE_LENGTH": Fn("ls_byte_length", ("*expressions",), INT64),
    "TO_HEX": Fn("ls_to_hex", ("*expressions",), STRING),
    "FROM_HEX": Fn("ls_from_hex", ("*expressions",), BYTES),
    "STRPOS": Fn("ls_strpos", ("*expressions",), INT64),
    "NEW_UUID": Fn("ls_new_uuid", ("*expressions",), fixed(T.UUID), deterministic=False),
    "GENERATE_UUID": Fn("ls_new_uuid", ("*expressions",), STRING, deterministic=False),
    "BIT_REVERSE": Fn("ls_bit_reverse", ("*expressions",), INT64),
}

# Aggregates translated to a SQLite aggregate of the same shape, with their result rule.
AGGREGATES: dict[type[exp.Expression], tuple[str, TypeRule]] = {
    exp.Count: ("count", INT64),
    exp.Sum: ("sum", lambda args: T.FLOAT64 if args and args[0] is not None and args[0].code == TypeCode.FLOAT32 else same_as(0)(args)),
    exp.Avg: ("avg", lambda args: T.NUMERIC if args and args[0] is not None and args[0].code == TypeCode.NUMERIC else T.FLOAT64),
    exp.Min: ("min", same_as(0)),
    exp.Max: ("max", same_as(0)),
    exp.LogicalAnd: ("min", BOOL),
    exp.LogicalOr: ("max", BOOL),
    exp.AnyValue: ("min", same_as(0)),
}
