"""Queries the watcher sends, run against the Singers schema on plain SQLite."""

from __future__ import annotations

import base64
import hashlib
import time

import farmhash
import pytest

from tests.localspanner.unit.sql_fixtures import CATALOG, build
from watcher.localspanner import errors
from watcher.localspanner.common.requests import Statement
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.sql import execute_dml, execute_query
from watcher.localspanner.sql.execute import translate_cached

NOW = values.parse_timestamp("2024-05-01T10:00:00Z")
POLL = (
    "SELECT * FROM `Singers`@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} WHERE `LastUpdated` > @prevCommitTimestamp "
    "AND `ShardId` IS NOT NULL AND `ShardId` IN UNNEST(@shard) ORDER BY `LastUpdated`, `SingerId` LIMIT @limit"
)
ALL_SHARDS = [str(i) for i in range(-18, 19)]


def ts(i: int) -> str:
    return values.nanos_to_rfc3339(values.parse_timestamp("2024-01-01T00:00:00Z") + i * 1000)


def q(conn, sql, params=None, types=None, now=NOW):
    fields, rows = execute_query(conn, Statement(sql, params or {}, types or {}), CATALOG, now_nanos=now)
    return fields, list(rows)


def rows_of(conn, sql, params=None, types=None):
    return q(conn, sql, params, types)[1]


def dml(conn, sql, params=None, types=None):
    return execute_dml(conn, Statement(sql, params or {}, types or {}), CATALOG, now_nanos=NOW)


def shard_of(first, last):
    text = ((first + " ") if first is not None else "") + last
    h = farmhash.fingerprint64(text.encode())
    h = h - 2**64 if h >= 2**63 else h
    return abs(h) % 19 * (1 if h >= 0 else -1)  # MOD keeps the sign of the dividend


@pytest.fixture()
def conn():
    c = build()
    rows = [(i, f"first{i}" if i % 3 else None, f"last{i}", ts(i), 0) for i in range(1, 41)]
    c.executemany('INSERT INTO "Singers" ("SingerId","FirstName","LastName","LastUpdated","Processed") VALUES (?,?,?,?,?)',
                  [(a, b, c_, values.nanos_to_stored(values.parse_timestamp(d)), e) for a, b, c_, d, e in rows])
    c.execute('UPDATE "Singers" SET "Processed" = 1 WHERE "SingerId" = 40')
    return c


def poll(conn, prev, shards=ALL_SHARDS, limit=1000, typed=True):
    types = {"prevCommitTimestamp": T.TIMESTAMP, "shard": T.array_of(T.INT64), "limit": T.INT64} if typed else {}
    return q(conn, POLL, {"prevCommitTimestamp": prev, "shard": shards, "limit": str(limit)}, types)


def test_generated_shard_column_matches_farm_fingerprint(conn):
    got = dict(conn.execute('SELECT "SingerId", "ShardId" FROM "Singers"').fetchall())
    assert got[40] is None  # Processed rows leave the NULL_FILTERED index
    for i in (1, 2, 3, 9):
        assert got[i] == shard_of(f"first{i}" if i % 3 else None, f"last{i}")


def test_poll_query_fields_rows_and_order(conn):
    fields, rows = poll(conn, ts(10), limit=5)
    assert [f.name for f in fields] == [c.name for c in CATALOG.table("Singers").columns]
    assert [f.type.code for f in fields][:3] == [T.TypeCode.INT64, T.TypeCode.STRING, T.TypeCode.STRING]
    assert [r[0] for r in rows] == ["11", "12", "13", "14", "15"]
    assert rows[0][5] == ts(11)
    assert rows[0][6] is False


def test_poll_query_filters_shards_and_excludes_null_shard(conn):
    _, rows = poll(conn, ts(0), shards=[str(shard_of("first1", "last1"))])
    assert "1" in [r[0] for r in rows]
    assert all(int(r[7]) == shard_of("first1", "last1") for r in rows)
    _, all_rows = poll(conn, ts(0))
    assert "40" not in [r[0] for r in all_rows] and len(all_rows) == 39


def test_poll_query_untyped_parameters_are_inferred(conn):
    _, typed = poll(conn, ts(10), limit=7)
    _, untyped = poll(conn, ts(10), limit=7, typed=False)
    assert typed == untyped


def test_poll_query_uses_the_index_range(conn):
    tr = translate_cached(Statement(POLL, {"prevCommitTimestamp": ts(1), "shard": ["1"], "limit": "5"},
                                    {"prevCommitTimestamp": T.TIMESTAMP, "shard": T.array_of(T.INT64), "limit": T.INT64}), CATALOG)
    plan = " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + tr.sql, {"prevcommittimestamp": "x", "shard": "[1]", "limit": 5}))
    assert "Idx_Singers_ShardId_LastUpdated" in plan
    assert "ShardId=? AND LastUpdated>?" in plan
    assert "SCAN Singers" not in plan.replace("USING INDEX", "")


def test_force_index_without_null_filter_is_a_clear_error(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT SingerId FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} WHERE LastUpdated > @p",
          {"p": ts(1)}, {"p": T.TIMESTAMP})
    assert e.value.code == Code.INVALID_ARGUMENT
    assert "NULL_FILTERED" in e.value.message and "IS NOT NULL" in e.value.message


def test_unknown_index_in_hint(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT * FROM Singers@{FORCE_INDEX=Nope} WHERE SingerId = 1")
    assert e.value.message == errors.unknown_index_in_hint("Singers", "Nope").message
    assert rows_of(conn, "@{OPTIMIZER_VERSION=1} SELECT SingerId FROM Singers@{FORCE_INDEX=_BASE_TABLE} WHERE SingerId = 2") == [["2"]]


def test_with_variant_one_cte_per_shard_joined_back_on_key(conn):
    shards = sorted({shard_of(f"first{i}" if i % 3 else None, f"last{i}") for i in range(1, 40)})[:3]
    ctes = ", ".join(
        f"`shard_{n}` AS (SELECT `SingerId`, `LastUpdated` FROM `Singers`@{{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}} "
        f"WHERE `LastUpdated` > @prevCommitTimestamp AND `ShardId` IS NOT NULL AND `ShardId` = @shard{n} "
        f"ORDER BY `LastUpdated`, `SingerId` LIMIT @limit)"
        for n in range(len(shards)))
    union = " UNION ALL ".join(f"SELECT * FROM `shard_{n}`" for n in range(len(shards)))
    sql = (f"WITH {ctes}, `keys` AS ({union} ORDER BY `LastUpdated`, `SingerId` LIMIT @limit) "
           "SELECT `t`.* FROM `keys` INNER JOIN `Singers` AS `t` ON `t`.`SingerId` = `keys`.`SingerId` "
           "ORDER BY `t`.`LastUpdated`, `t`.`SingerId`")
    params = {"prevCommitTimestamp": ts(5), "limit": "4", **{f"shard{n}": str(s) for n, s in enumerate(shards)}}
    fields, rows = q(conn, sql, params)
    _, expected = poll(conn, ts(5), shards=[str(s) for s in shards], limit=4)
    assert rows == expected and len(rows) == 4
    assert [f.name for f in fields][0] == "SingerId"


def test_timebased_shard_expression(conn):
    current = "TO_BASE64(SHA512(FORMAT_TIMESTAMP('%F', CURRENT_TIMESTAMP(), 'UTC')))"
    previous = "TO_BASE64(SHA512(FORMAT_TIMESTAMP('%F', TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 45 SECOND), 'UTC')))"
    fields, rows = q(conn, f"SELECT {current}, {previous}")
    expect = base64.b64encode(hashlib.sha512(b"2024-05-01").digest()).decode()
    assert rows == [[expect, expect]] and fields[0].type == T.STRING and fields[0].name == ""
    midnight = values.parse_timestamp("2024-05-01T00:00:30Z")
    _, rows = q(conn, f"SELECT {current}, {previous}", now=midnight)
    assert rows[0][1] == base64.b64encode(hashlib.sha512(b"2024-04-30").digest()).decode()
    conn.execute("CREATE TABLE \"Tb\" (\"K\", \"S\", PRIMARY KEY (\"K\")) WITHOUT ROWID")


def test_timebased_in_filter(conn):
    current = "TO_BASE64(SHA512(FORMAT_TIMESTAMP('%Y-%W', CURRENT_TIMESTAMP(), 'UTC')))"
    week = base64.b64encode(hashlib.sha512(b"2024-18").digest()).decode()
    _, rows = q(conn, f"SELECT SingerId FROM Singers WHERE {current} IN (@w, 'x') AND SingerId < 3 ORDER BY SingerId", {"w": week})
    assert rows == [["1"], ["2"]]


def test_information_schema_primary_key_query(conn):
    sql = ("SELECT INDEX_COLUMNS.COLUMN_NAME FROM INFORMATION_SCHEMA.INDEX_COLUMNS AS INDEX_COLUMNS "
           "INNER JOIN INFORMATION_SCHEMA.INDEXES AS INDEXES ON INDEX_COLUMNS.TABLE_CATALOG = INDEXES.TABLE_CATALOG "
           "AND INDEX_COLUMNS.TABLE_SCHEMA = INDEXES.TABLE_SCHEMA AND INDEX_COLUMNS.TABLE_NAME = INDEXES.TABLE_NAME "
           "AND INDEX_COLUMNS.INDEX_NAME = INDEXES.INDEX_NAME "
           "WHERE INDEX_COLUMNS.TABLE_CATALOG = @catalog AND INDEX_COLUMNS.TABLE_SCHEMA = @schema "
           "AND INDEX_COLUMNS.TABLE_NAME = @table AND INDEXES.INDEX_TYPE = 'PRIMARY_KEY' ORDER BY ORDINAL_POSITION")
    fields, rows = q(conn, sql, {"catalog": "", "schema": "", "table": "Albums"})
    assert rows == [["SingerId"], ["AlbumId"]] and fields[0].name == "COLUMN_NAME"


def test_information_schema_commit_timestamp_column(conn):
    _, rows = q(conn, "SELECT COLUMN_NAME, OPTION_NAME, OPTION_VALUE FROM INFORMATION_SCHEMA.COLUMN_OPTIONS "
                      "WHERE TABLE_NAME = @t AND OPTION_NAME = 'allow_commit_timestamp' AND OPTION_VALUE = 'TRUE'", {"t": "Singers"})
    assert rows == [["LastUpdated", "allow_commit_timestamp", "TRUE"]]
    _, rows = q(conn, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' ORDER BY TABLE_NAME")
    assert rows == [["Albums"], ["Singers"]]


def test_spanner_sys_tables_the_server_lacks_are_unsupported(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT * FROM SPANNER_SYS.LOCK_STATS_TOP_MINUTE")
    assert e.value.code == Code.UNIMPLEMENTED and "SPANNER_SYS.LOCK_STATS_TOP_MINUTE" in e.value.message


def test_spanner_sys_statistics_need_the_rows_of_a_database(conn):
    # A query outside a database's engine has no requests to compute them from.
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT * FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE")
    assert e.value.code == Code.UNIMPLEMENTED and "QUERY_STATS_TOP_MINUTE" in e.value.message


def test_names_are_checked(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT * FROM Foo")
    assert e.value.message == "Table not found: Foo"
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT Bar FROM Singers")
    assert "Unrecognized name: Bar" in e.value.message and e.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT SingerId FROM Singers JOIN Albums USING (SingerId) WHERE Title = 'a' AND SingerId = 1 AND s.x = 1")
    assert e.value.code == Code.INVALID_ARGUMENT


def test_syntax_error_and_unbound_parameter(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELEC 1")
    assert e.value.code == Code.INVALID_ARGUMENT and "Syntax error" in e.value.message
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT @missing")
    assert "No parameter found for binding: missing" in e.value.message


def test_bad_parameter_value(conn):
    with pytest.raises(SpannerError) as e:
        q(conn, "SELECT SingerId FROM Singers WHERE LastUpdated > @p", {"p": "yesterday"}, {"p": T.TIMESTAMP})
    assert e.value.code == Code.INVALID_ARGUMENT and "@p" in e.value.message


def test_translation_is_cached_and_fast(conn):
    st = Statement(POLL, {"prevCommitTimestamp": ts(1), "shard": ["1"], "limit": "5"},
                   {"prevCommitTimestamp": T.TIMESTAMP, "shard": T.array_of(T.INT64), "limit": T.INT64})
    first = translate_cached(st, CATALOG)
    assert translate_cached(st, CATALOG) is first
    start = time.perf_counter()
    for _ in range(1000):
        translate_cached(st, CATALOG)
    assert (time.perf_counter() - start) / 1000 < 0.001  # microseconds in practice; loose bound for CI


def test_poll_over_100k_rows_streams_quickly():
    conn = build()
    base = values.parse_timestamp("2024-01-01T00:00:00Z")
    conn.executemany('INSERT INTO "Singers" ("SingerId","FirstName","LastName","LastUpdated","Processed") VALUES (?,?,?,?,0)',
                     ((i, "f", f"l{i}", values.nanos_to_stored(base + i * 1000)) for i in range(100_000)))
    prev = values.nanos_to_rfc3339(base + 99_000 * 1000 - 1)
    start = time.perf_counter()
    _, rows = poll(conn, prev, limit=1000)
    elapsed = time.perf_counter() - start
    assert len(rows) == 1000 and rows[0][0] == "99000"
    assert elapsed < 5.0, elapsed  # a sanity bound; typically a few milliseconds
    # streaming: the iterator is lazy
    fields, it = execute_query(conn, Statement("SELECT SingerId FROM Singers"), CATALOG, now_nanos=NOW)
    assert next(it) == ["0"]
