"""Statement deadlines: a query or DML statement that outlives its request's deadline stops.

The gRPC edge knows a call's deadline; it runs the handler inside :func:`until`, which
keeps the deadline (a ``time.monotonic()`` value) for the calling thread. Every SQLite
connection of the server has :func:`install`'s progress handler: every
:data:`PROGRESS_STEPS` virtual-machine steps it asks whether the thread's deadline has
passed, and interrupts the running statement if so. A thread-local fits because SQLite
calls the handler on the thread that steps the statement, and gRPC runs a call's handler
and consumes its streamed answers on one thread. The interrupted statement's error then
becomes DEADLINE_EXCEEDED (:func:`expired` tells it apart from other SQLite errors).

Example:
    >>> import sqlite3, time
    >>> conn = sqlite3.connect(":memory:"); install(conn)
    >>> with until(time.monotonic() - 1):
    ...     try:
    ...         conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n").fetchall()
    ...     except sqlite3.OperationalError as exc:
    ...         print(exc, expired())
    interrupted True
    >>> expired()
    False
    >>> with until(time.monotonic() - 1):
    ...     with until(None):  # a commit that must not be cut short
    ...         expired()
    False
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: SQLite virtual-machine steps between two looks at the deadline (a few microseconds of work).
PROGRESS_STEPS = 20_000

_local = threading.local()


@contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Statements the calling thread runs in this block stop at ``deadline`` (``time.monotonic()``; None: never).

    The thread has no deadline after the block, whatever it had before: the edge opens one block
    per call, and a streamed answer's generator that is finalized late, on another thread, then
    clears that thread's deadline at worst and never sets a stale one there.
    """
    _local.deadline = deadline
    try:
        yield
    finally:
        _local.deadline = None


def expired() -> bool:
    """Whether the calling thread's deadline has passed (False when it has none)."""
    deadline = getattr(_local, "deadline", None)
    return deadline is not None and time.monotonic() >= deadline


def install(conn: sqlite3.Connection) -> None:
    """Make ``conn``'s statements stop when the deadline of the thread running them passes."""
    conn.set_progress_handler(_progress, PROGRESS_STEPS)


def _progress() -> int:
    return 1 if expired() else 0  # non-zero: SQLite interrupts the statement
