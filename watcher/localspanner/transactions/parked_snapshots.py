"""Idle multi-use read-only transactions give back their SQLite read transaction.

A multi-use read-only transaction (a pinned :class:`~.transactions.Snapshot`) holds a read
transaction on a reader connection, so its reads see the database as of its timestamp.
The official client never ends one (read-only transactions have no end on Spanner), so it
stays until :data:`~..common.limits.SNAPSHOT_IDLE_SECONDS` pass and another one is registered; and
while a WAL reader holds an old snapshot, no checkpoint can copy frames past it. The
watchers' schema discovery leaves such snapshots behind, and with them the WAL would never be
copied back: it would grow by everything written, every commit appending to a growing file.

So a snapshot idle for :data:`~..common.limits.SNAPSHOT_PARK_SECONDS` with no request running in
it is *parked*: its connection's read transaction ends and the connection goes back to the
pool. Its next request pins a new read transaction and reads the row versions as of the
snapshot's timestamp (:func:`~..storage.versions.enter_past`, the same path as a stale read), which
returns exactly what the old read transaction would have: every commit after that
timestamp kept its old row images. A snapshot older than the version retention period
cannot be read that way and fails as a stale read that old does. A schema change first
re-pins every parked snapshot (the writer is held, so nothing commits in between), so a
snapshot never reads a schema other than its own.

Mixed into :class:`~watcher.localspanner.database.engine.DatabaseEngine`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import errors
from ..common import limits
from ..common.clock import Clock
from ..datamodel import values
from ..schema.catalog import Catalog
from ..storage import versions
from ..storage.store import Storage
from .transactions import Snapshot


class ParkedSnapshots:
    """Parking and re-pinning of a database's registered snapshots (``_snapshots``)."""

    storage: Storage
    clock: Clock
    catalog: Catalog
    latest_commit_nanos: int
    _visibility: threading.Lock
    _registry_lock: threading.Lock
    _snapshots: OrderedDict[bytes, Snapshot]
    _next_park_check: float = 0.0
    _retention_nanos: Callable[[], int]  # the engine's (engine_schema.py)

    @contextmanager
    def _snapshot_conn(self, snap: Snapshot) -> Iterator[Any]:
        """The connection of ``snap`` while one request starts in it (re-pinned first if it was parked)."""
        with snap.lock:
            if snap.parked:
                self._repin(snap)
            snap.users += 1
            snap.last_used = time.monotonic()
        try:
            yield snap.conn
        except BaseException:
            self._snapshot_done(snap)
            raise

    def _snapshot_done(self, snap: Snapshot) -> None:
        """A request that used ``snap`` has ended (its rows are all sent, or it failed)."""
        with snap.lock:
            snap.users -= 1
            snap.last_used = time.monotonic()

    def _repin(self, snap: Snapshot) -> None:
        if snap.read_nanos < self.clock.wall_nanos() - self._retention_nanos():
            raise errors.read_timestamp_too_old(values.nanos_to_rfc3339(snap.read_nanos))
        conn = self.storage.reader()
        try:
            with self._visibility:  # as in a stale read's pin: every commit after the timestamp is in the versions
                past = snap.read_nanos < self.latest_commit_nanos
                self.storage.pin(conn)
            if past:
                versions.enter_past(conn, snap.catalog, snap.read_nanos)
        except BaseException:
            versions.leave_past(conn)
            self.storage.release(conn)
            raise
        snap.conn, snap.parked = conn, False

    def _park_idle_snapshots(self) -> None:
        """Park every registered snapshot idle long enough (checked at most once a second)."""
        now = time.monotonic()
        if now < self._next_park_check:
            return
        self._next_park_check = now + limits.SNAPSHOT_PARK_SECONDS
        with self._registry_lock:
            snaps = list(self._snapshots.values())
        for snap in snaps:
            if snap.parked or snap.users or now - snap.last_used < limits.SNAPSHOT_PARK_SECONDS:
                continue
            if not _tables_unchanged(snap.catalog, self.catalog):
                continue
            if not snap.lock.acquire(blocking=False):
                continue  # a request is starting in it
            try:
                if not (snap.released or snap.parked or snap.users):  # checked again under its lock
                    versions.leave_past(snap.conn)
                    self.storage.release(snap.conn)  # ends the read transaction
                    snap.parked = True
            finally:
                snap.lock.release()

    def _unpark_snapshots(self) -> None:
        """Re-pin every parked snapshot (before a schema change, with the writer held); one that
        cannot be re-pinned any more (older than the retention) is left to fail when used."""
        with self._registry_lock:
            snaps = [s for s in self._snapshots.values() if s.parked]
        for snap in snaps:
            with snap.lock:
                if snap.parked and not snap.released:
                    try:
                        self._repin(snap)
                    except errors.SpannerError:
                        pass


def _tables_unchanged(old: Catalog, now: Catalog) -> bool:
    """Every table of ``old`` is still the same table (schema changes replace a table they alter,
    drop or re-create, and keep the others), so its versions describe it since ``old``.

    >>> from watcher.localspanner.schema.schema_updater import apply_statement
    >>> a, _ = apply_statement(Catalog(), "CREATE TABLE A (K INT64) PRIMARY KEY (K)")
    >>> b, _ = apply_statement(a, "CREATE TABLE B (K INT64) PRIMARY KEY (K)")
    >>> c, _ = apply_statement(b, "ALTER TABLE A ADD COLUMN V INT64")
    >>> _tables_unchanged(a, b), _tables_unchanged(a, c)
    (True, False)
    """
    return old is now or all(now.table(t.name) is t for t in old.tables)
