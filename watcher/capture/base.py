"""The Watcher interface: what every watcher offers, whatever it polls.

:class:`~watcher.capture.table_watcher.TableWatcher` (one table),
:class:`~watcher.capture.database_watcher.DatabaseWatcher` (several tables) and the
helper-table watchers (:class:`~watcher.capture.helper_tables.change_sets.ChangeSetWatcher`,
:class:`~watcher.capture.helper_tables.history.HistoryWatcher`) and the change-stream watcher
(:class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher`) implement it; the staging
sink, the ``watch`` command and the benchmark application use nothing else.

Delivery order:
    Callbacks (:meth:`Watcher.add_callback`) get one change at a time, per table in
    commit-timestamp order (per key too). Batch callbacks
    (:meth:`Watcher.add_batch_callback`) get each poll's changes of one table as a list,
    before any per-change callback sees them and before the checkpoint moves: the hook of
    durable sinks. Delivery is at-least-once: after a crash, a failure or a stop while a
    consumer held a change, the changes of at most one poll are delivered again.

Threading:
    Callbacks run on the watcher's poll threads, never two at once for one table; the
    callbacks of different tables of a DatabaseWatcher may run at the same time. Adding or
    removing callbacks, :meth:`Watcher.stats` and :meth:`Watcher.prometheus` are safe from
    any thread. :meth:`Watcher.changes` iterators are consumed by the application's thread.

Errors:
    :meth:`Watcher.start` raises when a table cannot be watched (a
    :class:`~watcher.errors.WatcherError` naming it). While running, transient errors are
    retried with backoff; a permanent one, or a failing callback, fails the watcher:
    :attr:`Watcher.failure` says why and :attr:`Watcher.state` is FAILED.

Lifecycle:
    NEW -> ``start()`` -> RUNNING -> ``stop()`` -> STOPPED (or FAILED on its own); a stopped or
    failed watcher can be started again and resumes from its checkpoint. A watcher is its own
    context manager (``with w:`` starts and stops it).

Example::

    def run(watcher: Watcher) -> None:
        watcher.add_callback(lambda change: print(change.table, change.keys))
        with watcher:
            for change in watcher.changes(timeout=10):
                ...
        assert watcher.failure is None
"""

from __future__ import annotations

import datetime as dt
import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Self

from ..errors import TableNotFoundError
from ..model import Change
from ..sqlnames import find_name
from .handoff import Iterators
from .metrics import prometheus_text
from .table_info import TableInfo


class State(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True)
class PollRecord:
    """One poll of one table, as poll listeners see it."""

    table: str
    at: dt.datetime
    seconds: float
    rows: int
    using_with_query: bool


Callback = Callable[[Change], Any]
BatchCallback = Callable[[list[Change]], Any]
PollListener = Callable[[PollRecord], Any]


class Watcher(ABC):
    """A running source of changes of one or more tables (see the module docstring for the contract).

    Subclasses call ``super().__init__()``, implement the abstract methods, call
    :meth:`_end_iterators` when they stop or fail and :meth:`_reopen_iterators` when they start.
    """

    def __init__(self) -> None:
        self._iterators = Iterators()

    # --- what subclasses implement ------------------------------------------------------------------

    @property
    @abstractmethod
    def state(self) -> State:
        """Where the watcher is in its lifecycle."""

    @property
    @abstractmethod
    def failure(self) -> BaseException | None:
        """Why the watcher failed (None while it has not)."""

    @abstractmethod
    def add_callback(self, callback: Callback) -> None:
        """Call ``callback(change)`` for every change, one at a time, in commit-timestamp order."""

    @abstractmethod
    def remove_callback(self, callback: Callback) -> None:
        """Stop calling ``callback`` (no error when it was not added)."""

    @abstractmethod
    def add_batch_callback(self, callback: BatchCallback) -> None:
        """Call ``callback(changes)`` with each poll's changes of one table before the per-change
        callbacks and before the checkpoint moves (a batch may come again after a crash)."""

    @abstractmethod
    def add_poll_listener(self, listener: PollListener) -> None:
        """Call ``listener(record)`` after every poll, also one that found nothing."""

    @abstractmethod
    def start(self) -> Self:
        """Start polling (returns the watcher); raises when a table cannot be watched."""

    @abstractmethod
    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop polling; waits up to ``timeout`` seconds for callbacks in flight and stores the position."""

    @abstractmethod
    def stats(self) -> Any:
        """Figures for people: a dict for a watcher of one poll loop, a list of them for several."""

    @abstractmethod
    def poll_stats(self) -> list[dict[str, Any]]:
        """The figures of every poll loop (one dict each: table, shard, polls, rows, lag, watermark, ...)."""

    @abstractmethod
    def table_infos(self) -> list[TableInfo]:
        """The tables whose changes this watcher delivers, with key columns and column types
        (known once started; empty before)."""

    # --- shared by every watcher ----------------------------------------------------------------------

    def table_info(self, table: str) -> TableInfo:
        """The watched table ``table`` (any case), or TableNotFoundError."""
        found = find_name({str(info.table): info for info in self.table_infos()}, table)
        if found is None:
            raise TableNotFoundError(table, "it is not watched by this watcher")
        return found

    def prometheus(self) -> str:
        """:meth:`poll_stats` in the Prometheus text format, for a scrape endpoint."""
        return prometheus_text(self.poll_stats())

    def changes(self, timeout: float | None = None) -> Iterator[Change]:
        """A blocking iterator over changes. A change counts as handled when the next one is asked
        for (or the iterator is closed), and only then may the checkpoint move past it; a change
        held when the watcher stops is delivered again after a restart. Ends when the watcher
        stops or fails, or after ``timeout`` seconds without a change. A watcher whose only
        consumer is an iterator not yet asked for a change does not poll.
        """
        return self._iterators.iterate(self.add_callback, self.remove_callback, timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _end_iterators(self) -> None:
        self._iterators.end()

    def _reopen_iterators(self) -> None:
        self._iterators.reopen()
