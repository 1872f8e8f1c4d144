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

A PASSIVE checkpoint alone hardly ever lets the WAL start over under a steady write load:
SQLite rewinds the log only when a writer begins while every frame is copied back and no
reader uses the log, and commits keep appending while the copy runs; the file then grows
by everything written, and every commit appends
to a growing file. So once the log holds :data:`RESTART_FRAMES` frames, the visit follows
the PASSIVE copy with a RESTART checkpoint while it holds the database's writer
(``pause_writes``, set by the engine; taken only if free within
:data:`PAUSE_WAIT_SECONDS`, and no transaction is aborted for it): that copies the frames
appended meanwhile, waits at most :data:`READERS_WAIT_MS` for reads of older snapshots to
end, and rewinds the log, so the next commits overwrite the file from its start. A read
transaction that stays open stops every checkpoint at its snapshot: idle multi-use
read-only transactions give theirs back (:mod:`..transactions.parked_snapshots`).

Durability does not change: a commit is durable once it is in the WAL, before any checkpoint;
a RESTART checkpoint syncs the database file before the log is rewound (SQLite's own order).

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
from collections.abc import Callable
from contextlib import AbstractContextManager

#: Seconds between visits: about as often as the writer's own ``wal_autocheckpoint`` fired
#: under a steady write load, so each hot page is still copied back once per many commits.
INTERVAL_SECONDS = 0.5
#: WAL frames (4 KiB pages) after which a visit also rewinds the log (256 MiB: seconds apart even
#: under a heavy write load, so commits pause for it rarely).
RESTART_FRAMES = 65_536
#: How long a visit waits for the database's writer before leaving the rewind to the next visit.
PAUSE_WAIT_SECONDS = 0.05
#: How long the rewind, holding the writer, waits for reads of older snapshots to end (commits wait meanwhile).
READERS_WAIT_MS = 100
#: The connection's busy timeout otherwise (ms): a PASSIVE checkpoint never waits on it.
BUSY_TIMEOUT_MS = 1000

#: Holds the database's writer for the rewind if it is free within the given seconds; yields whether it got it.
PauseWrites = Callable[[float], AbstractContextManager[bool]]


class Checkpointer:
    """Background PASSIVE checkpoints of the database file at ``path`` (registered with the shared thread)."""

    def __init__(self, path: str) -> None:
        # A PASSIVE checkpoint never waits on the busy handler; the timeout only covers opening
        # the WAL beside a connection that is setting it up.
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        self._lock = threading.Lock()
        #: Set by the database's engine; without it the log is only copied back, never rewound.
        self.pause_writes: PauseWrites | None = None
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
                if row and int(row[1]) >= RESTART_FRAMES and self.pause_writes is not None:
                    row = self._rewind(self.pause_writes) or row
            except sqlite3.Error:
                return None  # busy, or the file is going away (database dropped): the next visit retries
            return (int(row[0]), int(row[1]), int(row[2])) if row else None

    def _rewind(self, pause_writes: PauseWrites) -> tuple[int, int, int] | None:
        """A RESTART checkpoint while no commit runs: the log starts over (None: the writer was busy)."""
        with pause_writes(PAUSE_WAIT_SECONDS) as paused:
            if not paused:
                return None
            self._conn.execute(f"PRAGMA busy_timeout={READERS_WAIT_MS}")
            try:
                return self._conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()  # type: ignore[no-any-return]
            finally:
                self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

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
