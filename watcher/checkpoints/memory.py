"""Checkpoints in memory, lost when the process ends: for tests and throw-away watchers.

Example:
    >>> from watcher.model import TableId, Checkpoint, MIN_TIMESTAMP
    >>> repo = InMemoryCommitTimestampRepository()
    >>> repo.set(TableId("Singers"), Checkpoint(MIN_TIMESTAMP), shard=[1, 2])
    >>> repo.get(TableId("Singers"), shard=[1, 2]) == Checkpoint(MIN_TIMESTAMP)
    True
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

from ..model import Checkpoint, TableId
from .base import CommitTimestampRepository, shard_key


class InMemoryCommitTimestampRepository(CommitTimestampRepository):
    """Checkpoints in a dict: lost when the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[TableId, Any], Checkpoint] = {}

    def get(self, table: TableId, shard: Any = None) -> Checkpoint | None:
        with self._lock:
            return self._data.get((table, shard_key(shard)))

    def set(self, table: TableId, checkpoint: Checkpoint, shard: Any = None) -> None:
        with self._lock:
            self._data[(table, shard_key(shard))] = checkpoint

    def oldest(self, table: TableId) -> dt.datetime | None:
        with self._lock:
            found = [c.commit_timestamp for (t, _), c in self._data.items() if t == table]
        return min(found) if found else None


