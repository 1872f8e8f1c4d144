"""The ``spanner_watcher`` Structured Streaming source and its changelog writer, end to end.

Writers commit rows through the official client while a streaming query runs; the stream's
rows and the changelog must then hold exactly the row versions written (each once), also
across a SIGKILL of the query's process in the middle of a micro-batch and a restart from its
checkpoint. Kept small for a shared 2-core machine: the run's one Spark session (the ``spark``
fixture) wherever possible, one child process only for the kill, a few rows, short triggers,
and waits on conditions rather than fixed sleeps. Offsets and options are tested without Spark.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import pickle
import time
from pathlib import Path

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from tests.changelog.crash_points import STEPS
from tests.changelog.streaming_kill import (
    Killed,
    batches_acknowledged,
    died_at_its_step,
    resume,
    runs_committed,
    start_driver,
    stop,
)
from watcher.changelog import register_views, streaming
from watcher.changelog.input.staging_reader import read_schema_ddl
from watcher.changelog.streaming.offsets import Offset
from watcher.changelog.streaming.options import StreamOptions
from watcher.changelog.streaming.source import SpannerStreamReader
from watcher.changelog.tables.ledger import Ledger
from watcher.codec import timestamp_text
from watcher.errors import ChangelogError, ConfigurationError
from watcher.model import Checkpoint

DDL = ["""CREATE TABLE Events (
    Id INT64 NOT NULL, Payload STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    ShardId INT64 AS (MOD(Id, 3)) STORED) PRIMARY KEY (Id)"""]
#: The first micro-batch cuts through the group of FIRST_GROUP rows sharing one commit timestamp
#: (a third of it per shard, more than ``limit``); the rows written after it fit in about one more.
#: One Spark partition (one Python worker to start) in the queries; two in the reader's own test.
LIMIT = 5
OPTIONS = {"shard_column": "ShardId", "shards": "[0, 1, 2]", "limit": str(LIMIT), "shards_per_partition": "3"}
FIRST_GROUP = 18
#: Between two micro-batches when nothing is new: short, yet not a planning loop that takes a core.
TRIGGER = "200 milliseconds"
FIELDS = [field.split(" ")[0] for field in read_schema_ddl().split(", ")]  # a stream row's fields
WAIT = 300.0  # seconds, an upper bound only: every wait ends as soon as its condition holds


def _path(db) -> str:
    return db.name  # projects/<p>/instances/<i>/databases/<d>


class Writers:
    """Commits groups of new rows (one commit timestamp per group) and remembers every version written."""

    def __init__(self, db) -> None:
        self.db = db
        self.written: dict[tuple[int, str], str] = {}  # (Id, commit timestamp) -> Payload
        self._next = 0

    def insert(self, count: int) -> None:
        ids = list(range(self._next, self._next + count))
        self._next += count
        self._commit([(i, f"p{i}") for i in ids])

    def update(self, ids: list[int]) -> None:
        self._commit([(i, f"u{i}") for i in ids])

    def _commit(self, rows: list[tuple[int, str]]) -> None:
        from google.cloud import spanner

        with self.db.batch() as batch:
            batch.insert_or_update("Events", ("Id", "Payload", "Ts"), [(i, p, spanner.COMMIT_TIMESTAMP) for i, p in rows])
        ts = timestamp_text(batch.committed)
        for i, payload in rows:
            self.written[(i, ts)] = payload

    def run(self, groups: int, pause: float = 0.02) -> None:
        for n in range(groups):
            self.insert(1 + (n * 5) % 7)  # 1..7 rows per commit timestamp
            time.sleep(pause)


def _changelog(spark, warehouse) -> list[tuple[int, str, str, str, dict]]:
    register_views(spark, str(warehouse))
    rows = spark.sql("SELECT keys, commit_timestamp, mod_type, new_values, old_values FROM changelog").collect()
    return [(int(json.loads(r.keys)["Id"]), r.commit_timestamp, r.mod_type, json.loads(r.new_values)["Payload"],
             json.loads(r.old_values)) for r in rows]


def _wait_for(predicate, what: str, timeout: float = WAIT, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


# --- no Spark ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    ({"table": "T"}, "option database is missing"),
    ({"database": "projects/p/instances/i/databases/d"}, "option table"),
    ({"database": "projects/p/x", "table": "T"}, "option database must be projects/"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "shards": "[1]"}, "shard_column and shards"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "shard_column": "S", "shards": "1"},
     "JSON list"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "limit": "0"}, "option limit"),
    ({"database": "projects/p/instances/i/databases/d", "table": "T", "start": "later"}, "start must be"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(ConfigurationError, match=message):
        StreamOptions.parse(options, environ={})


def test_tables_and_emulator_host_are_read_from_the_options():
    o = StreamOptions.parse({"project": "p", "instance": "i", "database_id": "d", "tables": "A, B",
                             "Emulator_Host": "127.0.0.1:1"}, environ={"SPANNER_EMULATOR_HOST": "ignored:2"})
    assert (o.location.project, o.location.database, o.location.emulator_host, o.tables) == ("p", "d", "127.0.0.1:1", ("A", "B"))
    assert StreamOptions.parse({"database": "projects/p/instances/i/databases/d", "tables": "*"}, environ={}).tables == ()


def test_offsets_round_trip_every_kind_of_shard_and_key():
    at = DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.UTC)
    offset = Offset(at, {("Singers", 3): Checkpoint(at, (7, "a", None)), ("Singers", "x"): Checkpoint(at),
                         ("Albums", None): Checkpoint(at, (b"\x00\xff",))})
    saved = json.loads(json.dumps(offset.to_json()))  # as Spark keeps it in the checkpoint's offset log
    assert Offset.from_json(saved) == offset
    assert saved["read_ts"] == "2024-05-01T10:00:00.123456789Z"


@pytest.mark.parametrize(("doc", "message"), [
    ({"v": 2, "read_ts": "2024-05-01T00:00:00Z", "loops": {}}, "newer spanner-watcher"),
    ({"v": 1, "loops": {}}, "malformed"),
    ({"v": 1, "read_ts": "2024-05-01T00:00:00Z", "loops": {"T": {"1": "not a position"}}}, "malformed"),
])
def test_offsets_that_cannot_be_read_are_named(doc, message):
    with pytest.raises(ChangelogError, match=message):
        Offset.from_json(doc)


# --- Spanner, no Spark: the reader's planning and reads called as Spark would --------------------------------

def _micro_batch(reader: SpannerStreamReader, start: dict) -> tuple[dict, list[tuple[int, str]]]:
    """The next offset and the (Id, commit timestamp) of the micro-batch's rows, read partition by partition."""
    end = reader.latestOffset(start)
    if end == start:
        return end, []
    rows = [(int(json.loads(row[FIELDS.index("keys")])[0]), row[FIELDS.index("commit_timestamp")])
            for partition in pickle.loads(pickle.dumps(reader.partitions(start, end)))  # as shipped to executors
            for row in reader.read(partition)]
    return end, rows


@pytest.mark.parametrize("limit", [None, 2])
def test_micro_batches_read_exactly_the_rows_between_their_offsets(make_database, limit):
    db = make_database(DDL)
    writers = Writers(db)
    options = {"database": _path(db), "table": "Events", **OPTIONS, "shards_per_partition": "2"}
    options.pop("limit") if limit is None else options.update(limit=str(limit))
    reader = SpannerStreamReader(StreamOptions.parse(options))
    offset = reader.initialOffset()
    assert _micro_batch(reader, offset) == (offset, []), "nothing committed: no micro-batch"
    seen: list[tuple[int, str]] = []
    for groups in (1, 3, 0, 2):
        writers.run(groups, pause=0)
        for _ in range(50):  # with a limit, a few micro-batches per round
            offset, rows = _micro_batch(reader, offset)
            if not rows:
                break
            seen += rows
        assert sorted(seen) == sorted(writers.written), "every version written, once, in the micro-batches so far"


def test_a_shared_read_of_several_shards_gives_each_loop_the_records_of_its_own_read(make_database):
    db = make_database(DDL)
    writers = Writers(db)
    writers.run(4, pause=0)
    options = {"database": _path(db), "table": "Events", **OPTIONS}
    options.pop("limit")  # all loops move to one position: one read over the three shards
    reader = SpannerStreamReader(StreamOptions.parse(options))
    begin = reader.initialOffset()  # earliest: every row
    end = reader.latestOffset(begin)
    [partition] = reader.partitions(begin, end)
    shared = list(reader.read(partition))
    alone = [row for loop in partition.loops for row in reader.read(dataclasses.replace(partition, loops=(loop,)))]
    batch, seq = FIELDS.index("batch_id"), FIELDS.index("seq")
    assert sorted(shared, key=lambda r: (r[batch], r[seq])) == sorted(alone, key=lambda r: (r[batch], r[seq]))
    assert len({row[batch] for row in shared}) == 3 and len(shared) == len(writers.written)


# --- Spark and Spanner -------------------------------------------------------------------------------------

class StreamRows:
    """``foreachBatch``: notes the (Id, commit timestamp) of every row of a micro-batch, then writes it
    into the changelog with ``writer``."""

    def __init__(self, writer: streaming.ChangelogWriter) -> None:
        self.writer = writer
        self.rows: list[tuple[int, str]] = []

    def __call__(self, frame, batch_id: int) -> None:
        frame = frame.persist()
        try:
            self.rows += [(int(json.loads(r.keys)[0]), r.commit_timestamp)
                          for r in frame.select("keys", "commit_timestamp").collect()]
            self.writer(frame, batch_id)
        finally:
            frame.unpersist()


def _start(spark, db, tmp_path: Path, sink, options: dict[str, str] = OPTIONS) -> object:
    streaming.register(spark)
    reader = spark.readStream.format("spanner_watcher").option("database", _path(db)).option("table", "Events")
    for name, value in options.items():
        reader = reader.option(name, value)
    return (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime=TRIGGER).start())


def _caught_up(writer: streaming.ChangelogWriter, writers: Writers, query) -> bool:
    return writer.stats()["changes_written"] >= len(writers.written) or not query.isActive


def test_stream_and_changelog_equal_what_the_writers_committed(spark, make_database, tmp_path):
    db = make_database(DDL)
    writers = Writers(db)
    writers.insert(FIRST_GROUP)  # before the query starts: one group larger than the limit
    # Compacting every second small file: the micro-batches' runs then go on over compacted tables.
    writer = streaming.changelog_writer(str(tmp_path / "warehouse"), compact_files=2)
    sink = StreamRows(writer)
    query = _start(spark, db, tmp_path, sink)
    try:
        writers.run(3)  # while the query plans and runs its first micro-batch
        _wait_for(lambda: _caught_up(writer, writers, query), "the inserts to reach the changelog")
        assert query.exception() is None
        # Every row seen: update some once; their new versions must come as updates with the old values.
        updated = [0, 5, 13]
        writers.update(updated)
        _wait_for(lambda: _caught_up(writer, writers, query), "the updates to reach the changelog")
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    assert sorted(sink.rows) == sorted(writers.written), "the stream's rows: every version written, each once"
    rows = _changelog(spark, tmp_path / "warehouse")
    assert sorted((i, ts) for i, ts, *_ in rows) == sorted(writers.written)  # each version once, none missing
    assert all(writers.written[(i, ts)] == payload for i, ts, _, payload, _ in rows)
    updates = {i: old for i, _, mod, _, old in rows if mod == "UPDATE"}
    assert updates == {i: {"Payload": f"p{i}", "Ts": updates[i]["Ts"]} for i in updated}
    first = writer.batches()[0]
    assert first.records == 3 * LIMIT, "the first micro-batch takes `limit` rows of each shard's part of the group"
    assert {"read", "classify", "write_changelog"} <= set(first.phases), "where a micro-batch's time went"
    assert {b.engine for b in writer.batches()} == {"driver"}, [b.engine_note for b in writer.batches()]  # small: on the driver
    stats = writer.stats()
    assert stats["changes_written"] == len(writers.written) and stats["freshness_rows"] == len(writers.written)
    assert 0 < stats["freshness"]["p50"] <= stats["freshness"]["p99"] <= stats["freshness"]["p100"] < WAIT
    assert stats["compactions"] > 0 and len(Ledger(str(tmp_path / "warehouse")).table("changelog").file_uris()) < stats["batches"]
    progress = writer.progress(query)
    assert progress["freshness"] == stats["freshness"] and "numInputRows" in progress


@pytest.mark.parametrize("step", STEPS)
def test_a_micro_batch_killed_at_any_step_of_its_run_is_written_once_after_a_restart(spark, make_database, tmp_path,
                                                                                     step):
    """The query's process SIGKILLed in its second micro-batch's run, before its first commit or right after
    one table's (after the last: the changelog holds the micro-batch, Spark has not recorded it)."""
    db = make_database(DDL)
    writers = Writers(db)
    warehouse, checkpoint = tmp_path / "warehouse", tmp_path / "checkpoint"
    writers.insert(FIRST_GROUP)  # more than the first micro-batch takes (the limit): a second one follows
    driver = start_driver(_path(db), tmp_path, {"table": "Events", **OPTIONS}, TRIGGER, die_at=step, skip=1)
    try:
        writers.run(3)
        died_at_its_step(driver, tmp_path)
        acknowledged = batches_acknowledged(checkpoint)
        killed = Killed(acknowledged, runs_committed(warehouse) > acknowledged)
        assert killed.replays == (step == "after:watermarks")
        assert (Ledger(warehouse).open_run() is None) == (step in ("before:runs", "after:watermarks"))
        writers.insert(5)  # committed while no query runs
        writer = streaming.changelog_writer(str(warehouse))
        # The same checkpoint, in this process; without the limit (it only shapes offsets not yet
        # planned): the rest comes in one micro-batch, planned from positions inside groups.
        rest = {k: v for k, v in OPTIONS.items() if k != "limit"}
        resume(_start(spark, db, tmp_path, writer, rest), writer, killed)
    finally:
        stop(driver)
    assert Ledger(warehouse).open_run() is None
    rows = _changelog(spark, warehouse)
    keys = [(i, ts) for i, ts, *_ in rows]
    assert len(keys) == len(set(keys)), "a change was written twice"
    assert sorted(keys) == sorted(writers.written), "a change was lost"
