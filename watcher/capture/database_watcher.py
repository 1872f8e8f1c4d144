"""DatabaseWatcher: one TableWatcher per table of a database, on one shared scheduler.

Tables are all tables with a commit-timestamp column (``tables=ALL``), minus ``exclude``,
or exactly ``include``. Unlike the Java library, the limit, the table hint and the WITH
query fallback reach every table; shard providers, hints and commit-timestamp columns can
also be given per table. A table whose schema changed so that it cannot be watched any more
(:class:`~watcher.errors.TableNotWatchableError` or :class:`~watcher.errors.ColumnNotFoundError`:
its commit-timestamp option, commit-timestamp column or shard column gone) fails alone, with the reason in its watcher's ``failure``
(``watchers[name].failure``), while the other tables keep going. Any other failure of a
table's watcher fails and stops the whole database watcher, as in the Java library; the
cause is in :attr:`DatabaseWatcher.failure`.

Example::

    with DatabaseWatcher(database, exclude=["AuditLog"], poll_interval=0.5) as w:
        w.add_callback(lambda change: print(change.table, change.keys))
        ...
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler

from ..checkpoints import CommitTimestampRepository, SpannerCommitTimestampRepository
from ..errors import ColumnNotFoundError, ConfigurationError, TableNotFoundError, TableNotWatchableError
from ..sqlnames import find_name, has_name
from .base import BatchCallback, Callback, PollListener, State, Watcher
from .shards import ShardProvider
from .table_info import TableInfo, watchable_tables
from .table_watcher import TableWatcher

log = logging.getLogger(__name__)


class _All:
    def __repr__(self) -> str:
        return "ALL"


#: Watch every table that has a commit-timestamp column.
ALL = _All()

PerTable = Mapping[str, Any]


class DatabaseWatcher(Watcher):
    """Watches several tables of one database.

    Args:
        database: the database to watch.
        tables: ``ALL`` (default) or an iterable of table names (same as ``include``).
        include: watch exactly these tables (each must exist and have a commit-timestamp column).
        exclude: with ``ALL``, skip these tables.
        shard_provider: one provider for every table, or a mapping table -> provider.
        table_hint: one hint for every table, or a mapping table -> hint.
        commit_timestamp_column: a mapping table -> column, or a function table -> column (None: detect).
        scheduler: an APScheduler scheduler to share (never shut down by the watcher).
        max_workers: threads of the private scheduler (default: one per table, at most 32).
        **options: passed to every TableWatcher (poll_interval, limit, fallback_to_with_query_seconds,
            initial_timestamp, callback_error_policy, retry_policy, clock).
    """

    def __init__(self, database: Any, tables: Any = ALL, *, include: Iterable[str] | None = None,
                 exclude: Iterable[str] = (), shard_provider: ShardProvider | PerTable | None = None,
                 table_hint: str | PerTable = "", commit_timestamp_column: PerTable | Callable[[str], str | None] | None = None,
                 checkpoints: CommitTimestampRepository | None = None, scheduler: BaseScheduler | None = None,
                 max_workers: int | None = None, **options: Any) -> None:
        if tables is not ALL and include is not None:
            raise ConfigurationError("give the tables either as `tables` or as `include`, not both")
        if tables is not ALL:
            include = list(tables)
        if include is not None:
            include = list(include)
            if not include:
                raise ConfigurationError("include=[] watches nothing; give at least one table, or tables=ALL")
            if exclude:
                raise ConfigurationError("exclude only applies to tables=ALL; with include, list just the tables to watch")
        super().__init__()
        self.database = database
        self.include = include
        self.exclude = list(exclude)
        self.shard_provider = shard_provider
        self.table_hint = table_hint
        self.commit_timestamp_column = commit_timestamp_column
        self.checkpoints = checkpoints or SpannerCommitTimestampRepository(database)
        self.options = options
        self.max_workers = max_workers
        self._user_scheduler = scheduler
        self._scheduler: BaseScheduler | None = None
        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[BatchCallback] = []
        self._poll_listeners: list[PollListener] = []
        self.watchers: dict[str, TableWatcher] = {}
        self._failure: BaseException | None = None
        self._state = State.NEW
        self._lock = threading.RLock()
        self._stopper: threading.Thread | None = None

    @property
    def state(self) -> State:
        return self._state

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    def add_callback(self, callback: Callback) -> None:
        """Call ``callback(change)`` for changes of every table (one at a time per table)."""
        with self._lock:
            self._callbacks.append(callback)
            for w in self.watchers.values():
                w.add_callback(callback)

    def remove_callback(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
            for w in self.watchers.values():
                w.remove_callback(callback)

    def add_batch_callback(self, callback: BatchCallback) -> None:
        """Call ``callback(changes)`` once per poll of every table (see TableWatcher.add_batch_callback)."""
        with self._lock:
            self._batch_callbacks.append(callback)
            for w in self.watchers.values():
                w.add_batch_callback(callback)

    def add_poll_listener(self, listener: PollListener) -> None:
        with self._lock:
            self._poll_listeners.append(listener)
            for w in self.watchers.values():
                w.add_poll_listener(listener)

    def table_infos(self) -> list[TableInfo]:
        """The schema of every table watched so far (as discovered when its watcher started)."""
        with self._lock:
            watchers = list(self.watchers.values())
        return [info for w in watchers for info in w.table_infos()]

    def tables(self) -> list[str]:
        """The tables this watcher watches (resolved against the database's schema)."""
        if self.include is not None:
            return list(self.include)
        found = [t for t in watchable_tables(self.database) if not has_name(self.exclude, t)]
        if not found:
            raise TableNotFoundError(self.database.name, "no table with a column with allow_commit_timestamp=true to watch")
        return found

    def _per_table(self, value: Any, table: str, default: Any = None) -> Any:
        if isinstance(value, Mapping):
            found = find_name(value, table)
            return default if found is None else found
        if callable(value) and not isinstance(value, ShardProvider):
            return value(table)
        return value if value is not None else default

    def start(self) -> DatabaseWatcher:
        with self._lock:
            stopper = self._stopper
        if stopper is not None and stopper is not threading.current_thread():
            stopper.join(30)  # after a failure: the other tables finish stopping before the restart
        with self._lock:
            if self._state == State.RUNNING:
                return self
            names = self.tables()
            if self._user_scheduler is None and (self._scheduler is None or not self._scheduler.running):
                workers = self.max_workers or min(max(len(names), 1), 32)
                self._scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(workers)}, daemon=True)
                self._scheduler.start()
            scheduler = self._user_scheduler or self._scheduler
            self._failure = None
            self._reopen_iterators()
            started: list[TableWatcher] = []
            try:
                for name in names:
                    w = self.watchers.get(name)
                    if w is None:
                        w = TableWatcher(
                            self.database, name,
                            shard_provider=self._per_table(self.shard_provider, name),
                            table_hint=self._per_table(self.table_hint, name, ""),
                            commit_timestamp_column=self._per_table(self.commit_timestamp_column, name),
                            checkpoints=self.checkpoints, scheduler=scheduler, **self.options)
                        for cb in self._callbacks:
                            w.add_callback(cb)
                        for bcb in self._batch_callbacks:
                            w.add_batch_callback(bcb)
                        for listener in self._poll_listeners:
                            w.add_poll_listener(listener)
                        w.add_failure_listener(self._on_table_failure)
                        self.watchers[name] = w
                    else:
                        # A restart after stop() runs on a new private scheduler (the old one was shut down).
                        w.run_on(scheduler)
                    w.start()
                    started.append(w)
            except BaseException:
                for w in started:
                    w.stop()
                raise
            self._state = State.RUNNING
        return self

    def _on_table_failure(self, watcher: TableWatcher, exc: BaseException) -> None:
        if isinstance(exc, (TableNotWatchableError, ColumnNotFoundError)):
            # The world changed under one table (invariant 6): it fails alone, the others keep going.
            log.error("the watcher on %s failed and stopped; the other tables keep going: %s", watcher.table, exc)
            return
        with self._lock:
            if self._failure is None:
                self._failure = exc
            self._state = State.FAILED
            self._end_iterators()
            # Assigned with the state, so that a restart always finds (and waits for) it.
            self._stopper = threading.Thread(target=self._stop_all, daemon=True)
            self._stopper.start()
        log.error("database watcher failed because the watcher on %s failed: %s", watcher.table, exc)

    def _stop_all(self) -> None:
        for w in list(self.watchers.values()):
            w.stop()

    def stop(self, timeout: float | None = 30.0) -> None:
        with self._lock:
            was_failed = self._state == State.FAILED
        self._end_iterators()
        for w in list(self.watchers.values()):
            w.stop(timeout)
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        with self._lock:
            if not was_failed:
                self._state = State.STOPPED

    def stats(self) -> list[dict[str, Any]]:
        """The figures of every table's poll loop (see TableWatcher.stats)."""
        return [w.stats() for w in self.watchers.values()]

    def poll_stats(self) -> list[dict[str, Any]]:
        return self.stats()

    def watermark(self) -> dt.datetime | None:
        """Every change of every watched table up to this time was delivered."""
        marks = [w.stats()["watermark"] for w in self.watchers.values()]
        return None if not marks or any(m is None for m in marks) else min(marks)
