"""Date and timestamp SQL functions over stored values.

TIMESTAMP values arrive and leave in the stored form of ``values.py``
('YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ', 30 characters) and DATE values as 'YYYY-MM-DD', so
results compare and sort like stored columns. Functions that take either tell them apart
by length. Time-zone dependent functions default to :data:`DEFAULT_TIME_ZONE`, Spanner's
default for a database without a ``default_time_zone`` option.

Example:
    >>> format_timestamp("%Y-%m-%d %H:%M:%E*S", "2024-05-01T10:00:00.250000000Z", "UTC")
    '2024-05-01 10:00:00.25'
    >>> timestamp_add("2024-05-01T10:00:00.000000000Z", -45, "SECOND")
    '2024-05-01T09:59:15.000000000Z'
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import threading
import time
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..datamodel import values
from .udf import UdfSpec, fail

DEFAULT_TIME_ZONE = "America/Los_Angeles"

NANOS_PER_UNIT = {
    "NANOSECOND": 1,
    "MICROSECOND": 1_000,
    "MILLISECOND": 1_000_000,
    "SECOND": 1_000_000_000,
    "MINUTE": 60_000_000_000,
    "HOUR": 3_600_000_000_000,
    "DAY": 86_400_000_000_000,
}
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_OFFSET_RE = re.compile(r"^(?:UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


@lru_cache(maxsize=128)
def zone(name: str | None) -> dt.tzinfo:
    """A tzinfo for 'UTC', an IANA name, or an offset such as '+05:30'."""
    name = DEFAULT_TIME_ZONE if name is None else name.strip()
    if name.upper() in ("UTC", "Z", "ETC/UTC"):
        return dt.UTC
    m = _OFFSET_RE.match(name)
    if m:
        sign, hh, mm = m.groups()
        delta = dt.timedelta(hours=int(hh), minutes=int(mm or 0))
        return dt.timezone(delta if sign == "+" else -delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        fail(f"Invalid time zone: {name}")


def _nanos(stored: str) -> int:
    if len(stored) == 10:  # a DATE used where a TIMESTAMP is expected: midnight UTC
        return values.stored_to_nanos(stored + "T00:00:00.000000000Z")
    return values.stored_to_nanos(stored)


def _stored(nanos: int) -> str:
    if not values._MIN_TS_NANOS <= nanos <= values._MAX_TS_NANOS:
        fail("Timestamp overflow: the result is outside 0001-01-01 .. 9999-12-31")
    return values.nanos_to_stored(nanos)


def _local(nanos: int, tz: str | None) -> tuple[dt.datetime, int]:
    """Local wall-clock datetime (microseconds) and the nanoseconds within the microsecond."""
    return (_EPOCH_UTC + dt.timedelta(microseconds=nanos // 1000)).astimezone(zone(tz)), nanos % 1000


def _from_local(local: dt.datetime, tz: str | None) -> int:
    aware = local.replace(tzinfo=zone(tz)) if local.tzinfo is None else local
    return ((aware - _EPOCH_UTC) // dt.timedelta(microseconds=1)) * 1000


def _unit(unit: str) -> int:
    try:
        return NANOS_PER_UNIT[unit.upper()]
    except KeyError:
        fail(f"Unsupported date part {unit} for a TIMESTAMP")


# --- arithmetic ------------------------------------------------------------------------------

def timestamp_add(ts: str | None, amount: int | None, unit: str) -> str | None:
    if ts is None or amount is None:
        return None
    return _stored(_nanos(ts) + int(amount) * _unit(unit))


def timestamp_diff(a: str | None, b: str | None, unit: str) -> int | None:
    if a is None or b is None:
        return None
    diff = _nanos(a) - _nanos(b)
    q = abs(diff) // _unit(unit)
    return q if diff >= 0 else -q


_WEEKDAYS = {name: i for i, name in enumerate(["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"])}


def _truncate_local(d: dt.datetime, unit: str) -> dt.datetime:
    unit = unit.upper()
    day = d.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "HOUR":
        return d.replace(minute=0, second=0, microsecond=0)
    if unit == "DAY":
        return day
    if unit == "MONTH":
        return day.replace(day=1)
    if unit == "QUARTER":
        return day.replace(month=(d.month - 1) // 3 * 3 + 1, day=1)
    if unit == "YEAR":
        return day.replace(month=1, day=1)
    if unit in ("ISOWEEK", "WEEK(MONDAY)"):
        return day - dt.timedelta(days=d.weekday())
    if unit == "ISOYEAR":
        iso_year = d.isocalendar()[0]
        return day.replace(year=iso_year, month=1, day=1) + dt.timedelta(days=-dt.date(iso_year, 1, 4).weekday() + 3)
    m = re.fullmatch(r"WEEK(?:\((\w+)\))?", unit)
    if m:
        start = _WEEKDAYS.get((m.group(1) or "SUNDAY").upper())
        if start is None:
            fail(f"Unsupported week day {m.group(1)}")
        return day - dt.timedelta(days=(d.weekday() - start) % 7)
    fail(f"Unsupported date part {unit} for truncation")


def timestamp_trunc(ts: str | None, unit: str, tz: str | None) -> str | None:
    if ts is None:
        return None
    nanos = _nanos(ts)
    step = NANOS_PER_UNIT.get(unit.upper())
    if step is not None and step <= NANOS_PER_UNIT["MINUTE"]:
        return _stored(nanos - nanos % step)
    local, _ = _local(nanos, tz)
    naive = _truncate_local(local.replace(tzinfo=None), unit)
    return _stored(_from_local(naive, tz))


# --- conversion -------------------------------------------------------------------------------

def timestamp_from(value: str | None, tz: str | None) -> str | None:
    """TIMESTAMP(string|date [, tz]): text without an offset is local time in ``tz``."""
    if value is None:
        return None
    try:
        return _stored(values.parse_timestamp(value, default_zone=tz or DEFAULT_TIME_ZONE))
    except values.ValueError_ as exc:
        fail(f"Invalid timestamp: {exc}")


def date_from(value: str | None, tz: str | None) -> str | None:
    """DATE(timestamp [, tz]); a DATE passes through."""
    if value is None:
        return None
    if len(value) == 10:
        return value
    local, _ = _local(_nanos(value), tz)
    return local.date().isoformat()


def date_from_parts(year: int | None, month: int | None, day: int | None) -> str | None:
    if year is None or month is None or day is None:
        return None
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError as exc:
        fail(f"Invalid date: {exc}")


_UNIX_SCALE = {0: 1_000_000_000, 3: 1_000_000, 6: 1_000}


def unix_of(ts: str | None, digits: int) -> int | None:
    return None if ts is None else _nanos(ts) // _UNIX_SCALE[digits]


def timestamp_from_unix(amount: int | None, digits: int) -> str | None:
    return None if amount is None else _stored(int(amount) * _UNIX_SCALE[digits])


def current_date(now_nanos: int, tz: str | None = None) -> str:
    return _local(now_nanos, tz)[0].date().isoformat()


# --- parts and formatting ---------------------------------------------------------------------------

def _iso_year_start(year: int) -> dt.date:
    jan4 = dt.date(year, 1, 4)
    return jan4 - dt.timedelta(days=jan4.weekday())


_PARTS = {
    "NANOSECOND": lambda d, n: d.microsecond * 1000 + n,
    "MICROSECOND": lambda d, n: d.microsecond,
    "MILLISECOND": lambda d, n: d.microsecond // 1000,
    "SECOND": lambda d, n: d.second,
    "MINUTE": lambda d, n: d.minute,
    "HOUR": lambda d, n: d.hour,
    "DAYOFWEEK": lambda d, n: d.isoweekday() % 7 + 1,
    "DAY": lambda d, n: d.day,
    "DAYOFYEAR": lambda d, n: d.timetuple().tm_yday,
    "WEEK": lambda d, n: int(d.strftime("%U")),
    "ISOWEEK": lambda d, n: d.isocalendar()[1],
    "MONTH": lambda d, n: d.month,
    "QUARTER": lambda d, n: (d.month - 1) // 3 + 1,
    "YEAR": lambda d, n: d.year,
    "ISOYEAR": lambda d, n: d.isocalendar()[0],
    "DATE": lambda d, n: d.date().isoformat(),
}


def extract(part: str, value: str | None, tz: str | None) -> int | str | None:
    if value is None:
        return None
    fn = _PARTS.get(part.upper())
    if fn is None:
        fail(f"Unsupported date part {part} in EXTRACT")
    if len(value) == 10:
        return fn(dt.datetime.fromisoformat(value), 0)
    local, sub = _local(_nanos(value), tz)
    return fn(local, sub)


_TOKEN = re.compile(r"%(E\*S|E\d S|E\dS|Ez|E4Y|-?[A-Za-z%])")


def _fraction(local: dt.datetime, sub: int, digits: int | None) -> str:
    frac = f"{local.microsecond * 1000 + sub:09d}"
    if digits is None:  # %E*S: as many digits as the value needs
        frac = frac.rstrip("0")
        return "." + frac if frac else ""
    return "." + frac[:digits] if digits else ""


def _offset(local: dt.datetime, colon: bool) -> str:
    off = local.utcoffset() or dt.timedelta(0)
    minutes = int(off.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    hh, mm = divmod(abs(minutes), 60)
    return f"{sign}{hh:02d}:{mm:02d}" if colon else f"{sign}{hh:02d}{mm:02d}"


def _format_token(token: str, local: dt.datetime, sub: int, nanos: int | None) -> str:
    if token == "E*S":
        return f"{local.second:02d}" + _fraction(local, sub, None)
    if token.startswith("E") and token.endswith("S"):
        return f"{local.second:02d}" + _fraction(local, sub, int(token[1:-1].strip()))
    if token == "f":  # sqlglot writes %E6S as %S.%f
        return f"{local.microsecond:06d}"
    if token == "Ez":
        return _offset(local, True)
    if token == "z":
        return _offset(local, False)
    if token == "Z":
        return local.tzname() or "UTC"
    if token == "Q":
        return str((local.month - 1) // 3 + 1)
    if token == "s":
        return str((nanos if nanos is not None else 0) // 1_000_000_000)
    if token == "E4Y":
        return f"{local.year:04d}"
    if token == "%":
        return "%"
    if token == "Y":
        return f"{local.year:04d}"
    return local.strftime("%" + token)


def format_timestamp(fmt: str | None, ts: str | None, tz: str | None) -> str | None:
    """FORMAT_TIMESTAMP / FORMAT_DATE with GoogleSQL's strftime-style elements."""
    if fmt is None or ts is None:
        return None
    if len(ts) == 10:
        local, sub, nanos = dt.datetime.fromisoformat(ts), 0, None
    else:
        nanos = _nanos(ts)
        local, sub = _local(nanos, tz)
    return _TOKEN.sub(lambda m: _format_token(m.group(1), local, sub, nanos), fmt)


def parse_timestamp(fmt: str | None, text: str | None, tz: str | None) -> str | None:
    """PARSE_TIMESTAMP for formats Python's strptime understands (text in ``tz`` unless it has an offset)."""
    if fmt is None or text is None:
        return None
    # strptime reads unpadded numbers with the padded directives; %e is the day padded with a space.
    python_fmt = re.sub(r"%-([A-Za-z])", r"%\1", fmt).replace("%e", "%d")
    try:
        parsed = dt.datetime.strptime(text.strip(), python_fmt.replace("%E*S", "%S.%f").replace("%Ez", "%z"))
    except ValueError as exc:
        fail(f"Failed to parse input string {text!r}: {exc}")
    return _stored(_from_local(parsed, tz))


# --- dates ------------------------------------------------------------------------------------------

def _add_months(d: dt.date, months: int) -> dt.date:
    total = d.year * 12 + d.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        fail("Date overflow: the result is outside 0001-01-01 .. 9999-12-31")
    return dt.date(year, month + 1, min(d.day, calendar.monthrange(year, month + 1)[1]))


_DATE_STEPS = {"DAY": ("days", 1), "WEEK": ("days", 7), "MONTH": ("months", 1), "QUARTER": ("months", 3), "YEAR": ("months", 12)}


def date_add(value: str | None, amount: int | None, unit: str) -> str | None:
    if value is None or amount is None:
        return None
    kind, factor = _DATE_STEPS.get(unit.upper(), ("", 0))
    if not kind:
        fail(f"Unsupported date part {unit} for a DATE")
    d = dt.date.fromisoformat(value[:10])
    try:
        result = d + dt.timedelta(days=amount * factor) if kind == "days" else _add_months(d, amount * factor)
    except OverflowError:
        fail("Date overflow: the result is outside 0001-01-01 .. 9999-12-31")
    return result.isoformat()


def date_diff(a: str | None, b: str | None, unit: str) -> int | None:
    if a is None or b is None:
        return None
    da, db = dt.date.fromisoformat(a[:10]), dt.date.fromisoformat(b[:10])
    unit = unit.upper()
    if unit == "DAY":
        return (da - db).days
    if unit in ("MONTH", "QUARTER", "YEAR"):
        months = (da.year * 12 + da.month) - (db.year * 12 + db.month)
        if unit == "MONTH":
            return months
        if unit == "YEAR":
            return da.year - db.year
        return (da.year * 4 + (da.month - 1) // 3) - (db.year * 4 + (db.month - 1) // 3)
    if unit in ("WEEK", "ISOWEEK") or unit.startswith("WEEK("):
        start_a = _truncate_local(dt.datetime(da.year, da.month, da.day), unit)
        start_b = _truncate_local(dt.datetime(db.year, db.month, db.day), unit)
        return (start_a - start_b).days // 7
    if unit == "ISOYEAR":
        return da.isocalendar()[0] - db.isocalendar()[0]
    fail(f"Unsupported date part {unit} in DATE_DIFF")


def date_trunc(value: str | None, unit: str) -> str | None:
    if value is None:
        return None
    d = dt.date.fromisoformat(value[:10])
    return _truncate_local(dt.datetime(d.year, d.month, d.day), unit).date().isoformat()


# --- the statement's time ---------------------------------------------------------------------------

_statement = threading.local()


def set_statement_time(now_nanos: int | None) -> None:
    """The time CURRENT_TIMESTAMP() means in DEFAULT expressions run on this thread (None: wall clock)."""
    _statement.now = now_nanos


def current_timestamp() -> str:
    now = getattr(_statement, "now", None)
    return values.nanos_to_stored(now if now is not None else time.time_ns() // 1000 * 1000)


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_current_timestamp", 0, current_timestamp, deterministic=False),
    UdfSpec("ls_timestamp_add", 3, timestamp_add),
    UdfSpec("ls_timestamp_diff", 3, timestamp_diff),
    UdfSpec("ls_timestamp_trunc", 3, timestamp_trunc),
    UdfSpec("ls_timestamp", 2, timestamp_from),
    UdfSpec("ls_date", 2, date_from),
    UdfSpec("ls_date_from_parts", 3, date_from_parts),
    UdfSpec("ls_unix", 2, unix_of),
    UdfSpec("ls_from_unix", 2, timestamp_from_unix),
    UdfSpec("ls_extract", 3, extract),
    UdfSpec("ls_format_timestamp", 3, format_timestamp),
    UdfSpec("ls_parse_timestamp", 3, parse_timestamp),
    UdfSpec("ls_date_add", 3, date_add),
    UdfSpec("ls_date_diff", 3, date_diff),
    UdfSpec("ls_date_trunc", 2, date_trunc),
)
