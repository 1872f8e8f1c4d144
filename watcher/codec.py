"""Spanner values as typed JSON, and back, exactly.

The staging files, the changelog's keys/new_values/old_values and the exports all carry
values in one JSON form (the convention of Spanner change-stream records): INT64 and
NUMERIC as decimal strings (exact beyond 2**53), FLOAT64 as a number (or "NaN",
"Infinity", "-Infinity"), BYTES as base64, DATE as YYYY-MM-DD, TIMESTAMP as RFC 3339
with up to nine fractional digits, JSON as its text, ARRAY as a list; FLOAT32 like
FLOAT64, UUID as its lower-case 8-4-4-4-12 text, INTERVAL as ISO 8601 duration text
(``P1Y2M3DT4H5M6.5S``, as the wire carries it).

Example:
    >>> encode_value("INT64", 2**62 + 1)
    '4611686018427387905'
    >>> decode_value("INT64", '4611686018427387905') == 2**62 + 1
    True
    >>> encode_value("ARRAY<BYTES(MAX)>", [b"hi", None])
    ['aGk=', None]
    >>> decode_value("INTERVAL", encode_value("INTERVAL", Interval(months=14, days=3)))
    Interval(months=14, days=3, nanos=0)
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1.data_types import Interval

from .model import rfc3339_nanos


def base_type(spanner_type: str) -> str:
    """'STRING(MAX)' -> 'STRING'; 'ARRAY<INT64>' -> 'ARRAY'."""
    t = spanner_type.strip().upper()
    if t.startswith("ARRAY"):
        return "ARRAY"
    return t.split("(", 1)[0].strip()


def element_type(spanner_type: str) -> str:
    t = spanner_type.strip()
    return t[t.index("<") + 1: t.rindex(">")]


#: RFC 3339 UTC with all nine fractional digits: sorts as text in time order.
timestamp_text = rfc3339_nanos


def _float(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _json_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    serialize = getattr(v, "serialize", None)  # the client's JsonObject
    if callable(serialize):
        return serialize()
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


_ENCODERS: dict[str, Callable[[Any], Any]] = {
    "INT64": lambda v: str(int(v)),
    "FLOAT64": lambda v: _float(float(v)),
    "NUMERIC": lambda v: format(decimal.Decimal(v), "f"),
    "BOOL": bool,
    "STRING": str,
    "BYTES": lambda v: base64.b64encode(v if isinstance(v, bytes) else str(v).encode()).decode("ascii"),
    "DATE": lambda v: v.isoformat() if isinstance(v, dt.date) else str(v),
    "TIMESTAMP": lambda v: timestamp_text(v) if isinstance(v, dt.datetime) else str(v),
    "JSON": _json_text,
    "FLOAT32": lambda v: _float(float(v)),
    "UUID": lambda v: str(v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))),
    "INTERVAL": lambda v: str(v if isinstance(v, Interval) else Interval.from_str(str(v))),
}

_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_DECODERS: dict[str, Callable[[Any], Any]] = {
    "INT64": int,
    "FLOAT64": lambda v: _FLOAT_WORDS[v] if isinstance(v, str) else float(v),
    "NUMERIC": decimal.Decimal,
    "BOOL": bool,
    "STRING": str,
    "BYTES": lambda v: base64.b64decode(v),
    "DATE": dt.date.fromisoformat,
    "TIMESTAMP": DatetimeWithNanoseconds.from_rfc3339,
    "JSON": str,
    "FLOAT32": lambda v: _FLOAT_WORDS[v] if isinstance(v, str) else float(v),
    "UUID": uuid.UUID,
    "INTERVAL": Interval.from_str,
}


def encode_value(spanner_type: str, value: Any) -> Any:
    """The typed-JSON form of a value of ``spanner_type`` (a SPANNER_TYPE string)."""
    if value is None:
        return None
    return encoder_of(spanner_type)(value)


@functools.lru_cache(maxsize=4096)
def encoder_of(spanner_type: str) -> Callable[[Any], Any]:
    """The function :func:`encode_value` applies to a non-null value of ``spanner_type``, found once
    per type text (a type's text is parsed once, not once per value).

    >>> encoder_of("ARRAY<INT64>")([1, None])
    ['1', None]
    """
    kind = base_type(spanner_type)
    if kind == "ARRAY":
        try:
            inner = encoder_of(element_type(spanner_type))
        except TypeError as exc:
            return functools.partial(_refuse, exc)  # an empty array still encodes
        return lambda value: [None if v is None else inner(v) for v in value]
    encoder = _ENCODERS.get(kind)
    if encoder is None:
        raise TypeError(f"cannot encode a value of Spanner type {spanner_type}")
    return encoder


def _refuse(exc: TypeError, value: Any) -> list[Any]:
    if value:
        raise TypeError(*exc.args)
    return []


def decode_value(spanner_type: str, encoded: Any) -> Any:
    """The Python value (as the Spanner client types it, JSON as text) of a typed-JSON value."""
    if encoded is None:
        return None
    kind = base_type(spanner_type)
    if kind == "ARRAY":
        inner = element_type(spanner_type)
        return [decode_value(inner, v) for v in encoded]
    return _DECODERS[kind](encoded)


def encode_row(types: Mapping[str, str], row: Mapping[str, Any]) -> dict[str, Any]:
    return {name: encode_value(types.get(name, "STRING"), value) for name, value in row.items()}


def decode_row(types: Mapping[str, str], row: Mapping[str, Any]) -> dict[str, Any]:
    return {name: decode_value(types.get(name, "STRING"), value) for name, value in row.items()}
