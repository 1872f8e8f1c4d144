"""Rows from the Spanner client, with BYTES as the bytes they are.

The Python client hands BYTES values back as their base64 text (encoded to bytes); a
watcher's changes carry the real bytes instead, so that what the application stored is
what it sees, and what the changelog records.

Example:
    >>> from google.cloud.spanner_v1 import StructType, Type, TypeCode
    >>> fields = [StructType.Field(name="B", type_=Type(code=TypeCode.BYTES))]
    >>> real_bytes(fields, [b"aGk="])
    [b'hi']
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from google.cloud.spanner_v1 import TypeCode


def _is_bytes(field: Any) -> int:
    """1 for a BYTES column, 2 for ARRAY<BYTES>, 0 otherwise."""
    t = field.type_
    if t.code == TypeCode.BYTES:
        return 1
    if t.code == TypeCode.ARRAY and t.array_element_type.code == TypeCode.BYTES:
        return 2
    return 0


def _decode(v: Any) -> Any:
    return None if v is None else base64.b64decode(v)


def real_bytes(fields: Sequence[Any], row: list[Any]) -> list[Any]:
    """``row`` with its BYTES (and ARRAY<BYTES>) values base64-decoded."""
    kinds = [_is_bytes(f) for f in fields]
    if not any(kinds):
        return row
    out = list(row)
    for i, kind in enumerate(kinds):
        if kind == 1:
            out[i] = _decode(out[i])
        elif kind == 2 and out[i] is not None:
            out[i] = [_decode(v) for v in out[i]]
    return out
