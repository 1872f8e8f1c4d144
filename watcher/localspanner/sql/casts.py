"""CAST and SAFE_CAST between scalar types, on stored values.

:func:`cast_value` is the SQL function ``ls_cast(value, from, to, safe)``; the rules are a
table keyed by (from, to) type name. A pair missing from the table is a cast Spanner
rejects, which the translator reports before running anything (:func:`can_cast`).

Example:
    >>> cast_value("42", "STRING", "INT64", 0)
    42
    >>> cast_value(1.0, "FLOAT64", "STRING", 0)
    '1'
    >>> cast_value("x", "STRING", "INT64", 1) is None
    True
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from typing import Any

from ..datamodel import intervals, scalar_values, values
from .functions import format_float
from .time_functions import DEFAULT_TIME_ZONE, date_from, format_timestamp, timestamp_from
from .udf import UdfError, UdfSpec, clear_error, fail

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int_range(v: int, original: Any) -> int:
    if not _INT64_MIN <= v <= _INT64_MAX:
        fail(f"Int64 overflow: {original}")
    return v


def _string_to_int(s: str) -> int:
    text = s.strip()
    body = text[1:] if text[:1] in "+-" else text
    try:
        v = int(body, 16) if body.lower().startswith("0x") else int(body, 10)
        v = -v if text.startswith("-") else v
    except ValueError:
        fail(f"Bad int64 value: {s}")
    return _int_range(v, s)


def _round_half_away(x: float | decimal.Decimal) -> int:
    d = decimal.Decimal(x)
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def _float_to_int(x: Any) -> int:
    if isinstance(x, str) or math.isnan(x) or math.isinf(x):
        fail(f"Illegal conversion of non-finite floating point number to an integer: {x}")
    return _int_range(_round_half_away(x), x)


def _string_to_float(s: str) -> float | str:
    try:
        v = float(s.strip())
    except ValueError:
        fail(f"Bad double value: {s}")
    return values.NAN_TEXT if math.isnan(v) else v


def _string_to_bool(s: str) -> int:
    low = s.strip().lower()
    if low not in ("true", "false"):
        fail(f"Bad bool value: {s}")
    return int(low == "true")


def _bytes_to_string(b: bytes) -> str:
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        fail("Invalid UTF-8 in BYTES value cast to STRING")


def _timestamp_to_string(ts: str) -> str:
    text = format_timestamp("%Y-%m-%d %H:%M:%E*S%Ez", ts, DEFAULT_TIME_ZONE)
    assert text is not None
    return text[:-3] if text.endswith(":00") else text  # Spanner prints '+00', not '+00:00'


def _numeric(v: Any) -> str:
    try:
        return values.canonical_numeric(v)
    except values.ValueError_ as exc:
        fail(str(exc))


def _json(s: str) -> str:
    try:
        return values.canonical_json(s)
    except values.ValueError_ as exc:
        fail(str(exc))


def _date(s: str) -> str:
    try:
        return values.parse_date(s)
    except values.ValueError_ as exc:
        fail(f"Invalid date: {exc}")


def _float_value(v: Any) -> float:
    return math.nan if v == values.NAN_TEXT else float(v)


def _to_float32(v: Any) -> float | str:
    x = _float_value(v) if not isinstance(v, str) or v == values.NAN_TEXT else _string_to_float(v)
    if isinstance(x, str) or math.isnan(x):
        return values.NAN_TEXT
    rounded = scalar_values.round_float32(x)
    if math.isinf(rounded) and not math.isinf(x):
        fail(f"Float overflow: {v} does not fit FLOAT32")
    return rounded


def _float32_to_string(v: Any) -> str:
    x = _float_value(v)
    return format_float(x) if not math.isfinite(x) else scalar_values.float32_text(x)


def _uuid(s: str) -> str:
    try:
        return scalar_values.canonical_uuid(s)
    except values.ValueError_:
        fail(f"Invalid input to UUID: {s}")


def _interval(s: str) -> str:
    try:
        return intervals.to_stored(intervals.parse(s))
    except intervals.IntervalError as exc:
        fail(str(exc))


_CASTS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("INT64", "STRING"): str,
    ("INT64", "FLOAT64"): float,
    ("INT64", "BOOL"): lambda v: int(v != 0),
    ("INT64", "NUMERIC"): _numeric,
    ("FLOAT64", "STRING"): lambda v: format_float(_float_value(v)),
    ("FLOAT64", "INT64"): lambda v: _float_to_int(_float_value(v)),
    ("FLOAT64", "NUMERIC"): lambda v: _numeric(_float_value(v)),
    ("BOOL", "STRING"): lambda v: "true" if v else "false",
    ("BOOL", "INT64"): lambda v: int(bool(v)),
    ("STRING", "INT64"): _string_to_int,
    ("STRING", "FLOAT64"): _string_to_float,
    ("STRING", "BOOL"): _string_to_bool,
    ("STRING", "BYTES"): lambda v: v.encode("utf-8"),
    ("STRING", "DATE"): _date,
    ("STRING", "TIMESTAMP"): lambda v: timestamp_from(v, DEFAULT_TIME_ZONE),
    ("STRING", "NUMERIC"): _numeric,
    ("STRING", "JSON"): _json,
    ("BYTES", "STRING"): _bytes_to_string,
    ("DATE", "STRING"): str,
    ("DATE", "TIMESTAMP"): lambda v: timestamp_from(v, DEFAULT_TIME_ZONE),
    ("TIMESTAMP", "STRING"): _timestamp_to_string,
    ("TIMESTAMP", "DATE"): lambda v: date_from(v, DEFAULT_TIME_ZONE),
    ("NUMERIC", "STRING"): str,
    ("NUMERIC", "INT64"): lambda v: _int_range(_round_half_away(decimal.Decimal(v)), v),
    ("NUMERIC", "FLOAT64"): lambda v: float(decimal.Decimal(v)),
    ("JSON", "STRING"): str,
    ("INT64", "FLOAT32"): _to_float32,
    ("FLOAT64", "FLOAT32"): _to_float32,
    ("NUMERIC", "FLOAT32"): lambda v: _to_float32(float(decimal.Decimal(v))),
    ("STRING", "FLOAT32"): _to_float32,
    ("FLOAT32", "FLOAT64"): _float_value,
    ("FLOAT32", "STRING"): _float32_to_string,
    ("FLOAT32", "INT64"): lambda v: _float_to_int(_float_value(v)),
    ("FLOAT32", "NUMERIC"): lambda v: _numeric(_float_value(v)),
    ("STRING", "UUID"): _uuid,
    ("UUID", "STRING"): str,
    ("STRING", "INTERVAL"): _interval,
    ("INTERVAL", "STRING"): lambda v: intervals.to_sql_text(intervals.from_stored(v)),
}


def can_cast(source: str, target: str) -> bool:
    """True when GoogleSQL allows CAST from type name ``source`` to ``target``."""
    return source == target or (source, target) in _CASTS


def cast_value(value: Any, source: str, target: str, safe: int) -> Any:
    """Convert one stored value; SAFE_CAST (``safe``) gives NULL instead of an error."""
    if value is None or source == target:
        return value
    fn = _CASTS.get((source, target))
    if fn is None:
        fail(f"Invalid cast from {source} to {target}")
    if not safe:
        return fn(value)
    try:
        return fn(value)
    except (UdfError, ValueError, decimal.InvalidOperation, UnicodeError):
        clear_error()
        return None


SPECS: tuple[UdfSpec, ...] = (UdfSpec("ls_cast", 4, cast_value),)
