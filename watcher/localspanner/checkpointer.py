"""Copies databases' WAL back into their files on a thread of its own, off the commit path.

In WAL mode every commit appends pages to the log; a checkpoint copies them back into the
database file. Left to SQLite, the commit that crosses ``wal_autocheckpoint`` does that copy
itself, while it holds the database's writer, so every queued commit waits for it (with row
versions a commit dirties about twice the pages, and the copy was a sixth of the writer's
time per mutation). Here one thread per process visits every open database every
``INTERVAL_SECONDS`` and, where something was committed since its last visit, runs a PASSIVE
checkpoint on a connection of its own: it never blocks the writer or readers, and SQLite
releases the GIL while it copies, so the copy runs beside the writer on another core. The
writer keeps a higher ``wal_autocheckpoint`` as a backstop for when this thread falls behind.

Durability does not change: a commit is durable once it is in the WAL, before any checkpoint.

Example:
    >>> import os, sqlite3, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    >>> conn = sqlite3.connect(path, isolation_level=None)
    >>> _ = conn.execute("PRAGMA journal_mode=WAL")
    >>> c = Checkpointer(path)
    >>> _ = conn.execute("CREATE TABLE t (x)")
    >>> _ = c.checkpoint_if_written()           # copies back what was committed (if the thread has not yet)
    >>> c.checkpoint_if_written() is None       # nothing committed since: nothing to do
    True
    >>> c.close(); conn.close()
"""

from __future__ import annotations

import sqlite3
import threading

#: Seconds between visits: about as often as the writer's own ``wal_autocheckpoint`` fired
#: under a steady write load, so each hot page is still copied back once per many commits.
INTERVAL_SECONDS = 0.5


class Checkpointer:
    """Background PASSIVE checkpoints of the database file at ``path`` (registered with the shared thread)."""

    def __init__(self, path: str) -> None:
        # A PASSIVE checkpoint never waits on the busy handler; the timeout only covers opening
        # the WAL beside a connection that is setting it up.
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=1.0)
        self._lock = threading.Lock()
        self._closed = False
        self._seen = -1  # unknown: the first visit checkpoints
        _loop.add(self)

    def _data_version(self) -> int:
        # Changes whenever another connection committed to the file (no I/O: a shared-memory read).
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def checkpoint_if_written(self) -> tuple[int, int, int] | None:
        """If anything was committed since the last call, one PASSIVE checkpoint: (busy, WAL frames, frames copied)."""
        with self._lock:
            if self._closed:
                return None
            try:
                version = self._data_version()
                if version == self._seen:
                    return None
                self._seen = version
                row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error:
                return None  # busy, or the file is going away (database dropped): the next visit retries
            return (int(row[0]), int(row[1]), int(row[2])) if row else None

    def close(self) -> None:
        """Stop checkpointing this file (waits for a checkpoint in progress) and close the connection."""
        _loop.remove(self)
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


class _Loop:
    """The one thread that visits every open database's :class:`Checkpointer`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: list[Checkpointer] = []
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def add(self, member: Checkpointer) -> None:
        with self._lock:
            self._members.append(member)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="localspanner-checkpoint", daemon=True)
                self._thread.start()

    def remove(self, member: Checkpointer) -> None:
        with self._lock:
            if member in self._members:
                self._members.remove(member)

    def _run(self) -> None:
        while not self._wake.wait(INTERVAL_SECONDS):
            with self._lock:
                members = list(self._members)
            for m in members:
                m.checkpoint_if_written()


_loop = _Loop()
