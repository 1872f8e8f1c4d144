"""The figures of a DatabaseWatcher: every table's poll figures, the table set's, Prometheus text, the watermark.

Kept apart from the watcher's life cycle (:mod:`watcher.capture.database_watcher`): these
only read what the watcher keeps (its table watchers, the dropped ones, its table set and
counters), under its lock.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

from .base import State
from .metrics import database_text, prometheus_text
from .table_set import TableSet
from .table_watcher import TableWatcher

__all__ = ["DatabaseFigures"]


class DatabaseFigures:
    """Figures of a set of table watchers (a base of :class:`~watcher.capture.database_watcher.DatabaseWatcher`)."""

    watchers: dict[str, TableWatcher]
    dropped: dict[str, TableWatcher]
    _tables: TableSet
    _added: int
    _dropped_count: int
    _state: State
    _failure: BaseException | None
    _lock: threading.RLock

    def stats(self) -> list[dict[str, Any]]:
        """The figures of every table's poll loop (see TableWatcher.stats); a dropped table's
        last figures stay, with ``state="dropped"`` and ``dropped=1``."""
        with self._lock:
            watching, dropped = list(self.watchers.values()), list(self.dropped.values())
        out = [{**w.stats(), "dropped": 0} for w in watching]
        out += [{**w.stats(), "state": "dropped", "running": 0, "dropped": 1} for w in dropped]
        return out

    def poll_stats(self) -> list[dict[str, Any]]:
        return self.stats()

    def database_stats(self) -> dict[str, Any]:
        """Figures of the table set: tables watched, added and dropped since the start, discoveries.

        ``tables_added`` counts tables that joined after the first start, ``tables_dropped`` the
        watchers that ended because their table was dropped (``dropped`` names them).
        """
        with self._lock:
            last = self._tables.last
            return {"tables_watched": len(self.watchers), "tables_added": self._added,
                    "tables_dropped": self._dropped_count, "discoveries": self._tables.looks,
                    "last_discovery_read_timestamp": last.read_timestamp if last is not None else None,
                    "dropped": sorted(self.dropped), "pending": sorted(self._tables.pending),
                    "state": self._state.value, "failure": repr(self._failure) if self._failure else None}

    def prometheus(self) -> str:
        """Every table's figures and the table set's (added, dropped, watched) in the Prometheus text format."""
        return prometheus_text(self.poll_stats()) + database_text(self.database_stats())

    def watermark(self) -> dt.datetime | None:
        """Every change of every watched table up to this time was delivered."""
        with self._lock:
            watching = list(self.watchers.values())
        marks = [w.stats()["watermark"] for w in watching]
        return None if not marks or any(m is None for m in marks) else min(marks)
