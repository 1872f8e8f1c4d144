"""Direct protobuf encoding of wire values as ``google.protobuf.Value``, for result rows.

Result rows are the server's hottest path (a million rows is a few million values), so
they are written as protobuf bytes here rather than built as message objects: a value
becomes one length-delimited field, and a message is the concatenation of its fields
(protobuf parses concatenated fields of a repeated field as one list). Only ``Value``
and ``ListValue`` are encoded by hand; every other message goes through protobuf.

Field numbers used (google/protobuf/struct.proto, google/spanner/v1/result_set.proto):
``Value``: null_value 1 (varint), number_value 2 (fixed64), string_value 3, bool_value 4
(varint), list_value 6; ``ListValue.values`` 1; ``PartialResultSet.values`` 2;
``ResultSet.rows`` 2.

Example:
    >>> from google.protobuf import struct_pb2
    >>> body = LIST_ITEMS.encode(["1", None, [True]])
    >>> [v.WhichOneof("kind") for v in struct_pb2.ListValue.FromString(body).values]
    ['string_value', 'null_value', 'list_value']
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

_STRING = b"\x1a"
_NUMBER = b"\x11"
_LIST = b"\x32"
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


class ItemEncoder:
    """Encodes wire values as ``Value`` entries of one repeated field (``tag``).

    Per Python type of the value, one function returns the whole entry (tag, length
    and ``Value`` body); the prefixes of short strings are precomputed.
    """

    #: Strings shorter than this (in UTF-8 bytes) use a precomputed prefix.
    PREFIXED = 4096

    def __init__(self, tag: bytes) -> None:
        self.tag = tag
        self._string_prefix = [tag + _length(1 + len(_length(n)) + n) + _STRING + _length(n)
                               for n in range(self.PREFIXED)]
        null, true, false = (field(tag, body) for body in (b"\x08\x00", b"\x20\x01", b"\x20\x00"))
        number = tag + b"\x09" + _NUMBER
        # Python type of a wire value -> its encoded entry. int and bytes are not wire
        # forms, but encoding them as Spanner does (decimal / base64 text) is cheap insurance.
        self._by_type: dict[type, Callable[[Any], bytes]] = {
            str: self._string,
            type(None): lambda v: null,
            bool: lambda v: true if v else false,
            float: lambda v: number + _pack_double(v),
            list: self._list,
            tuple: self._list,
            int: lambda v: self._string(str(v)),
            bytes: lambda v: self._string(base64.b64encode(v).decode("ascii")),
        }

    def _string(self, v: str) -> bytes:
        data = v.encode()
        n = len(data)
        if n < self.PREFIXED:
            return self._string_prefix[n] + data
        return field(self.tag, _STRING + _length(n) + data)

    def _list(self, v: Any) -> bytes:
        return field(self.tag, field(_LIST, LIST_ITEMS.encode(v)))

    def encode(self, values: Any) -> bytes:
        """All values, one entry each, concatenated."""
        by_type = self._by_type
        try:
            return b"".join([by_type[type(v)](v) for v in values])
        except KeyError:
            bad = next(v for v in values if type(v) not in by_type)
            raise TypeError(f"not a wire value: {type(bad).__name__}") from None


#: Entries of ``ListValue.values`` (arrays, structs, rows of a ResultSet).
LIST_ITEMS = ItemEncoder(b"\x0a")
#: Entries of ``PartialResultSet.values``.
PARTIAL_RESULT_VALUES = ItemEncoder(b"\x12")
#: Tag of ``ResultSet.rows`` (field 2, length-delimited).
RESULT_SET_ROW = b"\x12"


def value_body(value: Any) -> bytes:
    """The serialized ``google.protobuf.Value`` of one wire value.

    >>> value_body("a")
    b'\\x1a\\x01a'
    """
    entry = LIST_ITEMS.encode([value])
    # Skip the entry's tag and length: what remains is the Value message itself.
    pos = 1
    while entry[pos] & 0x80:
        pos += 1
    return entry[pos + 1:]
