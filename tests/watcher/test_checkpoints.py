"""Checkpoint stores: one suite over the in-memory and the Spanner repository, then the Spanner table's schema."""

from __future__ import annotations

import base64
import datetime as dt
import decimal

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds as DT
from google.cloud.spanner_v1 import KeySet

from watcher import CheckpointError, InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
from watcher.checkpoints.java_table import JAVA_COLUMNS, KEY_COLUMNS, POSITION_COLUMN, array_text
from watcher.model import MIN_TIMESTAMP, Checkpoint, TableId

UTC = dt.UTC
T1 = DT(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
T2 = DT(2024, 5, 1, 10, 0, 1, 5, tzinfo=UTC)
T3 = DT(2024, 5, 2, 0, 0, 0, tzinfo=UTC)
SINGERS = TableId("Singers")

#: The table the Java library (1.2.1) creates: no position column.
JAVA_DDL = """CREATE TABLE LAST_SEEN_COMMIT_TIMESTAMPS (
    DATABASE_NAME STRING(MAX) NOT NULL, TABLE_CATALOG STRING(MAX) NOT NULL, TABLE_SCHEMA STRING(MAX) NOT NULL,
    TABLE_NAME STRING(MAX) NOT NULL, SHARD_ID_BOOL BOOL, SHARD_ID_BYTES BYTES(MAX), SHARD_ID_DATE DATE,
    SHARD_ID_FLOAT64 FLOAT64, SHARD_ID_INT64 INT64, SHARD_ID_STRING STRING(MAX), SHARD_ID_TIMESTAMP TIMESTAMP,
    LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL
) PRIMARY KEY (DATABASE_NAME, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES,
    SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, SHARD_ID_STRING, SHARD_ID_TIMESTAMP)"""

SHARD_VALUES = [
    None, True, False, 0, -7, 2**62, 1.5, "eu-west", "", b"AP9ieXRlcw==", dt.date(2024, 2, 29),
    DT(2024, 1, 1, 12, 0, 0, 1, tzinfo=UTC), decimal.Decimal("12.50"), [1, 2, 3], [-18, 18], ["a", "b"],
]


@pytest.fixture(params=["memory", "spanner"])
def repo(request, make_database):
    if request.param == "memory":
        return InMemoryCommitTimestampRepository()
    db = make_database([])
    r = SpannerCommitTimestampRepository(db)
    r.initialize()
    return r


def _same(a: Checkpoint | None, b: Checkpoint | None) -> bool:
    """Equal including nanoseconds (datetime equality ignores them)."""
    if a is None or b is None:
        return a is b
    return a.to_text() == b.to_text()


# --- the contract, for every store --------------------------------------------------------------------------

def test_get_of_nothing_is_none(repo):
    assert repo.get(SINGERS) is None
    assert repo.get(SINGERS, shard=3) is None
    assert repo.oldest(SINGERS) is None


@pytest.mark.parametrize("shard", SHARD_VALUES, ids=repr)
def test_set_then_get_per_shard_value_of_every_type(repo, shard):
    repo.set(SINGERS, Checkpoint(T1), shard=shard)
    assert _same(repo.get(SINGERS, shard=shard), Checkpoint(T1))
    repo.set(SINGERS, Checkpoint(T2, (5,)), shard=shard)
    assert _same(repo.get(SINGERS, shard=shard), Checkpoint(T2, (5,)))


def test_shard_values_are_kept_apart(repo):
    distinct = [None, True, 1, 1.0, 1.25, "x", b"eA==", dt.date(2024, 1, 1), T3, [1, 2], [2, 1], [True, False]]
    for i, shard in enumerate(distinct):
        repo.set(SINGERS, Checkpoint(DT(2024, 1, 1, 0, 0, i, tzinfo=UTC)), shard=shard)
    for i, shard in enumerate(distinct):
        assert _same(repo.get(SINGERS, shard=shard), Checkpoint(DT(2024, 1, 1, 0, 0, i, tzinfo=UTC))), shard
    # A list and a tuple of the same values name the same shard.
    assert _same(repo.get(SINGERS, shard=(1, 2)), repo.get(SINGERS, shard=[1, 2]))


def test_tables_catalogs_and_schemas_are_kept_apart(repo):
    ids = [TableId("A"), TableId("B"), TableId("A", schema="s"), TableId("A", catalog="c")]
    for i, t in enumerate(ids):
        repo.set(t, Checkpoint(DT(2024, 1, 1, 0, 0, i, tzinfo=UTC)))
    for i, t in enumerate(ids):
        assert _same(repo.get(t), Checkpoint(DT(2024, 1, 1, 0, 0, i, tzinfo=UTC)))


@pytest.mark.parametrize("key", [
    (1,), (2**63 - 1,), ("a", None), (b"\x01\x02", dt.date(2024, 1, 1)), (T1,), (decimal.Decimal("-1.5"), True, 0.25),
], ids=repr)
def test_exact_position_round_trips_with_typed_key_parts(repo, key):
    repo.set(SINGERS, Checkpoint(T2, key), shard=[1, 2])
    got = repo.get(SINGERS, shard=[1, 2])
    assert got is not None and got.key == key and _same(got, Checkpoint(T2, key))
    assert [type(v) for v in got.key] == [type(v) for v in key]


def test_nanoseconds_are_kept(repo):
    ts = DT(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=UTC)
    repo.set(SINGERS, Checkpoint(ts, (1,)))
    got = repo.get(SINGERS)
    assert got.commit_timestamp.rfc3339() == "2024-05-01T10:00:00.123456789Z"


def test_a_later_set_replaces_and_may_move_back(repo):
    repo.set(SINGERS, Checkpoint(T2, (9,)))
    repo.set(SINGERS, Checkpoint(T1))
    assert _same(repo.get(SINGERS), Checkpoint(T1))


def test_oldest_over_the_shards_of_one_table(repo):
    repo.set(SINGERS, Checkpoint(T2), shard=1)
    repo.set(SINGERS, Checkpoint(T1, (3,)), shard=2)
    repo.set(SINGERS, Checkpoint(T3), shard=None)
    repo.set(TableId("Other"), Checkpoint(MIN_TIMESTAMP))
    assert repo.oldest(SINGERS) == T1
    assert repo.oldest(TableId("Other")) == MIN_TIMESTAMP
    assert repo.oldest(TableId("Nothing")) is None


# --- the Spanner table ---------------------------------------------------------------------------------------

def _columns(db, table="LAST_SEEN_COMMIT_TIMESTAMPS"):
    sql = ("SELECT COLUMN_NAME, SPANNER_TYPE, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS "
           f"WHERE TABLE_SCHEMA = '' AND TABLE_NAME = '{table}' ORDER BY ORDINAL_POSITION")
    with db.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql(sql)]


def _key(db, table="LAST_SEEN_COMMIT_TIMESTAMPS"):
    sql = ("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.INDEX_COLUMNS WHERE TABLE_SCHEMA = '' "
           f"AND TABLE_NAME = '{table}' AND INDEX_NAME = 'PRIMARY_KEY' ORDER BY ORDINAL_POSITION")
    with db.snapshot() as snap:
        return [r[0] for r in snap.execute_sql(sql)]


def _raw_row(db):
    with db.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT * FROM LAST_SEEN_COMMIT_TIMESTAMPS"))
    assert len(rows) == 1
    return rows[0]


def test_table_created_with_the_java_schema_plus_the_position_column(make_database):
    db = make_database([])
    SpannerCommitTimestampRepository(db).initialize()
    not_null = {"DATABASE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "LAST_SEEN_COMMIT_TIMESTAMP"}
    expected = [(n, t, "NO" if n in not_null else "YES") for n, t in JAVA_COLUMNS] + [(POSITION_COLUMN, "STRING(MAX)", "YES")]
    assert _columns(db) == expected
    assert _key(db) == list(KEY_COLUMNS) == [n for n, _ in JAVA_COLUMNS[:-1]]


def test_initialize_twice_and_by_two_repositories_is_harmless(make_database):
    db = make_database([])
    SpannerCommitTimestampRepository(db).initialize()
    r2 = SpannerCommitTimestampRepository(db)
    r2.initialize()
    r2.initialize()
    assert len(_columns(db)) == len(JAVA_COLUMNS) + 1


def test_custom_table_name(make_database):
    db = make_database([])
    r = SpannerCommitTimestampRepository(db, table="MY_CHECKPOINTS")
    r.set(SINGERS, Checkpoint(T1))
    assert _columns(db, "MY_CHECKPOINTS") and not _columns(db)
    assert _same(r.get(SINGERS), Checkpoint(T1))


def test_missing_table_without_create_if_missing_fails_clearly(make_database):
    db = make_database([])
    with pytest.raises(CheckpointError, match="LAST_SEEN_COMMIT_TIMESTAMPS does not exist"):
        SpannerCommitTimestampRepository(db, create_if_missing=False).initialize()


@pytest.mark.parametrize("shard, column, stored", [
    # BYTES shard values are base64 text, as the client takes and returns BYTES: b"YWI=" is the bytes ab.
    (None, None, None), (True, "SHARD_ID_BOOL", True), (b"YWI=", "SHARD_ID_BYTES", b"YWI="),
    (dt.date(2024, 1, 2), "SHARD_ID_DATE", dt.date(2024, 1, 2)), (2.5, "SHARD_ID_FLOAT64", 2.5),
    (7, "SHARD_ID_INT64", 7), ("eu", "SHARD_ID_STRING", "eu"), (T1, "SHARD_ID_TIMESTAMP", T1),
    ([1, 2, 3], "SHARD_ID_STRING", "1,2,3"), (decimal.Decimal("1.50"), "SHARD_ID_STRING", "1.50"),
], ids=repr)
def test_rows_are_stored_as_the_java_library_stores_them(make_database, shard, column, stored):
    db = make_database([])
    SpannerCommitTimestampRepository(db).set(TableId("Singers"), Checkpoint(T1), shard=shard)
    row = dict(zip([n for n, _ in JAVA_COLUMNS] + [POSITION_COLUMN], _raw_row(db), strict=True))
    assert row["DATABASE_NAME"] == db.name
    assert (row["TABLE_CATALOG"], row["TABLE_SCHEMA"], row["TABLE_NAME"]) == ("", "", "Singers")
    shard_cols = {n: v for n, v in row.items() if n.startswith("SHARD_ID_") and v is not None}
    assert shard_cols == ({} if column is None else {column: stored})
    assert row["LAST_SEEN_COMMIT_TIMESTAMP"] == T1
    assert row[POSITION_COLUMN] is None  # no key: the Java library sees exactly what it writes itself


def test_watched_database_name_is_what_goes_in_database_name(make_database):
    db = make_database([])
    SpannerCommitTimestampRepository(db, watched_database_name="projects/p/instances/i/databases/other").set(
        SINGERS, Checkpoint(T1))
    assert _raw_row(db)[0] == "projects/p/instances/i/databases/other"


def test_existing_java_table_is_accepted_and_gets_the_position_column(make_database):
    db = make_database([JAVA_DDL])
    with db.batch() as b:  # a row the Java library wrote
        b.insert("LAST_SEEN_COMMIT_TIMESTAMPS", (*KEY_COLUMNS, "LAST_SEEN_COMMIT_TIMESTAMP"),
                 [(db.name, "", "", "Singers", None, None, None, None, 4, None, None, T1)])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    assert _columns(db)[-1] == (POSITION_COLUMN, "STRING(MAX)", "YES")
    assert _same(repo.get(SINGERS, shard=4), Checkpoint(T1))  # the Java user's place is kept
    repo.set(SINGERS, Checkpoint(T2, (10,)), shard=4)
    assert _same(repo.get(SINGERS, shard=4), Checkpoint(T2, (10,)))


def test_position_of_another_timestamp_is_ignored(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.set(SINGERS, Checkpoint(T1, (3,)), shard=1)
    with db.batch() as b:  # the Java library moves the timestamp and leaves our column alone
        b.update("LAST_SEEN_COMMIT_TIMESTAMPS", (*KEY_COLUMNS, "LAST_SEEN_COMMIT_TIMESTAMP"),
                 [(db.name, "", "", "Singers", None, None, None, None, 1, None, None, T2)])
    got = repo.get(SINGERS, shard=1)
    assert _same(got, Checkpoint(T2)) and got.key is None


def test_unreadable_position_fails_with_a_checkpoint_error(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.set(SINGERS, Checkpoint(T1, (3,)))
    with db.batch() as b:
        b.update("LAST_SEEN_COMMIT_TIMESTAMPS", (*KEY_COLUMNS, POSITION_COLUMN),
                 [(db.name, "", "", "Singers", None, None, None, None, None, None, None, '{"v": 99, "ts": "x"}')])
    with pytest.raises(CheckpointError, match=POSITION_COLUMN):
        repo.get(SINGERS)


def _java_ddl_with(replace: str, by: str) -> str:
    assert replace in JAVA_DDL
    return JAVA_DDL.replace(replace, by)


@pytest.mark.parametrize("ddl, message", [
    (_java_ddl_with("SHARD_ID_INT64 INT64", "SHARD_ID_INT64 STRING(MAX)"), "SHARD_ID_INT64 .* is STRING\\(MAX\\), expected INT64"),
    (_java_ddl_with("SHARD_ID_BOOL BOOL", "SHARD_ID_BOOL INT64"), "SHARD_ID_BOOL .* is INT64, expected BOOL"),
    (_java_ddl_with("LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL", "LAST_SEEN_COMMIT_TIMESTAMP DATE NOT NULL"),
     "LAST_SEEN_COMMIT_TIMESTAMP .* is DATE, expected TIMESTAMP"),
    (_java_ddl_with("TABLE_NAME STRING(MAX) NOT NULL", "TABLE_NAME BYTES(MAX) NOT NULL"), "TABLE_NAME .* is BYTES"),
    (_java_ddl_with("SHARD_ID_DATE DATE,", "").replace("SHARD_ID_DATE,", ""), "no column SHARD_ID_DATE"),
    (_java_ddl_with("PRIMARY KEY (DATABASE_NAME, TABLE_CATALOG", "PRIMARY KEY (TABLE_CATALOG, DATABASE_NAME"),
     "primary key \\(TABLE_CATALOG, DATABASE_NAME"),
    (_java_ddl_with(", SHARD_ID_TIMESTAMP)", ")"), "primary key"),
    (_java_ddl_with("LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL",
                    "LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL, LAST_SEEN_POSITION INT64"),
     "LAST_SEEN_POSITION .* is INT64, expected STRING"),
], ids=["int-as-string", "bool-as-int", "ts-as-date", "name-as-bytes", "missing-column", "key-order", "short-key",
        "position-type"])
def test_wrong_existing_table_gives_an_error_naming_the_column(make_database, ddl, message):
    db = make_database([ddl])
    with pytest.raises(CheckpointError, match=message):
        SpannerCommitTimestampRepository(db).initialize()


def test_get_and_set_initialize_on_first_use(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    assert repo.get(SINGERS) is None
    assert _columns(db)
    with db.snapshot() as snap:
        assert list(snap.read("LAST_SEEN_COMMIT_TIMESTAMPS", ("TABLE_NAME",), KeySet(all_=True))) == []


# --- array shard values: the Java library's texts, earlier texts, unreadable texts ------------------------

#: SHARD_ID_STRING texts the Java library 1.2.1 writes (its arrayToString over com.google.cloud.spanner.Value,
#: with Double.toString and com.google.cloud.Timestamp.toString as a Java 17 runtime prints them).
JAVA_ARRAY_TEXTS = [
    ([True, False], "true,false"),
    ([b"YWI=", b"AP8=", b""], "YWI=,AP8=,"),
    ([dt.date(2024, 1, 2), dt.date(5, 1, 2)], "2024-01-02,0005-01-02"),
    ([1.0, 1e20, 1e-5, 0.1, 123456789.0, 1e7, 9999999.0, 0.001, 0.0001, -0.0, 100.5, 2 / 3, float("nan"), float("inf")],
     "1.0,1.0E20,1.0E-5,0.1,1.23456789E8,1.0E7,9999999.0,0.001,1.0E-4,-0.0,100.5,0.6666666666666666,NaN,Infinity"),
    ([-18, 0, 2**62], "-18,0,4611686018427387904"),
    ([decimal.Decimal("1.50"), decimal.Decimal("0.0000001"), decimal.Decimal("1E+3")], "1.50,1E-7,1E+3"),
    (["eu", "us"], "ZXU=,dXM="),
    (["", "a,b", "héllo"], ",YSxi,aMOpbGxv"),
    ([{"a": 1}], "eyJhIjoxfQ=="),
    ([DT(1970, 1, 1, tzinfo=UTC), DT(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC),
      DT.from_rfc3339("2023-11-14T22:13:20.123456789Z"), DT.from_rfc3339("2023-11-14T22:13:20.000000100Z"),
      dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)],
     "1970-01-01T00:00:00Z,2023-11-14T22:13:20.500000000Z,2023-11-14T22:13:20.123456789Z,"
     "2023-11-14T22:13:20.000000100Z,2023-11-14T22:13:20.123456000Z"),
]


def _java_row(db, text, ts, *, table="Singers"):
    with db.batch() as b:  # a row as the Java library writes it: no position column value
        b.insert_or_update("LAST_SEEN_COMMIT_TIMESTAMPS", (*KEY_COLUMNS, "LAST_SEEN_COMMIT_TIMESTAMP"),
                           [(db.name, "", "", table, None, None, None, None, None, text, None, ts)])


def _stored_texts(db):
    with db.snapshot() as snap:
        return sorted(r[0] for r in snap.execute_sql("SELECT SHARD_ID_STRING FROM LAST_SEEN_COMMIT_TIMESTAMPS"))


@pytest.mark.parametrize("shard, text", JAVA_ARRAY_TEXTS, ids=lambda v: type(v[0]).__name__ if isinstance(v, list) else "")
def test_array_shards_are_stored_in_the_java_text_and_found_from_it(make_database, shard, text):
    db = make_database([JAVA_DDL])
    _java_row(db, text, T1)  # what the Java library left behind
    repo = SpannerCommitTimestampRepository(db)
    assert _same(repo.get(SINGERS, shard=shard), Checkpoint(T1))
    repo.set(SINGERS, Checkpoint(T2, (3,)), shard=shard)
    assert _stored_texts(db) == [text]  # one row, in the Java library's text: it finds its place again
    db2 = make_database([])
    SpannerCommitTimestampRepository(db2).set(SINGERS, Checkpoint(T1), shard=shard)
    assert _stored_texts(db2) == [text]


@pytest.mark.parametrize("shard, earlier", [
    (["eu", "us"], "eu,us"),
    ([b"YWI="], "WVdJPQ=="),
    ([DT(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)], "2024-05-01T10:00:00.123456+00:00"),
    ([1.0, 1e20], "1.0,1e+20"),
], ids=["string", "bytes", "timestamp", "float64"])
def test_a_row_in_an_earlier_text_is_found_then_rewritten_in_the_java_text(make_database, shard, earlier):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    _java_row(db, earlier, T1)
    assert _same(repo.get(SINGERS, shard=shard), Checkpoint(T1))  # the place is kept, not started afresh
    repo.set(SINGERS, Checkpoint(T2, (4,)), shard=shard)
    assert _stored_texts(db) == [array_text(shard)]
    fresh = SpannerCommitTimestampRepository(db)
    assert _same(fresh.get(SINGERS, shard=shard), Checkpoint(T2, (4,)))


def test_a_double_in_an_older_java_runtime_text_is_found_and_kept_in_it(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    _java_row(db, "9.999999999999999E22,4.9E-324", T1)  # Java 17's Double.toString of 1e23 and the least double
    assert _same(repo.get(SINGERS, shard=[1e23, 5e-324]), Checkpoint(T1))
    repo.set(SINGERS, Checkpoint(T2), shard=[1e23, 5e-324])
    assert _stored_texts(db) == ["9.999999999999999E22,4.9E-324"]  # that runtime keeps finding its row


def test_other_shards_rows_are_left_alone_and_do_not_match(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.set(SINGERS, Checkpoint(T1), shard=["eu"])
    repo.set(TableId("Albums"), Checkpoint(T1), shard=["x!"])  # another table: never read for Singers
    assert repo.get(SINGERS, shard=["us"]) is None
    assert repo.get(SINGERS, shard=["eu", "us"]) is None


@pytest.mark.parametrize("shard, text", [([1, 2], "1,two"), ([T1], "yesterday"), ([True], "yes")],
                         ids=["int64", "timestamp", "bool"])
def test_a_shard_text_in_no_known_form_is_a_checkpoint_error_naming_it(make_database, shard, text):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    _java_row(db, text, T1)
    with pytest.raises(CheckpointError) as err:
        repo.get(SINGERS, shard=shard)
    message = str(err.value)
    assert "Singers" in message and "SHARD_ID_STRING" in message and repr(text) in message


def test_a_bytes_shard_row_an_earlier_version_encoded_twice_is_found_then_rewritten(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    with db.batch() as b:  # earlier versions base64-encoded the client's base64 text once more
        b.insert("LAST_SEEN_COMMIT_TIMESTAMPS", (*KEY_COLUMNS, "LAST_SEEN_COMMIT_TIMESTAMP"),
                 [(db.name, "", "", "Singers", None, base64.b64encode(b"AAE="), None, None, None, None, None, T1)])
    assert _same(repo.get(SINGERS, shard=b"AAE="), Checkpoint(T1))
    repo.set(SINGERS, Checkpoint(T2), shard=b"AAE=")
    with db.snapshot() as snap:
        stored = [r[0] for r in snap.execute_sql("SELECT SHARD_ID_BYTES FROM LAST_SEEN_COMMIT_TIMESTAMPS")]
    assert stored == [b"AAE="]  # one row, the bytes 00 01 as the Java library stores them


def test_another_shards_row_in_an_earlier_text_is_no_error(make_database):
    db = make_database([])
    repo = SpannerCommitTimestampRepository(db)
    repo.initialize()
    _java_row(db, "eu,us", T1)  # an earlier version's row of the shard ["eu", "us"]
    assert repo.get(SINGERS, shard=["fr"]) is None


def test_a_bytes_shard_value_that_is_not_base64_is_refused_naming_it(make_database):
    db = make_database([])
    with pytest.raises(ValueError, match="not base64"):
        SpannerCommitTimestampRepository(db).set(SINGERS, Checkpoint(T1), shard=[b"\x00\x01"])
