"""End to end: local Spanner -> TableWatcher + StagingSink -> the changelog job.

Talks to Spanner only through the official client (runs against the emulator too).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pytest
from google.cloud import spanner

from tests.watcher.core_support import wait_until
from watcher import TableWatcher
from watcher.changelog import Changelog
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.codec import decode_value
from watcher.model import MIN_TIMESTAMP
from watcher.staging.sink import StagingSink

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("a soft-delete column")]

DDL = ["""CREATE TABLE Items (
    Id INT64 NOT NULL, Name STRING(MAX), Price NUMERIC, Raw BYTES(MAX), Day DATE, Tags ARRAY<STRING(MAX)>,
    Deleted BOOL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"""]
COLUMNS = ("Id", "Name", "Price", "Raw", "Day", "Tags", "Deleted", "Ts")


def _write(db, rows):
    with db.batch() as batch:
        batch.insert_or_update("Items", COLUMNS, [(*r, spanner.COMMIT_TIMESTAMP) for r in rows])


def test_watched_table_to_changelog(spark, make_database, tmp_path):
    db = make_database(DDL)
    staging, warehouse = str(tmp_path / "staging"), str(tmp_path / "warehouse")
    sink = StagingSink(staging, fsync=False)
    watcher = TableWatcher(db, "Items", poll_interval=0.05, initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(watcher)
    big = 2**60 + 7
    with watcher:
        _write(db, [(1, "a", decimal.Decimal("1.50"), base64.b64encode(b"\x00x"), dt.date(2024, 1, 2), ["t"], False),
                    (big, "b", None, None, None, [], False)])
        wait_until(lambda: sink.records_written >= 2, timeout=20)
        _write(db, [(1, "a2", decimal.Decimal("1.50"), base64.b64encode(b"\x00x"), dt.date(2024, 1, 2), ["t", "u"], False)])
        wait_until(lambda: sink.records_written >= 3, timeout=20)
        _write(db, [(big, "b", None, None, None, [], True)])
        wait_until(lambda: sink.records_written >= 4, timeout=20)
    result = Changelog(spark).staging(staging).warehouse(warehouse).soft_delete_column("Items", "Deleted").run()
    assert result.changes_written == 4 and result.quarantined == []
    rows = spark.sql("SELECT keys, mod_type, new_values, old_values, commit_timestamp FROM changelog "
                     "ORDER BY commit_timestamp, record_sequence").collect()
    by_key: dict[str, list] = {}
    for r in rows:
        by_key.setdefault(json.loads(r.keys)["Id"], []).append(r)
    assert {k: [r.mod_type for r in v] for k, v in by_key.items()} == {"1": ["UPSERT", "UPDATE"], str(big): ["UPSERT", "DELETE"]}
    first, update = by_key["1"]
    assert json.loads(update.old_values) == {"Name": "a", "Tags": ["t"], "Ts": first.commit_timestamp}
    values = json.loads(update.new_values)
    assert decode_value("NUMERIC", values["Price"]) == decimal.Decimal("1.50")
    assert decode_value("BYTES(MAX)", values["Raw"]) == b"\x00x"  # the stored bytes, not the client's base64 text
    assert values["Ts"] == update.commit_timestamp  # the commit-timestamp column, exact to the nanosecond
    state = spark.sql("SELECT keys FROM current_state").collect()
    assert [json.loads(r.keys) for r in state] == [{"Id": "1"}]
    assert spark.sql("SELECT watermark FROM watermarks WHERE table_name = 'Items'").first()[0] >= rows[-1].commit_timestamp
    again = Changelog(spark).staging(staging).warehouse(warehouse).soft_delete_column("Items", "Deleted").run()
    assert again.changes_written == 0 and spark.sql("SELECT count(*) FROM changelog").first()[0] == 4
