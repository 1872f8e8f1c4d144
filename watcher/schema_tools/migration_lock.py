"""The lock that lets one ``migrate`` run at a time apply files to a database.

Two deploys may start ``spanner-watcher migrate`` at once. Each run takes the lock (a row of
a small table next to the tracking table, ``<tracking table>_LOCK``) in a read/write
transaction before it applies anything, so the second run waits, or stops with a message
naming the holder. The row names its owner (``host:pid:uuid``) and when it expires; the
holder renews it while it works (every third of the timeout), so only a holder that
crashed, or lost its connection, lets its lock expire, and the next run takes it over then.
Expiry is judged by the database's clock (``CURRENT_TIMESTAMP()`` inside the transaction),
so hosts with skewed clocks agree on it. In a PostgreSQL database the table and its columns are
lower case (:mod:`watcher.dialects.migrations`).

Example::

    lock = MigrationLock(database, "SPANNER_WATCHER_MIGRATIONS_LOCK", timeout=120)
    lock.acquire(wait=None)          # waits while another live run holds it
    try:
        ...                          # apply; lock.check() raises if the lock was lost
    finally:
        lock.release()
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dialects import GOOGLE_SQL, Dialect, dialect_of
from ..dialects.migrations import lock_table_sql, name_in
from ..errors import MigrationError, MigrationLockedError
from ..sqlnames import validate_identifier

log = logging.getLogger(__name__)

#: Seconds a lock lasts without renewal (``--lock-timeout``): how long a crashed run blocks the next.
DEFAULT_LOCK_TIMEOUT = 120.0
#: Seconds between two attempts of a waiting run.
POLL_INTERVAL = 1.0
#: The key of the lock row: one lock per tracking table, so per database.
LOCK_ID = "migrate"
_COLUMNS = ("LOCK_ID", "OWNER", "ACQUIRED_AT", "EXPIRES_AT")


def lock_table_name(tracking_table: str) -> str:
    """The lock table that goes with a tracking table.

    >>> lock_table_name("SPANNER_WATCHER_MIGRATIONS")
    'SPANNER_WATCHER_MIGRATIONS_LOCK'
    """
    return validate_identifier(tracking_table + "_LOCK", "migration lock table")


def create_lock_table_sql(table: str, dialect: Dialect = GOOGLE_SQL) -> str:
    """The DDL of the lock table in ``dialect`` (``IF NOT EXISTS``: two first runs may create it at once)."""
    return lock_table_sql(dialect, validate_identifier(table, "migration lock table"))


def new_owner() -> str:
    """``host:pid:uuid``: who holds the lock, readable by whoever waits for it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class LockHolder:
    """A lock row as read: who holds it, since when, until when (database time)."""

    owner: str
    acquired_at: dt.datetime
    expires_at: dt.datetime

    def describe(self) -> str:
        return f"{self.owner} (since {self.acquired_at.isoformat()}, expires {self.expires_at.isoformat()} unless renewed)"


class MigrationLock:
    """One run's hold on the migration lock of ``database``; renewed by a daemon thread while held.

    ``timeout`` is the lifetime of the lock without renewal; ``progress`` receives lines
    worth showing (waiting, taking over an expired lock). Not reentrant across threads:
    one object per run. ``dialect``: the database's (found from it when not given).
    """

    def __init__(self, database: Any, table: str, *, timeout: float = DEFAULT_LOCK_TIMEOUT,
                 owner: str | None = None, progress: Callable[[str], None] | None = None,
                 poll_interval: float = POLL_INTERVAL, dialect: Dialect | None = None) -> None:
        if timeout <= 0:
            raise MigrationError(f"the lock timeout must be positive, got {timeout}")
        self.database = database
        self.table = validate_identifier(table, "migration lock table")
        self.timeout = float(timeout)
        self.owner = owner or new_owner()
        self.progress = progress or (lambda message: log.info("%s", message))
        self.poll_interval = poll_interval
        self._held = False
        self._lost: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._dialect = dialect

    @property
    def dialect(self) -> Dialect:
        """The dialect of the database holding the lock table."""
        if self._dialect is None:
            self._dialect = dialect_of(self.database)
        return self._dialect

    @property
    def _table(self) -> str:
        return name_in(self.dialect, self.table)

    @property
    def _columns(self) -> tuple[str, ...]:
        return tuple(name_in(self.dialect, c) for c in _COLUMNS)

    # --- the transactions ----------------------------------------------------------------------------

    def _read(self, tx: Any) -> tuple[dt.datetime, LockHolder | None]:
        """The database's now and the current lock row, read inside ``tx``."""
        now = list(tx.execute_sql(self.dialect.current_timestamp_sql))[0][0]
        from google.cloud.spanner_v1 import KeySet

        rows = list(tx.read(self._table, self._columns, KeySet(keys=[[LOCK_ID]])))
        holder = LockHolder(rows[0][1], rows[0][2], rows[0][3]) if rows else None
        return now, holder

    def _write(self, tx: Any, now: dt.datetime, acquired_at: dt.datetime) -> None:
        expires = now + dt.timedelta(seconds=self.timeout)
        tx.insert_or_update(self._table, self._columns, [(LOCK_ID, self.owner, acquired_at, expires)])

    def try_acquire(self) -> LockHolder | None:
        """Take the lock if it is free, expired or ours; else return its live holder."""
        def attempt(tx: Any) -> tuple[LockHolder | None, LockHolder | None]:
            now, holder = self._read(tx)
            if holder is not None and holder.owner != self.owner and holder.expires_at > now:
                return holder, None
            self._write(tx, now, holder.acquired_at if holder and holder.owner == self.owner else now)
            return None, holder if holder is not None and holder.owner != self.owner else None

        blocked, expired = self.database.run_in_transaction(attempt)
        if blocked is None:
            if expired is not None:
                self.progress(f"took over the migration lock from {expired.owner}, whose lock expired at "
                              f"{expired.expires_at.isoformat()} (a run that crashed or lost its connection)")
            self._held, self._lost = True, None
        return blocked

    def acquire(self, wait: float | None = None, *, sleep: Callable[[float], None] = time.sleep) -> None:
        """Take the lock, waiting up to ``wait`` seconds (None: as long as a live holder keeps it).

        Raises MigrationLockedError naming the holder when the wait is over.
        """
        started = time.monotonic()
        told = False
        while True:
            holder = self.try_acquire()
            if holder is None:
                break
            waited = time.monotonic() - started
            if wait is not None and waited >= wait:
                raise MigrationLockedError(self.table, holder.owner, holder.expires_at, waited)
            if not told:
                self.progress(f"waiting for the migration lock, held by {holder.describe()}")
                told = True
            sleep(self.poll_interval if wait is None else max(0.0, min(self.poll_interval, wait - waited)))
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew_loop, name="migration-lock-renewer", daemon=True)
        self._renewer.start()

    def renew(self) -> None:
        """Push the expiry ``timeout`` seconds ahead; marks the lock lost if another run holds it now."""
        def attempt(tx: Any) -> str | None:
            now, holder = self._read(tx)
            if holder is None or holder.owner != self.owner:
                return holder.owner if holder else "nobody"
            self._write(tx, now, holder.acquired_at)
            return None

        other = self.database.run_in_transaction(attempt)
        if other is not None:
            self._lost = f"the migration lock is now held by {other}"

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.timeout / 3):
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - a passing failure; the next tick tries again before expiry
                log.warning("could not renew the migration lock", exc_info=True)
            if self._lost:
                return

    def check(self, tx: Any | None = None) -> None:
        """Raise MigrationError unless this run still holds the lock (read in ``tx`` when given).

        With ``tx``, the check is part of that read/write transaction: its writes commit
        only if the lock is still ours at commit time.
        """
        if tx is not None and self._lost is None:
            _, holder = self._read(tx)
            if holder is None or holder.owner != self.owner:
                self._lost = f"the migration lock is now held by {holder.owner if holder else 'nobody'}"
        if not self._held or self._lost:
            raise MigrationError(f"this migrate run ({self.owner}) lost its migration lock: {self._lost or 'not taken'}; "
                                 "it outlived --lock-timeout without renewing (a stalled process or connection). "
                                 "Check what the other run applied, then run migrate again")

    def release(self) -> None:
        """Stop renewing and delete the lock row if it is still ours."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        if not self._held:
            return
        self._held = False

        def attempt(tx: Any) -> None:
            _, holder = self._read(tx)
            if holder is not None and holder.owner == self.owner:
                from google.cloud.spanner_v1 import KeySet

                tx.delete(self._table, KeySet(keys=[[LOCK_ID]]))

        try:
            self.database.run_in_transaction(attempt)
        except Exception:  # noqa: BLE001 - the lock expires on its own; the run's outcome matters more
            log.warning("could not release the migration lock; it expires in %.0f s", self.timeout, exc_info=True)

    def __enter__(self) -> MigrationLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
