"""Helpers shared by the watcher-core tests: bounded waits, a thread-safe collector, writers.

Kept outside conftest.py so test modules import exactly what they use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from google.cloud import spanner

from watcher import Change

#: A small table with one commit-timestamp column and a string payload.
T_DDL = ("CREATE TABLE T (Id INT64 NOT NULL, Name STRING(MAX), "
         "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")
#: A table with a composite key whose second part may be NULL.
C_DDL = ("CREATE TABLE C (A INT64 NOT NULL, B STRING(MAX), V INT64, "
         "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (A, B)")
NO_TS_DDL = "CREATE TABLE NoTs (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.005) -> None:
    """Wait until ``predicate()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


class Collector:
    """A callback that records changes (thread-safe), optionally doing something per change."""

    def __init__(self, action: Callable[[Change, int], Any] | None = None) -> None:
        self._lock = threading.Lock()
        self.changes: list[Change] = []
        self.action = action

    def __call__(self, change: Change) -> None:
        with self._lock:
            index = len(self.changes)
        if self.action is not None:
            self.action(change, index)
        with self._lock:
            self.changes.append(change)

    def __len__(self) -> int:
        with self._lock:
            return len(self.changes)

    def keys(self) -> list[tuple[Any, ...]]:
        with self._lock:
            return [c.keys for c in self.changes]

    def wait_for(self, n: int, timeout: float = 10.0) -> None:
        wait_until(lambda: len(self) >= n, timeout)


def insert(database: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Any:
    """Insert rows in one transaction, the commit-timestamp column set by Spanner; returns the commit timestamp.

    ``columns`` excludes the commit-timestamp column, which is given as ``Ts``.
    """
    with database.batch() as batch:
        batch.insert_or_update(table, (*columns, "Ts"), [(*r, spanner.COMMIT_TIMESTAMP) for r in rows])
    return batch.committed


def insert_t(database: Any, ids: Iterable[int], name: str = "x") -> Any:
    return insert(database, "T", ("Id", "Name"), [(i, f"{name}{i}") for i in ids])


def run_with_history(db: Any, history: Any, fn: Callable[[Any], None]) -> Any:
    """Run ``fn(history_writer)`` in one read/write transaction; returns its commit timestamp."""
    txns: list[Any] = []

    def work(txn: Any) -> None:
        txns.append(txn)
        fn(history.writer(txn))

    db.run_in_transaction(work)
    return txns[-1].committed
