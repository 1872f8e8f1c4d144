"""The writer of one database: one holder at a time, and a holder that idles too long loses it.

A read/write transaction holds the writer from its first read or DML to its end, so
read/write transactions are serializable; a single-use commit and a schema change hold
it too (``txn`` None). The holder owns the SQLite transaction open on the storage's
writer connection.

Example:
    >>> import sqlite3
    >>> from watcher.localspanner.transactions.transactions import ReadWriteTransaction
    >>> w = Writer(sqlite3.connect(":memory:", isolation_level=None))
    >>> t = ReadWriteTransaction(session="s")
    >>> w.acquire(t); t.holds_writer, w.conn.in_transaction
    (True, True)
    >>> w.roll_back(t); t.holds_writer, w.conn.in_transaction
    (False, False)
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .. import errors
from ..common import limits
from .transactions import ReadWriteTransaction


class Writer:
    """The writer lock of one database over its writer connection ``conn`` (thread-safe)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._lock = threading.Lock()
        self._owner: ReadWriteTransaction | None = None

    def acquire(self, txn: ReadWriteTransaction | None) -> None:
        """Take the writer for ``txn`` (None: a single-use commit or a schema change); a no-op if it holds it.

        Waits at most :data:`~..common.limits.WRITER_WAIT_SECONDS` (then ABORTED), taking the writer
        from a holder idle for :data:`~..common.limits.TRANSACTION_IDLE_SECONDS`. A transaction that
        gets the writer has a SQLite transaction begun for it.
        """
        if txn is not None and txn.holds_writer:
            return
        deadline = time.monotonic() + limits.WRITER_WAIT_SECONDS
        while not self._lock.acquire(timeout=0.05):
            owner = self._owner
            if owner is not None and time.monotonic() - owner.last_used > limits.TRANSACTION_IDLE_SECONDS:
                self.abort(owner, "it was idle while holding the database's writer and another transaction needed it")
            if time.monotonic() > deadline:
                raise errors.transaction_aborted("another read/write transaction held the database too long")
        self._owner = txn
        if txn is not None:
            if txn.state != "active":
                self._owner = None
                self._lock.release()
                raise errors.transaction_aborted(txn.abort_reason or "the transaction is no longer active")
            txn.holds_writer = True
            self.conn.execute("BEGIN")

    @contextmanager
    def paused(self, timeout: float) -> Iterator[bool]:
        """Hold the writer for maintenance (a WAL rewind) if it is free within ``timeout`` seconds;
        yields whether it got it. Unlike :meth:`acquire` it never aborts a holder, and no SQLite
        transaction is begun: while it is held nobody writes.

        >>> w = Writer(sqlite3.connect(":memory:", isolation_level=None))
        >>> with w.paused(0.0) as first:
        ...     with w.paused(0.0) as second:
        ...         first, second
        (True, False)
        """
        got = self._lock.acquire(timeout=timeout)
        try:
            yield got
        finally:
            if got:
                self._lock.release()

    def release(self, txn: ReadWriteTransaction | None) -> None:
        """Give the writer back (the caller has ended the SQLite transaction)."""
        if txn is not None:
            if not txn.holds_writer:
                return
            txn.holds_writer = False
        self._owner = None
        self._lock.release()

    def roll_back(self, txn: ReadWriteTransaction) -> None:
        """Undo what ``txn`` wrote and give the writer back, if it holds it."""
        if not txn.holds_writer:
            return
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.release(txn)

    def abort(self, txn: ReadWriteTransaction, reason: str) -> None:
        """End an active ``txn`` as ABORTED (``reason`` is told to its next request); skipped if it is busy."""
        if not txn.lock.acquire(blocking=False):
            return  # it is busy, so not idle after all
        try:
            if txn.state == "active":
                txn.state = "aborted"
                txn.abort_reason = reason
                self.roll_back(txn)
        finally:
            txn.lock.release()
