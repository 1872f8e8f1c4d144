"""Rows from the Spanner client, with BYTES as the bytes they are, typed by their own result set.

The Python client hands BYTES values back as their base64 text (encoded to bytes); a
watcher's changes carry the real bytes instead, so that what the application stored is
what it sees, and what the changelog records. The column types of a change are the ones
its result set's metadata names (:func:`column_types`), never a schema read earlier: a
column added or changed while watching is typed right from the first row read after it.
Reading the types of a field is slow (protobuf enums), so a poll reads them once per result
set (:func:`bytes_decoder`, :func:`column_types`), never once per row.

Example:
    >>> from google.cloud.spanner_v1 import StructType, Type, TypeCode
    >>> fields = [StructType.Field(name="B", type_=Type(code=TypeCode.BYTES))]
    >>> real_bytes(fields, [b"aGk="])
    [b'hi']
    >>> decode = bytes_decoder(fields)  # once per result set, then per row
    >>> decode([b"aGk="]), decode([None])
    ([b'hi'], [None])
    >>> column_types(fields)
    {'B': 'BYTES'}
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from google.cloud.spanner_v1 import TypeAnnotationCode, TypeCode

#: Type codes whose name differs from the codec's type name (PostgreSQL-dialect
#: annotations are looked up first). Other codes keep their own name; one the codec
#: cannot encode (STRUCT, PROTO...) is then refused by name when staged.
_ANNOTATED_NAMES = {TypeAnnotationCode.PG_NUMERIC: "NUMERIC", TypeAnnotationCode.PG_JSONB: "JSON"}


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


def _unchanged(row: list[Any]) -> list[Any]:
    return row


def bytes_decoder(fields: Sequence[Any]) -> Callable[[list[Any]], list[Any]]:
    """A function giving a row of this result set with its BYTES (and ARRAY<BYTES>) values base64-decoded.

    The fields' types are read here, once; the function returned only indexes the row
    (and returns it unchanged when the result set has no BYTES column).
    """
    plan = [(i, kind) for i, f in enumerate(fields) if (kind := _is_bytes(f))]
    if not plan:
        return _unchanged

    def decode(row: list[Any]) -> list[Any]:
        out = list(row)
        for i, kind in plan:
            if kind == 1:
                out[i] = _decode(out[i])
            elif out[i] is not None:
                out[i] = [_decode(v) for v in out[i]]
        return out

    return decode


def real_bytes(fields: Sequence[Any], row: list[Any]) -> list[Any]:
    """``row`` with its BYTES (and ARRAY<BYTES>) values base64-decoded (for many rows, use :func:`bytes_decoder`)."""
    return bytes_decoder(fields)(row)


def type_name(spanner_type: Any) -> str:
    """The codec's name (see :mod:`watcher.codec`) of a result set field's ``Type``.

    >>> from google.cloud.spanner_v1 import Type, TypeCode
    >>> type_name(Type(code=TypeCode.ARRAY, array_element_type=Type(code=TypeCode.INT64)))
    'ARRAY<INT64>'
    """
    if spanner_type.code == TypeCode.ARRAY:
        return f"ARRAY<{type_name(spanner_type.array_element_type)}>"
    annotated = _ANNOTATED_NAMES.get(spanner_type.type_annotation)
    return annotated or TypeCode(spanner_type.code).name


def column_types(fields: Sequence[Any]) -> dict[str, str]:
    """Column name -> type name, as a result set's metadata (``results.fields``) says."""
    return {f.name: type_name(f.type_) for f in fields}
