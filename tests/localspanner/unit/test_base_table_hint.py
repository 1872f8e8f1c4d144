"""``FORCE_INDEX=_BASE_TABLE`` reads the base table, as on Spanner, even where SQLite would pick a secondary index."""

from __future__ import annotations

import json

import pytest

from tests.localspanner.unit.sql_fixtures import CATALOG, build
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.schema.catalog import Catalog, Column, KeyPart, Table
from watcher.localspanner.sql.translator import translate_query

POLL = ("SELECT SingerId FROM Singers@{{FORCE_INDEX={index}}} WHERE LastUpdated > @ts AND ShardId IS NOT NULL "
        "AND ShardId IN UNNEST(@shard) ORDER BY LastUpdated, SingerId")
TYPES = {"ts": T.TIMESTAMP, "shard": T.array_of(T.INT64)}


def plan(conn, sql):
    return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, {"ts": 0, "shard": json.dumps([1, 2])}))


@pytest.mark.parametrize("index, uses_index", [("_BASE_TABLE", False), ("_base_table", False),
                                               ("Idx_Singers_ShardId_LastUpdated", True)])
def test_poll_plan_follows_the_hint(index, uses_index):
    conn = build()
    sql = translate_query(POLL.format(index=index), CATALOG, TYPES).sql
    assert ("Idx_Singers_ShardId_LastUpdated" in plan(conn, sql)) == uses_index
    assert conn.execute(sql, {"ts": 0, "shard": "[1, 2]"}).fetchall() == []     # and it runs


def test_key_lookups_still_use_the_key():
    conn = build()
    sql = translate_query("SELECT FirstName FROM Singers@{FORCE_INDEX=_BASE_TABLE} WHERE SingerId = 5", CATALOG).sql
    # Singers is keyed by one NOT NULL INT64 column: a rowid table, its key the rowid.
    assert "INTEGER PRIMARY KEY (rowid=?)" in plan(conn, sql)


@pytest.mark.parametrize("key, key_type, expected", [
    ((KeyPart("K"),), T.STRING, 'INDEXED BY "sqlite_autoindex_T_1"'),
    ((KeyPart("K", descending=True),), T.INT64, 'INDEXED BY "sqlite_autoindex_T_1"'),
    ((KeyPart("K"),), T.INT64, "NOT INDEXED"),  # a rowid table: NOT INDEXED reads the rowid b-tree
    ((), T.INT64, "NOT INDEXED"),
])
def test_hint_for_each_storage_layout(key, key_type, expected):
    table = Table("T", (Column("K", key_type, not_null=True), Column("V", T.STRING)), key)
    sql = translate_query("SELECT V FROM T@{FORCE_INDEX=_BASE_TABLE}", Catalog(tables=(table,))).sql
    assert expected in sql


def test_hint_for_a_nullable_key():
    table = Table("T", (Column("K", T.INT64), Column("V", T.STRING)), (KeyPart("K"),))
    sql = translate_query("SELECT V FROM T@{FORCE_INDEX=_BASE_TABLE}", Catalog(tables=(table,))).sql
    assert 'INDEXED BY "_ls_pk_T"' in sql
