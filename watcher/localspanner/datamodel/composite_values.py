"""ARRAY and STRUCT values: their stored form and the Python values that stand for them.

A stored ARRAY or STRUCT is JSON text (``values.py``): an array of the elements', or a
struct of the fields' (in field order), *JSON items*. A JSON item is the stored form
where JSON can hold it (INT64 as a number, STRING/DATE/TIMESTAMP/NUMERIC/JSON as text,
BOOL as true/false), BYTES as base64 text, a non-finite FLOAT64 as "NaN"/"Infinity"/
"-Infinity", and a nested ARRAY or STRUCT as a nested JSON array (not as text).

In Python, code that builds result values itself (such as a table function returning
``ARRAY<STRUCT<...>>``) may hand ``values.stored_to_wire`` a *list* for an ARRAY and a
*list or tuple in field order, or a dict by field name*, for a STRUCT, each holding
stored values (nested lists, tuples and dicts again): the wire encoder then gets the
list values the client expects. The rule that keeps the two apart: text is JSON items,
a Python container is stored values.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> st = T.SpannerType(T.TypeCode.STRUCT, fields=(("b", T.BYTES), ("n", T.array_of(T.INT64))))
    >>> json_item(st, {"b": b"hi", "n": [1, None]})
    ['aGk=', [1, None]]
    >>> from_json_item(st, ['aGk=', [1, None]])
    [b'hi', [1, None]]
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

from .. import errors
from .types import SpannerType, TypeCode

_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def json_item(t: SpannerType, stored: Any) -> Any:
    """The JSON item of a stored value of type ``t`` (see the module docstring)."""
    if stored is None:
        return None
    code = t.storage_code
    if code == TypeCode.BYTES:
        raw = stored if isinstance(stored, bytes) else str(stored).encode()
        return base64.b64encode(raw).decode("ascii")
    if code in (TypeCode.FLOAT64, TypeCode.FLOAT32) and isinstance(stored, float) and not math.isfinite(stored):
        return "NaN" if math.isnan(stored) else _NON_FINITE[stored]
    if code == TypeCode.BOOL:
        return bool(stored)
    if code == TypeCode.ARRAY:
        if isinstance(stored, str):
            return json.loads(stored)
        assert t.element is not None
        return [json_item(t.element, e) for e in stored]
    if code == TypeCode.STRUCT:
        if isinstance(stored, str):
            return json.loads(stored)
        return [json_item(ft, v) for (_, ft), v in zip(t.fields, struct_fields(t, stored), strict=True)]
    return stored


def from_json_item(t: SpannerType, item: Any) -> Any:
    """The stored value of a JSON item of type ``t``; ARRAY and STRUCT come back as lists."""
    if item is None:
        return None
    code = t.storage_code
    if code == TypeCode.BYTES:
        return base64.b64decode(item)
    if code == TypeCode.BOOL:
        return int(item)
    if code == TypeCode.ARRAY:
        assert t.element is not None
        return [from_json_item(t.element, e) for e in item]
    if code == TypeCode.STRUCT:
        return [from_json_item(ft, v) for (_, ft), v in zip(t.fields, item, strict=True)]
    return item


def struct_fields(t: SpannerType, stored: Any) -> list[Any]:
    """The stored field values of a STRUCT, in field order, from JSON text, a sequence or a mapping."""
    if isinstance(stored, str):
        return from_json_item(t, json.loads(stored))
    if isinstance(stored, Mapping):
        return [stored.get(name) for name, _ in t.fields]
    items = list(stored)
    if len(items) != len(t.fields):
        raise ValueError(errors.struct_value_fields(t, len(t.fields), len(items)))
    return items


def to_stored(t: SpannerType, stored_fields_or_elements: Any) -> str:
    """The stored (JSON text) form of an ARRAY or STRUCT given as a Python container of stored values."""
    return json.dumps(json_item(t, stored_fields_or_elements), separators=(",", ":"), ensure_ascii=False)
