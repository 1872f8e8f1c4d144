"""The changelog across schema changes: local Spanner -> DatabaseWatcher + StagingSink -> the job, twice.

Each record keeps the types it was read with; runs with different column sets of one table
merge (current state as last read per key); old values compare only columns in both rows.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.cloud import spanner

from tests.conftest import AND_AUTO
from tests.watcher.core_support import wait_until
from watcher import DatabaseWatcher
from watcher.changelog import Changelog
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.codec import decode_value
from watcher.model import MIN_TIMESTAMP
from watcher.staging.sink import StagingSink

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("an update whose columns changed (Spark's exact old-values path)")]

DDL = ["CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(10), Sh INT64, "
       "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"]


def _write(db: Any, row: dict[str, Any]) -> None:
    with db.batch() as batch:
        batch.insert_or_update("Items", (*row, "Ts"), [(*row.values(), spanner.COMMIT_TIMESTAMP)])


def _ddl(db: Any, statement: str) -> None:
    db.update_ddl([statement]).result(60)


@AND_AUTO
def test_changelog_keeps_each_records_types_across_added_dropped_and_widened_columns(spark, make_database, tmp_path):
    db = make_database(DDL)
    staging, warehouse = str(tmp_path / "staging"), str(tmp_path / "warehouse")
    sink = StagingSink(staging, fsync=False)
    watcher = DatabaseWatcher(db, poll_interval=0.02, initial_timestamp=MIN_TIMESTAMP,
                              checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(watcher)

    def step(row: dict[str, Any]) -> None:
        done = sink.records_written
        _write(db, row)
        wait_until(lambda: sink.records_written > done, timeout=20)

    def run() -> Any:
        return Changelog(spark).staging(staging).warehouse(warehouse).run()

    with watcher:
        step({"Id": 1, "Name": "a", "Sh": 5})
        step({"Id": 2, "Name": "b", "Sh": 6})
        first = run()
        _ddl(db, "ALTER TABLE Items ADD COLUMN Raw BYTES(MAX)")
        _ddl(db, "ALTER TABLE Items ADD COLUMN Score FLOAT64")
        step({"Id": 1, "Name": "a2", "Raw": base64.b64encode(b"\x00\xff"), "Score": 1.5})
        _ddl(db, "ALTER TABLE Items DROP COLUMN Sh")
        _ddl(db, "ALTER TABLE Items ALTER COLUMN Name STRING(MAX)")
        step({"Id": 1, "Name": "a-much-longer-name-than-ten", "Score": 2.5})
        assert watcher.failure is None and watcher.watchers["Items"].failure is None
    second = run()
    assert first.changes_written == 2 and second.changes_written == 2 and second.quarantined == []

    rows = spark.sql("SELECT keys, mod_type, new_values, old_values, to_json(column_types) AS types, commit_timestamp "
                     "FROM changelog WHERE keys = '{\"Id\":\"1\"}' ORDER BY commit_timestamp").collect()
    assert [r.mod_type for r in rows] == ["UPSERT", "UPDATE", "UPDATE"]
    types = [json.loads(r.types) for r in rows]
    assert types[0] == {"Id": "INT64", "Name": "STRING", "Sh": "INT64", "Ts": "TIMESTAMP"}
    assert types[1] == {**types[0], "Raw": "BYTES", "Score": "FLOAT64"}
    assert types[2] == {"Id": "INT64", "Name": "STRING", "Raw": "BYTES", "Score": "FLOAT64", "Ts": "TIMESTAMP"}
    added, dropped = json.loads(rows[1].new_values), json.loads(rows[2].new_values)
    assert decode_value(types[1]["Raw"], added["Raw"]) == b"\x00\xff" and added["Score"] == 1.5
    assert "Sh" not in dropped and dropped["Name"] == "a-much-longer-name-than-ten" and dropped["Raw"] == added["Raw"]
    # Old values: only columns of both rows (an added column had no old value, a dropped one no new value).
    assert json.loads(rows[1].old_values) == {"Name": "a", "Ts": rows[0].commit_timestamp}
    assert json.loads(rows[2].old_values) == {"Name": "a2", "Score": 1.5, "Ts": rows[1].commit_timestamp}

    # Current state: each key as last read; key 2 was not written after the DROP, so it keeps Sh.
    state = {json.loads(r.keys)["Id"]: (json.loads(r.new_values), json.loads(r.types)) for r in spark.sql(
        "SELECT keys, new_values, to_json(column_types) AS types FROM current_state").collect()}
    assert state["1"] == (dropped, types[2])
    assert state["2"][0]["Sh"] == "6" and state["2"][1] == types[0]
