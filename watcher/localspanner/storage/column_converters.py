"""One column's converter from mutation values (wire form) to the stored form, with Spanner's refusals.

The mutation path converts every value of every row, so a column's converter is built
once (per catalog, table and column list, see ``mutations.py``) and takes the commonest
wire form of its type in a few C calls: an INT64 as decimal text (``int``), BYTES as
strict base64 (``binascii``), a DATE already in the canonical ``YYYY-MM-DD``, a STRING
within its length. Anything else, and every refusal, goes through the general codec
(:func:`~..datamodel.values.wire_to_stored`), so the fast paths decide nothing on their own: they
return exactly what the codec would, or hand over to it.

``spanner.commit_timestamp()`` in a TIMESTAMP column that allows it becomes :data:`STAMP`
(filled with the commit timestamp under the writer); in any other column it is refused.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("D", T.DATE)), (KeyPart("K"),))
    >>> column_converter(t, t.columns[0])("12"), column_converter(t, t.columns[1])("2024-5-1")
    (12, '2024-05-01')
"""

from __future__ import annotations

import binascii
import datetime as _dt
import re
from collections.abc import Callable
from typing import Any

from .. import errors
from ..datamodel import values
from ..datamodel.types import SpannerType, TypeCode
from ..schema.catalog import Column, Table

#: Where a converted row holds ``spanner.commit_timestamp()`` until the commit's timestamp is known.
STAMP = object()

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_CANONICAL_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

Converter = Callable[[Any], Any]


def _refusal(t: SpannerType) -> Callable[..., errors.SpannerError]:
    """How a mutation value the column cannot take is refused: a NUMERIC beyond precision 38 / scale 9
    is INVALID_ARGUMENT; any other value not of the column's type is FAILED_PRECONDITION, as on Spanner."""
    return errors.bad_value if str(t) == "NUMERIC" else errors.mutation_bad_value


def _general(table: Table, column: Column) -> Converter:
    """The codec's conversion, its errors named after the table and column."""
    t = column.type
    limit = t.length

    def convert(wire: Any) -> Any:
        try:
            stored = values.wire_to_stored(t, wire)
        except values.ValueError_:
            raise _refusal(t)(table.name, column.name, str(t), wire) from None
        if limit is not None and stored is not None and len(stored) > limit:
            raise errors.value_too_long(table.name, column.name, limit)
        return stored

    return convert


def _string(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is str and (limit is None or len(wire) <= limit):
            return wire
        return general(wire)
    return convert


def _int64(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is str:
            try:
                v = int(wire)  # as the codec's int(wire.strip(), 10): int() strips and defaults to base 10
            except ValueError:
                return general(wire)
            if _INT64_MIN <= v <= _INT64_MAX:
                return v
        return general(wire)
    return convert


def _bytes(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is str:
            try:
                # Strict base64 is a subset of what the codec accepts, decoded alike.
                raw = binascii.a2b_base64(wire, strict_mode=True)
            except (binascii.Error, ValueError):
                return general(wire)
            if limit is None or len(raw) <= limit:
                return raw
        return general(wire)
    return convert


def _date(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is str and len(wire) == 10 and _CANONICAL_DATE.match(wire):
            try:
                _dt.date.fromisoformat(wire)  # a real day; the text is then its own stored form
            except ValueError:
                return general(wire)
            return wire
        return general(wire)
    return convert


def _bool(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is bool:
            return 1 if wire else 0
        return general(wire)
    return convert


def _float64(general: Converter, limit: int | None) -> Converter:
    def convert(wire: Any) -> Any:
        if type(wire) is float and wire == wire:  # NaN is stored as text: the codec's
            return wire
        return general(wire)
    return convert


#: Fast paths by the type's storage code (a PROTO is stored as BYTES, an ENUM as INT64, but
#: their values are checked against their descriptors: they keep the general conversion).
_FAST: dict[TypeCode, Callable[[Converter, int | None], Converter]] = {
    TypeCode.STRING: _string,
    TypeCode.INT64: _int64,
    TypeCode.BYTES: _bytes,
    TypeCode.DATE: _date,
    TypeCode.BOOL: _bool,
    TypeCode.FLOAT64: _float64,
}


def column_converter(table: Table, column: Column) -> Converter:
    """The converter of ``column``'s mutation values: stored form, :data:`STAMP`, or the Spanner error."""
    t = column.type
    general = _general(table, column)
    fast = _FAST.get(t.code)
    convert = fast(general, t.length) if fast is not None else general
    if t.code != TypeCode.TIMESTAMP:
        return convert
    sentinel = values.COMMIT_TIMESTAMP_SENTINEL
    if not column.allow_commit_timestamp:
        def refuse_commit_timestamp(wire: Any) -> Any:
            if wire == sentinel:
                raise errors.pending_commit_timestamp_not_allowed(table.name, column.name)
            return convert(wire)
        return refuse_commit_timestamp

    def commit_timestamp(wire: Any) -> Any:
        return STAMP if wire == sentinel else convert(wire)
    return commit_timestamp
