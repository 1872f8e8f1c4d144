"""ChangeStreamWatcher on GoogleSQL and PostgreSQL databases alike: READ_<stream> structs or
spanner.read_json_<stream> records (MUTABLE_KEY_RANGE: ChangeStreamRecord protos from READ_<stream> or
spanner.read_proto_bytes_<stream>), the same changes. Every test runs once per dialect."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from google.cloud import spanner

from tests.watcher.core_support import Collector, insert, insert_t, wait_until
from tests.watcher.dialect_support import DIALECT_NAMES, GOOGLE, database_maker
from watcher import ChangeStreamWatcher, InMemoryProgressStore, State
from watcher.capture.change_streams.spanner_progress import SpannerProgressStore
from watcher.capture.change_streams.stream_info import describe_stream, server_now
from watcher.dialects import dialect_of
from watcher.dialects.schema import watchable_tables_query

STREAM = {GOOGLE: "CREATE CHANGE STREAM everything FOR ALL", "PostgreSQL": "CREATE CHANGE STREAM everything FOR ALL"}
SOME = {GOOGLE: "CREATE CHANGE STREAM part FOR C", "PostgreSQL": 'CREATE CHANGE STREAM part FOR "C"'}
# Upper case kept: PostgreSQL reads it with the whole function name double-quoted.
MOVING = {GOOGLE: "CREATE CHANGE STREAM Moving FOR ALL OPTIONS (partition_mode = 'MUTABLE_KEY_RANGE')",
          "PostgreSQL": """CREATE CHANGE STREAM "Moving" FOR ALL WITH (partition_mode = 'MUTABLE_KEY_RANGE')"""}
HEARTBEAT = dt.timedelta(seconds=1)


@pytest.fixture(params=DIALECT_NAMES)
def dialect(request):
    return request.param


@pytest.fixture
def stream_db(make_database, dialect):
    return database_maker(make_database, dialect)("T", "C", extra=[STREAM[dialect], SOME[dialect]])


def _read(db, start, end, stream="everything", **kwargs):
    w = ChangeStreamWatcher(db, stream, heartbeat=HEARTBEAT, start=start, end=end, progress=InMemoryProgressStore(),
                            **kwargs)
    got = Collector()
    w.add_callback(got)
    w.start()
    assert w.wait(30), "the watcher did not reach its end"
    assert w.failure is None and w.state == State.STOPPED
    return got.changes


def test_the_stream_is_described_from_information_schema_in_either_dialect(stream_db):
    every = describe_stream(stream_db, "Everything")
    assert (every.name, every.all_tables, sorted(every.tables)) == ("everything", True, ["C", "T"])
    part = describe_stream(stream_db, "PART")
    assert (part.name, part.all_tables, part.tables) == ("part", False, ("C",))


def test_inserts_updates_and_deletes_arrive_typed_in_commit_order(stream_db):
    start = server_now(stream_db)
    first = insert_t(stream_db, [1, 2])
    insert_t(stream_db, [1], name="again")
    insert(stream_db, "C", ("A", "B", "V"), [(5, None, 50)])
    with stream_db.batch() as batch:
        batch.delete("T", spanner.KeySet(keys=[[2]]))
    end = batch.committed + dt.timedelta(milliseconds=10)
    changes = _read(stream_db, start, end)
    seen = [(c.table, c.keys, c.mod_type) for c in sorted(changes, key=lambda c: (c.commit_timestamp, c.table, c.keys))]
    assert seen == [("T", (1,), "INSERT"), ("T", (2,), "INSERT"), ("T", (1,), "UPDATE"), ("C", (5, None), "INSERT"),
                    ("T", (2,), "DELETE")]
    one = next(c for c in changes if c.keys == (1,) and c.mod_type == "INSERT")
    assert one.row == {"Id": 1, "Name": "x1", "Ts": first} and one.commit_timestamp == first
    assert next(c for c in changes if c.table == "C").row == {"A": 5, "B": None, "V": 50, "Ts": changes[3].commit_timestamp}


def test_a_mutable_key_range_stream_gives_the_same_changes_as_the_original_mode(make_database, dialect):
    """PostgreSQL reads a MUTABLE_KEY_RANGE stream with spanner."read_proto_bytes_Moving"; the changes are those the
    original partition mode gives, in commit order per key, with the stream's mixed-case name kept."""
    db = database_maker(make_database, dialect)("T", extra=[STREAM[dialect], MOVING[dialect]])
    start = server_now(db)
    insert_t(db, [1, 2])
    insert_t(db, [1], name="again")
    with db.batch() as batch:
        batch.delete("T", spanner.KeySet(keys=[[2]]))
    end = batch.committed + dt.timedelta(milliseconds=10)
    assert describe_stream(db, "moving").name == "Moving"

    def seen(changes):
        return sorted((c.commit_timestamp, c.keys, c.mod_type, tuple(sorted(c.row.items()))) for c in changes)

    moving = _read(db, start, end, "Moving")
    assert [(keys, mod) for _, keys, mod, _ in seen(moving)] == [((1,), "INSERT"), ((2,), "INSERT"), ((1,), "UPDATE"),
                                                                 ((2,), "DELETE")]
    assert seen(moving) == seen(_read(db, start, end))


def test_each_partition_mode_has_its_own_read_function_in_postgresql(make_database):
    db = database_maker(make_database, "PostgreSQL")("T", extra=[STREAM["PostgreSQL"], MOVING["PostgreSQL"]])
    start = server_now(db)
    types = {"p1": spanner.param_types.TIMESTAMP, "p2": spanner.param_types.TIMESTAMP}
    for query, right in [('SELECT * FROM spanner."read_json_Moving"($1, $2, NULL, 1000, NULL)', '"read_proto_bytes_Moving"'),
                         ("SELECT * FROM spanner.read_proto_bytes_everything($1, $2, NULL, 1000, NULL)",
                          "read_json_everything")]:
        with pytest.raises(Exception, match="Table-valued function not found") as refused, db.snapshot() as snap:
            list(snap.execute_sql(query, params={"p1": start, "p2": start + dt.timedelta(seconds=1)}, param_types=types))
        assert right.strip('"') in str(refused.value)
    with db.snapshot() as snap:
        result = snap.execute_sql('SELECT * FROM "spanner"."read_proto_bytes_Moving"($1, $2, NULL, 1000, NULL)',
                                  params={"p1": start, "p2": start + dt.timedelta(seconds=1)}, param_types=types)
        rows = list(result)
        assert [f.name for f in result.fields] == ["read_proto_bytes_Moving"]
    from google.cloud.spanner_v1.types import ChangeStreamRecord

    (first,) = rows  # BYTES, which the client hands over as base64
    assert ChangeStreamRecord.deserialize(base64.b64decode(first[0])).partition_start_record.partition_tokens


def test_a_stream_on_some_tables_reads_only_them(stream_db):
    start = server_now(stream_db)
    insert_t(stream_db, [1])
    insert(stream_db, "C", ("A", "B", "V"), [(1, "b", 1)])
    end = server_now(stream_db)
    assert [(c.table, c.keys) for c in _read(stream_db, start, end, "part")] == [("C", (1, "b"))]


def test_the_progress_table_is_made_written_and_read_in_the_databases_dialect(stream_db, dialect):
    """The default progress store: its table is created in the watched database's dialect (lower-case names in
    PostgreSQL), holds the first watcher's partitions, and a second watcher reading it loses nothing."""
    start = server_now(stream_db)
    first = Collector()
    w1 = ChangeStreamWatcher(stream_db, "everything", heartbeat=HEARTBEAT, start=start)
    w1.add_callback(first)
    w1.start()
    try:
        insert_t(stream_db, [1, 2, 3])
        first.wait_for(3, timeout=30)
    finally:
        w1.stop()
    assert w1.failure is None
    stored = SpannerProgressStore(stream_db).load("everything", "default")
    assert stored and all(p.watermark >= start for p in stored)
    insert_t(stream_db, [4, 5])
    second = Collector()
    w2 = ChangeStreamWatcher(stream_db, "everything", heartbeat=HEARTBEAT, start=start)
    w2.add_callback(second)
    w2.start()
    try:
        wait_until(lambda: {(4,), (5,)} <= {c.keys for c in list(second.changes)}, timeout=30)
    finally:
        w2.stop()
    assert sorted(c.keys for c in first.changes if c.table == "T") == [(1,), (2,), (3,)]
    with stream_db.snapshot() as snap:
        tables = [r[0] for r in snap.execute_sql(watchable_tables_query(dialect_of(stream_db)).sql)]
    progress = "WATCHER_CHANGE_STREAM_PARTITIONS" if dialect == GOOGLE else "watcher_change_stream_partitions"
    assert progress in tables  # its UPDATED_AT holds commit timestamps, in either dialect's way
