"""Compact JSON as bytes, exactly as Python's own encoder writes it, by orjson where that writes the same.

The events' bytes are Python's compact JSON (separators ``,`` and ``:``, non-ASCII as UTF-8,
``\\uXXXX`` for other control characters, keys in insertion order). orjson, when installed,
writes the very same bytes for every value the events hold but one kind: a float with a small
exponent (Python ``1e-05``, orjson ``0.00001``). So :func:`dumps` takes orjson for a value
that holds no float (``floats=False``: the caller knows it from the columns' types,
:func:`may_hold_floats`) and Python's encoder otherwise, or when orjson is missing.

Example:
    >>> dumps({"a": "é\\n", "b": [1, None, True]}, floats=False)
    b'{"a":"\\xc3\\xa9\\\\n","b":[1,null,true]}'
    >>> dumps({"x": 1e-05}), may_hold_floats({"A": "INT64", "F": "ARRAY<FLOAT64>"})
    (b'{"x":1e-05}', True)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

try:
    import orjson
except ImportError:  # the bytes are the same without it, only slower
    orjson = None  # type: ignore[assignment]

#: Python's compact encoder, made once (json.dumps would build one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
#: The column types whose typed-JSON values are JSON numbers that may be floats (codec: FLOAT32, FLOAT64).
_FLOAT_TYPES = ("FLOAT", "ARRAY<FLOAT")


def python_json(value: Any) -> bytes:
    """``value`` as Python's compact encoder writes it, in UTF-8."""
    return _ENCODER.encode(value).encode("utf-8")


def dumps(value: Any, *, floats: bool = True) -> bytes:
    """``value`` (dicts, lists, strings, ints, floats, bools, None) as compact JSON bytes; ``floats``: it may hold a float."""
    if floats or orjson is None:
        return python_json(value)
    return orjson.dumps(value)


def may_hold_floats(types: Mapping[str, str], *others: Any) -> bool:
    """Whether typed-JSON values of columns of ``types`` (or any of ``others``) may hold a float."""
    texts = tuple(types.values())
    floaty = _FLOATY.get(texts)
    if floaty is None:
        if len(_FLOATY) >= _FLOATY_KEPT:
            _FLOATY.clear()
        floaty = _FLOATY[texts] = any(t.upper().startswith(_FLOAT_TYPES) for t in texts)
    return floaty or any(_has_float(v) for v in others if v is not None)


#: may_hold_floats's answer by the type texts of a record (a table's records mostly share them).
_FLOATY: dict[tuple[str, ...], bool] = {}
_FLOATY_KEPT = 1024


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, Mapping):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return any(_has_float(v) for v in value)
    return False
