"""Shard providers, the time-based shard ids (checked against the database) and split_shards."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib

import pytest
from freezegun import freeze_time
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import param_types

from watcher import ConfigurationError, FixedShardProvider, Interval, NotNullShardProvider, ShardIdCache, TimebasedShardProvider
from watcher.capture.shards import fetch_from_database, param_type_of, split_shards
from watcher.dialects import POSTGRESQL

UTC = dt.UTC


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha512(text.encode()).digest()).decode()


# --- fixed and not-null ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, spanner_type", [
    (True, param_types.BOOL), (7, param_types.INT64), (1.5, param_types.FLOAT64), ("eu", param_types.STRING),
    (b"\x00\x01", param_types.BYTES), (dt.date(2024, 1, 2), param_types.DATE),
    (dt.datetime(2024, 1, 2, tzinfo=UTC), param_types.TIMESTAMP), (decimal.Decimal("1.25"), param_types.NUMERIC),
])
def test_fixed_scalar_filter_and_type_for_every_value_type(value, spanner_type):
    p = FixedShardProvider("Shard", value)
    f = p.shard_filter()
    assert f.sql == " AND `Shard` = @shard"
    assert f.params == {"shard": value}
    assert f.types == {"shard": spanner_type}
    assert p.shard_value == value and not p.is_array


@pytest.mark.parametrize("values, expected", [
    ([1, 2], [1, 2]), ((3, 4), [3, 4]), (range(-2, 1), [-2, -1, 0]), (["a"], ["a"]),
])
def test_fixed_array_filter(values, expected):
    p = FixedShardProvider("Shard", values)
    f = p.shard_filter()
    assert f.sql == " AND `Shard` IS NOT NULL AND `Shard` IN UNNEST(@shard)"
    assert f.params == {"shard": expected}
    assert f.types == {"shard": param_types.Array(param_type_of(expected[0]))}
    assert p.shard_value == expected and p.is_array


def test_fixed_explicit_value_type():
    p = FixedShardProvider("Shard", [1, 2], value_type=param_types.NUMERIC)
    assert p.shard_filter().types == {"shard": param_types.Array(param_types.NUMERIC)}


@pytest.mark.parametrize("values", [[], None, [1, None]])
def test_fixed_rejects_empty_and_null(values):
    with pytest.raises(ConfigurationError, match="Shard"):
        FixedShardProvider("Shard", values)


def test_unsupported_shard_value_type():
    with pytest.raises(ConfigurationError, match="unsupported shard value"):
        FixedShardProvider("Shard", object())


def test_not_null_provider():
    p = NotNullShardProvider("ShardId")
    assert p.shard_filter().sql == " AND `ShardId` IS NOT NULL"
    assert p.shard_filter().params == {} and p.shard_value is None


# --- time-based ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("interval", list(Interval))
def test_timebased_filter_is_in_current_and_previous(interval):
    p = TimebasedShardProvider("ShardId", interval)
    fmt = interval.spec.spanner_format
    assert p.shard_filter().sql == (
        f" AND `ShardId` IN (TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', CURRENT_TIMESTAMP(), 'UTC'))), "
        f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', TIMESTAMP_SUB(CURRENT_TIMESTAMP(), "
        f"INTERVAL {interval.spec.previous_seconds} SECOND), 'UTC'))))")
    assert p.shard_filter().params == {} and p.shard_value is None


def test_timebased_java_formats_and_cyclic_lookbacks():
    formats = {i.name: (i.spec.spanner_format, i.spec.cyclic) for i in Interval}
    assert formats == {
        "DAY": ("%F", False), "WEEK": ("%Y-%W", False), "MONTH": ("%Y-%m", False), "YEAR": ("%Y", False),
        "MINUTE_OF_HOUR": ("%M", True), "HOUR_OF_DAY": ("%H", True), "DAY_OF_WEEK": ("%u", True),
        "DAY_OF_MONTH": ("%d", True), "WEEK_OF_YEAR": ("%W", True), "DAY_OF_YEAR": ("%j", True),
    }
    assert Interval.MINUTE_OF_HOUR.spec.previous_seconds == 45
    assert Interval.HOUR_OF_DAY.spec.previous_seconds == 60
    assert Interval.DAY_OF_YEAR.spec.previous_seconds == 60


def test_timebased_custom_lookback_and_validation():
    p = TimebasedShardProvider("S", Interval.HOUR_OF_DAY, previous_seconds=5)
    assert "INTERVAL 5 SECOND" in p.shard_filter().sql
    with pytest.raises(ConfigurationError):
        TimebasedShardProvider("S", Interval.DAY, previous_seconds=0)
    with pytest.raises(ConfigurationError):
        TimebasedShardProvider("S", "DAY")  # type: ignore[arg-type]


@pytest.mark.parametrize("interval, text", [
    (Interval.DAY, "2024-03-05"), (Interval.WEEK, "2024-10"), (Interval.MONTH, "2024-03"), (Interval.YEAR, "2024"),
    (Interval.MINUTE_OF_HOUR, "07"), (Interval.HOUR_OF_DAY, "13"), (Interval.DAY_OF_WEEK, "2"),
    (Interval.DAY_OF_MONTH, "05"), (Interval.WEEK_OF_YEAR, "10"), (Interval.DAY_OF_YEAR, "065"),
])
def test_shard_id_of_a_known_time(interval, text):
    # 2024-03-05 is a Tuesday, in week 10 (weeks start on Monday; 2024-01-01 was one), the 65th day of the year.
    now = dt.datetime(2024, 3, 5, 13, 7, 30, tzinfo=UTC)
    assert interval.shard_id(now) == _sha(text)


def test_shard_id_uses_utc_for_other_zones_and_naive_times():
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert Interval.DAY.shard_id(dt.datetime(2024, 3, 6, 1, 0, tzinfo=plus2)) == _sha("2024-03-05")
    assert Interval.DAY.shard_id(dt.datetime(2024, 3, 5, 23, 59)) == _sha("2024-03-05")


@pytest.mark.parametrize("interval", list(Interval))
def test_shard_id_equals_what_the_database_computes(singers_db, interval):
    """The writer-side id, computed here, matches the poll's SQL expressions evaluated by the server."""
    seconds = interval.spec.previous_seconds
    sql = f"SELECT CURRENT_TIMESTAMP(), {interval.shard_id_expression()}, {interval.shard_id_expression(seconds)}"
    with singers_db.snapshot() as snap:
        ((now, current, previous),) = list(snap.execute_sql(sql))
    assert current == interval.shard_id(now)
    assert previous == interval.shard_id(now - dt.timedelta(seconds=seconds))


@pytest.mark.parametrize("interval", list(Interval))
def test_fetch_from_database_gives_the_current_id(singers_db, interval):
    before = dt.datetime.now(UTC)
    got = fetch_from_database(singers_db, interval)(before)
    after = dt.datetime.now(UTC)
    assert got in {interval.shard_id(before), interval.shard_id(after)}


@pytest.mark.parametrize("interval", list(Interval))
def test_postgresql_polls_send_the_ids_a_google_sql_database_computes(singers_db, interval):
    """A PostgreSQL poll's ids, computed here for a time, are the GoogleSQL expressions' values at that time."""
    seconds = interval.spec.previous_seconds
    sql = f"SELECT CURRENT_TIMESTAMP(), {interval.shard_id_expression()}, {interval.shard_id_expression(seconds)}"
    with singers_db.snapshot() as snap:
        ((now, current, previous),) = list(snap.execute_sql(sql))
    sent = TimebasedShardProvider("S", interval, clock=lambda: now).shard_filter(POSTGRESQL).params["shard"]
    assert sent == list(dict.fromkeys([current, previous]))


@pytest.mark.parametrize("interval", [Interval.DAY, Interval.WEEK, Interval.MINUTE_OF_HOUR])
def test_fetch_from_a_postgresql_database_gives_the_current_id(make_database, interval):
    db = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    before = dt.datetime.now(UTC)
    got = fetch_from_database(db, interval)(before)
    after = dt.datetime.now(UTC)
    assert got in {interval.shard_id(before), interval.shard_id(after)}


# --- the writer's cache ------------------------------------------------------------------------------------

@pytest.mark.parametrize("interval, start, before_end, after_end", [
    (Interval.DAY, "2024-03-05 00:00:00", "2024-03-05 23:59:59", "2024-03-06 00:00:00"),
    (Interval.WEEK, "2024-03-04 00:00:00", "2024-03-04 23:59:59", "2024-03-11 00:00:00"),
    (Interval.MONTH, "2024-02-01 00:00:00", "2024-02-29 23:59:59", "2024-03-01 00:00:00"),
    (Interval.YEAR, "2024-01-01 00:00:00", "2024-01-01 23:59:59", "2025-01-01 00:00:00"),
    (Interval.MINUTE_OF_HOUR, "2024-03-05 13:07:00", "2024-03-05 13:07:59", "2024-03-05 13:08:00"),
    (Interval.HOUR_OF_DAY, "2024-03-05 13:00:00", "2024-03-05 13:59:59", "2024-03-05 14:00:00"),
    (Interval.DAY_OF_WEEK, "2024-03-05 00:00:00", "2024-03-05 23:59:59", "2024-03-06 00:00:00"),
    (Interval.DAY_OF_MONTH, "2024-03-31 00:00:00", "2024-03-31 23:59:59", "2024-04-01 00:00:00"),
    (Interval.WEEK_OF_YEAR, "2024-12-30 00:00:00", "2024-12-30 23:59:59", "2025-01-06 00:00:00"),
    (Interval.DAY_OF_YEAR, "2024-12-31 00:00:00", "2024-12-31 23:59:59", "2025-01-01 00:00:00"),
])
def test_cache_refreshes_exactly_when_the_period_ends(interval, start, before_end, after_end):
    fetched: list[dt.datetime] = []

    def fetch(now: dt.datetime) -> str:
        fetched.append(now)
        return interval.shard_id(now)

    cache = ShardIdCache(interval, fetch)
    with freeze_time(start, tz_offset=0) as clock:
        now = lambda: dt.datetime.now(UTC)  # noqa: E731
        first = cache.get(now())
        assert first == interval.shard_id(now()) and len(fetched) == 1
        clock.tick(dt.timedelta(seconds=1))
        assert not cache.needs_refresh(now())
        assert cache.get(now()) == first and len(fetched) == 1
        # Long periods may refresh daily (harmless), but the id stays the same until the period ends.
        clock.move_to(before_end)
        assert cache.get(now()) == first
        clock.move_to(after_end)
        assert cache.needs_refresh(now())
        fetches = len(fetched)
        second = cache.get(now())
        assert second == interval.shard_id(now()) and len(fetched) == fetches + 1
        assert second != first
        clock.tick(dt.timedelta(seconds=1))
        assert cache.get(now()) == second and len(fetched) == fetches + 1


def test_cache_ids_roll_over_for_cyclic_intervals():
    with freeze_time("2024-03-05 23:59:30", tz_offset=0) as clock:
        cache = ShardIdCache(Interval.HOUR_OF_DAY)
        assert cache.get(dt.datetime.now(UTC)) == _sha("23")
        clock.tick(dt.timedelta(seconds=30))
        assert cache.get(dt.datetime.now(UTC)) == _sha("00")  # hour 0 of the next day: the cycle starts over
        clock.move_to("2024-03-06 23:10:00")
        assert cache.get(dt.datetime.now(UTC)) == _sha("23")


def test_cache_with_database_fetch(singers_db):
    cache = ShardIdCache(Interval.DAY, fetch_from_database(singers_db, Interval.DAY))
    now = dt.datetime.now(UTC)
    assert cache.get(now) in {Interval.DAY.shard_id(now), Interval.DAY.shard_id(now + dt.timedelta(minutes=1))}


# --- split_shards -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, parts, expected", [
    (range(-18, 19), 1, [list(range(-18, 19))]),
    (range(-18, 19), 37, [[v] for v in range(-18, 19)]),
    (range(10), 3, [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]),
    (["a", "b"], 2, [["a"], ["b"]]),
])
def test_split_shards(values, parts, expected):
    got = split_shards(values, parts)
    assert got == expected
    assert [v for part in got for v in part] == list(values)
    sizes = [len(p) for p in got]
    assert max(sizes) - min(sizes) <= 1


def test_split_shards_of_37_over_4_is_even():
    assert [len(p) for p in split_shards(range(-18, 19), 4)] == [10, 9, 9, 9]


@pytest.mark.parametrize("parts", [0, -1, 4])
def test_split_shards_rejects_impossible_splits(parts):
    with pytest.raises(ConfigurationError):
        split_shards([1, 2, 3], parts)
