"""The background checkpointer copies committed pages into the database file without the writer."""

from __future__ import annotations

import os
import sqlite3
import time

from watcher.localspanner.storage.store import WAL_AUTOCHECKPOINT_PAGES, Storage


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _commit_rows(storage: Storage, rows: int = 2000) -> sqlite3.Connection:
    """Create table t and commit ``rows`` rows of 1,000 random bytes through the writer; return the writer."""
    w = storage.writer
    w.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    w.execute("BEGIN")
    w.executemany("INSERT INTO t VALUES (?, ?)", ((i, os.urandom(1000)) for i in range(rows)))
    w.execute("COMMIT")
    return w


def test_committed_pages_reach_the_database_file_while_the_writer_stays_idle(tmp_path):
    path = str(tmp_path / "db.sqlite")
    storage = Storage(path)
    try:
        _commit_rows(storage)
        # Far below the writer's own autocheckpoint: only the background thread copies these pages.
        wal_pages = os.path.getsize(path + "-wal") // 4096
        assert wal_pages < WAL_AUTOCHECKPOINT_PAGES
        assert _wait_for(lambda: os.path.getsize(path) >= 2000 * 1000), "the database file never received the commit"
    finally:
        storage.close()


def test_a_closed_storage_is_no_longer_visited(tmp_path):
    storage = Storage(str(tmp_path / "db.sqlite"))
    storage.close()
    assert storage.checkpointer.checkpoint_if_written() is None
    os.remove(tmp_path / "db.sqlite")  # the file can go (a dropped database): nothing holds it open


def test_a_long_log_is_rewound_with_the_writer_paused_and_nothing_is_lost(tmp_path, monkeypatch):
    from contextlib import contextmanager

    from watcher.localspanner.storage import checkpointer

    monkeypatch.setattr(checkpointer, "RESTART_FRAMES", 16)
    path = str(tmp_path / "db.sqlite")
    storage = Storage(path)
    pauses = []

    @contextmanager
    def pause_writes(timeout):
        pauses.append(timeout)
        yield True

    storage.checkpointer.pause_writes = pause_writes
    try:
        w = _commit_rows(storage)
        assert _wait_for(lambda: pauses), "the long log was never rewound"
        w.execute("INSERT INTO t VALUES (-1, x'00')")  # the next commit writes from the log's start
        probe = sqlite3.connect(path)
        busy, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        probe.close()
        assert (busy, frames) == (0, copied) and frames < 16, "the log went on growing after the rewind"
        assert w.execute("SELECT count(*) FROM t").fetchone()[0] == 2001
    finally:
        storage.close()

