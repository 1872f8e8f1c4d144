"""Change-stream mode of the ``spanner_watcher`` streaming source, against what the writers committed.

Writers commit inserts, updates and deletes (several per transaction) while the embedded
server splits and merges the stream's partitions every 0.3 s (``churn``). The micro-batches'
rows must be every committed version once (mod types, values, old values, transaction ids),
later micro-batches strictly after earlier ones, and a micro-batch read again must give the
same rows; through the ``foreachBatch`` changelog writer the changelog must equal the ground
truth. Offsets and options are tested without Spanner or Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import pickle
import threading
import time

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import spanner

from tests.changelog.streaming_kill import kill_mid_batch, resume, runs_committed, start_driver, stop
from watcher.changelog import register_views, streaming
from watcher.changelog.input.staging_reader import read_schema_ddl
from watcher.changelog.streaming.offsets import Offset
from watcher.changelog.streaming.options import StreamOptions
from watcher.changelog.streaming.source import SpannerWatcherSource
from watcher.changelog.streaming.stream_offsets import StreamOffset
from watcher.codec import timestamp_text
from watcher.errors import ChangelogError, ChangeStreamNotFoundError, ChangeStreamRetentionError, ConfigurationError

DDL = ["CREATE TABLE Singers (Id INT64 NOT NULL, Name STRING(MAX), Score INT64) PRIMARY KEY (Id)",
       "CREATE CHANGE STREAM SingersStream FOR Singers OPTIONS (value_capture_type = 'OLD_AND_NEW_VALUES')"]
#: The same stream with its key ranges moving between long-lived partitions instead of splitting and merging.
MUTABLE_DDL = [DDL[0], DDL[1].replace("'OLD_AND_NEW_VALUES'", "'OLD_AND_NEW_VALUES', partition_mode = 'MUTABLE_KEY_RANGE'")]
FIELDS = [field.split(" ")[0] for field in read_schema_ddl().split(", ")]
DB = "projects/p/instances/i/databases/d"
WAIT = 120.0  # seconds, an upper bound only


def _wait_for(predicate, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


class Writers:
    """Commits transactions of inserts, updates and deletes; keeps every mod as the ground truth:
    (Id, commit timestamp) -> (mod type, new Name, old Name)."""

    def __init__(self, db) -> None:
        self.db = db
        self.rows: dict[int, str] = {}
        self.mods: dict[tuple[int, str], tuple[str, str | None, str | None]] = {}
        self._next = 0
        self._round = 0

    def step(self) -> None:
        """One transaction: two inserts, an update and a delete of older rows (when there are some)."""
        self._round += 1
        live = sorted(self.rows)
        inserts = [self._next, self._next + 1]
        self._next += 2
        update = live[len(live) // 2: len(live) // 2 + 1]
        delete = live[:1] if len(live) > 3 else []
        with self.db.batch() as batch:
            batch.insert("Singers", ("Id", "Name", "Score"), [(i, f"n{i}", i) for i in inserts])
            if update:
                batch.update("Singers", ("Id", "Name"), [(update[0], f"u{update[0]}.{self._round}")])
            if delete:
                batch.delete("Singers", spanner.KeySet(keys=[[delete[0]]]))
        ts = timestamp_text(batch.committed)
        for i in inserts:
            self.mods[(i, ts)] = ("INSERT", f"n{i}", None)
            self.rows[i] = f"n{i}"
        for i in update:
            new = f"u{i}.{self._round}"
            self.mods[(i, ts)] = ("UPDATE", new, self.rows[i])
            self.rows[i] = new
        for i in delete:
            self.mods[(i, ts)] = ("DELETE", None, self.rows.pop(i))

    def run(self, steps: int, pause: float = 0.05) -> None:
        for _ in range(steps):
            self.step()
            time.sleep(pause)  # spread over a few churn periods: splits and merges in between


def _mod_of(row: dict) -> tuple[tuple[int, str], tuple[str, str | None, str | None]]:
    values, old = json.loads(row["values"]), json.loads(row["old_values"] or "{}")
    key = (int(json.loads(row["keys"])[0]), row["commit_timestamp"])
    return key, (row["mod_type"], values.get("Name") if row["mod_type"] != "DELETE" else None, old.get("Name"))


# --- no Spanner -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    ({"shards": "[1]", "shard_column": "S"}, "excludes the poll option"),
    ({"limit": "10"}, "excludes the poll option.*limit"),
    ({"table_hint": "@{FORCE_INDEX=I}"}, "table_hint"),
    ({"start": "earliest"}, "start must be now or an RFC 3339 timestamp"),
])
def test_change_stream_mode_refuses_poll_options_and_bad_starts(options, message):
    with pytest.raises(ConfigurationError, match=message):
        StreamOptions.parse({"database": DB, "change_stream": "SingersStream", **options}, environ={})


def test_change_stream_mode_options_need_no_table():
    o = StreamOptions.parse({"database": DB, "change_stream": "SingersStream", "start": "2024-05-01T10:00:00.5Z"},
                            environ={})
    assert (o.change_stream, o.tables, o.start) == ("SingersStream", (), "2024-05-01T10:00:00.500000000Z")
    with pytest.raises(ConfigurationError, match="change stream"):
        StreamOptions.parse({"database": DB, "change_stream": "no such"}, environ={})


def test_change_stream_offsets_round_trip_and_are_told_from_polling_offsets():
    at = DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.UTC)
    offset = StreamOffset(at, {"b": at, "a": at})
    saved = json.loads(json.dumps(offset.to_json()))  # as Spark keeps it in the checkpoint's offset log
    assert StreamOffset.from_json(saved) == offset
    with pytest.raises(ChangelogError, match="polling query needs a new checkpoint"):
        Offset.from_json(saved)
    with pytest.raises(ChangelogError, match="change-stream query needs a new checkpoint"):
        StreamOffset.from_json(Offset(at, {}).to_json())
    with pytest.raises(ChangelogError, match="malformed"):
        StreamOffset.from_json({**saved, "frontier": {"a": "not a time"}})


# --- Spanner, no Spark: the reader called as Spark would -----------------------------------------------------

def _reader(db, **options):
    source = SpannerWatcherSource({"database": db.name, "change_stream": "SingersStream", **options})
    return source.streamReader(None)


def _read(reader, start: dict, end: dict) -> list[dict]:
    partitions = pickle.loads(pickle.dumps(reader.partitions(start, end)))  # as shipped to executors
    return [dict(zip(FIELDS, row, strict=True)) for p in partitions for row in reader.read(p)]


@pytest.mark.parametrize("ddl", [DDL, MUTABLE_DDL], ids=["IMMUTABLE_KEY_RANGE", "MUTABLE_KEY_RANGE"])
def test_micro_batches_hold_every_version_once_across_partition_churn(make_database, churn, ddl):
    """In both partition modes: partitions that split and merge, or key ranges moving between long-lived ones."""
    db = make_database(ddl)
    writers = Writers(db)
    writers.step()  # before the query starts: start "now" leaves it out
    reader = _reader(db)
    offset = reader.initialOffset()
    assert reader.latestOffset(offset) == offset, "nothing committed since the start: no micro-batch"
    before = dict(writers.mods)
    batches: list[list[dict]] = []
    for steps in (4, 0, 3, 5):
        writers.run(steps)
        end = reader.latestOffset(offset)
        if steps == 0:
            assert end == offset
            continue
        rows = _read(reader, offset, end)
        # Read again by a new reader, as after a restart from the checkpoint: planned again, the same rows.
        assert _read(_reader(db, max_partitions="2"), offset, end) == rows, "a micro-batch read again differs"
        batches.append(rows)
        offset = end
    tokens = {r["partition_token"] for rows in batches for r in rows}
    assert len(tokens) >= (2 if ddl is MUTABLE_DDL else 4), "the stream's partitions churned between the micro-batches"
    mods = [_mod_of(r) for rows in batches for r in rows]
    assert len(mods) == len({key for key, _ in mods}), "a version came twice"
    assert dict(mods) == {k: v for k, v in writers.mods.items() if k not in before}, "every version, as committed"
    for earlier, later in zip(batches, batches[1:], strict=False):
        assert max(r["commit_timestamp"] for r in earlier) < min(r["commit_timestamp"] for r in later)
    rows = [r for b in batches for r in b]
    per_key: dict[int, list[str]] = {}
    for (key, ts), _ in mods:
        per_key.setdefault(key, []).append(ts)
    assert all(tss == sorted(tss) for tss in per_key.values()), "a key's versions come in commit order"
    assert {r["read_method"] for r in rows} == {"change_stream"} and all(r["server_transaction_id"] for r in rows)
    for r in rows:  # each segment is one staged batch: seq numbers 0..n-1
        assert r["seq"] < sum(1 for o in rows if o["batch_id"] == r["batch_id"])


def test_start_at_a_timestamp_reads_from_there(make_database):
    db = make_database(DDL)
    writers = Writers(db)
    writers.step()
    first = min(ts for _, ts in writers.mods)
    writers.step()
    reader = _reader(db, start=first)
    offset = reader.initialOffset()
    rows = _read(reader, offset, reader.latestOffset(offset))
    assert dict(_mod_of(r) for r in rows) == writers.mods


def test_unknown_stream_and_start_outside_retention_are_named(make_database):
    db = make_database(DDL)
    with pytest.raises(ChangeStreamNotFoundError, match="NoSuchStream"):
        SpannerWatcherSource({"database": db.name, "change_stream": "NoSuchStream"}).streamReader(None).initialOffset()
    with pytest.raises(ChangeStreamRetentionError, match="SingersStream"):
        _reader(db, start="2000-01-01T00:00:00Z").initialOffset()


# --- Spark and Spanner -------------------------------------------------------------------------------------

def test_changelog_through_the_stream_equals_what_was_committed(spark, make_database, churn, tmp_path):
    """Two micro-batches (the changelog job's fixed cost dominates this test): the changes before
    the query started (``start`` at the first commit), then those committed while it runs."""
    db = make_database(DDL)
    writers = Writers(db)
    writers.run(5)
    first = min(ts for _, ts in writers.mods)
    writer = streaming.changelog_writer(str(tmp_path / "warehouse"))
    streaming.register(spark)
    query = (spark.readStream.format("spanner_watcher").option("database", db.name)
             .option("change_stream", "SingersStream").option("start", first).load()
             .writeStream.foreachBatch(writer).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        query.processAllAvailable()
        writers.run(4)
        _wait_for(lambda: writer.stats()["changes_written"] >= len(writers.mods) or not query.isActive,
                  "the changes to reach the changelog")
        assert query.exception() is None
    finally:
        query.stop()
    assert writer.stats()["changes_written"] == len(writers.mods)
    assert _changelog_mods(spark, tmp_path / "warehouse") == writers.mods


def _changelog_mods(spark, warehouse) -> dict[tuple[int, str], tuple[str, str | None, str | None]]:
    """The changelog's rows as the writers' ground truth holds them (failing on a change written twice)."""
    register_views(spark, str(warehouse))
    got = {}
    for r in spark.sql("SELECT keys, commit_timestamp, mod_type, new_values, old_values FROM changelog").collect():
        key = (int(json.loads(r.keys)["Id"]), r.commit_timestamp)
        assert key not in got, "a change was written twice"
        new = json.loads(r.new_values or "{}").get("Name") if r.mod_type != "DELETE" else None
        got[key] = (r.mod_type, new, json.loads(r.old_values or "{}").get("Name"))
    return got


@pytest.mark.parametrize("ddl", [DDL, MUTABLE_DDL], ids=["IMMUTABLE_KEY_RANGE", "MUTABLE_KEY_RANGE"])
def test_change_stream_query_killed_mid_batch_resumes_from_its_checkpoint(spark, make_database, tmp_path, ddl):
    """The query in a child process is killed between a micro-batch's changelog commit and Spark's;
    started again from its checkpoint in this process, it replays that micro-batch (planned again
    from the two offsets) and goes on, in either partition mode. Without churn: its planning cost
    grows with the window since the kill, and a replan across splits and merges is the test of the
    reads above."""
    db = make_database(ddl)
    writers = Writers(db)
    writers.run(3)
    first = min(ts for _, ts in writers.mods)
    options = {"change_stream": "SingersStream", "start": first}
    driver = start_driver(db.name, tmp_path, options, "200 milliseconds")
    done = threading.Event()

    def keep_writing() -> None:
        """Should the kill miss the first micro-batch's moment, the next micro-batches give it more
        (few changes: the first micro-batch holds the changes before the child started)."""
        while not (done.is_set() or runs_committed(tmp_path / "warehouse")):
            done.wait(0.05)
        while not done.is_set():
            writers.step()
            done.wait(0.5)

    background = threading.Thread(target=keep_writing)
    background.start()
    try:
        killed = kill_mid_batch(driver, tmp_path)
        done.set()
        background.join(30)
        writers.run(2)  # committed while no query runs
        writer = streaming.changelog_writer(str(tmp_path / "warehouse"))
        streaming.register(spark)
        reader = spark.readStream.format("spanner_watcher").option("database", db.name)
        for name, value in options.items():
            reader = reader.option(name, value)
        resume(reader.load().writeStream.foreachBatch(writer)
               .option("checkpointLocation", str(tmp_path / "checkpoint")).start(), writer, killed)
    finally:
        done.set()
        stop(driver)
    assert _changelog_mods(spark, tmp_path / "warehouse") == writers.mods
