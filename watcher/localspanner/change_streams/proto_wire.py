"""The protobuf wire encoding, as far as change stream records need it (no protobuf import below the edge).

A message is built as a list of ``(field number, value)`` pairs and encoded by :func:`message`:
``int`` / ``bool`` as varints (negative ints as 64-bit two's complement, as int64 and enums
are), ``str`` and ``bytes`` length-delimited, :class:`Double` as a fixed 64-bit float, and a
nested message as the ``bytes`` of its own :func:`message`. Fields whose value is None are
left out; callers leave out proto3 defaults themselves where the field is not in a oneof.

Example:
    >>> message([(1, 150)]).hex(), message([(2, "testing")]).hex(), message([(1, -1)]).hex()
    ('089601', '120774657374696e67', '08ffffffffffffffffff01')
    >>> message([(2, Double(1.5))]).hex()
    '11000000000000f83f'
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_VARINT, _FIXED64, _LENGTH = 0, 1, 2


@dataclass(frozen=True)
class Double:
    """A ``double`` field's value (marked, since a whole number would otherwise be taken for a varint)."""

    value: float


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def message(fields: Iterable[tuple[int, Any]]) -> bytes:
    """The encoding of ``fields`` (field number, value) in the order given."""
    out = bytearray()
    for number, value in fields:
        if value is None:
            continue
        if isinstance(value, bool | int):
            out += _varint(number << 3 | _VARINT) + _varint(int(value))
        elif isinstance(value, Double):
            out += _varint(number << 3 | _FIXED64) + struct.pack("<d", value.value)
        else:
            data = value.encode() if isinstance(value, str) else bytes(value)
            out += _varint(number << 3 | _LENGTH) + _varint(len(data)) + data
    return bytes(out)


def timestamp(nanos: int) -> bytes:
    """A ``google.protobuf.Timestamp`` (seconds, nanos)."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    return message([(1, seconds or None), (2, rest or None)])


def json_value(value: Any) -> bytes:
    """A JSON value (None, bool, number, text, list, dict) as a ``google.protobuf.Value``.

    >>> json_value(None).hex(), json_value("x").hex(), json_value([True]).hex()
    ('0800', '1a0178', '32040a022001')
    """
    if value is None:
        return message([(1, 0)])
    if isinstance(value, bool):
        return message([(4, value)])
    if isinstance(value, int | float):
        return message([(2, Double(float(value)))])
    if isinstance(value, str):
        return message([(3, value)])
    if isinstance(value, list | tuple):
        return message([(6, message((1, json_value(v)) for v in value))])
    assert isinstance(value, dict), value  # the stored record's values are JSON values only
    entries = ((1, message([(1, k), (2, json_value(v))])) for k, v in value.items())
    return message([(5, message(entries))])
