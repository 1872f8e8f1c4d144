"""Value codec: wire values <-> stored values, per Spanner type.

Three forms of a value meet in the server:

* **wire**: what a ``google.protobuf.Value`` holds, as plain Python (None, bool, float,
  str, list). INT64 and NUMERIC travel as decimal strings, BYTES as base64 text,
  TIMESTAMP as RFC 3339 text, non-finite FLOAT64 as "NaN"/"Infinity"/"-Infinity".
* **stored**: what goes into SQLite, chosen so that SQLite's ordering is Spanner's
  ordering: BOOL as 0/1, INT64 as int, FLOAT64 as float (NaN as the text 'NaN', since
  SQLite turns NaN into NULL), STRING as str, BYTES as bytes, DATE as 'YYYY-MM-DD',
  TIMESTAMP as fixed-width 'YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ' (sorts as text, keeps
  nanoseconds), NUMERIC as canonical decimal text, JSON as canonical JSON text, ARRAY as
  JSON text of the elements' *array-element* form: the stored form where JSON can hold
  it (so SQLite's json_each yields values comparable with stored columns), BYTES as
  base64 text, non-finite FLOAT64 as "NaN"/"Infinity"/"-Infinity"; STRUCT likewise as
  JSON text of its fields in order (``composite_values.py``, which also says which
  Python values stand for ARRAY and STRUCT results).
* **python**: what SQL functions work with (int nanoseconds for TIMESTAMP etc.).

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> wire_to_stored(T.TIMESTAMP, "2024-05-01T10:00:00.5Z")
    '2024-05-01T10:00:00.500000000Z'
    >>> stored_to_wire(T.TIMESTAMP, '2024-05-01T10:00:00.500000000Z')
    '2024-05-01T10:00:00.500Z'
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import decimal
import json
import math
import re
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import errors
from . import composite_values, intervals
from . import types as T
from .scalar_values import FLOAT_WORDS as _FLOAT_WORDS
from .scalar_values import NAN_TEXT, float32_to_stored, interval_to_stored, round_float32, uuid_to_stored
from .types import SpannerType, TypeCode
from .value_errors import ValueError_

COMMIT_TIMESTAMP_SENTINEL = "spanner.commit_timestamp()"

_EPOCH = _dt.datetime(1970, 1, 1)
_MIN_TS_NANOS = (_dt.datetime(1, 1, 1) - _EPOCH) // _dt.timedelta(microseconds=1) * 1000
_MAX_TS_NANOS = ((_dt.datetime(9999, 12, 31, 23, 59, 59) - _EPOCH) // _dt.timedelta(microseconds=1)) * 1000 + 999_999_999

_TS_RE = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[Tt ](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?\s*"
    r"(?:([Zz])|([+-])(\d{1,2})(?::?(\d{2}))?|\s*(?P<zone>[A-Za-z_]+(?:/[A-Za-z_]+)*))?$"
)
_DATE_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")

NUMERIC_PRECISION = 38
NUMERIC_SCALE = 9
_NUMERIC_MAX = decimal.Decimal("99999999999999999999999999999.999999999")
_DEC_CTX = decimal.Context(prec=80)


# --- timestamps --------------------------------------------------------------------------------

def parse_timestamp(text: str, default_zone: str = "UTC") -> int:
    """Parse RFC 3339 (or a GoogleSQL timestamp literal) into nanoseconds since the epoch.

    >>> parse_timestamp("1970-01-01T00:00:01.000000001Z")
    1000000001
    """
    m = _TS_RE.match(text.strip())
    if not m:
        raise ValueError_(errors.invalid_text("timestamp", text))
    year, month, day, hh, mm, ss, frac, z, sign, oh, om, zone = m.groups()
    try:
        base = _dt.datetime(int(year), int(month), int(day), int(hh or 0), int(mm or 0), int(ss or 0))
    except ValueError as exc:
        raise ValueError_(errors.invalid_text("timestamp", text, exc)) from None
    nanos = int((frac or "").ljust(9, "0"))
    offset_s = 0
    if sign:
        offset_s = (int(oh) * 3600 + int(om or 0) * 60) * (1 if sign == "+" else -1)
    elif not z:
        offset_s = _zone_offset(zone or default_zone, base)
    micros = (base - _EPOCH) // _dt.timedelta(microseconds=1)
    total = micros * 1000 + nanos - offset_s * 1_000_000_000
    if not _MIN_TS_NANOS <= total <= _MAX_TS_NANOS:
        raise ValueError_(errors.timestamp_out_of_range(text))
    return total


def _zone_offset(zone: str, local: _dt.datetime) -> int:
    if zone.upper() == "UTC":
        return 0
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError_(errors.unknown_time_zone(zone)) from None
    off = local.replace(tzinfo=tz).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def nanos_to_stored(nanos: int) -> str:
    """Fixed-width text that sorts like the timestamp it encodes."""
    secs, frac = divmod(nanos, 1_000_000_000)
    d = _EPOCH + _dt.timedelta(seconds=secs)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}.{frac:09d}Z"


def stored_to_nanos(stored: str) -> int:
    d = _dt.datetime(int(stored[0:4]), int(stored[5:7]), int(stored[8:10]), int(stored[11:13]), int(stored[14:16]), int(stored[17:19]))
    return ((d - _EPOCH) // _dt.timedelta(seconds=1)) * 1_000_000_000 + int(stored[20:29])


def nanos_to_rfc3339(nanos: int) -> str:
    """RFC 3339 with the fraction trimmed to 0, 3, 6 or 9 digits, as Spanner prints it."""
    stored = nanos_to_stored(nanos)
    return _trim_fraction(stored)


def _trim_fraction(stored: str) -> str:
    frac = stored[20:29]
    if frac == "000000000":
        return stored[:19] + "Z"
    if frac.endswith("000000"):
        return stored[:20] + frac[:3] + "Z"
    if frac.endswith("000"):
        return stored[:20] + frac[:6] + "Z"
    return stored


def nanos_to_datetime(nanos: int) -> _dt.datetime:
    """Microsecond-truncated aware datetime (Python's datetime holds microseconds only)."""
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=nanos // 1000)


# --- dates ----------------------------------------------------------------------------------------

def parse_date(text: str) -> str:
    m = _DATE_RE.match(text.strip())
    if not m:
        raise ValueError_(errors.invalid_text("date", text))
    try:
        d = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise ValueError_(errors.invalid_text("date", text, exc)) from None
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


# --- numeric --------------------------------------------------------------------------------------

def canonical_numeric(value: str | int | float | decimal.Decimal, *, exact: bool = False) -> str:
    """Canonical NUMERIC text: no exponent, no trailing zeros, at most 9 fractional digits.

    A value with more fractional digits is rounded (half to even), as a SQL CAST does; with
    ``exact`` it is refused instead, as Spanner refuses such a value written or bound.

    >>> canonical_numeric("1.50000000000"), canonical_numeric("0.1234567891")
    ('1.5', '0.123456789')
    >>> canonical_numeric("0.1234567891", exact=True)
    Traceback (most recent call last):
    ...
    watcher.localspanner.datamodel.value_errors.ValueError_: NUMERIC '0.1234567891' has more than 9 digits after the decimal point (scale 9)
    """
    try:
        d = decimal.Decimal(str(value)) if not isinstance(value, decimal.Decimal) else value
    except decimal.InvalidOperation:
        raise ValueError_(errors.invalid_numeric(value)) from None
    if not d.is_finite():
        raise ValueError_(errors.invalid_numeric(value))
    q = d.quantize(decimal.Decimal(1).scaleb(-NUMERIC_SCALE), rounding=decimal.ROUND_HALF_EVEN, context=_DEC_CTX)
    if q.copy_abs() > _NUMERIC_MAX:  # abs() would round to the default 28-digit context
        raise ValueError_(errors.numeric_out_of_range(value))
    if exact and q != d:  # rounding changed the value
        raise ValueError_(errors.numeric_scale(value, NUMERIC_SCALE))
    text = format(q.normalize(_DEC_CTX), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


# --- json -------------------------------------------------------------------------------------------

def canonical_json(text: str) -> str:
    try:
        parsed = json.loads(text)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError_(errors.invalid_json(exc)) from None
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- wire <-> stored ----------------------------------------------------------------------------------

def wire_to_stored(t: SpannerType, wire: Any) -> Any:
    """Validate a wire value for type ``t`` and return its stored form.

    Raises ValueError_ with a short reason; the caller adds the table/column or parameter name.
    """
    if wire is None:
        return None
    fn = _TO_STORED.get(t.storage_code)
    if fn is None:
        raise ValueError_(errors.type_not_storable(t))
    return fn(t, wire)


def _bool_to_stored(t: SpannerType, w: Any) -> int:
    if isinstance(w, bool):
        return int(w)
    raise ValueError_(errors.expected_wire_value("BOOL", w))


def _int_to_stored(t: SpannerType, w: Any) -> int:
    if isinstance(w, bool):
        raise ValueError_(errors.expected_wire_value("INT64", w))
    if isinstance(w, str):
        try:
            v = int(w.strip(), 10)
        except ValueError:
            raise ValueError_(errors.expected_wire_value("INT64", w)) from None
    elif isinstance(w, float) and w.is_integer():
        v = int(w)
    elif isinstance(w, int):
        v = w
    else:
        raise ValueError_(errors.expected_wire_value("INT64", w))
    if not -(2**63) <= v < 2**63:
        raise ValueError_(errors.int64_out_of_range(w))
    return v




def _float_to_stored(t: SpannerType, w: Any) -> float | str:
    if isinstance(w, bool):
        raise ValueError_(errors.expected_wire_value("FLOAT64", w))
    if isinstance(w, (int, float)):
        v = float(w)
    elif isinstance(w, str) and w in _FLOAT_WORDS:
        v = _FLOAT_WORDS[w]
    else:
        raise ValueError_(errors.expected_wire_value("FLOAT64", w))
    return NAN_TEXT if math.isnan(v) else v


def _string_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("STRING", w))
    return w


def _bytes_to_stored(t: SpannerType, w: Any) -> bytes:
    if isinstance(w, bytes):
        return w
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("BYTES", w))
    try:
        return base64.b64decode(w, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError_(errors.BYTES_NOT_BASE64) from None


def _date_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("DATE", w))
    return parse_date(w)


def _timestamp_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("TIMESTAMP", w))
    return nanos_to_stored(parse_timestamp(w))


def _numeric_to_stored(t: SpannerType, w: Any) -> str:
    if isinstance(w, bool) or not isinstance(w, (str, int, float)):
        raise ValueError_(errors.expected_wire_value("NUMERIC", w))
    return canonical_numeric(w, exact=True)


def _json_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("JSON", w))
    return canonical_json(w)


def _array_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, list):
        raise ValueError_(errors.expected_wire_value("ARRAY", w))
    assert t.element is not None
    return array_to_stored([wire_to_stored(t.element, e) for e in w], t.element)


def array_to_stored(elements: list[Any], element_type: SpannerType) -> str:
    """JSON text of a list of *stored* element values (see the module docstring)."""
    return composite_values.to_stored(T.array_of(element_type), elements)


def stored_array_elements(stored: str, element_type: SpannerType) -> list[Any]:
    """The stored forms of the elements of a stored ARRAY value."""
    return [composite_values.from_json_item(element_type, e) for e in json.loads(stored)]


def _struct_to_stored(t: SpannerType, w: Any) -> str:
    if not isinstance(w, (list, tuple)) or len(w) != len(t.fields):
        raise ValueError_(errors.expected_struct(len(t.fields), w))
    return composite_values.to_stored(t, [wire_to_stored(ft, v) for (_, ft), v in zip(t.fields, w, strict=True)])


_TO_STORED: dict[TypeCode, Callable[[SpannerType, Any], Any]] = {
    TypeCode.BOOL: _bool_to_stored,
    TypeCode.INT64: _int_to_stored,
    TypeCode.FLOAT64: _float_to_stored,
    TypeCode.STRING: _string_to_stored,
    TypeCode.BYTES: _bytes_to_stored,
    TypeCode.DATE: _date_to_stored,
    TypeCode.TIMESTAMP: _timestamp_to_stored,
    TypeCode.NUMERIC: _numeric_to_stored,
    TypeCode.JSON: _json_to_stored,
    TypeCode.ARRAY: _array_to_stored,
    TypeCode.STRUCT: _struct_to_stored,
    TypeCode.FLOAT32: float32_to_stored,
    TypeCode.UUID: uuid_to_stored,
    TypeCode.INTERVAL: interval_to_stored,
}


def _bytes_to_wire(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _timestamp_text_to_wire(stored: str) -> str:
    return _trim_fraction(stored) if len(stored) == 30 else nanos_to_rfc3339(parse_timestamp(stored))


#: Storage code -> (the Python type a column of it usually holds, that value's wire form; None: itself),
#: the answer :func:`stored_to_wire` gives for such a value, without its checks; see :func:`wire_fast_path`.
_WIRE_FAST_PATHS: dict[TypeCode, tuple[type, Callable[[Any], Any] | None]] = {
    TypeCode.INT64: (int, str),
    TypeCode.STRING: (str, None),
    TypeCode.BOOL: (int, bool),
    TypeCode.BYTES: (bytes, _bytes_to_wire),
    TypeCode.DATE: (str, None),
    TypeCode.TIMESTAMP: (str, _timestamp_text_to_wire),
}


def wire_fast_path(t: SpannerType) -> tuple[type, Callable[[Any], Any] | None] | None:
    """For result rows: the Python type most stored values of ``t`` have, and their wire form (None: the
    value itself), equal to what :func:`stored_to_wire` returns for a value of exactly that type; None
    for types without one. A poll converts every value of every row, so this skips the dispatch.

    >>> from watcher.localspanner.datamodel import types as T
    >>> kind, to_wire = wire_fast_path(T.BYTES)
    >>> kind, to_wire(b"hi") == stored_to_wire(T.BYTES, b"hi")
    (<class 'bytes'>, True)
    >>> wire_fast_path(T.FLOAT64) is None
    True
    """
    return _WIRE_FAST_PATHS.get(t.storage_code)


def stored_to_wire(t: SpannerType, stored: Any) -> Any:
    """The wire form of a stored value (also of a value computed by SQL of type ``t``)."""
    if stored is None:
        return None
    code = t.storage_code
    if code == TypeCode.INT64:
        if isinstance(stored, float):
            stored = int(stored)
        return str(stored)
    if code == TypeCode.STRING:
        return stored if isinstance(stored, str) else _to_text(stored)
    if code == TypeCode.BOOL:
        return bool(stored)
    if code == TypeCode.FLOAT64 or code == TypeCode.FLOAT32:
        if isinstance(stored, str):
            return stored if stored in _FLOAT_WORDS else float(stored)
        v = float(stored) if code == TypeCode.FLOAT64 else round_float32(float(stored))
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if code == TypeCode.UUID:
        return str(stored)
    if code == TypeCode.INTERVAL:
        return intervals.to_iso(intervals.from_stored(stored))
    if code == TypeCode.TIMESTAMP:
        if isinstance(stored, int):
            return nanos_to_rfc3339(stored)
        return _timestamp_text_to_wire(stored)
    if code == TypeCode.BYTES:
        return _bytes_to_wire(stored if isinstance(stored, bytes) else str(stored).encode())
    if code == TypeCode.DATE or code == TypeCode.JSON:
        return str(stored)
    if code == TypeCode.NUMERIC:
        return canonical_numeric(stored) if not isinstance(stored, str) else stored
    if code == TypeCode.ARRAY:
        assert t.element is not None
        items = stored_array_elements(stored, t.element) if isinstance(stored, str) else list(stored)
        return [stored_to_wire(t.element, e) for e in items]
    if code == TypeCode.STRUCT:
        # JSON text from SQL, or a Python sequence / mapping of stored values (composite_values.py).
        fields = composite_values.struct_fields(t, stored)
        return [stored_to_wire(ft, v) for (_, ft), v in zip(t.fields, fields, strict=True)]
    raise ValueError_(errors.type_not_encodable(t))


def _to_text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, float) and v.is_integer():
        return repr(v)
    return str(v)


def stored_to_python(t: SpannerType, stored: Any) -> Any:
    """Plain Python value for SQL functions: int nanos for TIMESTAMP, Decimal for NUMERIC."""
    if stored is None:
        return None
    if t.code == TypeCode.TIMESTAMP:
        return stored_to_nanos(stored)
    if t.code == TypeCode.NUMERIC:
        return decimal.Decimal(stored)
    if t.code == TypeCode.BOOL:
        return bool(stored)
    if t.code in (TypeCode.FLOAT64, TypeCode.FLOAT32) and stored == NAN_TEXT:
        return math.nan
    if t.code == TypeCode.INTERVAL:
        return intervals.from_stored(stored)
    return stored


def infer_type(wire: Any) -> SpannerType:
    """Type of an untyped parameter (the client may omit param_types), from its wire value."""
    if isinstance(wire, bool):
        return T.BOOL
    if isinstance(wire, float):
        return T.FLOAT64
    if isinstance(wire, list):
        for e in wire:
            if e is not None:
                return T.array_of(infer_type(e))
        return T.array_of(T.INT64)
    if isinstance(wire, str):
        if re.fullmatch(r"-?\d+", wire):
            return T.INT64
        if wire in _FLOAT_WORDS:
            return T.FLOAT64
        if _TS_RE.match(wire) and "T" in wire.upper() and wire.upper().endswith("Z"):
            return T.TIMESTAMP
        return T.STRING
    return T.STRING
