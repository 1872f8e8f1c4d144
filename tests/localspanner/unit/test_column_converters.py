"""The mutation path's fast value conversion stores exactly what the codec stores, and refuses what it refuses.

A user writing through any client (not only the official Python one, which sends the
canonical forms) must see the same stored values and the same errors whether a value
takes a fast path or the general codec.
"""

from __future__ import annotations

import math

import pytest
from google.protobuf import struct_pb2

from watcher.localspanner.common.requests import RowWidthError
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.errors import SpannerError
from watcher.localspanner.frontend.pb_values import PbRows, list_to_wire
from watcher.localspanner.schema.catalog import Column, KeyPart, Table
from watcher.localspanner.storage.column_converters import STAMP, _general, column_converter

COLUMNS = (
    Column("K", T.INT64, not_null=True),
    Column("S", T.SpannerType(T.TypeCode.STRING, length=5)),
    Column("B", T.SpannerType(T.TypeCode.BYTES, length=3)),
    Column("D", T.DATE),
    Column("F", T.FLOAT64),
    Column("Z", T.BOOL),
    Column("Ts", T.TIMESTAMP, allow_commit_timestamp=True),
)
TABLE = Table("T", COLUMNS, (KeyPart("K"),))

#: Wire values per column: canonical, non-canonical but valid, and refused ones.
CASES = {
    "K": ["12", "-9223372036854775808", "9223372036854775807", " 7 ", "1_000", "+5", "9223372036854775808", "", "x", "1.5",
          3.0, 2.5, True, None, "٣"],
    "S": ["abc", "abcde", "abcdef", "", "héllo", 5, None, ["a"]],
    "B": ["QUJD", "QUI=", "QUJDRA==", "QQ", "QUJD\n", "====", "QU JD", "", "!!", b"ab", None, 1],
    "D": ["2024-05-01", "2024-5-1", " 2024-05-01", "2024-02-30", "0000-01-01", "9999-12-31", "2024-W01-1", "２０２４-05-01",
          "20240501", "", None, 3],
    "F": [1.5, -0.0, 3, "NaN", "Infinity", "-Infinity", float("nan"), float("inf"), "1.5", True, None],
    "Z": [True, False, 1, "true", None],
    "Ts": ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123456789Z", "spanner.commit_timestamp()", "bad", None, 5],
}


def _outcome(convert, wire):
    try:
        stored = convert(wire)
    except SpannerError as exc:
        return ("error", exc.code, exc.message)
    if isinstance(stored, float) and math.isnan(stored):
        return ("nan",)
    return ("ok", type(stored), stored)


@pytest.mark.parametrize("column", COLUMNS, ids=lambda c: c.name)
def test_fast_conversion_matches_the_codec(column):
    fast, general = column_converter(TABLE, column), _general(TABLE, column)
    for wire in CASES[column.name]:
        if column.allow_commit_timestamp and wire == "spanner.commit_timestamp()":
            assert fast(wire) is STAMP
            continue
        assert _outcome(fast, wire) == _outcome(general, wire), (column.name, wire)


def _value(wire):
    if wire is None:
        return struct_pb2.Value(null_value=0)
    if isinstance(wire, bool):
        return struct_pb2.Value(bool_value=wire)
    if isinstance(wire, float):
        return struct_pb2.Value(number_value=wire)
    if isinstance(wire, list):
        return struct_pb2.Value(list_value=struct_pb2.ListValue(values=[_value(w) for w in wire]))
    return struct_pb2.Value(string_value=wire)


def test_protobuf_rows_convert_as_their_wire_values_do():
    """NULL, empty text, false, 0.0 and values of the wrong kind all take the general decoding."""
    rows = [
        ["1", "ab", "QUI=", "2024-05-01", 1.5, True, "spanner.commit_timestamp()"],
        ["2", "", "", "2024-5-1", 0.0, False, None],
        ["3", None, None, None, "NaN", None, "2024-05-01T10:00:00Z"],
        ["4", ["x"], "QQ==", "2024-05-01", -0.0, True, "2024-05-01T10:00:00.5Z"],
    ]
    converters = [column_converter(TABLE, c) for c in COLUMNS]
    types = [c.type for c in COLUMNS]
    for row in rows:
        part = PbRows([struct_pb2.ListValue(values=[_value(w) for w in row])])
        assert part.wire() == [row] == [list_to_wire(struct_pb2.ListValue(values=[_value(w) for w in row]))]
        expected = [_outcome(conv, wire) for conv, wire in zip(converters, row, strict=True)]
        if any(o[0] == "error" for o in expected):
            with pytest.raises(SpannerError) as info:
                PbRows.convert_all([part], types, converters)
            assert ("error", info.value.code, info.value.message) == next(o for o in expected if o[0] == "error")
            continue
        got = PbRows.convert_all([part], types, converters)[0]
        assert [_outcome(lambda w: w, g) for g in got] == expected


def test_a_row_of_the_wrong_width_is_reported():
    part = PbRows([struct_pb2.ListValue(values=[_value("1")])])
    with pytest.raises(RowWidthError) as info:
        PbRows.convert_all([part], [c.type for c in COLUMNS[:2]], [column_converter(TABLE, c) for c in COLUMNS[:2]])
    assert info.value.values == 1
