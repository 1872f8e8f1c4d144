"""Every function family, evaluated through SQL, with the result types Spanner reports."""

from __future__ import annotations

import base64
import hashlib

import pytest

from tests.localspanner.unit.sql_fixtures import CATALOG, build
from watcher.localspanner.common.requests import Statement
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.sql import execute_query

NOW = values.parse_timestamp("2024-05-01T10:20:30.123456789Z")


@pytest.fixture(scope="module")
def conn():
    return build()


def one(conn, expr, params=None, types=None):
    fields, rows = execute_query(conn, Statement(f"SELECT {expr}", params or {}, types or {}), CATALOG, now_nanos=NOW)
    rows = list(rows)
    return rows[0][0], fields[0].type


@pytest.mark.parametrize("text, expected", [
    ("1footrue", -1541654101129638711), ("2applefalse", 2794438866806483259), ("3true", -4880158226897771312),
    ("", -7286425919675154353), ("abc", 2640714258260161385),
])
def test_farm_fingerprint_known_values(conn, text, expected):
    assert one(conn, "FARM_FINGERPRINT(@s)", {"s": text}) == (str(expected), T.INT64)
    assert one(conn, "FARM_FINGERPRINT(@b)", {"b": base64.b64encode(text.encode()).decode()}, {"b": T.BYTES})[0] == str(expected)


@pytest.mark.parametrize("expr, value, t", [
    ("CONCAT('a', 'b', 'c')", "abc", T.STRING),
    ("CONCAT('a', NULL)", None, T.STRING),
    ("'a' || 'b'", "ab", T.STRING),
    ("LOWER('ÄB')", "äb", T.STRING),
    ("UPPER('äb')", "ÄB", T.STRING),
    ("LENGTH('héllo')", "5", T.INT64),
    ("CHAR_LENGTH('héllo')", "5", T.INT64),
    ("BYTE_LENGTH('héllo')", "6", T.INT64),
    ("SUBSTR('hello', 2, 3)", "ell", T.STRING),
    ("SUBSTR('hello', -3)", "llo", T.STRING),
    ("STARTS_WITH('hello', 'he')", True, T.BOOL),
    ("ENDS_WITH('hello', 'x')", False, T.BOOL),
    ("STRPOS('hello', 'l')", "3", T.INT64),
    ("REPLACE('aXbX', 'X', '-')", "a-b-", T.STRING),
    ("TRIM('  a  ')", "a", T.STRING),
    ("LTRIM('xxa', 'x')", "a", T.STRING),
    ("RTRIM('a  ')", "a", T.STRING),
    ("REGEXP_CONTAINS('abc123', r'\\d+')", True, T.BOOL),
    ("REGEXP_EXTRACT('abc123', r'[a-z]+(\\d)')", "1", T.STRING),
    ("FORMAT('%d-%s', 5, 'x')", "5-x", T.STRING),
    ("'abc' LIKE 'a%'", True, T.BOOL),
    ("'abc' LIKE 'A%'", False, T.BOOL),
    ("MOD(-7, 3)", "-1", T.INT64),
    ("MOD(7, -3)", "1", T.INT64),
    ("DIV(-7, 2)", "-3", T.INT64),
    ("7 / 2", 3.5, T.FLOAT64),
    ("ABS(-3)", "3", T.INT64),
    ("SIGN(-2.5)", -1.0, T.FLOAT64),
    ("ROUND(2.5)", 3.0, T.FLOAT64),
    ("ROUND(-2.5)", -3.0, T.FLOAT64),
    ("FLOOR(1.5)", 1.0, T.FLOAT64),
    ("CEIL(1.2)", 2.0, T.FLOAT64),
    ("GREATEST(1, 5, 3)", "5", T.INT64),
    ("LEAST(1.5, 0)", 0.0, T.FLOAT64),
    ("GREATEST(1, NULL)", None, T.INT64),
    ("IF(1 < 2, 'y', 'n')", "y", T.STRING),
    ("IFNULL(NULL, 4)", "4", T.INT64),
    ("COALESCE(NULL, NULL, 'z')", "z", T.STRING),
    ("NULLIF(3, 3)", None, T.INT64),
    ("CASE 2 WHEN 1 THEN 'a' WHEN 2 THEN 'b' END", "b", T.STRING),
    ("CASE WHEN false THEN 1 ELSE 2.5 END", 2.5, T.FLOAT64),
    ("TO_HEX(b'\\x01\\xff')", "01ff", T.STRING),
    ("TO_BASE64(b'abc')", "YWJj", T.STRING),
    ("FROM_BASE64('YWJj')", base64.b64encode(b"abc").decode(), T.BYTES),
    ("SHA256('abc')", base64.b64encode(hashlib.sha256(b"abc").digest()).decode(), T.BYTES),
    ("SHA512(b'abc')", base64.b64encode(hashlib.sha512(b"abc").digest()).decode(), T.BYTES),
    ("ARRAY_LENGTH([1, 2, 3])", "3", T.INT64),
    ("GENERATE_ARRAY(1, 5, 2)", ["1", "3", "5"], T.array_of(T.INT64)),
    ("[1, 2][OFFSET(1)]", "2", T.INT64),
    ("['a'][SAFE_OFFSET(3)]", None, T.STRING),
    ("ARRAY(SELECT x FROM UNNEST([3, 1, 2]) AS x ORDER BY x)", ["1", "2", "3"], T.array_of(T.INT64)),
    ("JSON_VALUE(JSON '{\"a\": {\"b\": 5}}', '$.a.b')", "5", T.STRING),
    ("JSON_QUERY(JSON '{\"a\": {\"b\": 5}}', '$.a')", '{"b":5}', T.JSON),
    ("3 IN (1, 2, 3)", True, T.BOOL),
    ("4 NOT IN (1, 2, 3)", True, T.BOOL),
    ("2 BETWEEN 1 AND 3", True, T.BOOL),
    ("NULL IS NULL", True, T.BOOL),
    ("(1 = 1) IS TRUE", True, T.BOOL),
    ("(1 = 2) IS NOT FALSE", False, T.BOOL),
])
def test_scalar_functions(conn, expr, value, t):
    assert one(conn, expr) == (value, t)


@pytest.mark.parametrize("expr, value, t", [
    ("CAST(5 AS STRING)", "5", T.STRING),
    ("CAST(1.0 AS STRING)", "1", T.STRING),
    ("CAST(TRUE AS STRING)", "true", T.STRING),
    ("CAST('42' AS INT64)", "42", T.INT64),
    ("CAST('0x10' AS INT64)", "16", T.INT64),
    ("CAST(2.5 AS INT64)", "3", T.INT64),
    ("CAST('1.5' AS FLOAT64)", 1.5, T.FLOAT64),
    ("CAST('true' AS BOOL)", True, T.BOOL),
    ("CAST(0 AS BOOL)", False, T.BOOL),
    ("CAST('abc' AS BYTES)", base64.b64encode(b"abc").decode(), T.BYTES),
    ("CAST(b'abc' AS STRING)", "abc", T.STRING),
    ("CAST('2020-01-02' AS DATE)", "2020-01-02", T.DATE),
    ("CAST('2020-01-02 03:04:05+00' AS TIMESTAMP)", "2020-01-02T03:04:05Z", T.TIMESTAMP),
    ("CAST('1.50' AS NUMERIC)", "1.5", T.NUMERIC),
    ("SAFE_CAST('x' AS INT64)", None, T.INT64),
    ("NUMERIC '1.25'", "1.25", T.NUMERIC),
    ("CAST(NUMERIC '2.5' AS INT64)", "3", T.INT64),
    ("CAST(TIMESTAMP '2020-01-02 03:04:05.5+00' AS STRING)", "2020-01-01 19:04:05.5-08", T.STRING),
])
def test_casts(conn, expr, value, t):
    assert one(conn, expr) == (value, t)


def test_cast_errors(conn):
    with pytest.raises(SpannerError) as e:
        one(conn, "CAST(@s AS INT64)", {"s": "nope"}, {"s": T.STRING})
    assert e.value.code == Code.OUT_OF_RANGE and "Bad int64 value: nope" in e.value.message
    with pytest.raises(SpannerError) as e:
        one(conn, "CAST(DATE '2020-01-01' AS INT64)")
    assert e.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(SpannerError) as e:
        one(conn, "1 / 0")
    assert "division by zero" in e.value.message


@pytest.mark.parametrize("expr, value, t", [
    ("CURRENT_TIMESTAMP()", "2024-05-01T10:20:30.123456789Z", T.TIMESTAMP),
    ("TIMESTAMP_ADD(TIMESTAMP '2024-01-01T00:00:00Z', INTERVAL 90 MINUTE)", "2024-01-01T01:30:00Z", T.TIMESTAMP),
    ("TIMESTAMP_SUB(TIMESTAMP '2024-01-01T00:00:00Z', INTERVAL 1 NANOSECOND)", "2023-12-31T23:59:59.999999999Z", T.TIMESTAMP),
    ("TIMESTAMP_ADD(TIMESTAMP '2024-01-01T00:00:00Z', INTERVAL @n DAY)", "2024-01-03T00:00:00Z", T.TIMESTAMP),
    ("TIMESTAMP_DIFF(TIMESTAMP '2024-01-02T00:00:00Z', TIMESTAMP '2024-01-01T00:00:01Z', SECOND)", "86399", T.INT64),
    ("TIMESTAMP_DIFF(TIMESTAMP '2024-01-02T00:00:00Z', TIMESTAMP '2024-01-01T00:00:01Z', DAY)", "0", T.INT64),
    ("TIMESTAMP_TRUNC(TIMESTAMP '2024-05-01T10:20:30Z', HOUR)", "2024-05-01T10:00:00Z", T.TIMESTAMP),
    ("TIMESTAMP_TRUNC(TIMESTAMP '2024-05-01T10:20:30Z', DAY, 'UTC')", "2024-05-01T00:00:00Z", T.TIMESTAMP),
    ("TIMESTAMP_TRUNC(TIMESTAMP '2024-05-01T10:20:30Z', MONTH, 'UTC')", "2024-05-01T00:00:00Z", T.TIMESTAMP),
    ("FORMAT_TIMESTAMP('%F %H:%M:%E*S', CURRENT_TIMESTAMP(), 'UTC')", "2024-05-01 10:20:30.123456789", T.STRING),
    ("FORMAT_TIMESTAMP('%Y %W %u %d %j %H %M %S', CURRENT_TIMESTAMP(), 'UTC')", "2024 18 3 01 122 10 20 30", T.STRING),
    ("FORMAT_TIMESTAMP('%H:%M', TIMESTAMP '2024-05-01T10:20:00Z')", "03:20", T.STRING),
    ("FORMAT_TIMESTAMP('%H%Ez', TIMESTAMP '2024-05-01T10:20:00Z', 'Europe/Berlin')", "12+02:00", T.STRING),
    ("EXTRACT(HOUR FROM TIMESTAMP '2024-05-01T10:20:00Z' AT TIME ZONE 'UTC')", "10", T.INT64),
    ("EXTRACT(DAYOFWEEK FROM DATE '2024-05-05')", "1", T.INT64),
    ("EXTRACT(DATE FROM TIMESTAMP '2024-05-01T03:00:00Z')", "2024-04-30", T.DATE),
    ("DATE(TIMESTAMP '2024-05-01T03:00:00Z', 'UTC')", "2024-05-01", T.DATE),
    ("DATE(2024, 2, 29)", "2024-02-29", T.DATE),
    ("TIMESTAMP('2024-05-01 00:00:00', 'UTC')", "2024-05-01T00:00:00Z", T.TIMESTAMP),
    ("TIMESTAMP('2024-05-01T00:00:00Z')", "2024-05-01T00:00:00Z", T.TIMESTAMP),
    ("UNIX_SECONDS(TIMESTAMP '1970-01-01T00:01:00.9Z')", "60", T.INT64),
    ("UNIX_MILLIS(TIMESTAMP '1970-01-01T00:00:01Z')", "1000", T.INT64),
    ("UNIX_MICROS(TIMESTAMP '1970-01-01T00:00:01Z')", "1000000", T.INT64),
    ("TIMESTAMP_SECONDS(60)", "1970-01-01T00:01:00Z", T.TIMESTAMP),
    ("TIMESTAMP_MILLIS(1500)", "1970-01-01T00:00:01.500Z", T.TIMESTAMP),
    ("TIMESTAMP_MICROS(1)", "1970-01-01T00:00:00.000001Z", T.TIMESTAMP),
    ("DATE_ADD(DATE '2024-01-31', INTERVAL 1 MONTH)", "2024-02-29", T.DATE),
    ("DATE_SUB(DATE '2024-01-01', INTERVAL 1 DAY)", "2023-12-31", T.DATE),
    ("DATE_DIFF(DATE '2024-03-01', DATE '2024-02-01', DAY)", "29", T.INT64),
    ("DATE_DIFF(DATE '2024-03-01', DATE '2023-12-31', MONTH)", "3", T.INT64),
    ("CURRENT_DATE('UTC')", "2024-05-01", T.DATE),
    ("CURRENT_DATE()", "2024-05-01", T.DATE),
])
def test_date_and_time_functions(conn, expr, value, t):
    assert one(conn, expr, {"n": "2"}) == (value, t)


def test_current_timestamp_is_fixed_within_a_statement(conn):
    fields, rows = execute_query(conn, Statement("SELECT CURRENT_TIMESTAMP() = CURRENT_TIMESTAMP(), CURRENT_TIMESTAMP()"),
                                 CATALOG, now_nanos=NOW)
    assert list(rows) == [[True, "2024-05-01T10:20:30.123456789Z"]]


def test_unsupported_function_is_named(conn):
    with pytest.raises(SpannerError) as e:
        one(conn, "NET.PUBLIC_SUFFIX('x')")
    assert e.value.code == Code.UNIMPLEMENTED
    with pytest.raises(SpannerError) as e:
        one(conn, "SOME_FUNCTION_NOBODY_HAS(1)")
    assert e.value.code == Code.UNIMPLEMENTED and "SOME_FUNCTION_NOBODY_HAS" in e.value.message
