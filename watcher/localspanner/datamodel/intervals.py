"""GoogleSQL INTERVAL values: months, days and nanoseconds, kept apart as Spanner keeps them.

Three forms, as for the other types (``values.py``):

* **wire**: ISO 8601 duration text, ``P1Y2M3DT4H5M6.5S`` (each part may carry its own sign);
* **stored**: text that sorts like the interval: the normalised length in nanoseconds
  (a month counts 30 days, a day 24 hours, as GoogleSQL compares intervals) offset to
  be non-negative and zero-padded, then the three parts, ``'<22 digits>|months|days|nanos'``;
* **python**: an :class:`Interval`.

GoogleSQL compares intervals by that normalised length, so ``INTERVAL 1 MONTH`` and
``INTERVAL 30 DAY`` order alike; as stored values (keys) they stay distinct.

Example:
    >>> i = parse_iso("P1Y2M3DT4H5M6.5S")
    >>> i, to_iso(i)
    (Interval(months=14, days=3, nanos=14706500000000), 'P1Y2M3DT4H5M6.500S')
    >>> to_sql_text(i)
    '1-2 3 4:5:6.500'
    >>> from_stored(to_stored(i)) == i
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import errors

NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_MINUTE = 60 * NANOS_PER_SECOND
NANOS_PER_HOUR = 60 * NANOS_PER_MINUTE
NANOS_PER_DAY = 24 * NANOS_PER_HOUR
DAYS_PER_MONTH = 30

# Spanner's limits for each part (the client library documents the same ranges).
MAX_MONTHS = 120_000
MAX_DAYS = 3_660_000
MAX_NANOS = 316_224_000_000_000_000_000

_STORED_OFFSET = 10**21  # above the largest normalised length (about 9.5e20 ns)
_STORED_WIDTH = 22

#: How many months, days or nanoseconds one unit of a date part is (``INTERVAL n UNIT``).
UNITS: dict[str, tuple[int, int, int]] = {
    "YEAR": (12, 0, 0), "QUARTER": (3, 0, 0), "MONTH": (1, 0, 0), "WEEK": (0, 7, 0), "DAY": (0, 1, 0),
    "HOUR": (0, 0, NANOS_PER_HOUR), "MINUTE": (0, 0, NANOS_PER_MINUTE), "SECOND": (0, 0, NANOS_PER_SECOND),
    "MILLISECOND": (0, 0, 1_000_000), "MICROSECOND": (0, 0, 1_000), "NANOSECOND": (0, 0, 1),
}

_ISO = re.compile(
    r"^P(?:(?P<y>[+-]?\d+)Y)?(?:(?P<mo>[+-]?\d+)M)?(?:(?P<w>[+-]?\d+)W)?(?:(?P<d>[+-]?\d+)D)?"
    r"(?:T(?:(?P<h>[+-]?\d+)H)?(?:(?P<mi>[+-]?\d+)M)?(?:(?P<s>[+-]?(?:\d+(?:[.,]\d{0,9})?|[.,]\d{1,9}))S)?)?$"
)
_SQL_TEXT = re.compile(
    r"^\s*(?:(?P<ys>[+-])?(?P<y>\d+)-(?P<mo>\d+)\s+)?(?:(?P<d>[+-]?\d+)\s+)?"
    r"(?P<ts>[+-])?(?P<h>\d+):(?P<mi>\d+):(?P<s>\d+(?:\.\d{0,9})?)\s*$"
)


class IntervalError(ValueError):
    """Text that is not an interval, or an interval out of Spanner's range."""


@dataclass(frozen=True)
class Interval:
    """An INTERVAL: months, days and nanoseconds (each signed, not normalised into each other)."""

    months: int = 0
    days: int = 0
    nanos: int = 0

    def __post_init__(self) -> None:
        if abs(self.months) > MAX_MONTHS or abs(self.days) > MAX_DAYS or abs(self.nanos) > MAX_NANOS:
            raise IntervalError(errors.interval_field_out_of_range(self.months, self.days, self.nanos))

    @property
    def normalized_nanos(self) -> int:
        """The length GoogleSQL compares intervals by (a month is 30 days, a day 24 hours)."""
        return (self.months * DAYS_PER_MONTH + self.days) * NANOS_PER_DAY + self.nanos

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.months + other.months, self.days + other.days, self.nanos + other.nanos)

    def __neg__(self) -> Interval:
        return Interval(-self.months, -self.days, -self.nanos)

    def scaled(self, factor: int) -> Interval:
        return Interval(self.months * factor, self.days * factor, self.nanos * factor)


def of_unit(amount: int, unit: str) -> Interval:
    """``INTERVAL amount unit``.

    >>> of_unit(3, "week")
    Interval(months=0, days=21, nanos=0)
    """
    step = UNITS.get(unit.upper())
    if step is None:
        raise IntervalError(errors.interval_unit_unsupported(unit))
    return Interval(step[0] * amount, step[1] * amount, step[2] * amount)


def make_interval(year: int = 0, month: int = 0, day: int = 0, hour: int = 0, minute: int = 0, second: int = 0) -> Interval:
    """MAKE_INTERVAL: the parts are added as given, never carried into each other."""
    return Interval(year * 12 + month, day, hour * NANOS_PER_HOUR + minute * NANOS_PER_MINUTE + second * NANOS_PER_SECOND)


def justify(i: Interval, *, days: bool, hours: bool) -> Interval:
    """JUSTIFY_HOURS (every 24 hours a day), JUSTIFY_DAYS (every 30 days a month), or both.

    >>> justify(Interval(0, 35, 50 * NANOS_PER_HOUR), days=True, hours=True)
    Interval(months=1, days=7, nanos=7200000000000)
    """
    months, day_count, nanos = i.months, i.days, i.nanos
    if hours:
        carry = int(nanos / NANOS_PER_DAY)  # toward zero
        day_count, nanos = day_count + carry, nanos - carry * NANOS_PER_DAY
    if days:
        carry = int(day_count / DAYS_PER_MONTH)
        months, day_count = months + carry, day_count - carry * DAYS_PER_MONTH
    return Interval(months, day_count, nanos)


# --- text ------------------------------------------------------------------------------------------

def _seconds_to_nanos(text: str) -> int:
    text = text.replace(",", ".")
    negative = text.startswith("-")
    whole, _, frac = text.lstrip("+-").partition(".")
    nanos = int(whole or "0") * NANOS_PER_SECOND + int(frac.ljust(9, "0") or "0")
    return -nanos if negative else nanos


def parse_iso(text: str) -> Interval:
    """An ISO 8601 duration (``P[n]Y[n]M[n]W[n]DT[n]H[n]M[n[.f]]S``), as the wire carries it."""
    m = _ISO.match(text.strip())
    if not m or text.strip() in ("P", "") or text.strip().endswith("T"):
        raise IntervalError(errors.interval_literal_invalid(text))
    n = {k: int(v or 0) for k, v in m.groupdict().items() if k != "s"}
    nanos = n["h"] * NANOS_PER_HOUR + n["mi"] * NANOS_PER_MINUTE + (_seconds_to_nanos(m["s"]) if m["s"] else 0)
    return Interval(n["y"] * 12 + n["mo"], n["w"] * 7 + n["d"], nanos)


def parse_sql_text(text: str) -> Interval:
    """GoogleSQL's canonical text ``'Y-M D H:M:S[.F]'`` (the year-month and day parts optional)."""
    m = _SQL_TEXT.match(text)
    if not m:
        raise IntervalError(errors.interval_literal_invalid(text))
    months = int(m["y"] or 0) * 12 + int(m["mo"] or 0)
    if m["ys"] == "-":
        months = -months
    nanos = int(m["h"]) * NANOS_PER_HOUR + int(m["mi"]) * NANOS_PER_MINUTE + _seconds_to_nanos(m["s"])
    return Interval(months, int(m["d"] or 0), -nanos if m["ts"] == "-" else nanos)


def parse(text: str) -> Interval:
    """ISO 8601 or GoogleSQL's canonical text, whichever ``text`` is (CAST from STRING)."""
    stripped = text.strip()
    return parse_iso(stripped) if stripped[:1].upper() == "P" else parse_sql_text(stripped)


def _fraction(nanos: int) -> str:
    """``.fff``, ``.ffffff`` or ``.fffffffff`` (the shortest that is exact), or nothing."""
    if not nanos:
        return ""
    digits = f"{nanos:09d}"
    for width in (3, 6, 9):
        if digits[width:].strip("0") == "":
            return "." + digits[:width]
    return "." + digits


def to_iso(i: Interval) -> str:
    """The wire form, as Spanner sends it: ``P0Y`` for zero."""
    out = ["P"]
    years, months = divmod(abs(i.months), 12)
    sign = "-" if i.months < 0 else ""
    if years:
        out.append(f"{sign}{years}Y")
    if months:
        out.append(f"{sign}{months}M")
    if i.days:
        out.append(f"{i.days}D")
    if i.nanos:
        sign = "-" if i.nanos < 0 else ""
        hours, rest = divmod(abs(i.nanos), NANOS_PER_HOUR)
        minutes, rest = divmod(rest, NANOS_PER_MINUTE)
        seconds, frac = divmod(rest, NANOS_PER_SECOND)
        out.append("T")
        if hours:
            out.append(f"{sign}{hours}H")
        if minutes:
            out.append(f"{sign}{minutes}M")
        if seconds or frac:
            out.append(f"{sign}{seconds}{_fraction(frac)}S")
    return "".join(out) if len(out) > 1 else "P0Y"


def to_sql_text(i: Interval) -> str:
    """CAST(interval AS STRING): ``'Y-M D H:M:S[.F]'``."""
    years, months = divmod(abs(i.months), 12)
    hours, rest = divmod(abs(i.nanos), NANOS_PER_HOUR)
    minutes, rest = divmod(rest, NANOS_PER_MINUTE)
    seconds, frac = divmod(rest, NANOS_PER_SECOND)
    ym = f"{'-' if i.months < 0 else ''}{years}-{months}"
    return f"{ym} {i.days} {'-' if i.nanos < 0 else ''}{hours}:{minutes}:{seconds}{_fraction(frac)}"


# --- stored form ---------------------------------------------------------------------------------

def to_stored(i: Interval) -> str:
    """Text that sorts like ``i`` (see the module docstring)."""
    return f"{i.normalized_nanos + _STORED_OFFSET:0{_STORED_WIDTH}d}|{i.months}|{i.days}|{i.nanos}"


def from_stored(stored: str) -> Interval:
    _, months, days, nanos = stored.split("|")
    return Interval(int(months), int(days), int(nanos))


def extract(part: str, i: Interval) -> int:
    """EXTRACT(part FROM interval): the part of the months, days or time field it belongs to.

    >>> extract("HOUR", Interval(0, 0, 49 * NANOS_PER_HOUR + 5))
    49
    """
    part = part.upper()
    if part == "YEAR":
        return int(i.months / 12)
    if part == "MONTH":
        return i.months - int(i.months / 12) * 12
    if part == "DAY":
        return i.days
    sign = -1 if i.nanos < 0 else 1
    hours, rest = divmod(abs(i.nanos), NANOS_PER_HOUR)
    minutes, rest = divmod(rest, NANOS_PER_MINUTE)
    seconds, frac = divmod(rest, NANOS_PER_SECOND)
    parts = {"HOUR": hours, "MINUTE": minutes, "SECOND": seconds, "MILLISECOND": frac // 1_000_000,
             "MICROSECOND": frac // 1_000, "NANOSECOND": frac}
    if part not in parts:
        raise IntervalError(errors.interval_extract_part_unsupported(part))
    return sign * parts[part]
