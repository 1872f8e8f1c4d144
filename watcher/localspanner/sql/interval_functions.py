"""INTERVAL and UUID in SQL: literals, MAKE_INTERVAL, EXTRACT, arithmetic with TIMESTAMP, NEW_UUID.

The SQL functions here (:data:`SPECS`) work on stored values (``intervals.py`` gives an
INTERVAL's stored form); the ``*_sql`` helpers are what the translator calls when an
operand or a node is an interval. Month and day parts are added to a timestamp in UTC,
a month past the end of a shorter month lands on its last day.

Example:
    >>> from watcher.localspanner.datamodel import intervals
    >>> i = interval_of(36, "HOUR")
    >>> timestamp_add_interval("2024-01-31T00:00:00.000000000Z", interval_of(1, "MONTH"), 1)
    '2024-02-29T00:00:00.000000000Z'
    >>> intervals.from_stored(timestamp_diff_interval("2024-01-02T12:00:00.000000000Z", "2024-01-01T00:00:00.000000000Z"))
    Interval(months=0, days=0, nanos=129600000000000)
"""

from __future__ import annotations

import calendar
import datetime as dt
import uuid
from typing import Any

from ..datamodel import intervals, values
from ..datamodel import types as T
from ..datamodel.types import TypeCode
from .context import Typed
from .udf import UdfSpec, fail

#: (operator, left type, right type) -> (SQL template, result type).
_ARITHMETIC: dict[tuple[str, TypeCode, TypeCode], tuple[str, T.SpannerType]] = {
    ("+", TypeCode.TIMESTAMP, TypeCode.INTERVAL): ("ls_timestamp_add_interval({a}, {b}, 1)", T.TIMESTAMP),
    ("+", TypeCode.INTERVAL, TypeCode.TIMESTAMP): ("ls_timestamp_add_interval({b}, {a}, 1)", T.TIMESTAMP),
    ("-", TypeCode.TIMESTAMP, TypeCode.INTERVAL): ("ls_timestamp_add_interval({a}, {b}, -1)", T.TIMESTAMP),
    ("-", TypeCode.TIMESTAMP, TypeCode.TIMESTAMP): ("ls_timestamp_diff_interval({a}, {b})", T.INTERVAL),
    ("+", TypeCode.INTERVAL, TypeCode.INTERVAL): ("ls_interval_add({a}, {b}, 1)", T.INTERVAL),
    ("-", TypeCode.INTERVAL, TypeCode.INTERVAL): ("ls_interval_add({a}, {b}, -1)", T.INTERVAL),
    ("*", TypeCode.INTERVAL, TypeCode.INT64): ("ls_interval_mul({a}, {b})", T.INTERVAL),
    ("*", TypeCode.INT64, TypeCode.INTERVAL): ("ls_interval_mul({b}, {a})", T.INTERVAL),
}

#: The leading characters of a stored INTERVAL that sort and compare like its length.
_LENGTH_PREFIX = 22


def involves_interval(*typed: Typed) -> bool:
    """True when any operand is an INTERVAL."""
    return any(t.type is not None and t.type.code == TypeCode.INTERVAL for t in typed)


def arithmetic_sql(op: str, left: Typed, right: Typed) -> Typed | None:
    """``left op right`` when an INTERVAL (or TIMESTAMP - TIMESTAMP) is involved, else None."""
    if left.type is None or right.type is None:
        return None
    found = _ARITHMETIC.get((op, left.type.code, right.type.code))
    if found is None:
        return None
    template, result = found
    return Typed(template.format(a=left.sql, b=right.sql), result)


def comparison_operands(left: Typed, right: Typed) -> tuple[str, str]:
    """Intervals compare by their length (a month is 30 days), which their stored prefix is."""
    return f"substr({left.sql}, 1, {_LENGTH_PREFIX})", f"substr({right.sql}, 1, {_LENGTH_PREFIX})"


def literal_sql(amount: int, unit: str) -> str:
    """Stored text of ``INTERVAL amount unit`` as a SQLite literal."""
    return "'" + interval_of(amount, unit) + "'"


# --- SQL functions (stored values in, stored values out) -------------------------------------------

def _checked(make: Any, *args: Any) -> str:
    try:
        return intervals.to_stored(make(*args))
    except intervals.IntervalError as exc:
        fail(str(exc))


def interval_of(amount: int | None, unit: str) -> Any:
    """``INTERVAL amount unit`` (SQL function ``ls_interval``)."""
    if amount is None:
        return None
    return _checked(intervals.of_unit, int(amount), unit)


def interval_from_text(text: str | None, span: str) -> Any:
    """``INTERVAL 'text' YEAR TO SECOND`` (or any span): GoogleSQL's canonical text."""
    if text is None:
        return None
    return _checked(intervals.parse_sql_text if span else intervals.parse, text)


def make_interval(*parts: int | None) -> Any:
    """MAKE_INTERVAL(year, month, day, hour, minute, second); a missing part is 0."""
    return _checked(intervals.make_interval, *(int(p or 0) for p in parts))


def interval_add(a: str | None, b: str | None, sign: int) -> Any:
    """``a + b`` (``sign`` 1) or ``a - b`` (``sign`` -1), part by part."""
    if a is None or b is None:
        return None
    right = intervals.from_stored(b)
    return _checked(lambda: intervals.from_stored(a) + (right if sign > 0 else -right))


def interval_mul(a: str | None, n: int | None) -> Any:
    """``a * n``, part by part."""
    if a is None or n is None:
        return None
    return _checked(lambda: intervals.from_stored(a).scaled(int(n)))


def interval_justify(a: str | None, days: int, hours: int) -> Any:
    """JUSTIFY_DAYS / JUSTIFY_HOURS / JUSTIFY_INTERVAL (``intervals.justify``)."""
    if a is None:
        return None
    return _checked(lambda: intervals.justify(intervals.from_stored(a), days=bool(days), hours=bool(hours)))


def interval_extract(part: str, a: str | None) -> int | None:
    """EXTRACT(part FROM interval)."""
    if a is None:
        return None
    try:
        return intervals.extract(part, intervals.from_stored(a))
    except intervals.IntervalError as exc:
        fail(str(exc))


def _add_months(d: dt.datetime, months: int) -> dt.datetime:
    total = d.year * 12 + (d.month - 1) + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        fail("Timestamp overflow")
    day = min(d.day, calendar.monthrange(year, month + 1)[1])
    return d.replace(year=year, month=month + 1, day=day)


def timestamp_add_interval(ts: str | None, interval: str | None, sign: int) -> str | None:
    """TIMESTAMP +/- INTERVAL: months first (clamped to the month's end), then days and time, in UTC."""
    if ts is None or interval is None:
        return None
    i = intervals.from_stored(interval)
    if sign < 0:
        i = -i
    nanos = values.stored_to_nanos(ts)
    seconds, frac = divmod(nanos, 1_000_000_000)
    moved = _add_months(dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds), i.months)
    base = int((moved - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000_000 + frac
    total = base + i.days * intervals.NANOS_PER_DAY + i.nanos
    try:
        return values.nanos_to_stored(total)
    except (OverflowError, ValueError):
        fail("Timestamp overflow")


def timestamp_diff_interval(a: str | None, b: str | None) -> str | None:
    """TIMESTAMP - TIMESTAMP: the difference as days and time, as GoogleSQL gives it."""
    if a is None or b is None:
        return None
    diff = values.stored_to_nanos(a) - values.stored_to_nanos(b)
    sign = -1 if diff < 0 else 1
    return _checked(lambda: intervals.Interval(0, 0, sign * abs(diff)))


def new_uuid() -> str:
    """NEW_UUID() / GENERATE_UUID(): a random version 4 UUID, lower-case."""
    return str(uuid.uuid4())


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_interval", 2, interval_of),
    UdfSpec("ls_interval_from_text", 2, interval_from_text),
    UdfSpec("ls_make_interval", 6, make_interval),
    UdfSpec("ls_interval_add", 3, interval_add),
    UdfSpec("ls_interval_mul", 2, interval_mul),
    UdfSpec("ls_interval_extract", 2, interval_extract),
    UdfSpec("ls_interval_justify", 3, interval_justify),
    UdfSpec("ls_timestamp_add_interval", 3, timestamp_add_interval),
    UdfSpec("ls_timestamp_diff_interval", 2, timestamp_diff_interval),
    UdfSpec("ls_new_uuid", 0, new_uuid, deterministic=False),
)
