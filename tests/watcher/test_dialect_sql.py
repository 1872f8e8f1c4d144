"""Every SQL text the polling watcher sends, as a pure function, in both dialects; then each one run
against a database of its dialect through the official client, so a text the server refuses fails here.
"""

from __future__ import annotations

import datetime as dt

import pytest
from google.cloud.spanner_v1 import param_types

from tests.watcher.dialect_support import DIALECT_NAMES, GOOGLE, POSTGRES, database_maker
from watcher import Checkpoint, FixedShardProvider, Interval, NotNullShardProvider, TableId, TimebasedShardProvider
from watcher.capture.polling import continuation_query, simple_query, with_query
from watcher.capture.shards import ShardFilter, ShardProvider, shard_filter_for
from watcher.capture.table_info import TableInfo
from watcher.checkpoints.java_table import create_table_ddl
from watcher.dialects import GOOGLE_SQL, POSTGRESQL, dialect_of
from watcher.dialects.checkpoints import add_column_sql, checkpoint_name, oldest_sql, text_rows_sql
from watcher.dialects.hints import table_hint
from watcher.dialects.schema import (
    columns_query,
    commit_timestamp_columns_query,
    key_query,
    tables_query,
    watchable_tables_query,
)
from watcher.dialects.types import google_type, postgresql_type
from watcher.errors import ConfigurationError

D = {GOOGLE: GOOGLE_SQL, POSTGRES: POSTGRESQL}
TS = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _info(dialect):
    return TableInfo(TableId("C"), "Ts", ("A", "B"), {"A": "INT64", "B": "STRING(MAX)", "V": "INT64", "Ts": "TIMESTAMP"},
                     dialect=dialect)


# === the texts ===================================================================================

def test_the_simple_poll_in_both_dialects():
    shard = FixedShardProvider("S", [1, 2])
    google = simple_query(_info(GOOGLE_SQL), "@{FORCE_INDEX=Idx}", limit=7, since=TS, shard=shard.shard_filter(GOOGLE_SQL))
    assert google.sql == ("SELECT * FROM `C`@{FORCE_INDEX=Idx} WHERE `Ts` > @prevCommitTimestamp AND `S` IS NOT NULL "
                          "AND `S` IN UNNEST(@shard) ORDER BY `Ts`, `A`, `B` LIMIT @limit")
    assert google.params == {"prevCommitTimestamp": TS, "limit": 7, "shard": [1, 2]}
    pg = simple_query(_info(POSTGRESQL), "@{FORCE_INDEX=Idx}", limit=7, since=TS, shard=shard.shard_filter(POSTGRESQL))
    assert pg.sql == ('SELECT * FROM "C" /*@ FORCE_INDEX=Idx */ WHERE "Ts" > $1 AND "S" IS NOT NULL AND "S" = ANY($2) '
                      'ORDER BY "Ts" NULLS FIRST, "A" NULLS FIRST, "B" NULLS FIRST LIMIT $3')
    assert pg.params == {"p1": TS, "p2": [1, 2], "p3": 7}
    assert pg.types == {"p1": param_types.TIMESTAMP, "p2": param_types.Array(param_types.INT64), "p3": param_types.INT64}


def test_the_continuation_in_a_group_binds_no_null_key_part_in_either_dialect():
    since = Checkpoint(TS, (1, None))
    google = continuation_query(_info(GOOGLE_SQL), "", limit=3, since=since)
    assert google.sql == ("SELECT * FROM `C` WHERE `Ts` = @prevCommitTimestamp AND ((`A` > @k0) OR (`A` = @k0 AND `B` IS NOT NULL)) "
                          "ORDER BY `A`, `B` LIMIT @limit")
    pg = continuation_query(_info(POSTGRESQL), "", limit=3, since=since)
    assert pg.sql == ('SELECT * FROM "C" WHERE "Ts" = $1 AND (("A" > $2) OR ("A" = $2 AND "B" IS NOT NULL)) '
                      'ORDER BY "A" NULLS FIRST, "B" NULLS FIRST LIMIT $3')
    assert pg.params == {"p1": TS, "p2": 1, "p3": 3} and pg.continuation


def test_the_with_query_in_both_dialects_joins_back_on_the_full_key():
    provider = FixedShardProvider("S", [4, 5])
    pg = with_query(_info(POSTGRESQL), "", limit=9, provider=provider, since=TS)
    assert pg.sql.startswith('WITH shard0 AS (SELECT "A", "B", "Ts" FROM "C" WHERE "Ts" > $1 AND "S" = $2 ORDER BY')
    assert 'JOIN "C" AS t ON (t."A" = c."A" OR (t."A" IS NULL AND c."A" IS NULL))' in pg.sql
    assert pg.sql.endswith('ORDER BY c."Ts" NULLS FIRST, c."A" NULLS FIRST, c."B" NULLS FIRST')
    assert pg.params == {"p1": TS, "p2": 4, "p3": 9, "p4": 5}
    google = with_query(_info(GOOGLE_SQL), "", limit=9, provider=provider, since=TS)
    assert "`S` = @shard1" in google.sql and google.sql.endswith("ORDER BY c.`Ts`, c.`A`, c.`B`")


@pytest.mark.parametrize("function", [columns_query, key_query, commit_timestamp_columns_query])
def test_schema_queries_name_the_default_schema_of_each_dialect(function):
    google = function(GOOGLE_SQL, TableId("T"))
    assert "@schema" in google.sql and "@table" in google.sql and google.params["schema"] == ""
    pg = function(POSTGRESQL, TableId("t"))
    assert "@" not in pg.sql and "information_schema" in pg.sql and "INFORMATION_SCHEMA" not in pg.sql
    assert pg.params == {"p1": "public", "p2": "t"}


def test_the_commit_timestamp_mark_is_an_option_in_google_sql_and_a_type_in_postgresql():
    assert "OPTION_NAME = 'allow_commit_timestamp'" in watchable_tables_query(GOOGLE_SQL).sql
    assert "spanner_type = 'spanner.commit_timestamp'" in watchable_tables_query(POSTGRESQL).sql
    assert "spanner.commit_timestamp" in commit_timestamp_columns_query(POSTGRESQL, TableId("t")).sql


@pytest.mark.parametrize("given", ["@{FORCE_INDEX=Idx_S}", "/*@ FORCE_INDEX=Idx_S */", " @{ FORCE_INDEX = Idx_S } "])
def test_a_hint_in_either_form_is_written_in_the_database_form(given):
    assert table_hint(GOOGLE_SQL, given) == "@{FORCE_INDEX=Idx_S}"
    assert table_hint(POSTGRESQL, given) == "/*@ FORCE_INDEX=Idx_S */"


@pytest.mark.parametrize("bad", ["FORCE_INDEX=I", "@{FORCE_INDEX=I; DROP}", "/* FORCE_INDEX=I */", "@{}"])
def test_a_hint_in_neither_form_is_refused_naming_it(bad):
    with pytest.raises(ConfigurationError, match="table_hint must look like"):
        table_hint(POSTGRESQL, bad)


def test_postgresql_types_read_as_google_sql_names_and_back():
    assert [google_type(t) for t in ("bigint", "character varying(20)", "timestamp with time zone",
                                     "spanner.commit_timestamp", "bytea", "jsonb", "double precision[]", "numeric")] == [
        "INT64", "STRING(20)", "TIMESTAMP", "TIMESTAMP", "BYTES(MAX)", "JSON", "ARRAY<FLOAT64>", "NUMERIC"]
    assert [postgresql_type(t) for t in ("INT64", "STRING(MAX)", "TIMESTAMP", "BOOL", "FLOAT64", "DATE", "BYTES(MAX)")] == [
        "bigint", "varchar", "timestamptz", "boolean", "double precision", "date", "bytea"]


def test_the_checkpoint_table_statements_in_both_dialects():
    google = create_table_ddl()
    assert google.startswith("CREATE TABLE `LAST_SEEN_COMMIT_TIMESTAMPS` (") and google.endswith(
        "PRIMARY KEY (`DATABASE_NAME`, `TABLE_CATALOG`, `TABLE_SCHEMA`, `TABLE_NAME`, `SHARD_ID_BOOL`, `SHARD_ID_BYTES`, "
        "`SHARD_ID_DATE`, `SHARD_ID_FLOAT64`, `SHARD_ID_INT64`, `SHARD_ID_STRING`, `SHARD_ID_TIMESTAMP`)")
    pg = create_table_ddl(dialect=POSTGRESQL)
    assert '"last_seen_commit_timestamp" timestamptz NOT NULL,' in pg and '"shard_id_int64" bigint,' in pg
    assert pg.endswith('"shard_id_string", "shard_id_timestamp")\n)') and "`" not in pg
    assert add_column_sql(GOOGLE_SQL, "CP", "LAST_SEEN_POSITION", "STRING(MAX)") == \
        "ALTER TABLE `CP` ADD COLUMN `LAST_SEEN_POSITION` STRING(MAX)"
    assert oldest_sql(POSTGRESQL, "CP", "db", "", "", "T").params == {"p1": "db", "p2": "", "p3": "", "p4": "T"}
    rows = text_rows_sql(POSTGRESQL, "CP", "SHARD_ID_STRING", ["SHARD_ID_INT64"], ["SHARD_ID_STRING"], "db", "", "", "T")
    assert rows.sql.endswith('"shard_id_string" IS NOT NULL AND "shard_id_int64" IS NULL')
    assert checkpoint_name(GOOGLE_SQL, "TABLE_NAME") == "TABLE_NAME"


def test_shard_providers_write_each_dialect_and_an_old_style_provider_serves_google_sql_only():
    assert NotNullShardProvider("S").shard_filter(POSTGRESQL).sql == ' AND "S" IS NOT NULL'
    assert FixedShardProvider("S", 3).shard_filter(POSTGRESQL).sql == ' AND "S" = @shard'
    now = dt.datetime(2024, 3, 6, 0, 0, 30, tzinfo=dt.UTC)
    timed = TimebasedShardProvider("S", clock=lambda: now).shard_filter(POSTGRESQL)
    assert timed.sql == ' AND "S" IS NOT NULL AND "S" = ANY(@shard)'
    assert timed.params == {"shard": [Interval.DAY.shard_id(now), Interval.DAY.shard_id(now - dt.timedelta(days=1))]}
    assert timed.types == {"shard": param_types.Array(param_types.STRING)}

    class OldStyle(ShardProvider):
        def shard_filter(self) -> ShardFilter:  # type: ignore[override]
            return ShardFilter(" AND `S` = 1")

    assert shard_filter_for(OldStyle(), GOOGLE_SQL).sql == " AND `S` = 1"
    with pytest.raises(ConfigurationError, match="writes GoogleSQL only"):
        shard_filter_for(OldStyle(), POSTGRESQL)


# === the texts against databases of each dialect ===================================================

@pytest.fixture(params=DIALECT_NAMES)
def dialect(request):
    return request.param


def _run(db, statement):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types)]


def test_each_schema_query_runs_and_answers_in_its_dialect(make_database, dialect):
    db = database_maker(make_database, dialect)("C", "NOTS")
    d = D[dialect]
    assert dialect_of(db) is d
    assert [r[0] for r in _run(db, columns_query(d, TableId("C")))] == ["A", "B", "V", "Ts"]
    assert _run(db, key_query(d, TableId("C"))) == [["A"], ["B"]]
    assert _run(db, commit_timestamp_columns_query(d, TableId("C"))) == [["Ts"]]
    assert _run(db, commit_timestamp_columns_query(d, TableId("NoTs"))) == []
    assert _run(db, watchable_tables_query(d)) == [["C"]]
    assert sorted(r[0] for r in _run(db, tables_query(d))) == ["C", "NoTs"]


def test_each_poll_query_runs_in_its_dialect(make_database, dialect):
    db = database_maker(make_database, dialect)("C")
    info = _info(D[dialect])
    since = Checkpoint(TS, (1, None))
    provider = FixedShardProvider("V", [1, 2])
    for query in (simple_query(info, "", limit=5, since=TS, shard=provider.shard_filter(D[dialect])),
                  continuation_query(info, "", limit=5, since=since), with_query(info, "", limit=5, provider=provider, since=TS)):
        assert _run(db, query) == []
