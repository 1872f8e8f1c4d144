"""More mathematical functions: trigonometry, logarithms, safe arithmetic, vectors, bits, UNIX dates.

Registered in SQLite under ``ls_`` names (:data:`SPECS`); NULL in, NULL out unless said.
A result outside a function's domain is the error GoogleSQL gives, naming the call.

Example:
    >>> math1(0.0, "COS"), trunc(-2.7, None), log(8.0, 2.0)
    (1.0, -2.0, 3.0)
    >>> unix_date("1970-01-02"), date_from_unix_date(-1)
    (1, '1969-12-31')
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Callable
from typing import Any

from ..datamodel import values
from ..datamodel.scalar_values import NAN_TEXT
from .udf import UdfSpec, fail

_EPOCH = dt.date(1970, 1, 1)


#: name -> the function of one FLOAT64 (math's functions raise ValueError outside their domain).
_ONE: dict[str, Callable[[float], float]] = {
    "SIN": math.sin, "COS": math.cos, "TAN": math.tan, "ASIN": math.asin, "ACOS": math.acos, "ATAN": math.atan,
    "SINH": math.sinh, "COSH": math.cosh, "TANH": math.tanh, "ASINH": math.asinh, "ACOSH": math.acosh,
    "ATANH": math.atanh, "SQRT": math.sqrt, "LN": math.log, "EXP": math.exp,
}


def _float(value: Any) -> float:
    return float(value) if not isinstance(value, str) else float(value.replace("Infinity", "inf"))


def _stored(v: float) -> float | str:
    """A FLOAT64 result in stored form: NaN as its text (SQLite makes a NaN float NULL)."""
    return NAN_TEXT if math.isnan(v) else v


def math1(value: Any, name: str) -> float | str | None:
    if value is None:
        return None
    x = _float(value)
    if math.isnan(x):
        return NAN_TEXT
    try:
        return _stored(_ONE[name](x))
    except (ValueError, ZeroDivisionError, OverflowError):
        fail(f"Floating point error in function: {name}({value})")


def math2(a: Any, b: Any, name: str) -> float | None:
    if a is None or b is None:
        return None
    return math.atan2(_float(a), _float(b))


def power(x: Any, y: Any) -> float | None:
    """POW / POWER: an error where the result is not a real number or overflows."""
    if x is None or y is None:
        return None
    try:
        result = math.pow(_float(x), _float(y))
    except (ValueError, OverflowError, ZeroDivisionError):
        fail(f"Floating point error in function: POW({x}, {y})")
    return result


def ieee_divide(x: Any, y: Any) -> float | str | None:
    """IEEE_DIVIDE: division by zero gives +/-inf, or NaN for 0/0, never an error."""
    if x is None or y is None:
        return None
    a, b = _float(x), _float(y)
    if b == 0:
        return NAN_TEXT if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def is_inf(value: Any) -> int | None:
    return None if value is None else int(math.isinf(_float(value)))


def trunc(value: Any, digits: int | None) -> float | str | None:
    if value is None:
        return None
    x = _float(value)
    if not math.isfinite(x):
        return _stored(x)
    scale = 10.0 ** (digits or 0)
    return math.trunc(x * scale) / scale


def log(value: Any, base: Any) -> float | None:
    """LOG(X, Y): the logarithm of X to base Y (LOG10 passes 10)."""
    if value is None or base is None:
        return None
    x, y = _float(value), _float(base)
    if x <= 0 or y <= 0 or y == 1:
        fail(f"Floating point error in function: LOG({value}, {base})")
    return math.log(x, y)


def bit_count(value: int | bytes | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return sum(bin(b).count("1") for b in value)
    return bin(value & 0xFFFFFFFFFFFFFFFF).count("1")


def unix_date(value: str | None) -> int | None:
    return None if value is None else (dt.date.fromisoformat(value[:10]) - _EPOCH).days


def date_from_unix_date(days: int | None) -> str | None:
    if days is None:
        return None
    try:
        return (_EPOCH + dt.timedelta(days=days)).isoformat()
    except OverflowError:
        fail(f"DATE_FROM_UNIX_DATE: {days} is outside the DATE range")


_INT64 = (-(2**63), 2**63 - 1)
_SAFE_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "ADD": lambda a, b: a + b, "SUBTRACT": lambda a, b: a - b, "MULTIPLY": lambda a, b: a * b,
    "NEGATE": lambda a, b: -a,
}


def safe_arithmetic(a: Any, b: Any, op: str, kind: str) -> Any:
    """SAFE_ADD / SAFE_SUBTRACT / SAFE_MULTIPLY / SAFE_NEGATE: NULL instead of an overflow error."""
    if a is None or (b is None and op != "NEGATE"):
        return None
    if kind == "NUMERIC":
        result = _SAFE_OPS[op](decimal.Decimal(str(a)), decimal.Decimal(str(b if b is not None else 0)))
        try:
            return values.canonical_numeric(str(result))
        except values.ValueError_:
            return None
    if kind == "INT64":
        result = _SAFE_OPS[op](int(a), int(b if b is not None else 0))
        return result if _INT64[0] <= result <= _INT64[1] else None
    result = _SAFE_OPS[op](_float(a), _float(b if b is not None else 0))
    return None if math.isinf(result) else result


def _vector(array: str, name: str) -> list[float]:
    items = json.loads(array)
    if any(i is None for i in items):
        fail(f"{name}: a vector must not contain NULL elements")
    return [_float(i) for i in items]


def vector_function(a: str | None, b: str | None, name: str) -> float | None:
    """COSINE_DISTANCE, EUCLIDEAN_DISTANCE and DOT_PRODUCT of two ARRAYs of numbers."""
    if a is None or b is None:
        return None
    x, y = _vector(a, name), _vector(b, name)
    if len(x) != len(y):
        fail(f"{name}: the vectors have different lengths ({len(x)} and {len(y)})")
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    if name == "DOT_PRODUCT":
        return dot
    if name == "EUCLIDEAN_DISTANCE":
        return math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y, strict=True)))
    norms = math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y))
    if norms == 0:
        fail("COSINE_DISTANCE: a vector of zeros has no direction")
    return 1 - dot / norms


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_safe_arithmetic", 4, safe_arithmetic),
    UdfSpec("ls_vector", 3, vector_function),
    UdfSpec("ls_math1", 2, math1),
    UdfSpec("ls_math2", 3, math2),
    UdfSpec("ls_pow", 2, power),
    UdfSpec("ls_ieee_divide", 2, ieee_divide),
    UdfSpec("ls_is_inf", 1, is_inf),
    UdfSpec("ls_trunc", 1, lambda v: trunc(v, None)),
    UdfSpec("ls_trunc", 2, trunc),
    UdfSpec("ls_log", 2, log),
    UdfSpec("ls_bit_count", 1, bit_count),
    UdfSpec("ls_unix_date", 1, unix_date),
    UdfSpec("ls_date_from_unix_date", 1, date_from_unix_date),
)
