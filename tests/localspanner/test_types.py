"""Every Spanner type, through the official client: mutation -> read, mutation -> query, and parameters.

The client's own conventions apply: BYTES values are handed to it base64-encoded and come
back as the base64 text (as bytes); TIMESTAMP values come back as
``DatetimeWithNanoseconds``; NUMERIC as ``Decimal``; JSON as ``JsonObject``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from decimal import Decimal

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import spanner
from google.cloud.spanner_v1 import JsonObject, param_types

UTC = dt.UTC
TS_NANOS = DatetimeWithNanoseconds(2024, 2, 29, 23, 59, 58, nanosecond=123456789, tzinfo=UTC)
TS_MICROS = dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
RAW = bytes(range(256))


def b64(raw: bytes) -> bytes:
    return base64.b64encode(raw)


SCALARS = {
    # column: (DDL type, param type, [values that must round-trip exactly])
    "I": ("INT64", param_types.INT64, [2**63 - 1, -(2**63), 2**53 + 1, 0, -7]),
    "F": ("FLOAT64", param_types.FLOAT64, [1.5, -0.0, 1e308, 5e-324, math.inf, -math.inf, math.nan, 0.1 + 0.2]),
    "B": ("BOOL", param_types.BOOL, [True, False]),
    "S": ("STRING(MAX)", param_types.STRING, ["", "héllo ✓ 日本", "a'b\"c\\d\n", "x" * 5000]),
    "Y": ("BYTES(MAX)", param_types.BYTES, [b64(RAW), b64(b""), b64(b"\x00")]),
    "D": ("DATE", param_types.DATE, [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]),
    "T": ("TIMESTAMP", param_types.TIMESTAMP, [TS_NANOS, TS_MICROS,
                                               DatetimeWithNanoseconds(2001, 1, 1, tzinfo=UTC)]),
    "N": ("NUMERIC", param_types.NUMERIC, [Decimal("99999999999999999999999999999.999999999"),
                                            Decimal("-0.000000001"), Decimal("0"), Decimal("123.45")]),
    "J": ("JSON", param_types.JSON, [JsonObject({"b": [1, 2.5, None], "a": {"x": "y"}}), JsonObject([1, "two"]),
                                      JsonObject({})]),
}

DDL = [
    "CREATE TABLE Ty (Id INT64 NOT NULL, "
    + ", ".join(f"{c} {t}, Arr{c} ARRAY<{t}>" for c, (t, _, _) in SCALARS.items())
    + ") PRIMARY KEY (Id)"
]


def _same(a, b) -> bool:
    """Equality that treats NaN as equal to NaN, JSON by content and -0.0 by sign."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, JsonObject) or isinstance(b, JsonObject):
        return json.loads(JsonObject(a).serialize()) == json.loads(JsonObject(b).serialize())
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a == b and _nanos(a) == _nanos(b)
    return type(a) is type(b) and a == b


def _nanos(t: dt.datetime) -> int:
    return getattr(t, "nanosecond", 0) or t.microsecond * 1000


@pytest.fixture
def tdb(make_database):
    return make_database(DDL)


def _write_each_value(db):
    """One row per (column, value), plus a row of all NULLs; returns {id: (column, value)}."""
    written = {}
    next_id = 1
    with db.batch() as b:
        for col, (_, _, vals) in SCALARS.items():
            for v in vals:
                b.insert("Ty", ("Id", col), [(next_id, v)])
                written[next_id] = (col, v)
                next_id += 1
            b.insert("Ty", ("Id", f"Arr{col}"), [(next_id, vals + [None])])
            written[next_id] = (f"Arr{col}", vals + [None])
            next_id += 1
            b.insert("Ty", ("Id", f"Arr{col}"), [(next_id, [])])
            written[next_id] = (f"Arr{col}", [])
            next_id += 1
        b.insert("Ty", ("Id",), [(0,)])
    return written


def test_every_type_round_trips_through_mutation_and_read(tdb):
    written = _write_each_value(tdb)
    with tdb.snapshot(multi_use=True) as snap:
        for row_id, (col, value) in written.items():
            (got,) = list(snap.read("Ty", (col,), spanner.KeySet(keys=[[row_id]])))
            assert _same(got[0], value), (col, value, got[0])
        all_columns = ["Id"] + [c for c in SCALARS] + [f"Arr{c}" for c in SCALARS]
        (nulls,) = list(snap.read("Ty", all_columns, spanner.KeySet(keys=[[0]])))
    assert nulls == [0] + [None] * (len(all_columns) - 1)


def test_every_type_round_trips_through_mutation_and_query(tdb):
    written = _write_each_value(tdb)
    with tdb.snapshot(multi_use=True) as snap:
        for row_id, (col, value) in written.items():
            rows = list(snap.execute_sql(f"SELECT {col} FROM Ty WHERE Id = @id", params={"id": row_id},
                                         param_types={"id": param_types.INT64}))
            assert len(rows) == 1 and _same(rows[0][0], value), (col, value, rows)


def test_bytes_are_binary_exact(tdb):
    with tdb.batch() as b:
        b.insert("Ty", ("Id", "Y"), [(1, b64(RAW))])
    with tdb.snapshot() as snap:
        (row,) = list(snap.execute_sql("SELECT Y, LENGTH(Y), TO_BASE64(Y) FROM Ty"))
    assert base64.b64decode(row[0]) == RAW
    assert row[1] == 256
    assert row[2] == b64(RAW).decode()


def test_timestamp_keeps_nanoseconds_and_orders_by_them(tdb):
    later = DatetimeWithNanoseconds(2024, 2, 29, 23, 59, 58, nanosecond=123456790, tzinfo=UTC)
    with tdb.batch() as b:
        b.insert("Ty", ("Id", "T"), [(1, later), (2, TS_NANOS)])
    with tdb.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT Id, T FROM Ty ORDER BY T"))
    assert [r[0] for r in rows] == [2, 1]
    assert isinstance(rows[0][1], DatetimeWithNanoseconds)
    assert rows[0][1].nanosecond == 123456789 and rows[1][1].nanosecond == 123456790


def test_query_results_are_typed(tdb):
    sql = """SELECT 9223372036854775807, CAST('NaN' AS FLOAT64), CAST('inf' AS FLOAT64), CAST('-inf' AS FLOAT64),
                    NUMERIC '12345678901234567890.123456789', b'\\x00\\xff', DATE '2020-01-31',
                    TIMESTAMP '2020-01-31T10:11:12.987654321Z', JSON '{"k": [1, null]}', [1, 2, NULL],
                    ['a', NULL], ARRAY<FLOAT64>[], CAST(NULL AS INT64), TRUE"""
    with tdb.snapshot() as snap:
        (row,) = list(snap.execute_sql(sql))
    assert row[0] == 9223372036854775807
    assert math.isnan(row[1]) and row[2] == math.inf and row[3] == -math.inf
    assert row[4] == Decimal("12345678901234567890.123456789") and isinstance(row[4], Decimal)
    assert base64.b64decode(row[5]) == b"\x00\xff"
    assert row[6] == dt.date(2020, 1, 31)
    assert row[7] == DatetimeWithNanoseconds(2020, 1, 31, 10, 11, 12, nanosecond=987654321, tzinfo=UTC)
    assert row[7].nanosecond == 987654321
    assert json.loads(row[8].serialize()) == {"k": [1, None]}
    assert row[9] == [1, 2, None] and row[10] == ["a", None] and row[11] == []
    assert row[12] is None and row[13] is True


def test_int64_arithmetic_is_exact_beyond_2_pow_53(tdb):
    with tdb.snapshot() as snap:
        (row,) = list(snap.execute_sql("SELECT @x + 1, @x * 1, CAST(@x AS STRING)", params={"x": 2**62 + 1},
                                       param_types={"x": param_types.INT64}))
    assert row == [2**62 + 2, 2**62 + 1, str(2**62 + 1)]


@pytest.mark.parametrize("col", list(SCALARS))
def test_every_type_as_a_query_parameter(tdb, col):
    _, ptype, vals = SCALARS[col]
    with tdb.snapshot(multi_use=True) as snap:
        for v in vals:
            (row,) = list(snap.execute_sql("SELECT @p, @p IS NULL", params={"p": v}, param_types={"p": ptype}))
            assert _same(row[0], v), (col, v, row)
            assert row[1] is False
        (row,) = list(snap.execute_sql("SELECT @p IS NULL, @p", params={"p": None}, param_types={"p": ptype}))
        assert row == [True, None]
        arr = param_types.Array(ptype)
        (row,) = list(snap.execute_sql("SELECT @a, ARRAY_LENGTH(@a)", params={"a": vals + [None]}, param_types={"a": arr}))
        assert _same(row[0], vals + [None]) and row[1] == len(vals) + 1
        (row,) = list(snap.execute_sql("SELECT @a", params={"a": None}, param_types={"a": arr}))
        assert row == [None]


def test_parameters_without_declared_types_are_inferred(tdb):
    with tdb.snapshot() as snap:
        (row,) = list(snap.execute_sql("SELECT @i + 1, @f * 2, @s || '!', @b AND TRUE, @a",
                                       params={"i": 2**60, "f": 1.25, "s": "hey", "b": True, "a": [3, 4]}))
    assert row == [2**60 + 1, 2.5, "hey!", True, [3, 4]]


def test_parameters_compare_with_stored_values(tdb):
    with tdb.batch() as b:
        b.insert("Ty", ("Id", "T", "N", "D", "Y", "S"),
                 [(1, TS_NANOS, Decimal("1.5"), dt.date(2000, 1, 1), b64(b"k1"), "s1"),
                  (2, TS_MICROS, Decimal("2.5"), dt.date(2000, 1, 2), b64(b"k2"), "s2")])
    cases = [
        ("T = @v", TS_NANOS, param_types.TIMESTAMP, [1]),
        ("T < @v", TS_NANOS, param_types.TIMESTAMP, [2]),
        ("N > @v", Decimal("2"), param_types.NUMERIC, [2]),
        ("D = @v", dt.date(2000, 1, 2), param_types.DATE, [2]),
        ("Y = @v", b64(b"k1"), param_types.BYTES, [1]),
        ("S IN UNNEST(@v)", ["s2", "zz"], param_types.Array(param_types.STRING), [2]),
        ("D IN UNNEST(@v)", [dt.date(2000, 1, 1)], param_types.Array(param_types.DATE), [1]),
        ("T IN UNNEST(@v)", [TS_MICROS, TS_NANOS], param_types.Array(param_types.TIMESTAMP), [1, 2]),
    ]
    with tdb.snapshot(multi_use=True) as snap:
        for where, value, ptype, expected in cases:
            rows = list(snap.execute_sql(f"SELECT Id FROM Ty WHERE {where} ORDER BY Id", params={"v": value},
                                         param_types={"v": ptype}))
            assert [r[0] for r in rows] == expected, where
