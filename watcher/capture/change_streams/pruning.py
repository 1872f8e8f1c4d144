"""Pruning the progress rows of finished partitions, so the progress table stays bounded.

A finished partition's row is needed only until each of its children has a row of its own,
which the watcher saves before it marks the partition FINISHED (:mod:`.progress`). So
once a partition finished, the :class:`Pruner` deletes its row and drops it from its
children's parents, in one write (:meth:`.progress.ProgressStore.prune`); at start it does
the same for FINISHED rows left behind (a crash between the two writes, a failed prune).
Pruned partitions still count for the watcher's watermark: the pruner keeps the highest
watermark they reached (:attr:`Pruner.mark`).

Example:
    >>> from .progress import CREATED, FINISHED, InMemoryProgressStore, PartitionProgress
    >>> pruner = Pruner(InMemoryProgressStore())
    >>> rows = {"a": PartitionProgress("a", (), 0, 5, FINISHED), "c": PartitionProgress("c", ("a",), 5, 5, CREATED)}
    >>> kept = pruner.at_start("S", "w", rows)
    >>> [(p.token, p.parents) for p in kept.values()], pruner.mark
    ([('c', ())], 5)
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from .progress import PartitionProgress, ProgressStore, finished_to_prune, pruned


class Pruner:
    """Prunes the rows of one watcher's finished partitions in ``store`` (thread-safe)."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        #: The highest watermark of the partitions pruned (None: none yet).
        self.mark: Any = None
        # Serializes prunes: two parents of one merged child must not rewrite its row at once.
        self._lock = threading.Lock()

    def _reached(self, *marks: Any) -> None:
        self.mark = max(m for m in (self.mark, *marks) if m is not None)

    def at_start(self, stream: str, watcher_id: str, rows: dict[str, PartitionProgress]) -> dict[str, PartitionProgress]:
        """Prune the FINISHED rows of ``rows`` (token -> stored row); returns the rows that remain."""
        gone, rewritten = finished_to_prune(rows)
        if not gone:
            return rows
        self.store.prune(stream, watcher_id, gone, rewritten)
        self._reached(*(rows[t].watermark for t in gone))
        return {t: p for t, p in rows.items() if t not in gone} | {p.token: p for p in rewritten}

    def finished(self, stream: str, watcher_id: str, token: str, partitions: dict[str, PartitionProgress],
                 guard: AbstractContextManager[Any]) -> None:
        """Prune the finished partition ``token``: in the store, then in ``partitions`` (the watcher's
        rows, changed under ``guard``). Raises what the store raises, with nothing changed then."""
        with self._lock:
            with guard:
                children = pruned(partitions.values(), [token])
            self.store.prune(stream, watcher_id, [token], children)
            with guard:
                done = partitions.pop(token)
                partitions.update({p.token: p for p in children})
                self._reached(done.watermark)
