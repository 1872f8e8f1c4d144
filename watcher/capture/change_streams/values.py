"""Column values of change-stream records, typed as the Spanner client types them.

A data change record carries its values as JSON (``mods[].keys``, ``new_values``,
``old_values``) and each column's type as JSON too (``column_types[].type``). The watcher
hands the application the same Python values a query through the client would give, so a
change from a stream and a change from polling look alike: INT64 as ``int`` (the JSON holds
decimal text, exact beyond 2**53), FLOAT64 as ``float`` (also from "NaN", "Infinity",
"-Infinity"), NUMERIC as ``Decimal``, BYTES as the real ``bytes`` (as every watcher gives
them), DATE as ``date``, TIMESTAMP as ``DatetimeWithNanoseconds``, JSON as the client's
``JsonObject``, ARRAY as a list.

Example:
    >>> type_name({"code": "ARRAY", "array_element_type": {"code": "INT64"}})
    'ARRAY<INT64>'
    >>> decode("ARRAY<INT64>", ["9007199254740993", None])
    [9007199254740993, None]
    >>> decode("BYTES", "AAE=")
    b'\\x00\\x01'
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1.data_types import JsonObject

from ...errors import PollError

_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

#: Type codes whose JSON name differs from the codec's type name (PostgreSQL-dialect streams).
_CODE_NAMES = {"PG_NUMERIC": "NUMERIC", "PG_JSONB": "JSON"}


def type_name(spanner_type: Mapping[str, Any] | str) -> str:
    """The codec's type name (:mod:`watcher.codec`) of a ``column_types[].type`` JSON value.

    >>> type_name('{"code": "STRING"}'), type_name({"code": "NUMERIC", "type_annotation": "PG_NUMERIC"})
    ('STRING', 'NUMERIC')
    """
    t: Mapping[str, Any] = json.loads(spanner_type) if isinstance(spanner_type, str) else spanner_type
    code = str(t.get("code", ""))
    if code == "ARRAY":
        return f"ARRAY<{type_name(t.get('array_element_type') or {})}>"
    annotation = t.get("type_annotation")
    return _CODE_NAMES.get(str(annotation), code) if annotation else code


def _float(value: Any) -> float:
    return _FLOAT_WORDS[value] if isinstance(value, str) else float(value)


_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z")


def _timestamp(text: str) -> DatetimeWithNanoseconds:
    """RFC 3339 UTC text (as records carry it) with all its digits; a regular expression is about
    four times cheaper than ``from_rfc3339``'s strptime, which stays the fallback for other forms.

    >>> _timestamp("2024-05-01T10:00:00.123456789Z").nanosecond, _timestamp("2024-05-01T10:00:00Z").second
    (123456789, 0)
    """
    m = _RFC3339.fullmatch(text)
    if m is None:
        return DatetimeWithNanoseconds.from_rfc3339(text)
    y, mo, d, h, mi, s, frac = m.groups()
    if frac is None:
        return DatetimeWithNanoseconds(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=dt.UTC)
    return DatetimeWithNanoseconds(int(y), int(mo), int(d), int(h), int(mi), int(s), nanosecond=int(frac.ljust(9, "0")),
                                   tzinfo=dt.UTC)


def _json(value: Any) -> JsonObject:
    # A JSON column's value is its JSON text inside the record; a nested value is taken as it is.
    return JsonObject.from_str(value) if isinstance(value, str) else JsonObject(value)


#: Base type name -> the function turning its JSON form into the client's Python value.
DECODERS: dict[str, Callable[[Any], Any]] = {
    "INT64": int,
    "FLOAT64": _float,
    "FLOAT32": _float,
    "NUMERIC": decimal.Decimal,
    "BOOL": bool,
    "STRING": str,
    "BYTES": base64.b64decode,
    "DATE": dt.date.fromisoformat,
    "TIMESTAMP": _timestamp,
    "JSON": _json,
}


def decode(type_text: str, value: Any) -> Any:
    """The Python value of ``value`` (its JSON form in a record) for a column of type ``type_text``.

    >>> decode("FLOAT64", "-Infinity"), decode("NUMERIC", "1.50"), decode("DATE", "2024-02-29")
    (-inf, Decimal('1.50'), datetime.date(2024, 2, 29))
    """
    return decoder(type_text)(value)


@functools.lru_cache(maxsize=1024)
def decoder(type_text: str) -> Callable[[Any], Any]:
    """The function decoding values of ``type_text`` (NULL as None), built once per type: a record
    holds few types and many values, so the type's dispatch is not repeated per value."""
    if type_text.startswith("ARRAY<"):
        inner = decoder(type_text[len("ARRAY<"):-1])
        return lambda value: None if value is None else [inner(v) for v in value]
    base = DECODERS.get(type_text)
    if base is None:
        def unsupported(value: Any) -> Any:
            if value is None:
                return None
            raise PollError(f"change stream value of unsupported type {type_text}: {value!r}")
        return unsupported
    return lambda value: None if value is None else base(value)


def decode_values(types: Mapping[str, str], values: Mapping[str, Any], table: str) -> dict[str, Any]:
    """Every value of a mod's ``keys``/``new_values``/``old_values`` object, typed by ``types``
    (a column the record's column_types do not list is an error naming it and the table)."""
    out: dict[str, Any] = {}
    for column, value in values.items():
        kind = types.get(column)
        if kind is None:
            raise PollError(f"change stream record of table {table} has a value for column {column}, "
                            "which its column_types do not list")
        out[column] = decoder(kind)(value)
    return out
