"""SQLite text for constants, array elements and CAST target types.

The translators build SQL from these: a constant in *stored* form (``values.py``) as a
SQLite literal, the element of a stored ARRAY, and the Spanner type a sqlglot type names.

Example:
    >>> stored_literal_sql("it's"), stored_literal_sql(True), stored_literal_sql(b"\\x01")
    ("'it''s'", '1', "X'01'")
"""

from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from .context import Context, Typed

_DTYPES: dict[str, SpannerType] = {
    "BIGINT": T.INT64, "INT": T.INT64, "DOUBLE": T.FLOAT64, "FLOAT": T.FLOAT32, "BOOLEAN": T.BOOL,
    "TEXT": T.STRING, "VARCHAR": T.STRING, "CHAR": T.STRING, "BINARY": T.BYTES, "VARBINARY": T.BYTES,
    "BLOB": T.BYTES, "DECIMAL": T.NUMERIC, "BIGDECIMAL": T.NUMERIC, "TIMESTAMPTZ": T.TIMESTAMP,
    "TIMESTAMP": T.TIMESTAMP, "DATE": T.DATE, "JSON": T.JSON, "UUID": T.UUID, "INTERVAL": T.INTERVAL,
}


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def stored_literal_sql(value: Any) -> str:
    """SQLite text for a constant in stored form."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "9e999" if value > 0 else "-9e999"
        return repr(value)
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    return sql_string(str(value))


def spanner_type_of(dtype: exp.DataType, ctx: Context) -> SpannerType:
    """The Spanner type named by a sqlglot DataType (CAST targets)."""
    name = dtype.this.name if hasattr(dtype.this, "name") else str(dtype.this)
    if name == "ARRAY":
        inner = dtype.expressions[0] if dtype.expressions else None
        if not isinstance(inner, exp.DataType):
            raise ctx.unsupported(errors.feature_type(dtype.sql("bigquery")))
        return T.array_of(spanner_type_of(inner, ctx))
    t = _DTYPES.get(name)
    if t is None:
        raise ctx.unsupported(errors.feature_type(dtype.sql("bigquery")))
    return t


def element_sql(value_sql: str, element: SpannerType | None) -> str:
    """The stored form of a json_each ``value`` of an ARRAY with this element type."""
    return f"ls_b64_element({value_sql})" if element is not None and element.storage_code == TypeCode.BYTES else value_sql


def json_element_sql(typed: Typed) -> str:
    """The array-element form (values.py) of a value, for building stored ARRAYs."""
    code = typed.type.storage_code if typed.type is not None else None
    if code == TypeCode.BOOL:
        return f"CASE WHEN {typed.sql} IS NULL THEN NULL WHEN {typed.sql} THEN json('true') ELSE json('false') END"
    if code == TypeCode.BYTES:
        return f"ls_to_base64({typed.sql})"
    if code in (TypeCode.STRUCT, TypeCode.ARRAY):
        # A nested value is JSON text; json() makes SQLite nest it rather than quote it.
        return f"json({typed.sql})"
    return typed.sql


def clip(node: exp.Expression) -> str:
    text = node.sql("bigquery")
    return text if len(text) <= 80 else text[:77] + "..."
