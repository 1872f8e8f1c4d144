"""Incoming ``google.protobuf.Value`` messages as wire values, and mutation rows converted in one pass.

:func:`value_to_wire` and :func:`list_to_wire` decode any value (query parameters, keys).
A commit of 100 single-row upserts carries 700 ``google.protobuf.Value`` messages. Turning
each into a wire value and then, in the backend, into its stored form costs two rounds of
Python calls per value; :class:`PbRows` keeps the messages and hands each value straight to
its column's converter, reading the field the column's type travels in (``string_value``
for INT64, STRING, BYTES, DATE, TIMESTAMP, ...) when the value holds that kind, and the
general decoding (:func:`value_to_wire`) otherwise (NULL, empty text, arrays, a FLOAT64
sent as "NaN", a value of the wrong kind the converter refuses).

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> value_to_wire(struct_pb2.Value(string_value="42"))
    '42'
    >>> rows = struct_pb2.ListValue(values=[struct_pb2.Value(string_value="7"), struct_pb2.Value(null_value=0)])
    >>> part = PbRows([rows])
    >>> part.wire()
    [['7', None]]
    >>> PbRows.convert_all([part], [T.INT64, T.STRING], [int, lambda w: w])
    [[7, None]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from google.protobuf import struct_pb2

from .. import errors
from ..common.requests import EncodedRows, RowWidthError
from ..datamodel.types import SpannerType, TypeCode

_VALUE_KIND: dict[str | None, Callable[[Any], Any]] = {
    "null_value": lambda v: None,
    "bool_value": attrgetter("bool_value"),
    "number_value": attrgetter("number_value"),
    "string_value": attrgetter("string_value"),
    "list_value": lambda v: list_to_wire(v.list_value),
}


def value_to_wire(value: struct_pb2.Value) -> Any:
    """A ``google.protobuf.Value`` as a wire value (None, bool, float, str or list).

    >>> value_to_wire(struct_pb2.Value(null_value=0)) is None
    True
    """
    kind = value.WhichOneof("kind")
    convert = _VALUE_KIND.get(kind)
    if convert is None:
        raise errors.unsupported_value(kind)
    return convert(value)


def list_to_wire(values: struct_pb2.ListValue) -> list[Any]:
    """A ``ListValue`` (a row, a key, an array or a struct) as a list of wire values."""
    kinds = _VALUE_KIND
    out = []
    for v in values.values:
        convert = kinds.get(v.WhichOneof("kind"))
        out.append(convert(v) if convert is not None else value_to_wire(v))
    return out


#: The ``Value`` field a value of each type travels in (others: always the general decoding).
_KIND: dict[TypeCode, str] = {
    TypeCode.BOOL: "bool_value",
    TypeCode.FLOAT64: "number_value",
    TypeCode.FLOAT32: "number_value",
    **{code: "string_value" for code in (TypeCode.INT64, TypeCode.STRING, TypeCode.BYTES, TypeCode.DATE,
                                         TypeCode.TIMESTAMP, TypeCode.NUMERIC, TypeCode.JSON, TypeCode.UUID,
                                         TypeCode.INTERVAL, TypeCode.PROTO, TypeCode.ENUM)},
}

#: A field that reads as a false value whatever the value holds (NULL_VALUE is 0): the general decoding.
_NEVER = "null_value"


class PbRows(EncodedRows):
    """The ``values`` (``ListValue`` messages) of one ``Mutation.Write``."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[Any]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def wire(self) -> list[list[Any]]:
        return [list_to_wire(r) for r in self._rows]

    @classmethod
    def convert_all(cls, parts: Sequence[EncodedRows], types: Sequence[SpannerType],
                    converters: Sequence[Callable[[Any], Any]]) -> list[list[Any]]:
        plan = [(_KIND.get(t.code, _NEVER), conv) for t, conv in zip(types, converters, strict=True)]
        width = len(plan)
        out = []
        for part in parts:
            assert isinstance(part, PbRows)
            for row in part._rows:
                values = row.values
                if len(values) != width:
                    raise RowWidthError(len(values))
                # A field of a oneof reads as its default when another is set: a value that is not
                # its default (non-empty text, true, non-zero) is of that kind; anything else (also
                # NULL, "", false, 0) takes the general decoding. One attribute read per value.
                out.append([conv(w) if (w := getattr(v, kind)) else conv(value_to_wire(v))
                            for (kind, conv), v in zip(plan, values)])  # noqa: B905 - width checked above
        return out
