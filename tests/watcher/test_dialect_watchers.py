"""TableWatcher and DatabaseWatcher end to end on GoogleSQL and PostgreSQL databases alike.

Every test runs once per dialect, against databases made through the official client; the watcher
finds the dialect from the database. Ground truth is what the writers committed: every row version
current at some poll reaches the callbacks (LIMIT cutting a group of rows sharing one commit
timestamp, concurrent writers, a restart from the checkpoint table, a column added while watching).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import random
import threading
import time

import pytest
from google.cloud import spanner
from google.cloud.spanner_v1 import JsonObject

from tests.watcher.core_support import Collector, insert, insert_t, wait_until
from tests.watcher.dialect_support import ADD_EXTRA, DIALECT_NAMES, GOOGLE, TABLES, database_maker
from watcher import (
    MIN_TIMESTAMP,
    ChangeSetWatcher,
    DatabaseWatcher,
    FixedShardProvider,
    InMemoryCommitTimestampRepository,
    Interval,
    NotNullShardProvider,
    RetryPolicy,
    SpannerCommitTimestampRepository,
    State,
    TableNotFoundError,
    TableNotWatchableError,
    TableWatcher,
    TimebasedShardProvider,
)
from watcher.capture.helper_tables.change_sets import (
    change_set_batch,
    change_set_column_ddl,
    change_sets_table_ddl,
    run_in_change_set_transaction,
)
from watcher.dialects import GOOGLE_SQL, POSTGRESQL
from watcher.errors import ColumnNotFoundError

FAST = RetryPolicy(initial=0.001, maximum=0.01)
WATCHER_DIALECTS = {"GoogleSQL": GOOGLE_SQL, "PostgreSQL": POSTGRESQL}


@pytest.fixture(params=DIALECT_NAMES)
def dialect(request):
    return request.param


@pytest.fixture
def make_db(make_database, dialect):
    return database_maker(make_database, dialect)


@pytest.fixture
def watch():
    """Build TableWatchers with fast test defaults (the checkpoint table in the watched database); all stopped after."""
    made: list[TableWatcher] = []

    def make(database, table="T", **kwargs) -> TableWatcher:
        kwargs.setdefault("poll_interval", 0.005)
        kwargs.setdefault("retry_policy", FAST)
        w = TableWatcher(database, table, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop(timeout=5)


def test_the_dialect_is_found_from_the_database_and_the_schema_read_in_it(make_db, dialect, watch):
    db = make_db("T")
    w = watch(db, initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(lambda change: None)
    w.start()
    assert w.info is not None
    assert w.info.dialect is WATCHER_DIALECTS[dialect]
    assert (w.info.commit_timestamp_column, w.info.key_columns) == ("Ts", ("Id",))
    assert w.info.column_types == {"Id": "INT64", "Name": "STRING(MAX)", "Ts": "TIMESTAMP"}


def test_limit_cutting_groups_of_one_commit_timestamp_loses_nothing(make_db, watch):
    db = make_db("T")
    sizes = [25, 3, 8, 1, 13]
    stamps = [insert_t(db, range(g * 100, g * 100 + n)) for g, n in enumerate(sizes)]
    got = Collector()
    w = watch(db, limit=4, initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    got.wait_for(sum(sizes))
    time.sleep(0.05)
    assert got.keys() == [(g * 100 + i,) for g, n in enumerate(sizes) for i in range(n)]
    assert [c.commit_timestamp for c in got.changes] == [stamps[g] for g, n in enumerate(sizes) for _ in range(n)]


def test_a_group_with_null_key_parts_cut_by_limit_is_delivered_in_key_order(make_db, watch):
    db = make_db("C")
    rows = [(a, b, a) for a in range(3) for b in (None, "x", "y")]
    random.Random(7).shuffle(rows)
    insert(db, "C", ("A", "B", "V"), rows)
    got = Collector()
    w = watch(db, "C", limit=2, initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    got.wait_for(len(rows))
    time.sleep(0.05)
    assert got.keys() == [(a, b) for a in range(3) for b in (None, "x", "y")]


@pytest.mark.parametrize("k", [0, 6, 11])
def test_restart_from_the_checkpoint_table_after_a_stop_inside_a_group(make_db, watch, k):
    """A stop at row k of a 12-row group cut by LIMIT 5; a new watcher on a new checkpoint store object
    (as after a process restart) reads the checkpoint table and delivers rows k+1.. exactly once."""
    db = make_db("T")
    insert_t(db, range(12))
    tail = insert_t(db, [100, 101])
    holder: dict[str, TableWatcher] = {}

    def stop_at_k(change, index):
        if index == k:
            holder["w"].stop()

    first = Collector(stop_at_k)
    holder["w"] = w1 = watch(db, limit=5, initial_timestamp=MIN_TIMESTAMP, checkpoints=SpannerCommitTimestampRepository(db))
    w1.add_callback(first)
    w1.start()
    wait_until(lambda: w1.state == State.STOPPED)
    assert first.keys() == [(i,) for i in range(k + 1)]

    second = Collector()
    w2 = watch(db, limit=5, initial_timestamp=MIN_TIMESTAMP, checkpoints=SpannerCommitTimestampRepository(db))
    w2.add_callback(second)
    w2.start()
    second.wait_for(12 - k - 1 + 2)
    time.sleep(0.05)
    assert second.keys() == [(i,) for i in range(k + 1, 12)] + [(100,), (101,)]
    assert second.changes[-1].commit_timestamp == tail


def test_concurrent_writers_every_insert_and_the_last_version_of_every_key_arrive(make_db, watch):
    db = make_db("T")
    got = Collector()
    w = watch(db, limit=7)
    w.add_callback(got)
    w.start()
    writers, per_writer = 4, 30
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            rng = random.Random(n)
            for i in range(per_writer):
                insert_t(db, [n * 1000 + i], name="v1-")
                if i and rng.random() < 0.5:  # update an earlier row of this writer
                    insert_t(db, [n * 1000 + rng.randrange(i)], name="v2-")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with db.snapshot() as snap:
        final = {row[0]: (row[1], row[2]) for row in snap.read("T", ("Id", "Name", "Ts"), spanner.KeySet(all_=True))}
    assert len(final) == writers * per_writer

    def seen_final() -> bool:
        last = {c.keys[0]: (c.row["Name"], c.commit_timestamp) for c in list(got.changes)}
        return last == final

    wait_until(seen_final, timeout=30)
    stamps = [c.commit_timestamp for c in got.changes]
    assert stamps == sorted(stamps)


def test_a_column_added_while_watching_arrives_typed_in_later_rows(make_db, dialect, watch):
    db = make_db("T")
    got = Collector()
    w = watch(db)
    w.add_callback(got)
    w.start()
    insert_t(db, [1])
    got.wait_for(1)
    db.update_ddl([ADD_EXTRA[dialect]]).result(120)
    insert(db, "T", ("Id", "Name", "Extra"), [(2, "n2", "more")])
    got.wait_for(2)
    assert "Extra" not in got.changes[0].row
    assert got.changes[1].row["Extra"] == "more"
    assert got.changes[1].column_types["Extra"] == "STRING"
    assert w.state == State.RUNNING


def test_an_array_shard_provider_and_a_hint_in_either_form_read_the_null_filtered_index(make_db, dialect, watch):
    db = make_db("S", "S_IDX")
    insert(db, "S", ("Id", "Name"), [(i, f"n{i}") for i in range(40)])
    with db.snapshot() as snap:
        shard_of = dict(snap.execute_sql('SELECT "Id", "Shard" FROM "S"' if dialect != GOOGLE else "SELECT Id, Shard FROM S"))
    wanted = [0, 1, 2]
    hint = "@{FORCE_INDEX=Idx_S_Shard_Ts}" if dialect == GOOGLE else "/*@ FORCE_INDEX=Idx_S_Shard_Ts */"
    for given in (hint, "@{FORCE_INDEX=Idx_S_Shard_Ts}"):
        got = Collector()
        w = watch(db, "S", shard_provider=FixedShardProvider("Shard", wanted), table_hint=given,
                  initial_timestamp=MIN_TIMESTAMP, checkpoints=InMemoryCommitTimestampRepository(), limit=5)
        w.add_callback(got)
        w.start()
        expected = sorted((i,) for i, s in shard_of.items() if s in wanted)
        got.wait_for(len(expected))
        time.sleep(0.05)
        w.stop()
        assert sorted(got.keys()) == expected


def test_a_table_without_a_commit_timestamp_column_is_refused_in_the_dialects_words(make_db, dialect, watch):
    db = make_db("NOTS")
    with pytest.raises(TableNotWatchableError) as caught:
        watch(db, "NoTs").start()
    word = "allow_commit_timestamp" if dialect == GOOGLE else "spanner.commit_timestamp"
    assert word in str(caught.value) and "NoTs" in str(caught.value)


def test_database_watcher_watches_every_table_and_one_created_later(make_db, dialect, make_database):
    db = make_db("T", "C")
    got = Collector()
    w = DatabaseWatcher(db, poll_interval=0.005, discover_interval=0.2, initial_timestamp=MIN_TIMESTAMP,
                        retry_policy=FAST)
    w.add_callback(got)
    try:
        insert_t(db, range(5))
        insert(db, "C", ("A", "B", "V"), [(1, None, 1), (1, "b", 2)])
        w.start()
        got.wait_for(7, timeout=20)
        db.update_ddl([TABLES[dialect]["U"]]).result(120)
        insert(db, "U", ("Id", "Name"), [(1, "u1"), (2, "u2")])
        got.wait_for(9, timeout=20)
        time.sleep(0.1)
        by_table: dict[str, list] = {}
        for c in got.changes:
            by_table.setdefault(c.table, []).append(c.keys)
        assert by_table == {"T": [(i,) for i in range(5)], "C": [(1, None), (1, "b")], "U": [(1,), (2,)]}
    finally:
        w.stop()


def test_a_dropped_table_fails_its_watcher_with_table_not_found(make_db, dialect, watch):
    db = make_db("T")
    got = Collector()
    w = watch(db)
    w.add_callback(got)
    w.start()
    insert_t(db, [1])
    got.wait_for(1)
    db.update_ddl(["DROP TABLE T" if dialect == GOOGLE else 'DROP TABLE "T"']).result(60)
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, TableNotFoundError) and w.failure.table == "T"


def test_a_dropped_shard_column_fails_its_watcher_naming_the_column(make_db, dialect, watch):
    db = make_db("C")
    w = watch(db, "C", shard_provider=NotNullShardProvider("V"))
    w.add_callback(Collector())
    w.start()
    wait_until(lambda: w.stats()["polls"] >= 1)
    db.update_ddl(["ALTER TABLE C DROP COLUMN V" if dialect == GOOGLE else 'ALTER TABLE "C" DROP COLUMN "V"']).result(60)
    wait_until(lambda: w.state == State.FAILED)
    assert isinstance(w.failure, ColumnNotFoundError) and w.failure.column == "V"
    assert "shard column" in str(w.failure)


def test_the_with_query_far_behind_on_array_shards_delivers_every_row(make_db, watch):
    db = make_db("S", "S_IDX")
    insert(db, "S", ("Id", "Name"), [(i, f"n{i}") for i in range(30)])
    modes: list[bool] = []
    holder: dict[str, TableWatcher] = {}
    got = Collector(lambda change, index: modes.append(holder["w"].stats()["using_with_query"]))
    holder["w"] = w = watch(db, "S", shard_provider=FixedShardProvider("Shard", list(range(-6, 7))), limit=7,
                            fallback_to_with_query_seconds=60, initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    got.wait_for(30)
    time.sleep(0.05)
    assert sorted(got.keys()) == [(i,) for i in range(30)]
    assert modes[0] is True


#: The sample Singers table as a PostgreSQL user writes it: unquoted, so every name folds to lower case.
PG_SINGERS = [
    "CREATE TABLE Singers (SingerId bigint NOT NULL, FirstName varchar(200), LastName varchar(200) NOT NULL, "
    "LastUpdated spanner.commit_timestamp, Processed boolean, ShardId bigint GENERATED ALWAYS AS (CASE WHEN Processed "
    "THEN NULL ELSE mod(spanner.farm_fingerprint(coalesce(FirstName || ' ', '') || LastName), 19) END) STORED, "
    "PRIMARY KEY (SingerId))",
    "CREATE INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated) "
    "WHERE ShardId IS NOT NULL AND LastUpdated IS NOT NULL",
]


def test_the_public_example_runs_on_a_postgresql_schema_of_folded_names(make_database, watch):
    """TableWatcher(database, "Singers", FixedShardProvider("ShardId", ...), "@{FORCE_INDEX=Idx_...}") as the
    README writes it, on a PostgreSQL database whose names are all lower case: each name is found as the
    database spells it."""
    db = database_maker(make_database, "PostgreSQL")(extra=PG_SINGERS)
    with db.batch() as batch:
        batch.insert("singers", ("singerid", "firstname", "lastname", "lastupdated", "processed"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP, i % 5 == 0) for i in range(30)])
    for fallback in (60.0, 0.0):  # the simple query, then the WITH query
        got = Collector()
        w = watch(db, "Singers", shard_provider=FixedShardProvider("ShardId", range(-18, 19)),
                  table_hint="@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}", commit_timestamp_column="LastUpdated",
                  initial_timestamp=MIN_TIMESTAMP, checkpoints=InMemoryCommitTimestampRepository(), limit=4,
                  fallback_to_with_query_seconds=fallback)
        w.add_callback(got)
        w.start()
        got.wait_for(24)
        time.sleep(0.05)
        w.stop()
        assert sorted(got.keys()) == [(i,) for i in range(30) if i % 5]
        assert {c.table for c in got.changes} == {"singers"} and "shardid" in got.changes[0].row


def test_postgresql_values_keep_their_types_and_name_them_as_google_sql_does(make_database, watch):
    db = database_maker(make_database, "PostgreSQL")(extra=[
        'CREATE TABLE "V" ("Id" bigint NOT NULL, "N" numeric, "J" jsonb, "B" bytea, "D" date, "F" double precision, '
        '"A" bigint[], "S" varchar(20), "Ts" spanner.commit_timestamp, PRIMARY KEY ("Id"))'])
    row = (2**62 + 1, decimal.Decimal("12.345"), JsonObject({"a": [1, 2]}), base64.b64encode(b"\x00\xff"),
           dt.date(2024, 2, 29), 1.5, [1, None, 3], "short")
    insert(db, "V", ("Id", "N", "J", "B", "D", "F", "A", "S"), [row])
    got = Collector()
    w = watch(db, "V", initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    got.wait_for(1)
    (change,) = got.changes
    assert change.keys == (2**62 + 1,)
    assert [change.row[c] for c in ("N", "J", "B", "D", "F", "A", "S")] == [
        decimal.Decimal("12.345"), JsonObject({"a": [1, 2]}), b"\x00\xff", dt.date(2024, 2, 29), 1.5, [1, None, 3], "short"]
    assert w.info is not None and w.info.column_types == {
        "Id": "INT64", "N": "NUMERIC", "J": "JSON", "B": "BYTES(MAX)", "D": "DATE", "F": "FLOAT64", "A": "ARRAY<INT64>",
        "S": "STRING(20)", "Ts": "TIMESTAMP"}
    assert change.column_types["N"] == "NUMERIC" and change.column_types["J"] == "JSON"


def test_database_watcher_a_dropped_table_ends_alone(make_db, dialect):
    db = make_db("T", "U")
    got = Collector()
    w = DatabaseWatcher(db, poll_interval=0.005, discover_interval=0.2, retry_policy=FAST)
    w.add_callback(got)
    try:
        w.start()
        insert_t(db, [1])
        got.wait_for(1)
        db.update_ddl(["DROP TABLE U" if dialect == GOOGLE else 'DROP TABLE "U"']).result(60)
        wait_until(lambda: w.database_stats()["tables_dropped"] == 1)
        assert w.state == State.RUNNING and w.failure is None
        insert_t(db, [2])
        got.wait_for(2)
        assert got.keys() == [(1,), (2,)]
    finally:
        w.stop()


#: A table with a time-based shard column, in each dialect.
TIMED = {GOOGLE: ("CREATE TABLE TB (Id INT64 NOT NULL, Name STRING(MAX), ShardId STRING(MAX), "
                  "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"),
         "PostgreSQL": ('CREATE TABLE "TB" ("Id" bigint NOT NULL, "Name" varchar, "ShardId" varchar, '
                        '"Ts" spanner.commit_timestamp, PRIMARY KEY ("Id"))')}


def test_timebased_shards_match_the_current_and_previous_period_in_either_dialect(make_db, dialect, watch):
    db = make_db(extra=[TIMED[dialect]])
    got = Collector()
    w = watch(db, "TB", shard_provider=TimebasedShardProvider("ShardId", Interval.DAY),
              checkpoints=InMemoryCommitTimestampRepository(), initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    w.start()
    now = dt.datetime.now(dt.UTC)
    current = Interval.DAY.shard_id(now)
    yesterday = Interval.DAY.shard_id(now - dt.timedelta(days=1))
    old = Interval.DAY.shard_id(now - dt.timedelta(days=10))
    insert(db, "TB", ("Id", "Name", "ShardId"), [(1, "now", current), (2, "old", old), (3, "none", None)])
    insert(db, "TB", ("Id", "Name", "ShardId"), [(4, "yesterday", yesterday), (5, "now", current)])
    wait_until(lambda: w.stats()["polls"] >= 3 and len(got) >= 2)
    time.sleep(0.05)
    # Yesterday's id only matches during the first minute of a day (the "previous" period).
    expected = {(1,), (5,)} | ({(4,)} if Interval.DAY.shard_id(now - dt.timedelta(seconds=60)) == yesterday else set())
    assert set(got.keys()) == expected and w.failure is None


def test_postgresql_timebased_shards_follow_the_clock_past_the_end_of_a_period(make_database, watch):
    """The ids a PostgreSQL poll sends are those of its provider's clock: the previous period's rows are
    still seen for ``previous_seconds`` after it ended, then only the new period's."""
    db = database_maker(make_database, "PostgreSQL")(extra=[TIMED["PostgreSQL"]])
    midnight = dt.datetime(2024, 3, 6, tzinfo=dt.UTC)
    clock = [midnight + dt.timedelta(seconds=30)]
    got = Collector()
    w = watch(db, "TB", shard_provider=TimebasedShardProvider("ShardId", Interval.DAY, clock=lambda: clock[0]),
              checkpoints=InMemoryCommitTimestampRepository(), initial_timestamp=MIN_TIMESTAMP)
    w.add_callback(got)
    today, yesterday = Interval.DAY.shard_id(midnight), Interval.DAY.shard_id(midnight - dt.timedelta(days=1))
    with w:
        insert(db, "TB", ("Id", "Name", "ShardId"), [(1, "late", yesterday), (2, "early", today)])
        got.wait_for(2)
        polls = w.stats()["polls"]
        clock[0] = midnight + dt.timedelta(minutes=2)
        wait_until(lambda: w.stats()["polls"] > polls)
        insert(db, "TB", ("Id", "Name", "ShardId"), [(3, "too late", yesterday), (4, "today", today)])
        got.wait_for(3)
        polls = w.stats()["polls"]
        wait_until(lambda: w.stats()["polls"] >= polls + 3)
    assert got.keys() == [(1,), (2,), (4,)] and w.failure is None


def test_change_sets_in_either_dialect_deliver_each_change_set_in_order(make_db, dialect):
    d = WATCHER_DIALECTS[dialect]
    quoted = (lambda n: n) if dialect == GOOGLE else (lambda n: f'"{n}"')
    orders = (f"CREATE TABLE {quoted('Orders')} ({quoted('OrderId')} {'INT64' if dialect == GOOGLE else 'bigint'} NOT NULL, "
              f"{quoted('Total')} {'FLOAT64' if dialect == GOOGLE else 'double precision'}"
              + (") PRIMARY KEY (OrderId)" if dialect == GOOGLE else ', PRIMARY KEY ("OrderId"))'))
    db = make_db(extra=[change_sets_table_ddl(dialect=d), orders, *change_set_column_ddl("Orders", dialect=d)])
    got = Collector()
    w = ChangeSetWatcher(db, poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository())  # ALL: found by its column
    assert w.tables() == ["Orders"]
    w.add_callback(got)
    with w:
        def order(txn, cs, order_id):
            txn.insert("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[order_id, 10.0 * order_id, cs]])
            return cs

        first = run_in_change_set_transaction(db, order, 1)
        second = run_in_change_set_transaction(db, order, 2)
        with change_set_batch(db) as (batch, third):
            batch.insert("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[3, 30.0, third]])
        got.wait_for(3)
    assert [(c.keys, c.row["CHANGE_SET_ID"]) for c in got.changes] == [((1,), first), ((2,), second), ((3,), third)]
    stamps = [c.commit_timestamp for c in got.changes]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
