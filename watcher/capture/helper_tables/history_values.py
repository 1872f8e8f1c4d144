"""Column values as JSON for history tables, and back to Spanner-typed values.

Writing goes by Python type (values as an application hands them to the client: BYTES
already base64 text, the commit-timestamp placeholder string); reading goes by the data
table's column types, so a value comes back as a read of the data table would return it.

Example:
    >>> import decimal
    >>> enc = encode_values({"N": decimal.Decimal("1.50"), "B": b"aGk=", "F": float("nan"), "I": 2**62})
    >>> enc
    {'N': '1.50', 'B': 'aGk=', 'F': 'NaN', 'I': 4611686018427387904}
    >>> decode_values(enc, {"N": "NUMERIC", "B": "BYTES(MAX)", "F": "FLOAT64", "I": "INT64"}, None)["B"]
    b'hi'
    >>> decode_values(encode_values({"S": Interval(days=2)}), {"S": "INTERVAL"}, None)
    {'S': Interval(months=0, days=2, nanos=0)}
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1 import COMMIT_TIMESTAMP
from google.cloud.spanner_v1.data_types import Interval, JsonObject

from ...model import as_nanos_timestamp

_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _encode_float(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _encode_json(v: JsonObject) -> Any:
    text = v.serialize()
    return None if text is None else json.loads(text)


#: Python type -> JSON form, checked in order (bool before int, datetime before date).
_ENCODERS: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (bool, lambda v: v),
    (int, lambda v: v),
    (float, _encode_float),
    (str, lambda v: v),
    (bytes, lambda v: v.decode("ascii")),  # the client's contract: BYTES are given as base64 text
    (JsonObject, _encode_json),
    (DatetimeWithNanoseconds, lambda v: as_nanos_timestamp(v).rfc3339()),
    (dt.datetime, lambda v: as_nanos_timestamp(v).rfc3339()),
    (dt.date, lambda v: v.isoformat()),
    (decimal.Decimal, str),
    (uuid.UUID, str),
    (Interval, str),  # ISO 8601 duration text, as the wire carries it
)


def encode_value(value: Any) -> Any:
    """One value in its JSON form."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    for py_type, encode in _ENCODERS:
        if isinstance(value, py_type):
            return encode(value)
    raise TypeError(f"cannot record a value of type {type(value).__name__} in a history table")


def encode_values(row: Mapping[str, Any]) -> dict[str, Any]:
    return {column: encode_value(v) for column, v in row.items()}


def _decode_timestamp(v: Any, commit_ts: Any) -> Any:
    if v == COMMIT_TIMESTAMP:
        return commit_ts
    return DatetimeWithNanoseconds.from_rfc3339(v)


#: Base Spanner type -> decoder of the JSON form (the commit timestamp is passed to all).
_DECODERS: dict[str, Callable[[Any, Any], Any]] = {
    "BOOL": lambda v, _: bool(v),
    "INT64": lambda v, _: int(v),
    "FLOAT64": lambda v, _: _SPECIAL_FLOATS[v] if isinstance(v, str) else float(v),
    "FLOAT32": lambda v, _: _SPECIAL_FLOATS[v] if isinstance(v, str) else float(v),
    "STRING": lambda v, _: v,
    "BYTES": lambda v, _: base64.b64decode(v),
    "DATE": lambda v, _: dt.date.fromisoformat(v),
    "TIMESTAMP": _decode_timestamp,
    "NUMERIC": lambda v, _: decimal.Decimal(v),
    "JSON": lambda v, _: JsonObject(v),
    "UUID": lambda v, _: uuid.UUID(v),
    "INTERVAL": lambda v, _: Interval.from_str(v),
}


def decode_value(value: Any, spanner_type: str | None, commit_ts: Any) -> Any:
    """A JSON form back as the client would return a column of ``spanner_type`` (as is if unknown)."""
    if value is None or spanner_type is None:
        return value
    spanner_type = spanner_type.strip().upper()
    if spanner_type.startswith("ARRAY<") and spanner_type.endswith(">"):
        element = spanner_type[6:-1]
        return [decode_value(v, element, commit_ts) for v in value]
    decoder = _DECODERS.get(spanner_type.split("(", 1)[0])
    return value if decoder is None else decoder(value, commit_ts)


def decode_values(values: Mapping[str, Any], column_types: Mapping[str, str], commit_ts: Any) -> dict[str, Any]:
    return {column: decode_value(v, column_types.get(column), commit_ts) for column, v in values.items()}
