"""Checkpoint stores: where each poll loop stands, per table and shard value.

A store maps (table, shard value) to a :class:`~watcher.model.Checkpoint`. Reads and
writes are thread-safe; a write replaces the previous checkpoint of that key. The
watcher writes a checkpoint only after the callbacks for the rows before it returned,
so a checkpoint never runs ahead of what the application has seen.

Two implementations: :class:`~watcher.checkpoints.memory.InMemoryCommitTimestampRepository`
(tests, throw-away watchers) and
:class:`~watcher.checkpoints.spanner.SpannerCommitTimestampRepository` (the Java library's
table, so a user can switch from the Java library and keep their place).
"""

from __future__ import annotations

import datetime as dt
import json
from abc import ABC, abstractmethod
from typing import Any

from ..model import Checkpoint, TableId


class CommitTimestampRepository(ABC):
    """Stores one checkpoint per (table, shard value)."""

    def initialize(self) -> None:  # noqa: B027 - optional hook: stores with nothing to prepare keep it
        """Prepare the store (create or verify its table); called once when a watcher starts."""

    @abstractmethod
    def get(self, table: TableId, shard: Any = None) -> Checkpoint | None:
        """The stored checkpoint, or None when this table and shard have none yet."""

    @abstractmethod
    def set(self, table: TableId, checkpoint: Checkpoint, shard: Any = None) -> None:
        """Store ``checkpoint`` (durably, for stores that can be)."""

    @abstractmethod
    def oldest(self, table: TableId) -> dt.datetime | None:
        """The oldest commit timestamp stored for any shard of ``table`` (for index pruning)."""


def shard_key(shard: Any) -> Any:
    """A hashable form of a shard value (lists become tuples), tagged with its type.

    The tag keeps apart values Python finds equal but Spanner stores apart (True and 1, 1 and 1.0).

    >>> shard_key(True) == shard_key(1), shard_key([1, 2]) == shard_key((1, 2)), shard_key([{"b": 1, "a": 2}])
    (False, True, ('array', (('json', '{"a":2,"b":1}'),)))
    """
    if isinstance(shard, (list, tuple)):
        return ("array", tuple(shard_key(v) for v in shard))
    if isinstance(shard, dict):  # a JSON value: its text, with the names in one order
        return ("json", json.dumps(shard, sort_keys=True, separators=(",", ":")))
    return (type(shard).__name__, shard)


