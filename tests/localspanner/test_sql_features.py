"""The SQL the watcher, its shard providers and the Spark jobs send, checked against Python's own answers."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib

import pytest
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

SCHEMA = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Country STRING(2)) PRIMARY KEY (SingerId)",
    """CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX), Sales INT64,
       Shard INT64 NOT NULL, Changed TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true))
       PRIMARY KEY (SingerId, AlbumId)""",
]

SINGERS = [(1, "Ann", "NL"), (2, "Bo", "SE"), (3, None, "NL"), (4, "Dee", None)]
# (SingerId, AlbumId, Title, Sales, Shard)
ALBUMS = [(s, a, f"t{s}{a}" if (s + a) % 4 else None, s * 10 + a, (s * 7 + a) % 3) for s in (1, 2, 3) for a in range(1, 5)]
UTC = dt.UTC


@pytest.fixture(scope="module")
def db(instance):
    import uuid

    database = instance.database(f"sqlfeat-{uuid.uuid4().hex[:8]}", ddl_statements=SCHEMA)
    database.create().result(60)
    with database.batch() as b:
        b.insert("Singers", ("SingerId", "Name", "Country"), SINGERS)
    # Albums in four commits, so that commit timestamps differ between rows.
    for part in range(4):
        with database.batch() as b:
            b.insert("Albums", ("SingerId", "AlbumId", "Title", "Sales", "Shard", "Changed"),
                     [r + (spanner.COMMIT_TIMESTAMP,) for r in ALBUMS if r[1] == part + 1])
    yield database
    database.drop()


def _q(db, sql: str, params: dict | None = None, types: dict | None = None) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def _changed(db) -> dict[tuple[int, int], dt.datetime]:
    return {(r[0], r[1]): r[2] for r in _q(db, "SELECT SingerId, AlbumId, Changed FROM Albums")}


def test_inner_and_left_joins(db):
    inner = _q(db, "SELECT s.Name, a.AlbumId FROM Singers s JOIN Albums a ON a.SingerId = s.SingerId "
                   "WHERE a.AlbumId = 1 ORDER BY s.SingerId")
    assert inner == [["Ann", 1], ["Bo", 1], [None, 1]]
    left = _q(db, "SELECT s.SingerId, COUNT(a.AlbumId) FROM Singers AS s LEFT JOIN Albums AS a "
                  "ON a.SingerId = s.SingerId GROUP BY s.SingerId ORDER BY s.SingerId")
    assert left == [[1, 4], [2, 4], [3, 4], [4, 0]]


def test_group_by_having_and_aggregates(db):
    got = _q(db, "SELECT SingerId, SUM(Sales) AS total, MAX(AlbumId), COUNT(Title) FROM Albums "
                 "GROUP BY SingerId HAVING SUM(Sales) > 50 ORDER BY total DESC")
    expected = []
    for s in (1, 2, 3):
        rows = [r for r in ALBUMS if r[0] == s]
        total = sum(r[3] for r in rows)
        if total > 50:
            expected.append([s, total, 4, sum(1 for r in rows if r[2] is not None)])
    assert got == sorted(expected, key=lambda r: -r[1])


def test_order_by_limit_offset_with_parameters(db):
    everything = [[r[0], r[1]] for r in sorted(ALBUMS, key=lambda r: (-r[3], r[0], r[1]))]
    for limit, offset in ((3, 0), (4, 2), (5, 10), (100, 11)):
        got = _q(db, "SELECT SingerId, AlbumId FROM Albums ORDER BY Sales DESC, SingerId, AlbumId LIMIT @l OFFSET @o",
                 {"l": limit, "o": offset}, {"l": param_types.INT64, "o": param_types.INT64})
        assert got == everything[offset:offset + limit]


def test_order_by_nulls_first_by_default(db):
    assert [r[0] for r in _q(db, "SELECT Name FROM Singers ORDER BY Name")] == [None, "Ann", "Bo", "Dee"]
    assert [r[0] for r in _q(db, "SELECT Name FROM Singers ORDER BY Name DESC")] == ["Dee", "Bo", "Ann", None]


def test_with_union_all_and_subqueries(db):
    got = _q(db, """
        WITH nl AS (SELECT SingerId FROM Singers WHERE Country = 'NL'),
             big AS (SELECT DISTINCT SingerId FROM Albums WHERE Sales > @min)
        SELECT SingerId, 'nl' AS why FROM nl
        UNION ALL
        SELECT SingerId, 'big' FROM big
        ORDER BY why, SingerId""", {"min": 30}, {"min": param_types.INT64})
    assert got == [[3, "big"], [1, "nl"], [3, "nl"]]
    scalar = _q(db, "SELECT SingerId, (SELECT MAX(Sales) FROM Albums a WHERE a.SingerId = s.SingerId) FROM Singers s "
                    "WHERE EXISTS (SELECT 1 FROM Albums a WHERE a.SingerId = s.SingerId AND a.Sales >= 20) ORDER BY 1")
    assert scalar == [[2, 24], [3, 34]]
    in_sub = _q(db, "SELECT Name FROM Singers WHERE SingerId IN (SELECT SingerId FROM Albums WHERE Sales < 13) ")
    assert in_sub == [["Ann"]]
    derived = _q(db, "SELECT COUNT(*) FROM (SELECT SingerId FROM Albums GROUP BY SingerId) AS t")
    assert derived == [[3]]


def test_in_unnest_array_parameter(db):
    got = _q(db, "SELECT SingerId FROM Singers WHERE Country IN UNNEST(@c) ORDER BY SingerId",
             {"c": ["NL", "XX"]}, {"c": param_types.Array(param_types.STRING)})
    assert got == [[1], [3]]


def test_scalar_functions(db):
    got = _q(db, """SELECT SingerId,
            CASE WHEN Country = 'NL' THEN 'dutch' WHEN Country IS NULL THEN 'unknown' ELSE 'other' END,
            COALESCE(Name, Country, '?'), IFNULL(Name, 'none'), MOD(SingerId * 7, 3), MOD(-SingerId * 7, 3),
            CONCAT('#', CAST(SingerId AS STRING), '-', IFNULL(Name, '')), Name || '!'
        FROM Singers ORDER BY SingerId""")
    expected = []
    for sid, name, country in SINGERS:
        kind = "dutch" if country == "NL" else "unknown" if country is None else "other"
        neg = -((sid * 7) % 3)
        expected.append([sid, kind, name or country or "?", name or "none", (sid * 7) % 3, neg,
                         f"#{sid}-{name or ''}", None if name is None else name + "!"])
    assert got == expected
    assert _q(db, "SELECT CONCAT('a', NULL), 'x' || NULL, MOD(7, -3), MOD(-7, 3)") == [[None, None, 1, -1]]


def _python_shard(fmt: str, when: dt.datetime) -> str:
    return base64.b64encode(hashlib.sha512(when.strftime(fmt).encode()).digest()).decode()


# TimebasedShardProvider's formats, as Spanner's FORMAT_TIMESTAMP reads them, and Python's equivalent.
FORMATS = {"%F": "%Y-%m-%d", "%Y-%W": "%Y-%W", "%Y-%m": "%Y-%m", "%Y": "%Y", "%M": "%M", "%H": "%H",
           "%u": "%u", "%d": "%d", "%W": "%W", "%j": "%j"}


@pytest.mark.parametrize("when", [dt.datetime(2024, 2, 29, 23, 59, 58, tzinfo=UTC), dt.datetime(2021, 1, 3, 0, 5, tzinfo=UTC)])
def test_timebased_shard_expressions_at_a_fixed_time(db, when):
    fmts = list(FORMATS)
    sql = "SELECT " + ", ".join(f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{f}', @t, 'UTC')))" for f in fmts)
    sql += ", " + ", ".join(f"FORMAT_TIMESTAMP('{f}', @t, 'UTC')" for f in fmts)
    got = _q(db, sql, {"t": when}, {"t": param_types.TIMESTAMP})[0]
    assert got[len(fmts):] == [when.strftime(FORMATS[f]) for f in fmts]
    assert got[:len(fmts)] == [_python_shard(FORMATS[f], when) for f in fmts]


def test_timebased_shard_provider_current_and_previous(db):
    before = dt.datetime.now(UTC)
    current, previous = _q(db, "SELECT TO_BASE64(SHA512(FORMAT_TIMESTAMP('%F', CURRENT_TIMESTAMP(), 'UTC'))), "
                               "TO_BASE64(SHA512(FORMAT_TIMESTAMP('%F', TIMESTAMP_SUB(CURRENT_TIMESTAMP(), "
                               "INTERVAL 86400 SECOND), 'UTC')))")[0]
    after = dt.datetime.now(UTC)
    assert current in {_python_shard("%Y-%m-%d", before), _python_shard("%Y-%m-%d", after)}
    assert previous in {_python_shard("%Y-%m-%d", before - dt.timedelta(days=1)),
                        _python_shard("%Y-%m-%d", after - dt.timedelta(days=1))}


def test_timestamp_arithmetic(db):
    t = dt.datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    got = _q(db, """SELECT TIMESTAMP_ADD(@t, INTERVAL 90 MINUTE), TIMESTAMP_SUB(@t, INTERVAL 2 DAY),
                           TIMESTAMP_ADD(@t, INTERVAL 1 MICROSECOND), TIMESTAMP_DIFF(@t, TIMESTAMP '2024-02-28 12:00:00+00', HOUR),
                           TIMESTAMP_DIFF(@t, TIMESTAMP_SUB(@t, INTERVAL 45 SECOND), SECOND),
                           TIMESTAMP_DIFF(TIMESTAMP_SUB(@t, INTERVAL 1500 MILLISECOND), @t, MILLISECOND)""",
             {"t": t}, {"t": param_types.TIMESTAMP})[0]
    assert got[0] == t + dt.timedelta(minutes=90)
    assert got[1] == t - dt.timedelta(days=2)
    assert got[2] == t + dt.timedelta(microseconds=1)
    assert got[3:] == [48, 45, -1500]
    now_diff = _q(db, "SELECT TIMESTAMP_DIFF(CURRENT_TIMESTAMP(), @t, SECOND)", {"t": t}, {"t": param_types.TIMESTAMP})[0][0]
    assert abs(now_diff - (dt.datetime.now(UTC) - t).total_seconds()) < 60


def test_simple_poll_query_shape(db):
    changed = _changed(db)
    prev = sorted(set(changed.values()))[0]  # after the first commit
    got = _q(db, "SELECT * FROM `Albums` WHERE `Changed` > @prevCommitTimestamp AND `Shard` IN UNNEST(@shard) "
                 "ORDER BY `Changed`, `SingerId`, `AlbumId` LIMIT @limit",
             {"prevCommitTimestamp": prev, "shard": [0, 2], "limit": 5},
             {"prevCommitTimestamp": param_types.TIMESTAMP, "shard": param_types.Array(param_types.INT64),
              "limit": param_types.INT64})
    expected = sorted((changed[(r[0], r[1])], r[0], r[1]) for r in ALBUMS if r[4] in (0, 2) and changed[(r[0], r[1])] > prev)
    assert [(r[5], r[0], r[1]) for r in got] == expected[:5]


def test_with_variant_poll_query_joins_back_on_composite_key(db):
    changed = _changed(db)
    prev = min(changed.values()) - dt.timedelta(microseconds=1)
    shards, limit = [0, 1, 2], 7
    ctes = ",\n".join(
        f"shard{i} AS (SELECT `SingerId`, `AlbumId`, `Changed` FROM `Albums` WHERE `Changed` > @prev AND `Shard` = @p{i} "
        f"ORDER BY `Changed`, `SingerId`, `AlbumId` LIMIT @limit)" for i in range(len(shards)))
    union = " UNION ALL ".join(f"SELECT * FROM shard{i}" for i in range(len(shards)))
    sql = (f"WITH {ctes}\n"
           f"SELECT t.* FROM (SELECT * FROM ({union}) ORDER BY `Changed`, `SingerId`, `AlbumId` LIMIT @limit) AS c\n"
           "INNER JOIN `Albums` AS t ON c.`SingerId` = t.`SingerId` AND c.`AlbumId` = t.`AlbumId`\n"
           "ORDER BY c.`Changed`, c.`SingerId`, c.`AlbumId`")
    params = {"prev": prev, "limit": limit, **{f"p{i}": s for i, s in enumerate(shards)}}
    types = {"prev": param_types.TIMESTAMP, "limit": param_types.INT64, **{f"p{i}": param_types.INT64 for i in range(len(shards))}}
    got = _q(db, sql, params, types)
    expected = sorted((changed[(r[0], r[1])], r[0], r[1]) for r in ALBUMS)[:limit]
    assert [(r[5], r[0], r[1]) for r in got] == expected
    by_key = {(r[0], r[1]): r for r in ALBUMS}
    for row in got:  # full rows, joined back on both key columns: no cross-matching
        assert tuple(row[:5]) == by_key[(row[0], row[1])]


def test_select_current_timestamp_and_shard_value(db):
    (now,) = _q(db, "SELECT CURRENT_TIMESTAMP")[0]
    assert abs((dt.datetime.now(UTC) - now).total_seconds()) < 60
    got = _q(db, "SELECT MOD(FARM_FINGERPRINT(COALESCE(@n, '')), 11)", {"n": None}, {"n": param_types.STRING})
    assert got == [[-(7286425919675154353 % 11)]]
