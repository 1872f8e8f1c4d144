"""Result-type rules and coercion for GoogleSQL functions, and the shape of a plain call.

A :data:`TypeRule` maps the argument types (None: a NULL) to the result type;
:func:`supertype` and :func:`comparable` are GoogleSQL's coercion rules for the types this
server supports. :class:`Fn` is a function translated as ``sql(arg1, arg2, ...)``; the rows
of :mod:`.function_table` use both.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> supertype([T.INT64, T.FLOAT64]) == T.FLOAT64
    True
    >>> Fn("ls_md5", ("this",), fixed(T.BYTES)).result([T.STRING]) == T.BYTES
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode

TypeRule = Callable[[Sequence["SpannerType | None"]], "SpannerType | None"]

_NUMERIC_RANK = {TypeCode.INT64: 0, TypeCode.NUMERIC: 1, TypeCode.FLOAT32: 2, TypeCode.FLOAT64: 2}


def fixed(t: SpannerType) -> TypeRule:
    """The rule of a function whose result type is always ``t``."""
    return lambda args: t


def same_as(i: int) -> TypeRule:
    """The rule of a function whose result has the type of argument ``i``."""
    return lambda args: args[i] if i < len(args) else None


def float_unless_numeric(args: Sequence[SpannerType | None]) -> SpannerType:
    return T.NUMERIC if args and args[0] is not None and args[0].code == TypeCode.NUMERIC else T.FLOAT64


def array_of_arg(i: int) -> TypeRule:
    return lambda args: T.array_of(args[i] or T.INT64) if i < len(args) else None


def element_of(i: int) -> TypeRule:
    """The element type of the ARRAY argument ``i``."""
    def rule(args: Sequence[SpannerType | None]) -> SpannerType | None:
        t = args[i] if i < len(args) else None
        return t.element if t is not None and t.is_array else None

    return rule


def sum_type(args: Sequence[SpannerType | None]) -> SpannerType | None:
    if args and args[0] is not None and args[0].code == TypeCode.FLOAT32:
        return T.FLOAT64
    return args[0] if args else None


def avg_type(args: Sequence[SpannerType | None]) -> SpannerType:
    return T.NUMERIC if args and args[0] is not None and args[0].code == TypeCode.NUMERIC else T.FLOAT64


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
    arity). ``extra`` are constant SQL arguments appended (a shared UDF's mode).
    ``deterministic`` False keeps it out of generated columns.
    """

    sql: str
    args: tuple[str, ...]
    result: TypeRule
    deterministic: bool = True
    extra: tuple[str, ...] = ()


STRING, BYTES, INT64, BOOL = fixed(T.STRING), fixed(T.BYTES), fixed(T.INT64), fixed(T.BOOL)
FLOAT64, JSON, DATE, TIMESTAMP = fixed(T.FLOAT64), fixed(T.JSON), fixed(T.DATE), fixed(T.TIMESTAMP)
