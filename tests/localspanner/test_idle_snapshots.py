"""Multi-use read-only transactions left idle: their reads stay at their timestamp, and they do not
hold back the copying of the WAL into the database file (the official client never ends them)."""

from __future__ import annotations

import sqlite3
import time

from google.cloud import spanner

from watcher.localspanner.common import limits

DDL = ["CREATE TABLE Kv (K STRING(MAX) NOT NULL, V INT64) PRIMARY KEY (K)"]


def _idle() -> None:
    time.sleep(limits.SNAPSHOT_PARK_SECONDS + 0.2)


def _state(snap) -> tuple[list, list]:
    query = sorted(snap.execute_sql("SELECT K, V FROM Kv"))
    read = sorted(snap.read("Kv", ("K", "V"), spanner.KeySet(all_=True)))
    return query, read


def test_an_idle_multi_use_snapshot_reads_at_its_timestamp_after_later_commits(make_database):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("Kv", ("K", "V"), [("a", 1), ("b", 2), ("c", 3)])
    with db.snapshot(multi_use=True) as snap:
        before = _state(snap)
        _idle()
        with db.batch() as b:  # a commit after the snapshot was idle
            b.update("Kv", ("K", "V"), [("a", 10)])
        with db.batch() as b:
            b.insert("Kv", ("K", "V"), [("d", 4)])
            b.delete("Kv", spanner.KeySet(keys=[["b"]]))
        after = _state(snap)
        _idle()
        with db.batch() as b:
            b.insert_or_update("Kv", ("K", "V"), [("c", 30), ("e", 5)])
        again = _state(snap)
    assert before == after == again == ([["a", 1], ["b", 2], ["c", 3]], [["a", 1], ["b", 2], ["c", 3]])
    with db.snapshot() as now:
        assert sorted(now.execute_sql("SELECT K, V FROM Kv")) == [["a", 10], ["c", 30], ["d", 4], ["e", 5]]


def test_an_idle_snapshot_does_not_hold_back_checkpoints(make_database, local_server):
    db = make_database(DDL)
    path = local_server.service.engine(db.name).storage.path
    with db.batch() as b:
        b.insert("Kv", ("K", "V"), [("a", 1)])
    with db.snapshot(multi_use=True) as snap:
        assert list(snap.execute_sql("SELECT V FROM Kv")) == [[1]]
        _idle()
        for i in range(20):
            with db.batch() as b:
                b.insert_or_update("Kv", ("K", "V"), [(f"k{i}-{j}", j) for j in range(100)])
        # The server's own checkpointer visits every half second: a probe that meets it mid-copy is
        # told "busy" and tries again. A reader holding an old snapshot would keep copied < frames
        # on every try.
        probe = sqlite3.connect(path)
        try:
            deadline = time.monotonic() + 10
            while True:
                busy, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if (busy == 0 and copied == frames) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        finally:
            probe.close()
        assert busy == 0 and copied == frames, f"a reader kept the WAL from being copied back ({copied} of {frames} frames)"
        assert list(snap.execute_sql("SELECT V FROM Kv")) == [[1]]


def test_an_idle_snapshot_keeps_its_schema_across_a_schema_change(make_database, local_server):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("Kv", ("K", "V"), [("a", 1)])
    with db.snapshot(multi_use=True) as snap:
        assert list(snap.execute_sql("SELECT * FROM Kv")) == [["a", 1]]
        _idle()
        with db.batch() as b:  # parks the idle snapshot
            b.update("Kv", ("K", "V"), [("a", 2)])
        db.update_ddl(["ALTER TABLE Kv ADD COLUMN W STRING(MAX)"]).result(60)
        with db.batch() as b:
            b.update("Kv", ("K", "V", "W"), [("a", 3, "x")])
        assert list(snap.execute_sql("SELECT * FROM Kv")) == [["a", 1]]
    with db.snapshot() as now:
        assert list(now.execute_sql("SELECT * FROM Kv")) == [["a", 3, "x"]]


def test_an_idle_snapshot_reads_at_its_timestamp_after_read_write_transactions(make_database):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("Kv", ("K", "V"), [("a", 1), ("b", 2)])
    with db.snapshot(multi_use=True) as snap:
        before = _state(snap)
        _idle()

        def bump(txn):
            (v,) = next(iter(txn.execute_sql("SELECT V FROM Kv WHERE K = 'a'")))
            txn.execute_update(f"UPDATE Kv SET V = {v + 100} WHERE K = 'a'")
            txn.execute_update("DELETE FROM Kv WHERE K = 'b'")

        db.run_in_transaction(bump)
        db.run_in_transaction(bump)
        assert _state(snap) == before == ([["a", 1], ["b", 2]], [["a", 1], ["b", 2]])
    with db.snapshot() as now:
        assert list(now.execute_sql("SELECT K, V FROM Kv")) == [["a", 201]]
