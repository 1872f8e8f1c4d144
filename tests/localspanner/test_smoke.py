"""The basic round trip through the official client: schema, writes, reads, queries, DML."""

from __future__ import annotations

import datetime as dt

from google.cloud import spanner
from google.cloud.spanner_v1 import param_types


def test_write_then_query_and_read(singers_db):
    with singers_db.batch() as b:
        b.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed"),
                 [(1, "Ann", "Lee", spanner.COMMIT_TIMESTAMP, False), (2, None, "Bo", spanner.COMMIT_TIMESTAMP, True)])
    with singers_db.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT SingerId, FirstName, LastName, ShardId FROM Singers ORDER BY SingerId"))
    assert rows[0][:3] == [1, "Ann", "Lee"]
    assert rows[1] == [2, None, "Bo", None]  # Processed rows leave the shard (NULL)
    assert isinstance(rows[0][3], int) and -18 <= rows[0][3] <= 18
    with singers_db.snapshot() as snap:
        read = list(snap.read("Singers", ("SingerId", "LastName"), spanner.KeySet(keys=[[2]])))
    assert read == [[2, "Bo"]]


def test_dml_with_pending_commit_timestamp(singers_db):
    def work(txn):
        return txn.execute_update(
            "INSERT INTO Singers (SingerId, LastName, LastUpdated) VALUES (@id, 'X', PENDING_COMMIT_TIMESTAMP())",
            params={"id": 10}, param_types={"id": param_types.INT64})

    assert singers_db.run_in_transaction(work) == 1
    with singers_db.snapshot() as snap:
        (row,) = list(snap.execute_sql("SELECT LastUpdated FROM Singers WHERE SingerId = 10"))
    assert isinstance(row[0], dt.datetime)
    assert abs((dt.datetime.now(dt.UTC) - row[0]).total_seconds()) < 60
