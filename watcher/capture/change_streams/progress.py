"""Where each change-stream partition stands: the progress store interface and an in-memory store.

One row per (stream, watcher id, partition token): the partition's parents, its start,
its watermark (the next read starts there), the ids of records at the watermark already
delivered (skipped when the read starts again there, so a restart repeats nothing that was
acknowledged), and its state. The root row (token ``""``, :data:`ROOT_TOKEN`) stands for the
first query, which names the first partitions: its start is where the watcher began.

Contract (every store):
    * ``save`` writes its rows atomically (all or none) and returns only once they are durable;
      the watcher calls it after the callbacks of a batch returned, never before.
    * ``load`` returns every row of one stream and watcher id, in any order.
    * Stores are thread-safe: partitions are read on several threads.

Example:
    >>> store = InMemoryProgressStore()
    >>> row = PartitionProgress("t1", (), "2024-01-01", "2024-01-01", CREATED)
    >>> store.save("S", "w", [row.moved("2024-01-02", ("tx/00000000",))])
    >>> [(p.token, p.watermark, p.state) for p in store.load("S", "w")]
    [('t1', '2024-01-02', 'RUNNING')]
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

#: The first query (no partition token) is stored under this token.
ROOT_TOKEN = ""
CREATED, RUNNING, FINISHED = "CREATED", "RUNNING", "FINISHED"
STATES = (CREATED, RUNNING, FINISHED)
#: At most this many ids of records delivered at the watermark are kept (beyond, a restart repeats them).
MAX_DELIVERED_IDS = 1000


@dataclass(frozen=True)
class PartitionProgress:
    """One partition's place (timestamps are DatetimeWithNanoseconds in use)."""

    token: str
    parents: tuple[str, ...]
    start: Any
    watermark: Any
    state: str
    #: Ids (server transaction id/record sequence) of records at ``watermark`` already delivered.
    delivered_at_watermark: tuple[str, ...] = ()

    def moved(self, watermark: Any, delivered: Iterable[str] = ()) -> PartitionProgress:
        """Delivered up to ``watermark``; ``delivered`` are ids of records at it (added to the
        ones kept when the watermark did not move)."""
        ids = tuple(delivered)
        if watermark == self.watermark:
            ids = self.delivered_at_watermark + tuple(i for i in ids if i not in self.delivered_at_watermark)
        return replace(self, watermark=watermark, state=RUNNING if self.state != FINISHED else FINISHED,
                       delivered_at_watermark=ids if len(ids) <= MAX_DELIVERED_IDS else ())

    def finished(self) -> PartitionProgress:
        return replace(self, state=FINISHED, delivered_at_watermark=())


def watermark(partitions: Iterable[PartitionProgress], end: Any = None) -> Any:
    """Up to where every change was delivered: the lowest watermark of the unfinished partitions;
    once all finished, ``end`` (a bounded watcher) or the highest watermark; None knowing none.

    >>> rows = [PartitionProgress("a", (), 1, 5, RUNNING), PartitionProgress("b", (), 1, 3, CREATED),
    ...         PartitionProgress("c", (), 0, 1, FINISHED)]
    >>> watermark(rows), watermark(rows[2:]), watermark(rows[2:], end=9), watermark([])
    (3, 1, 9, None)
    """
    rows = list(partitions)
    unfinished = [p.watermark for p in rows if p.state != FINISHED]
    if unfinished:
        return min(unfinished)
    if rows and end is not None:
        return end
    return max((p.watermark for p in rows), default=None)


class ProgressStore(ABC):
    """Stores :class:`PartitionProgress` rows (see the module docstring for the contract)."""

    def initialize(self) -> None:  # noqa: B027 - optional hook: stores with nothing to prepare keep it
        """Create what the store needs (called by the watcher's start); idempotent."""

    def own_tables(self) -> tuple[str, ...]:
        """Tables of the watched database the store writes to (the watcher never delivers their changes)."""
        return ()

    @abstractmethod
    def load(self, stream: str, watcher_id: str) -> list[PartitionProgress]:
        """Every stored partition of ``stream`` for ``watcher_id``."""

    @abstractmethod
    def save(self, stream: str, watcher_id: str, rows: Sequence[PartitionProgress]) -> None:
        """Insert or replace ``rows`` atomically."""


class InMemoryProgressStore(ProgressStore):
    """Progress in a dict: for tests and for watchers that may start over (nothing survives the process)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str], PartitionProgress] = {}
        self._lock = threading.Lock()
        #: How many rows were saved, over every call (tests look at it).
        self.saves = 0

    def load(self, stream: str, watcher_id: str) -> list[PartitionProgress]:
        with self._lock:
            return [p for (s, w, _), p in self._rows.items() if s == stream and w == watcher_id]

    def save(self, stream: str, watcher_id: str, rows: Sequence[PartitionProgress]) -> None:
        with self._lock:
            for p in rows:
                self._rows[(stream, watcher_id, p.token)] = p
            self.saves += len(rows)
