"""Direct protobuf encoding of wire values as ``google.protobuf.Value``, for result rows.

Result rows are the server's hottest path (a million rows is a few million values), so
they are written as protobuf bytes here rather than built as message objects: a value
becomes one length-delimited field, and a message is the concatenation of its fields
(protobuf parses concatenated fields of a repeated field as one list). Only the
``Value`` message is encoded by hand; everything else goes through protobuf.

Field numbers used (from google/protobuf/struct.proto and google/spanner/v1/result_set.proto):
``Value``: null_value 1 (varint), number_value 2 (fixed64), string_value 3, bool_value 4
(varint), list_value 6; ``ListValue.values`` 1; ``PartialResultSet.values`` 2;
``ResultSet.rows`` 2.

Example:
    >>> from google.protobuf import struct_pb2
    >>> body = b"".join(encode_items(["1", None, [True]], LIST_VALUE_ITEM))
    >>> [v.WhichOneof("kind") for v in struct_pb2.ListValue.FromString(body).values]
    ['string_value', 'null_value', 'list_value']
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Callable

#: Tag of ``PartialResultSet.values`` (field 2, length-delimited).
PARTIAL_RESULT_VALUE = b"\x12"
#: Tag of ``ListValue.values`` (field 1, length-delimited).
LIST_VALUE_ITEM = b"\x0a"
#: Tag of ``ResultSet.rows`` (field 2, length-delimited).
RESULT_SET_ROW = b"\x12"

_NULL_BODY = b"\x08\x00"
_TRUE_BODY = b"\x20\x01"
_FALSE_BODY = b"\x20\x00"
_STRING_TAG = b"\x1a"
_NUMBER_TAG = b"\x11"
_LIST_TAG = b"\x32"
_pack_double = struct.Struct("<d").pack


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int.

    >>> varint(300)
    b'\\xac\\x02'
    """
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Lengths below this are looked up, not computed: nearly every value is short.
_SMALL = [varint(i) for i in range(1 << 14)]


def _length(n: int) -> bytes:
    return _SMALL[n] if n < 16384 else varint(n)


def field(tag: bytes, body: bytes) -> bytes:
    """One length-delimited field: tag, length, body."""
    return tag + _length(len(body)) + body


def _string_body(v: str) -> bytes:
    data = v.encode()
    return _STRING_TAG + _length(len(data)) + data


def _list_body(v: list[Any]) -> bytes:
    return field(_LIST_TAG, b"".join(encode_items(v, LIST_VALUE_ITEM)))


# Python type of a wire value -> body of its Value message. int and bytes are not wire
# forms, but encoding them as Spanner does (decimal / base64 text) is cheap insurance.
_BODY: dict[type, Callable[[Any], bytes]] = {
    type(None): lambda v: _NULL_BODY,
    bool: lambda v: _TRUE_BODY if v else _FALSE_BODY,
    float: lambda v: _NUMBER_TAG + _pack_double(v),
    str: _string_body,
    list: _list_body,
    tuple: lambda v: _list_body(list(v)),
    int: lambda v: _string_body(str(v)),
    bytes: lambda v: _string_body(base64.b64encode(v).decode("ascii")),
}


def value_body(value: Any) -> bytes:
    """The serialized ``google.protobuf.Value`` of one wire value.

    >>> value_body("a")
    b'\\x1a\\x01a'
    """
    try:
        return _BODY[type(value)](value)
    except KeyError:
        raise TypeError(f"not a wire value: {type(value).__name__}") from None


def encode_items(values: list[Any], tag: bytes) -> list[bytes]:
    """Each value as a ``Value`` field with ``tag`` (one list entry per value)."""
    body = _BODY
    out = []
    append = out.append
    for v in values:
        try:
            b = body[type(v)](v)
        except KeyError:
            raise TypeError(f"not a wire value: {type(v).__name__}") from None
        append(tag + _length(len(b)) + b)
    return out
