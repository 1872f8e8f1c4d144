"""A strong read does not wait for a group commit in flight (commit_floor.py), and stays exact.

The group is held open just before its COMMIT (the engine's ``write_group`` is wrapped), so
the test decides the interleaving instead of hoping for it. Reads go through the official
client; only the pause needs the embedded server.
"""

from __future__ import annotations

import threading

import pytest
from google.cloud import spanner

from watcher.localspanner.database import engine as engine_module

SCHEMA = ["CREATE TABLE T (K INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (K)"]


@pytest.fixture
def paused_group(local_server, monkeypatch):
    """Commit groups stop just before their COMMIT until ``release`` is set; ``reached`` tells they are there."""
    reached, release = threading.Event(), threading.Event()
    real = engine_module.write_group

    def held(*args, committing=None, **kwargs):
        def before_commit():
            reached.set()
            assert release.wait(30)
            if committing is not None:
                committing()
        return real(*args, committing=before_commit, **kwargs)

    monkeypatch.setattr(engine_module, "write_group", held)
    yield reached, release
    release.set()


def _read(db):
    with db.snapshot() as snap:
        rows = {r[0]: r[1] for r in snap.execute_sql("SELECT K, Ts FROM T")}
        return snap._transaction_read_timestamp, rows


def test_a_strong_read_beside_a_group_in_flight_reads_before_it_without_waiting(make_database, paused_group):
    reached, release = paused_group
    db = make_database(SCHEMA)
    release.set()
    first = _commit(db, 1)
    release.clear()
    reached.clear()

    done: dict[str, object] = {}
    writer = threading.Thread(target=lambda: done.update(ts=_commit(db, 2)))
    writer.start()
    assert reached.wait(30)  # the group has written its row and waits before its COMMIT
    read_ts, rows = _read(db)
    # Returned while the group is still held: had the read waited for it, the group would have
    # given up (30 s) and its thread ended first.
    assert writer.is_alive()
    assert rows == {1: first} and read_ts > first  # the committed row, not the one in flight
    release.set()
    writer.join(30)
    assert done["ts"] > read_ts  # the group's commit is above the read (invariant 4)
    later_ts, later = _read(db)
    assert later == {1: first, 2: done["ts"]} and later_ts > done["ts"]


def test_with_shared_commit_timestamps_a_strong_read_waits_for_the_group(make_database, paused_group,
                                                                        shared_commit_timestamps):
    reached, release = paused_group
    db = make_database(SCHEMA)
    done: dict[str, object] = {}
    writer = threading.Thread(target=lambda: done.update(ts=_commit(db, 2)))
    writer.start()
    assert reached.wait(30)
    result: dict[str, object] = {}
    reader = threading.Thread(target=lambda: result.update(read=_read(db)))
    reader.start()
    release.set()
    writer.join(30)
    reader.join(30)
    read_ts, rows = result["read"]
    # It waited for the group (which may still share the timestamp before it): it sees its row.
    assert rows == {2: done["ts"]} and read_ts > done["ts"]


def _commit(db, key: int):
    with db.batch() as b:
        b.insert("T", ("K", "Ts"), [(key, spanner.COMMIT_TIMESTAMP)])
    return b.committed
