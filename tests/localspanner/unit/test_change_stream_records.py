"""Change records kept past their stream's retention are purged.

Through the official client a start outside the retention is refused (test_change_streams),
so records older than it are never visible there; whether they are deleted is checked here.
"""

from __future__ import annotations

import sqlite3

from watcher.localspanner.change_streams import capture, records
from watcher.localspanner.schema.catalog import Catalog
from watcher.localspanner.schema.schema_updater import apply_statements

DAY = 86_400 * 10**9


def test_records_older_than_the_stream_retention_are_purged():
    catalog, _ = apply_statements(Catalog(), [
        "CREATE TABLE T (K INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (K)",
        "CREATE CHANGE STREAM Short FOR T OPTIONS (retention_period = '1d')",
        "CREATE CHANGE STREAM Long FOR T OPTIONS (retention_period = '3d')",
    ])
    conn = sqlite3.connect(":memory:")
    records.ensure_table(conn)
    now = 10 * DAY
    for stream in ("Short", "Long"):
        records.insert(conn, [records.Record(stream, now - age, f"t{age}", 0, 0, 1, 1, "{}") for age in (2 * DAY, DAY // 2)])
    assert capture.purge_expired(conn, catalog, now) == 1
    left = sorted((s, ts) for s, ts in conn.execute(f"SELECT stream, commit_ts FROM {records.RECORDS_TABLE}"))
    assert left == [("long", now - 2 * DAY), ("long", now - DAY // 2), ("short", now - DAY // 2)]
