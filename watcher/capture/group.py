"""Several watchers run as one: what ``spanner-watcher watch`` runs when it mixes capture modes.

A :class:`WatcherGroup` is a :class:`~watcher.capture.base.Watcher` over other watchers (a
DatabaseWatcher for polled tables, change-set and history watchers), so a staging sink, the
progress display and the application see one watcher. Each member keeps its own poll loops,
checkpoints and delivery order; the group adds no ordering between members (their tables
differ). Members must watch different tables.

Example::

    group = WatcherGroup([DatabaseWatcher(db, include=["Singers"]), HistoryWatcher(db, "Documents")])
    StagingSink("staging/").attach(group)
    with group:
        ...
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from ..errors import ConfigurationError
from .base import BatchCallback, Callback, PollListener, State, Watcher
from .database_watcher import DatabaseWatcher
from .metrics import database_text, prometheus_text, stream_text
from .table_info import TableInfo

#: How the members' states combine, most telling first: one failed member fails the group.
_STATE_ORDER = (State.FAILED, State.RUNNING, State.STOPPING, State.STOPPED, State.NEW)


class WatcherGroup(Watcher):
    """Runs ``watchers`` together: started in order, stopped in reverse order, failed when one fails.

    Args:
        watchers: at least one watcher; they must watch different tables.
    """

    def __init__(self, watchers: Iterable[Watcher]) -> None:
        super().__init__()
        self.watchers = list(watchers)
        if not self.watchers:
            raise ConfigurationError("a WatcherGroup needs at least one watcher")

    @property
    def state(self) -> State:
        states = {w.state for w in self.watchers}
        return next(s for s in _STATE_ORDER if s in states)

    @property
    def failure(self) -> BaseException | None:
        """The first member's failure (in member order)."""
        return next((w.failure for w in self.watchers if w.failure is not None), None)

    def add_callback(self, callback: Callback) -> None:
        for w in self.watchers:
            w.add_callback(callback)

    def remove_callback(self, callback: Callback) -> None:
        for w in self.watchers:
            w.remove_callback(callback)

    def add_batch_callback(self, callback: BatchCallback) -> None:
        for w in self.watchers:
            w.add_batch_callback(callback)

    def add_poll_listener(self, listener: PollListener) -> None:
        for w in self.watchers:
            w.add_poll_listener(listener)

    def start(self) -> Self:
        """Start every member; when one cannot start, the ones started are stopped and its error raised."""
        self._reopen_iterators()
        started: list[Watcher] = []
        try:
            for w in self.watchers:
                w.start()
                started.append(w)
        except BaseException:
            for w in reversed(started):
                w.stop()
            self._end_iterators()
            raise
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        self._end_iterators()
        for w in reversed(self.watchers):
            w.stop(timeout)

    def stats(self) -> list[Any]:
        """Every member's figures, in member order (a member's list is spread out)."""
        out: list[Any] = []
        for w in self.watchers:
            s = w.stats()
            out.extend(s if isinstance(s, list) else [s])
        return out

    def poll_stats(self) -> list[dict[str, Any]]:
        return [s for w in self.watchers for s in w.poll_stats()]

    def prometheus(self) -> str:
        """Every member's figures as one exposition (each metric family once): the per-table
        figures, a database watcher's table set, and change streams' partition figures."""
        stats = self.poll_stats()
        tables = "".join(database_text(w.database_stats()) for w in self.watchers if isinstance(w, DatabaseWatcher))
        return prometheus_text(stats) + tables + stream_text([s for s in stats if "stream" in s])

    def table_infos(self) -> list[TableInfo]:
        return [info for w in self.watchers for info in w.table_infos()]
