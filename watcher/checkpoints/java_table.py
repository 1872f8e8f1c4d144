"""The Java library's LAST_SEEN_COMMIT_TIMESTAMPS table: its schema and how shard values are stored.

A row's key is the watched database, the table and the shard value, spread over seven
SHARD_ID_* columns exactly as the Java library (1.2.1) writes them, so that a row either
library wrote is found by the other. Shard values are what the client takes as parameters
(BYTES as base64 text: ``b"YWI="`` for the bytes ``ab``). A scalar goes to the column of its
type (NUMERIC and JSON as their text in SHARD_ID_STRING); an array goes to SHARD_ID_STRING
as its elements' Java texts joined with ",":

| element | text | example |
|---|---|---|
| BOOL | ``true`` / ``false`` | ``true,false`` |
| BYTES | base64 | ``YWI=`` |
| DATE | ``yyyy-mm-dd`` | ``2024-01-02`` |
| FLOAT64 | Java's ``Double.toString`` | ``1.0``, ``1.0E20``, ``1.0E-5`` |
| INT64 | decimal | ``-18,0,18`` |
| NUMERIC | its plain text (``BigDecimal.toString``) | ``1.50``, ``1E-7`` |
| STRING, JSON | base64 of the UTF-8 bytes | ``ZXU=,dXM=`` (``eu,us``) |
| TIMESTAMP | ``com.google.cloud.Timestamp.toString()``: UTC, nine fraction digits unless zero | ``2024-01-02T03:04:05.120000000Z`` |

Example:
    >>> shard_columns([1, 2, 3])
    [None, None, None, None, None, '1,2,3', None]
    >>> shard_columns(["eu", "us"])[5]
    'ZXU=,dXM='
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from ..dialects import GOOGLE_SQL, Dialect
from ..dialects.checkpoints import create_table_sql

DEFAULT_TABLE = "LAST_SEEN_COMMIT_TIMESTAMPS"
#: Our one addition to the Java table: the exact position inside a commit timestamp's group of
#: rows (Checkpoint.to_text). Nullable, so the Java library ignores it and keeps working.
POSITION_COLUMN = "LAST_SEEN_POSITION"
#: The column that holds array shard values (and NUMERIC, JSON and STRING scalars).
TEXT_COLUMN = "SHARD_ID_STRING"

#: The Java table's columns and types, in order; the key is all of them but the last.
JAVA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("DATABASE_NAME", "STRING(MAX)"),
    ("TABLE_CATALOG", "STRING(MAX)"),
    ("TABLE_SCHEMA", "STRING(MAX)"),
    ("TABLE_NAME", "STRING(MAX)"),
    ("SHARD_ID_BOOL", "BOOL"),
    ("SHARD_ID_BYTES", "BYTES(MAX)"),
    ("SHARD_ID_DATE", "DATE"),
    ("SHARD_ID_FLOAT64", "FLOAT64"),
    ("SHARD_ID_INT64", "INT64"),
    (TEXT_COLUMN, "STRING(MAX)"),
    ("SHARD_ID_TIMESTAMP", "TIMESTAMP"),
    ("LAST_SEEN_COMMIT_TIMESTAMP", "TIMESTAMP"),
)
KEY_COLUMNS = tuple(name for name, _ in JAVA_COLUMNS[:-1])
_NOT_NULL = {"DATABASE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "LAST_SEEN_COMMIT_TIMESTAMP"}
#: Java's Double.toString writes plain decimals in [10^-3, 10^7), scientific notation outside.
_PLAIN_FLOATS = (1e-3, 1e7)


def create_table_ddl(table: str = DEFAULT_TABLE, dialect: Dialect = GOOGLE_SQL) -> str:
    """The CREATE TABLE statement of the checkpoint table (the Java schema plus the position column) in
    ``dialect`` (PostgreSQL: the same names in lower case, as it folds unquoted names).

    >>> from watcher.dialects import POSTGRESQL
    >>> create_table_ddl(dialect=POSTGRESQL).splitlines()[:2]
    ['CREATE TABLE "last_seen_commit_timestamps" (', '  "database_name" varchar NOT NULL,']
    """
    columns = [(n, t, n in _NOT_NULL) for n, t in JAVA_COLUMNS] + [(POSITION_COLUMN, "STRING(MAX)", False)]
    return create_table_sql(dialect, table, columns, KEY_COLUMNS)


def shard_columns(shard: Any) -> list[Any]:
    """The values of the seven SHARD_ID_* columns for a shard value, as the Java library stores them.

    >>> shard_columns(None) == [None] * 7, shard_columns(7)[4], shard_columns(decimal.Decimal("1.50"))[5]
    (True, 7, '1.50')
    """
    bool_, bytes_, date_, float_, int_, str_, ts_ = (None,) * 7
    if shard is None:
        pass
    elif isinstance(shard, bool):
        bool_ = shard
    elif isinstance(shard, bytes):
        _base64_text(shard)  # already the base64 text the client takes for BYTES (see the module docstring)
        bytes_ = shard
    elif isinstance(shard, dt.datetime):
        ts_ = shard
    elif isinstance(shard, dt.date):
        date_ = shard
    elif isinstance(shard, float):
        float_ = shard
    elif isinstance(shard, int):
        int_ = shard
    elif isinstance(shard, str):
        str_ = shard
    elif isinstance(shard, decimal.Decimal):
        str_ = str(shard)
    elif isinstance(shard, (list, tuple)):
        str_ = array_text(shard)
    elif isinstance(shard, dict):
        str_ = _json_text(shard)
    else:
        raise TypeError(f"cannot store shard value {shard!r} of type {type(shard).__name__}")
    return [bool_, bytes_, date_, float_, int_, str_, ts_]


def array_text(values: Any) -> str:
    """An array shard value's SHARD_ID_STRING text, element by element as the Java library writes it.

    >>> array_text([True, False]), array_text([1.0, 1e20, 1e-05, 0.5]), array_text(["héllo,"])
    ('true,false', '1.0,1.0E20,1.0E-5,0.5', 'aMOpbGxvLA==')
    >>> array_text([dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=dt.timezone.utc)])
    '2024-01-02T03:04:05.120000000Z'
    """
    return ",".join(_element_text(v) for v in values)


def _element_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return _base64_text(v)
    if isinstance(v, dt.datetime):
        return java_timestamp_text(v)
    if isinstance(v, dt.date):
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if isinstance(v, float):
        return java_double_text(v)
    if isinstance(v, (int, decimal.Decimal)):
        return str(v)
    if isinstance(v, str):
        return base64.b64encode(v.encode()).decode()
    if isinstance(v, dict):
        return base64.b64encode(_json_text(v).encode()).decode()
    raise TypeError(f"cannot store shard array element {v!r} of type {type(v).__name__}")


def _base64_text(v: bytes) -> str:
    """A BYTES shard value's base64 text, checked: the client's form of BYTES values, which Java stores decoded.

    >>> _base64_text(b"AAE=")
    'AAE='
    >>> _base64_text(b"\\x00\\x01")
    Traceback (most recent call last):
    ...
    ValueError: BYTES shard value b'\\x00\\x01' is not base64 text; give BYTES shard values as the client takes BYTES parameters, base64-encoded (base64.b64encode(raw))
    """
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"BYTES shard value {v!r} is not base64 text; give BYTES shard values as the client takes "
                         "BYTES parameters, base64-encoded (base64.b64encode(raw))") from None
    return v.decode("ascii")


def _json_text(v: dict[str, Any]) -> str:
    serialize = getattr(v, "serialize", None)  # the client's JsonObject: its own wire text
    return serialize() if callable(serialize) else json.dumps(v, separators=(",", ":"))


def java_timestamp_text(ts: dt.datetime) -> str:
    """``com.google.cloud.Timestamp.toString()``: UTC, ``Z``, nine fraction digits unless they are all zero.

    A naive datetime is taken as UTC, as the client takes it.

    >>> java_timestamp_text(dt.datetime(1, 1, 1))
    '0001-01-01T00:00:00Z'
    >>> java_timestamp_text(DatetimeWithNanoseconds(2023, 11, 14, 22, 13, 20, nanosecond=100, tzinfo=dt.timezone.utc))
    '2023-11-14T22:13:20.000000100Z'
    """
    nanos = getattr(ts, "nanosecond", 0) or ts.microsecond * 1000
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.UTC)
    text = f"{ts.year:04d}-{ts.month:02d}-{ts.day:02d}T{ts.hour:02d}:{ts.minute:02d}:{ts.second:02d}"
    return f"{text}.{nanos:09d}Z" if nanos else f"{text}Z"


def java_double_text(x: float) -> str:
    """Java's ``Double.toString``: the shortest digits that read back as ``x``, in Java's notation.

    >>> [java_double_text(v) for v in (1.0, 1e20, 1e-5, 0.001, 123456789.0, 9999999.0, -0.0, float("nan"), float("-inf"))]
    ['1.0', '1.0E20', '1.0E-5', '0.001', '1.23456789E8', '9999999.0', '-0.0', 'NaN', '-Infinity']
    """
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if str(x).startswith("-") else ""
    if x == 0:
        return f"{sign}0.0"
    _, digits, exponent = decimal.Decimal(repr(abs(x))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # digits before the decimal point in plain notation
    if _PLAIN_FLOATS[0] <= abs(x) < _PLAIN_FLOATS[1]:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{point - 1}"


# --- reading stored texts back -------------------------------------------------------------------

def decode_array_text(text: str, like: Any) -> tuple[Any, ...] | None:
    """The array a Java-form SHARD_ID_STRING text holds, its elements of the kind of ``like``'s; None if it is not one.

    Texts that differ from :func:`array_text`'s but read back as the same values (the longer
    digits older Java runtimes print for some doubles) decode to those values.

    >>> decode_array_text("ZXU=,dXM=", ["x"]), decode_array_text("9.999999999999999E22", [1.0])
    (('eu', 'us'), (1e+23,))
    >>> decode_array_text("eu,us", ["x"]) is None, decode_array_text("1,x", [1]) is None
    (True, True)
    """
    if not like:
        return None
    parse = _element_parser(like[0])
    try:
        return tuple(parse(part) for part in text.split(","))
    except (ValueError, TypeError, KeyError, ArithmeticError, binascii.Error, UnicodeDecodeError):
        return None


def same_array(stored: tuple[Any, ...], shard: Any) -> bool:
    """Whether decoded values are the shard's own (timestamps compared to the nanosecond, naive as UTC).

    >>> same_array((1e23,), [1e23]), same_array(("a",), ["a", "b"])
    (True, False)
    """
    mine = tuple(shard)
    return len(stored) == len(mine) and all(_comparable(a) == _comparable(b) for a, b in zip(stored, mine, strict=True))


def legacy_shard_columns(shard: Any) -> list[Any] | None:
    """The SHARD_ID_* values earlier spanner-watcher versions wrote for ``shard``, where they differ from the Java form.

    Those versions encoded a BYTES value once more and wrote their own texts for STRING,
    TIMESTAMP, FLOAT64 and JSON array elements; such rows are still found, then rewritten.

    >>> legacy_shard_columns(b"AAE=")[1], legacy_shard_columns(["eu"])[5], legacy_shard_columns([1, 2])
    (b'QUFFPQ==', 'eu', None)
    """
    columns = shard_columns(shard)
    if isinstance(shard, bytes):
        columns[1] = base64.b64encode(shard)
    elif isinstance(shard, (list, tuple)):
        columns[5] = legacy_array_text(shard)
    return None if columns == shard_columns(shard) else columns


def legacy_array_text(values: Any) -> str:
    """The SHARD_ID_STRING text earlier spanner-watcher versions wrote for an array (still found, then rewritten).

    >>> legacy_array_text(["eu", "us"]), legacy_array_text([1.0, 1e20])
    ('eu,us', '1.0,1e+20')
    """
    def one(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, bytes):
            return base64.b64encode(v).decode()
        if isinstance(v, (dt.date, dt.datetime)):
            return v.isoformat()
        return str(v)

    return ",".join(one(v) for v in values)


def is_legacy_array_text(text: str, like: Any) -> bool:
    """Whether ``text`` reads as an array of ``like``'s element kind in the texts earlier versions wrote.

    >>> is_legacy_array_text("eu,us", ["x"]), is_legacy_array_text("1,2", [1]), is_legacy_array_text("1,x", [1])
    (True, True, False)
    """
    sample = like[0]
    if isinstance(sample, (str, dict)):
        return True  # any text: their elements were written as they are
    parse: Any = {bool: {"true": True, "false": False}.__getitem__, float: float, int: int,
                  decimal.Decimal: decimal.Decimal, dt.datetime: dt.datetime.fromisoformat,
                  dt.date: dt.date.fromisoformat, bytes: lambda t: base64.b64decode(t, validate=True)}
    kind = next(k for k in parse if isinstance(sample, k))
    try:
        for part in text.split(","):
            parse[kind](part)
    except (ValueError, TypeError, KeyError, ArithmeticError, binascii.Error):
        return False
    return True


def _element_parser(sample: Any) -> Any:
    if isinstance(sample, bool):
        return lambda t: {"true": True, "false": False}[t]
    if isinstance(sample, bytes):
        return lambda t: base64.b64encode(base64.b64decode(t, validate=True))
    if isinstance(sample, dt.datetime):
        return _parse_java_timestamp
    if isinstance(sample, dt.date):
        return dt.date.fromisoformat
    if isinstance(sample, float):
        return float
    if isinstance(sample, int):
        return int
    if isinstance(sample, decimal.Decimal):
        return decimal.Decimal
    if isinstance(sample, str):
        return lambda t: base64.b64decode(t, validate=True).decode("utf-8")
    if isinstance(sample, dict):
        return lambda t: json.loads(base64.b64decode(t, validate=True).decode("utf-8"))
    raise TypeError(f"cannot read shard array elements like {sample!r}")


def _parse_java_timestamp(text: str) -> DatetimeWithNanoseconds:
    if not text.endswith("Z"):
        raise ValueError(f"not a UTC timestamp: {text}")
    return DatetimeWithNanoseconds.from_rfc3339(text)


def _comparable(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        aware = v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
        nanos = getattr(v, "nanosecond", 0) or v.microsecond * 1000
        return (aware.replace(microsecond=0).timestamp(), nanos)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, bytes):  # base64 texts that differ only in how they are written name the same bytes
        return base64.b64encode(base64.b64decode(v))
    return (type(v) is bool, v)
