"""Where each change-stream partition stands: the progress store interface and an in-memory store.

One row per (stream, watcher id, partition token): the partition's parents, its start,
its watermark (the next read starts there), the ids of records at the watermark already
delivered (skipped when the read starts again there, so a restart repeats nothing that was
acknowledged), and its state. The root row (token ``""``, :data:`ROOT_TOKEN`) stands for the
first query, which names the first partitions: its start is where the watcher began.

A FINISHED partition's row is needed only until each of its children has a row of its own
(the watcher saves a partition's children before it marks the partition FINISHED): from then
on a restart never reads the partition again, and a child waits only for the parents its row
still names. So the watcher prunes it (:meth:`ProgressStore.prune`, :func:`pruned`): the
row goes, and its children's rows stop naming it, in one write. The table then holds the
root, the unfinished partitions and their children, however often partitions split and merge.

Contract (every store):
    * ``save`` writes its rows atomically (all or none) and returns only once they are durable;
      the watcher calls it after the callbacks of a batch returned, never before.
    * ``prune`` deletes rows and saves others in one atomic write (a store that cannot delete
      keeps the default, which only saves: nothing is lost, the table just keeps growing).
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
from collections.abc import Iterable, Mapping, Sequence
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


def watermark(partitions: Iterable[PartitionProgress], end: Any = None, pruned_mark: Any = None) -> Any:
    """Up to where every change was delivered: the lowest watermark of the unfinished partitions;
    once all finished, ``end`` (a bounded watcher) or the highest watermark; None knowing none.
    ``pruned_mark``: the highest watermark of finished partitions no longer among ``partitions``.

    >>> rows = [PartitionProgress("a", (), 1, 5, RUNNING), PartitionProgress("b", (), 1, 3, CREATED),
    ...         PartitionProgress("c", (), 0, 1, FINISHED)]
    >>> watermark(rows), watermark(rows[2:]), watermark(rows[2:], end=9), watermark([]), watermark([], None, 4)
    (3, 1, 9, None, 4)
    """
    rows = list(partitions)
    if pruned_mark is not None:
        rows.append(PartitionProgress(ROOT_TOKEN, (), pruned_mark, pruned_mark, FINISHED))
    unfinished = [p.watermark for p in rows if p.state != FINISHED]
    if unfinished:
        return min(unfinished)
    if rows and end is not None:
        return end
    return max((p.watermark for p in rows), default=None)


def pruned(rows: Iterable[PartitionProgress], tokens: Iterable[str]) -> list[PartitionProgress]:
    """The rows (of ``rows``, outside ``tokens``) that name a partition of ``tokens`` as a parent,
    without it: what remains to wait for once the finished partitions ``tokens`` are pruned.

    >>> rows = [PartitionProgress("ab", ("a", "b"), 1, 1, CREATED), PartitionProgress("c", ("x",), 1, 1, CREATED)]
    >>> [(p.token, p.parents) for p in pruned(rows, ["a"])]
    [('ab', ('b',))]
    """
    gone = set(tokens)
    return [replace(p, parents=tuple(t for t in p.parents if t not in gone))
            for p in rows if p.token not in gone and gone.intersection(p.parents)]


def finished_to_prune(rows: Mapping[str, PartitionProgress]) -> tuple[list[str], list[PartitionProgress]]:
    """Of stored ``rows`` (token -> row): the FINISHED partitions (not the root), and the rows of
    the others rewritten without them as parents (what :meth:`ProgressStore.prune` takes).

    >>> rows = {"": PartitionProgress("", (), 0, 0, FINISHED), "a": PartitionProgress("a", (), 0, 2, FINISHED),
    ...         "c": PartitionProgress("c", ("a",), 2, 2, CREATED)}
    >>> gone, rewritten = finished_to_prune(rows)
    >>> gone, [(p.token, p.parents) for p in rewritten]
    (['a'], [('c', ())])
    """
    gone = [t for t, p in rows.items() if t != ROOT_TOKEN and p.state == FINISHED]
    return gone, pruned(rows.values(), gone) if gone else []


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

    def prune(self, stream: str, watcher_id: str, tokens: Sequence[str], rows: Sequence[PartitionProgress]) -> None:
        """Delete the rows of ``tokens`` and insert or replace ``rows``, atomically (default: save only)."""
        self.save(stream, watcher_id, rows)


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

    def prune(self, stream: str, watcher_id: str, tokens: Sequence[str], rows: Sequence[PartitionProgress]) -> None:
        with self._lock:
            for token in tokens:
                self._rows.pop((stream, watcher_id, token), None)
            for p in rows:
                self._rows[(stream, watcher_id, p.token)] = p
            self.saves += len(rows)
