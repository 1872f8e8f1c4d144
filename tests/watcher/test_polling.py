"""The poll query builders (exact SQL text, parameters, types) and one poll's execution."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds as DT
from google.cloud.spanner_v1 import param_types

from tests.watcher.core_support import C_DDL, insert
from watcher import FixedShardProvider, Interval, NotNullShardProvider, TimebasedShardProvider
from watcher.capture.polling import (
    MAX_KEY_COLUMNS,
    WITH_QUERY_MAX_LIMIT,
    WITH_QUERY_MAX_SHARDS,
    continuation_query,
    key_after_condition,
    key_at_or_before_condition,
    key_join_condition,
    key_sort_key,
    null_safe_equals,
    run_poll,
    simple_query,
    with_query,
    with_query_eligible,
)
from watcher.capture.table_info import TableInfo, discover
from watcher.errors import InvalidIdentifierError
from watcher.model import MIN_TIMESTAMP, Checkpoint, TableId

TS = DT(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.UTC)
ONE = TableInfo(TableId("T"), "Ts", ("Id",), {"Id": "INT64", "Name": "STRING(MAX)", "Ts": "TIMESTAMP"})
TWO = TableInfo(TableId("C"), "Ts", ("A", "B"), {"A": "INT64", "B": "STRING(MAX)", "V": "INT64", "Ts": "TIMESTAMP"})
HINT = "@{FORCE_INDEX=Idx_T_Ts}"


# --- simple ------------------------------------------------------------------------------------------

def test_simple_query_text_params_and_types():
    q = simple_query(ONE, "", limit=10, since=TS)
    assert q.sql == "SELECT * FROM `T` WHERE `Ts` > @prevCommitTimestamp ORDER BY `Ts`, `Id` LIMIT @limit"
    assert q.params == {"prevCommitTimestamp": TS, "limit": 10}
    assert q.types == {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64}
    assert not q.continuation


def test_simple_query_orders_by_timestamp_then_every_key_column():
    q = simple_query(TWO, "", limit=5, since=TS)
    assert q.sql == "SELECT * FROM `C` WHERE `Ts` > @prevCommitTimestamp ORDER BY `Ts`, `A`, `B` LIMIT @limit"


def test_hint_goes_right_after_the_table_name():
    q = simple_query(ONE, HINT, limit=10, since=TS)
    assert q.sql == ("SELECT * FROM `T`@{FORCE_INDEX=Idx_T_Ts} WHERE `Ts` > @prevCommitTimestamp "
                     "ORDER BY `Ts`, `Id` LIMIT @limit")


@pytest.mark.parametrize("provider, expected_filter, params, types", [
    (FixedShardProvider("ShardId", 3), " AND `ShardId` = @shard", {"shard": 3}, {"shard": param_types.INT64}),
    (FixedShardProvider("ShardId", "eu"), " AND `ShardId` = @shard", {"shard": "eu"}, {"shard": param_types.STRING}),
    (FixedShardProvider("ShardId", [1, 2, 3]), " AND `ShardId` IS NOT NULL AND `ShardId` IN UNNEST(@shard)",
     {"shard": [1, 2, 3]}, {"shard": param_types.Array(param_types.INT64)}),
    (FixedShardProvider("ShardId", range(-1, 2)), " AND `ShardId` IS NOT NULL AND `ShardId` IN UNNEST(@shard)",
     {"shard": [-1, 0, 1]}, {"shard": param_types.Array(param_types.INT64)}),
    (NotNullShardProvider("ShardId"), " AND `ShardId` IS NOT NULL", {}, {}),
])
def test_every_fixed_and_not_null_filter_in_the_simple_query(provider, expected_filter, params, types):
    q = simple_query(ONE, HINT, limit=7, shard=provider.shard_filter(), since=TS)
    assert q.sql == (f"SELECT * FROM `T`{HINT} WHERE `Ts` > @prevCommitTimestamp{expected_filter} "
                     "ORDER BY `Ts`, `Id` LIMIT @limit")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 7, **params}
    assert q.types == {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, **types}


@pytest.mark.parametrize("interval", list(Interval))
def test_timebased_filter_in_the_simple_query(interval):
    provider = TimebasedShardProvider("ShardId", interval)
    fmt = interval.spec.spanner_format
    seconds = interval.spec.previous_seconds
    q = simple_query(ONE, "", limit=10, shard=provider.shard_filter(), since=TS)
    assert q.sql == (
        "SELECT * FROM `T` WHERE `Ts` > @prevCommitTimestamp AND `ShardId` IN ("
        f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', CURRENT_TIMESTAMP(), 'UTC'))), "
        f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL {seconds} SECOND), 'UTC')))"
        ") ORDER BY `Ts`, `Id` LIMIT @limit")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 10}


def test_identifiers_are_validated_so_names_cannot_inject_sql():
    bad = TableInfo(TableId("T`; DROP TABLE T; --"), "Ts", ("Id",), {})
    with pytest.raises(InvalidIdentifierError):
        simple_query(bad, "", limit=1, since=TS)
    with pytest.raises(InvalidIdentifierError):
        simple_query(TableInfo(TableId("T"), "Ts` OR TRUE --", ("Id",), {}), "", limit=1, since=TS)
    with pytest.raises(InvalidIdentifierError):
        FixedShardProvider("S`x", 1)


def test_a_table_in_a_named_schema_is_quoted_part_by_part():
    info = TableInfo(TableId("T", schema="sch"), "Ts", ("Id",), {"Id": "INT64", "Ts": "TIMESTAMP"})
    assert simple_query(info, "", limit=1, since=TS).sql.startswith("SELECT * FROM `sch`.`T` WHERE")


# --- continuation inside a commit-timestamp group ----------------------------------------------------------

def test_continuation_single_key():
    q = continuation_query(ONE, "", limit=10, since=Checkpoint(TS, (41,)))
    assert q.sql == ("SELECT * FROM `T` WHERE `Ts` = @prevCommitTimestamp AND ((`Id` > @k0)) "
                     "ORDER BY `Id` LIMIT @limit")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 10, "k0": 41}
    assert q.types == {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, "k0": param_types.INT64}
    assert q.continuation


def test_continuation_composite_key_with_hint_and_shard_filter():
    shard = FixedShardProvider("S", [1, 2]).shard_filter()
    q = continuation_query(TWO, HINT, limit=3, since=Checkpoint(TS, (1, "b")), shard=shard)
    assert q.sql == (f"SELECT * FROM `C`{HINT} WHERE `Ts` = @prevCommitTimestamp AND "
                     "((`A` > @k0) OR (`A` = @k0 AND `B` > @k1)) AND `S` IS NOT NULL AND `S` IN UNNEST(@shard) "
                     "ORDER BY `A`, `B` LIMIT @limit")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 3, "k0": 1, "k1": "b", "shard": [1, 2]}
    assert q.types["k0"] == param_types.INT64 and q.types["k1"] == param_types.STRING
    assert q.types["shard"] == param_types.Array(param_types.INT64)


@pytest.mark.parametrize("key, condition, params", [
    ((1, None), "(`A` > @k0) OR (`A` = @k0 AND `B` IS NOT NULL)", {"k0": 1}),
    ((None, "x"), "(`A` IS NOT NULL) OR (`A` IS NULL AND `B` > @k1)", {"k1": "x"}),
    ((None, None), "(`A` IS NOT NULL) OR (`A` IS NULL AND `B` IS NOT NULL)", {}),
    ((5, "x"), "(`A` > @k0) OR (`A` = @k0 AND `B` > @k1)", {"k0": 5, "k1": "x"}),
])
def test_key_after_condition_with_null_key_parts(key, condition, params):
    sql, p, t = key_after_condition(["A", "B"], key, [param_types.INT64, param_types.STRING])
    assert sql == condition
    assert p == params
    assert set(t) == set(params)


def test_key_after_condition_three_parts_and_a_custom_prefix():
    sql, p, _ = key_after_condition(["A", "B", "C"], [1, 2, 3], [param_types.INT64] * 3, prefix="p")
    assert sql == "(`A` > @p0) OR (`A` = @p0 AND `B` > @p1) OR (`A` = @p0 AND `B` = @p1 AND `C` > @p2)"
    assert p == {"p0": 1, "p1": 2, "p2": 3}


def test_key_after_condition_of_an_empty_key_is_false():
    assert key_after_condition([], [], [])[0] == "FALSE"


def test_key_after_condition_needs_one_part_per_column():
    with pytest.raises(ValueError, match="a key of 1 parts for 2 key columns"):
        key_after_condition(["A", "B"], [1], [param_types.INT64] * 2)


def _sqlite_after(columns, key, rows):
    """The rows ``key_after_condition`` selects, evaluated by SQLite: its three-valued logic for
    ``=``, ``>`` and ``IS NULL`` is GoogleSQL's, and it accepts the same `quoted` names and @params."""
    sql, params, _ = key_after_condition(columns, key, [None] * len(columns))
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE R ({', '.join(f'`{c}`' for c in columns)})")
    conn.executemany(f"INSERT INTO R VALUES ({', '.join('?' * len(columns))})", rows)
    return set(conn.execute(f"SELECT * FROM R WHERE {sql}", params).fetchall())


@pytest.mark.parametrize("seed", range(12))
def test_key_after_condition_is_lexicographic_with_null_first_for_up_to_16_columns(seed):
    rng = random.Random(seed)
    width = rng.choice([1, 2, 3, 4, MAX_KEY_COLUMNS]) if seed else MAX_KEY_COLUMNS
    columns = [f"K{i}" for i in range(width)]
    # Few distinct values per part, so many keys share prefixes and NULLs mix at every depth.
    domain = [None, -1, 0, 7] if seed % 2 else [None, "", "a", "b"]
    rows = {tuple(rng.choice(domain) for _ in columns) for _ in range(300)}
    ordered = sorted(rows, key=key_sort_key)
    for key in rng.sample(ordered, min(25, len(ordered))):
        expected = {r for r in ordered if key_sort_key(r) > key_sort_key(key)}
        assert _sqlite_after(columns, key, list(rows)) == expected, key


def _sqlite_at_or_before(columns, key, rows):
    sql, params, _ = key_at_or_before_condition(columns, key, [None] * len(columns))
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE R ({', '.join(f'`{c}`' for c in columns)})")
    conn.executemany(f"INSERT INTO R VALUES ({', '.join('?' * len(columns))})", rows)
    return set(conn.execute(f"SELECT * FROM R WHERE {sql}", params).fetchall())


@pytest.mark.parametrize("seed", range(8))
def test_key_at_or_before_condition_is_the_complement_of_key_after(seed):
    rng = random.Random(seed)
    width = rng.choice([1, 2, 3, MAX_KEY_COLUMNS])
    columns = [f"K{i}" for i in range(width)]
    domain = [None, -1, 0, 7] if seed % 2 else [None, "", "a", "b"]
    rows = {tuple(rng.choice(domain) for _ in columns) for _ in range(300)}
    ordered = sorted(rows, key=key_sort_key)
    for key in rng.sample(ordered, min(25, len(ordered))):
        expected = {r for r in ordered if key_sort_key(r) <= key_sort_key(key)}
        assert _sqlite_at_or_before(columns, key, list(rows)) == expected, key


def test_bounded_queries_name_their_upper_position():
    q = simple_query(TWO, "", limit=5, since=TS, until=Checkpoint(TS, (1, None)), columns=["Ts", "A", "B"])
    assert q.sql == ("SELECT `Ts`, `A`, `B` FROM `C` WHERE `Ts` > @prevCommitTimestamp AND (`Ts` < @untilTimestamp "
                     "OR (`Ts` = @untilTimestamp AND (((`A` < @u0 OR `A` IS NULL)) OR (`A` = @u0 AND `B` IS NULL)))) "
                     "ORDER BY `Ts`, `A`, `B` LIMIT @limit")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 5, "untilTimestamp": TS, "u0": 1}
    c = continuation_query(TWO, "", limit=5, since=Checkpoint(TS, (1, "a")), until=Checkpoint(TS))
    assert "AND `Ts` <= @untilTimestamp ORDER BY `A`, `B`" in c.sql


def test_key_sort_key_orders_null_first_at_every_position():
    keys = [(1, "b"), (None, None), (1, None), (None, "a"), (0, "a")]
    assert sorted(keys, key=key_sort_key) == [(None, None), (None, "a"), (0, "a"), (1, None), (1, "b")]


def test_null_safe_join_matches_null_parts_and_nothing_else():
    assert key_join_condition(["A", "B"], "x", "y") == (
        "(x.`A` = y.`A` OR (x.`A` IS NULL AND y.`A` IS NULL)) AND (x.`B` = y.`B` OR (x.`B` IS NULL AND y.`B` IS NULL))")
    conn = sqlite3.connect(":memory:")
    cases = [(None, None, 1), (None, 1, 0), (1, None, 0), (1, 1, 1), (1, 2, 0)]
    for left, right, equal in cases:
        (got,) = conn.execute(f"SELECT CASE WHEN {null_safe_equals('?1', '?2')} THEN 1 ELSE 0 END", (left, right)).fetchone()
        assert got == equal, (left, right)


# --- WITH -----------------------------------------------------------------------------------------------------

def test_with_query_text_joins_composite_keys_with_and():
    provider = FixedShardProvider("S", [1, 2])
    q = with_query(TWO, HINT, limit=50, provider=provider, since=TS)
    cte = ("SELECT `A`, `B`, `Ts` FROM `C`@{FORCE_INDEX=Idx_T_Ts} WHERE `Ts` > @prevCommitTimestamp AND `S` = @shard%d "
           "ORDER BY `Ts`, `A`, `B` LIMIT @limit")
    assert q.sql == (f"WITH shard0 AS ({cte % 0}), shard1 AS ({cte % 1}), "
                     "changed AS (SELECT * FROM shard0 UNION ALL SELECT * FROM shard1 ORDER BY `Ts`, `A`, `B` LIMIT @limit) "
                     "SELECT t.* FROM changed AS c JOIN `C` AS t ON "
                     "(t.`A` = c.`A` OR (t.`A` IS NULL AND c.`A` IS NULL)) AND (t.`B` = c.`B` OR (t.`B` IS NULL AND c.`B` IS NULL)) "
                     "ORDER BY c.`Ts`, c.`A`, c.`B`")
    assert q.params == {"prevCommitTimestamp": TS, "limit": 50, "shard0": 1, "shard1": 2}
    assert q.types == {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64,
                       "shard0": param_types.INT64, "shard1": param_types.INT64}
    assert not q.continuation


def test_with_query_single_key_has_one_join_condition():
    q = with_query(ONE, "", limit=5, provider=FixedShardProvider("S", ["a"]), since=TS)
    assert " ON (t.`Id` = c.`Id` OR (t.`Id` IS NULL AND c.`Id` IS NULL)) ORDER BY c.`Ts`, c.`Id`" in q.sql
    assert ") AND (t." not in q.sql
    assert q.types["shard0"] == param_types.STRING


@pytest.mark.parametrize("provider, limit, eligible", [
    (FixedShardProvider("S", list(range(WITH_QUERY_MAX_SHARDS))), WITH_QUERY_MAX_LIMIT, True),
    (FixedShardProvider("S", [1]), 10, True),
    (FixedShardProvider("S", list(range(WITH_QUERY_MAX_SHARDS + 1))), 10, False),
    (FixedShardProvider("S", [1, 2]), WITH_QUERY_MAX_LIMIT + 1, False),
    (FixedShardProvider("S", 1), 10, False),
    (NotNullShardProvider("S"), 10, False),
    (TimebasedShardProvider("S", Interval.DAY), 10, False),
    (None, 10, False),
])
def test_with_query_eligibility(provider, limit, eligible):
    assert with_query_eligible(provider, limit) is eligible


# --- execution against the database -----------------------------------------------------------------------

@pytest.fixture
def c_db(make_database):
    return make_database([C_DDL, "CREATE TABLE Other (A INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (A)"])


def _keys(result):
    return [c.keys for c in result.changes]


def test_run_poll_orders_by_timestamp_then_key_and_reports_full(c_db):
    t1 = insert(c_db, "C", ("A", "B", "V"), [(2, "b", 1), (1, None, 1), (1, "a", 1)])
    t2 = insert(c_db, "C", ("A", "B", "V"), [(0, "z", 2)])
    info = discover(c_db, "C")
    res = run_poll(c_db, info, simple_query(info, "", limit=10, since=MIN_TIMESTAMP), limit=10, shard_value=7)
    assert _keys(res) == [(1, None), (1, "a"), (2, "b"), (0, "z")]
    assert [c.commit_timestamp for c in res.changes] == [t1, t1, t1, t2]
    assert res.changes[0].row == {"A": 1, "B": None, "V": 1, "Ts": t1}
    assert all(c.shard == 7 and c.table == "C" for c in res.changes)
    assert res.read_timestamp is not None and res.read_timestamp >= t2
    assert not res.full
    full = run_poll(c_db, info, simple_query(info, "", limit=2, since=MIN_TIMESTAMP), limit=2)
    assert _keys(full) == [(1, None), (1, "a")] and full.full


def test_continuation_executes_exactly_the_rest_of_the_group_with_null_key_parts(c_db):
    ts = insert(c_db, "C", ("A", "B", "V"), [(1, None, 0), (1, "a", 0), (1, "b", 0), (2, None, 0), (2, "a", 0)])
    insert(c_db, "C", ("A", "B", "V"), [(0, "later", 0)])
    info = discover(c_db, "C")
    group = [(1, None), (1, "a"), (1, "b"), (2, None), (2, "a")]
    for i, key in enumerate(group):
        q = continuation_query(info, "", limit=100, since=Checkpoint(ts, key))
        assert _keys(run_poll(c_db, info, q, limit=100)) == group[i + 1:], key


def test_bounded_reads_return_exactly_the_rows_between_two_positions(c_db):
    t1 = insert(c_db, "C", ("A", "B", "V"), [(1, None, 0), (1, "a", 0), (1, "b", 0), (2, None, 0)])
    t2 = insert(c_db, "C", ("A", "B", "V"), [(0, "x", 0), (3, None, 0)])
    insert(c_db, "C", ("A", "B", "V"), [(9, "later", 0)])
    info = discover(c_db, "C")
    # From inside t1's group (after (1, None)) to inside t2's (up to (0, "x")): the streaming source's micro-batch.
    since, until = Checkpoint(t1, (1, None)), Checkpoint(t2, (0, "x"))
    rest = run_poll(c_db, info, continuation_query(info, "", limit=10, since=since, until=until), limit=10)
    later = run_poll(c_db, info, simple_query(info, "", limit=10, since=t1, until=until), limit=10)
    assert _keys(rest) + _keys(later) == [(1, "a"), (1, "b"), (2, None), (0, "x")]
    everything_to_t2 = run_poll(c_db, info, simple_query(info, "", limit=10, since=MIN_TIMESTAMP, until=Checkpoint(t2)), limit=10)
    assert _keys(everything_to_t2) == [(1, None), (1, "a"), (1, "b"), (2, None), (0, "x"), (3, None)]
    before_null = run_poll(c_db, info, simple_query(info, "", limit=10, since=MIN_TIMESTAMP, until=Checkpoint(t1, (2, None))),
                           limit=10)
    assert _keys(before_null) == [(1, None), (1, "a"), (1, "b"), (2, None)]


def test_with_query_executes_and_joins_composite_keys_correctly(make_database):
    db = make_database([
        "CREATE TABLE W (A INT64 NOT NULL, B INT64 NOT NULL, S INT64, V STRING(MAX), "
        "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (A, B)",
    ])
    # (1, 2) and (2, 1) share key parts crosswise: a join without AND would pair them up wrongly.
    t1 = insert(db, "W", ("A", "B", "S", "V"), [(1, 2, 0, "x"), (2, 1, 1, "y"), (3, 3, 5, "other shard")])
    t2 = insert(db, "W", ("A", "B", "S", "V"), [(1, 1, 1, "z")])
    info = discover(db, "W")
    provider = FixedShardProvider("S", [0, 1])
    res = run_poll(db, info, with_query(info, "", limit=10, provider=provider, since=MIN_TIMESTAMP), limit=10)
    assert [(c.keys, c.row["V"], c.commit_timestamp) for c in res.changes] == [
        ((1, 2), "x", t1), ((2, 1), "y", t1), ((1, 1), "z", t2)]
    # The WITH query returns what the simple query with the same shards returns.
    simple = run_poll(db, info, simple_query(info, "", limit=10, shard=provider.shard_filter(), since=MIN_TIMESTAMP), limit=10)
    assert [c.row for c in simple.changes] == [c.row for c in res.changes]
    limited = run_poll(db, info, with_query(info, "", limit=2, provider=provider, since=MIN_TIMESTAMP), limit=2)
    assert _keys(limited) == [(1, 2), (2, 1)] and limited.full


def test_run_poll_of_nothing(c_db):
    info = discover(c_db, "C")
    res = run_poll(c_db, info, simple_query(info, "", limit=10, since=MIN_TIMESTAMP), limit=10)
    assert res.changes == [] and not res.full and res.read_timestamp is not None
