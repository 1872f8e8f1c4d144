"""Schema changes under a running ``spanner_watcher`` query, in both modes, by the batch job's rules.

A column added to a watched table: the rows written after it carry it, earlier rows do not, and
the changelog and the current state show it from then on (as the batch job does:
test_schema_changes.py); a column dropped: later rows lack it. A watched table dropped:
change-stream mode reads the table's changes to the end (the stream keeps them) and goes on
with the other table; polling mode, which cannot read a dropped table's last rows, stops with
one error naming the table and where its changes end, and started again from its checkpoint
without it goes on with the other table. One query per mode in the run's Spark session; each
step waits for the changelog to catch up before the next DDL, so which micro-batch reads a row
is certain.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from google.cloud import spanner

from watcher.changelog import register_views, streaming
from watcher.changelog.streaming.source import SpannerWatcherSource
from watcher.codec import timestamp_text
from watcher.errors import TableNotFoundError

DDL = ["CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(MAX), Sh INT64, "
       "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
       "CREATE TABLE Other (Id INT64 NOT NULL, Name STRING(MAX), "
       "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
       # Whole rows: with OLD_AND_NEW_VALUES an update lists only its written columns, and the changelog
       # completes it from the key's earlier rows, which still hold a column dropped since (README).
       "CREATE CHANGE STREAM AllStream FOR ALL OPTIONS (value_capture_type = 'NEW_ROW_AND_OLD_VALUES')"]
TRIGGER = "200 milliseconds"
WAIT = 120.0  # seconds, an upper bound only: every wait ends as soon as its condition holds

Change = tuple[str, int, str]  # (table, Id, commit timestamp)


class Writers:
    """Commits rows and keeps the ground truth: every change (table, Id, commit timestamp) -> its values."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.changes: dict[Change, dict[str, Any]] = {}

    def write(self, table: str, *rows: dict[str, Any]) -> str:
        with self.db.batch() as batch:
            for row in rows:
                batch.insert_or_update(table, (*row, "Ts"), [(*row.values(), spanner.COMMIT_TIMESTAMP)])
        ts = timestamp_text(batch.committed)
        self.changes.update({(table, row["Id"], ts): row for row in rows})
        return ts

    def ddl(self, statement: str) -> None:
        self.db.update_ddl([statement]).result(60)


def _start(spark: Any, db: Any, tmp_path: Path, writer: streaming.ChangelogWriter, options: dict[str, str]) -> Any:
    streaming.register(spark)
    reader = spark.readStream.format("spanner_watcher").option("database", db.name)
    for name, value in options.items():
        reader = reader.option(name, value)
    return (reader.load().writeStream.foreachBatch(writer).option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime=TRIGGER).start())


def _wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {WAIT:.0f}s waiting for {what}")
        time.sleep(0.05)


def _caught_up(writer: streaming.ChangelogWriter, writers: Writers, query: Any) -> None:
    _wait_for(lambda: writer.stats()["changes_written"] >= len(writers.changes) or not query.isActive,
              "the changes to reach the changelog")
    assert query.exception() is None


def _changelog(spark: Any, warehouse: Path) -> dict[Change, tuple[str, dict[str, Any], dict[str, str]]]:
    """(table, Id, commit timestamp) -> (mod type, new values, column types), failing on a change written twice."""
    register_views(spark, str(warehouse))
    got: dict[Change, tuple[str, dict[str, Any], dict[str, str]]] = {}
    for r in spark.sql("SELECT table_name, keys, commit_timestamp, mod_type, new_values, "
                       "to_json(column_types) AS types FROM changelog").collect():
        change = (r.table_name, int(json.loads(r.keys)["Id"]), r.commit_timestamp)
        assert change not in got, f"{change} was written twice"
        got[change] = (r.mod_type, json.loads(r.new_values or "{}"), json.loads(r.types))
    return got


def _current_state(spark: Any) -> dict[tuple[str, int], tuple[dict[str, Any], dict[str, str]]]:
    return {(r.table_name, int(json.loads(r.keys)["Id"])): (json.loads(r.new_values), json.loads(r.types))
            for r in spark.sql("SELECT table_name, keys, new_values, to_json(column_types) AS types "
                               "FROM current_state").collect()}


def _add_and_drop_a_column(spark: Any, db: Any, tmp_path: Path, options: dict[str, str]) -> tuple[Writers, Any, Any]:
    """Run a query over an added and a dropped column of Items; check the changelog and the
    current state; return the writers, the changelog writer and the query (still running)."""
    writers = Writers(db)
    first = writers.write("Items", {"Id": 1, "Name": "a", "Sh": 1}, {"Id": 2, "Name": "b", "Sh": 2})
    writers.write("Other", {"Id": 1, "Name": "o1"})
    writer = streaming.changelog_writer(str(tmp_path / "warehouse"))
    query = _start(spark, db, tmp_path, writer, {**options, "start": first} if "change_stream" in options else options)
    _caught_up(writer, writers, query)
    writers.ddl("ALTER TABLE Items ADD COLUMN Score FLOAT64")
    added = writers.write("Items", {"Id": 3, "Name": "c", "Sh": 3, "Score": 3.5}, {"Id": 1, "Name": "a2", "Score": 1.5})
    _caught_up(writer, writers, query)
    writers.ddl("ALTER TABLE Items DROP COLUMN Sh")
    dropped = writers.write("Items", {"Id": 4, "Name": "d", "Score": 4.5}, {"Id": 3, "Name": "c2"})
    _caught_up(writer, writers, query)

    log = _changelog(spark, tmp_path / "warehouse")
    assert set(log) == set(writers.changes), "every change written, once"
    for (table, key, ts), (_, values, types) in log.items():
        if table != "Items":
            continue
        assert ("Score" in types) == (ts >= added), f"Items {key} at {ts}: the added column from its ADD on, only"
        assert ("Sh" in types) == (ts < dropped), f"Items {key} at {ts}: the dropped column until its DROP, only"
        assert values["Name"] == writers.changes[(table, key, ts)]["Name"]
    assert log[("Items", 3, added)][1]["Score"] == 3.5 and log[("Items", 4, dropped)][1]["Score"] == 4.5
    state = _current_state(spark)
    assert "Score" not in state[("Items", 2)][1] and state[("Items", 2)][0]["Sh"] == "2", "untouched since the ADD"
    assert state[("Items", 1)][0]["Score"] == 1.5 and state[("Items", 4)][0]["Score"] == 4.5
    assert all("Sh" not in state[("Items", k)][1] for k in (3, 4)), "written after the DROP: no dropped column"
    return writers, writer, query


def test_polling_query_follows_columns_and_stops_naming_a_dropped_table(spark, make_database, tmp_path):
    db = make_database(DDL)
    writers, writer, query = _add_and_drop_a_column(spark, db, tmp_path, {"tables": "*"})
    try:
        last = max(ts for table, _, ts in writers.changes if table == "Items")  # in the changelog: caught up
        writers.ddl("DROP TABLE Items")
        writers.write("Other", {"Id": 2, "Name": "o2"})
        _wait_for(lambda: not query.isActive, "the query to stop at the dropped table")
        error = str(query.exception())
        assert "Table not found: Items (dropped while the spanner_watcher query polled it" in error, error[-3000:]
        held = re.search(r"hold its changes up to commit timestamp (\S+);", error)
        assert held and held.group(1) >= last, "its last change is named as held"
    finally:
        query.stop()
    # Started again from its checkpoint (tables=* finds Items gone): Other goes on, nothing twice.
    writer = streaming.changelog_writer(str(tmp_path / "warehouse"))
    query = _start(spark, db, tmp_path, writer, {"tables": "*"})
    try:
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    assert set(_changelog(spark, tmp_path / "warehouse")) == set(writers.changes)


def test_change_stream_query_follows_columns_and_reads_a_dropped_tables_changes_to_the_end(
        spark, make_database, tmp_path):
    db = make_database(DDL)
    writers, writer, query = _add_and_drop_a_column(spark, db, tmp_path, {"change_stream": "AllStream"})
    try:
        writers.write("Items", {"Id": 5, "Name": "e", "Score": 5.5})  # committed just before the drop
        writers.ddl("DROP TABLE Items")
        writers.write("Other", {"Id": 2, "Name": "o2"})
        _caught_up(writer, writers, query)
        assert query.isActive
    finally:
        query.stop()
    assert set(_changelog(spark, tmp_path / "warehouse")) == set(writers.changes)


def test_a_micro_batch_planned_before_its_table_was_dropped_fails_naming_it(make_database):
    """Without Spark, the reader called as Spark would: planned, then the table dropped, then read
    on an executor. Its rows are gone; the read says so and where the table's changes end."""
    db = make_database(DDL)
    writers = Writers(db)
    reader = SpannerWatcherSource({"database": db.name, "tables": "Items,Other"}).streamReader(None)
    start = reader.initialOffset()
    writers.write("Items", {"Id": 1, "Name": "a", "Sh": 1})
    end = reader.latestOffset(start)
    partitions = reader.partitions(start, end)
    assert partitions, "a micro-batch was planned"
    writers.ddl("DROP TABLE Items")
    with pytest.raises(TableNotFoundError, match=r"Items \(dropped .*\(found reading the micro-batch ending at "
                                                 r".*earlier micro-batches hold none of its changes"):
        [row for p in partitions for row in reader.read(p)]
