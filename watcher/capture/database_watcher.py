"""DatabaseWatcher: one TableWatcher per table of a database, on one shared scheduler.

Its arguments are read by :mod:`~watcher.capture.table_settings`, the table set it watches is
kept by :mod:`~watcher.capture.table_set`, and its figures are :mod:`~watcher.capture.database_stats`.

Tables are all tables with a commit-timestamp column (``tables=ALL``), minus ``exclude``,
or those ``include`` names. Both take table names or glob-like patterns (``"Audit*"``,
``"Log_????"``, ``"[AB]*"``; case is ignored, as in Spanner names). Unlike the Java
library, the limit, the table hint and the WITH query fallback reach every table; shard
providers, hints and commit-timestamp columns can also be given per table.

The world may change while it runs:

* Tables created later join: the database's tables are re-discovered every
  ``discover_interval`` seconds, and a selected table seen for the first time starts from the
  read timestamp of the last discovery that did not see it. INFORMATION_SCHEMA has no creation
  time, but a strong read at R that did not list the table proves that all its rows were
  committed after R, so its first rows are not missed however soon after the CREATE TABLE they
  were written. (A table created while the watcher was stopped starts the same way on restart.)
* A dropped table's watcher ends alone: a WARNING log line and a table event name the table,
  its stats entry says ``state="dropped"``, and the other tables go on. :attr:`failure` is kept
  for failures of the whole: the database gone, or a table's watcher failing for another
  reason (a callback error, for instance), which stops every table as in the Java library.
* A table whose schema changed so that it cannot be watched any more
  (:class:`~watcher.errors.TableNotWatchableError` or :class:`~watcher.errors.ColumnNotFoundError`:
  its commit-timestamp option, commit-timestamp column or shard column gone) fails alone, with
  the reason in its watcher's ``failure`` (``watchers[name].failure``); the others keep going.

Example::

    with DatabaseWatcher(database, exclude=["Audit*"], poll_interval=0.5, discover_interval=5) as w:
        w.add_callback(lambda change: print(change.table, change.keys))
        w.add_table_listener(lambda event: print(event.kind, event.table))
        ...
        w.database_stats()["tables_dropped"]
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from google.api_core import exceptions as gexc

from ..checkpoints import CommitTimestampRepository, SpannerCommitTimestampRepository
from ..errors import ColumnNotFoundError, TableNotFoundError, TableNotWatchableError
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import has_name
from .acks import DEFAULT_MAX_BATCHES_IN_FLIGHT, checked_limit
from .base import BatchCallback, Callback, OwnStateWatcher, PollListener, State
from .database_stats import DatabaseFigures
from .retry import is_transient
from .scheduling import PollJob
from .shards import ShardProvider
from .table_info import TableInfo
from .table_set import Discovery, TableEvent, TableSet, discover_tables, select_tables
from .table_settings import ALL, PerTable, per_table, table_selection
from .table_watcher import TableWatcher

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

__all__ = ["ALL", "DEFAULT_DISCOVER_INTERVAL", "DatabaseWatcher", "TableListener"]

log = logging.getLogger(__name__)


#: Seconds between two looks for created and dropped tables, by default.
DEFAULT_DISCOVER_INTERVAL = 10.0

TableListener = Callable[[TableEvent], Any]


class DatabaseWatcher(DatabaseFigures, OwnStateWatcher):
    """Watches several tables of one database, also tables created while it runs.

    Args:
        database: the database to watch.
        tables: ``ALL`` (default) or an iterable of table names or patterns (same as ``include``).
        include: watch these tables: plain names must exist and have a commit-timestamp column
            at start; patterns (``*``, ``?``, ``[...]``) take every matching table, now or later.
        exclude: with ``ALL`` or patterns, skip the tables these names or patterns match.
        shard_provider: one provider for every table, or a mapping table -> provider.
        table_hint: one hint for every table, or a mapping table -> hint.
        commit_timestamp_column: a mapping table -> column, or a function table -> column (None: detect).
        scheduler: an APScheduler scheduler to share (never shut down by the watcher).
        max_workers: threads of the private scheduler (default: one per table and one more, at most 32).
        discover_interval: seconds between two looks for created and dropped tables (None or 0: never,
            and no table joins; a dropped table is also noticed by its failing poll). Not used when
            ``include`` lists names only: no table can join those.
        request_settings: the priority of the polls, the request tag of every statement and the
            transaction tag of the checkpoint writes, for every table (None: the default tags, no priority).
        max_batches_in_flight: each table's batches handed to sinks that acknowledge later before its next
            poll waits for the oldest (:mod:`.acks`; per table, as a TableWatcher's).
        **options: passed to every TableWatcher (poll_interval, limit, fallback_to_with_query_seconds,
            initial_timestamp, callback_error_policy, retry_policy, clock).
    """

    def __init__(self, database: Database, tables: Any = ALL, *, include: Iterable[str] | None = None,
                 exclude: Iterable[str] = (), shard_provider: ShardProvider | PerTable | None = None,
                 table_hint: str | PerTable = "", commit_timestamp_column: PerTable | Callable[[str], str | None] | None = None,
                 checkpoints: CommitTimestampRepository | None = None, scheduler: BaseScheduler | None = None,
                 max_workers: int | None = None, discover_interval: float | None = DEFAULT_DISCOVER_INTERVAL,
                 request_settings: RequestSettings | None = None,
                 max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT, **options: Any) -> None:
        include, selection = table_selection(tables, include, exclude, discover_interval)
        self.max_batches_in_flight = checked_limit(max_batches_in_flight)
        super().__init__()
        self.database = database
        self.include = include
        self.exclude = list(exclude)
        self.selection = selection
        self.shard_provider = shard_provider
        self.table_hint = table_hint
        self.commit_timestamp_column = commit_timestamp_column
        self.request_settings = settings_or_default(request_settings)
        self.checkpoints = checkpoints or SpannerCommitTimestampRepository(database, request_settings=self.request_settings)
        self.options = options
        self.max_workers = max_workers
        self.discover_interval = discover_interval or None
        self._user_scheduler = scheduler
        self._scheduler: BaseScheduler | None = None
        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[BatchCallback] = []
        self._poll_listeners: list[PollListener] = []
        self._table_listeners: list[TableListener] = []
        self.watchers: dict[str, TableWatcher] = {}
        #: Watchers whose table was dropped (ended; their last figures stay in stats()).
        self.dropped: dict[str, TableWatcher] = {}
        self._tables = TableSet(selection)
        self._added = 0
        self._dropped_count = 0
        self._lock = threading.RLock()
        self._stopper: threading.Thread | None = None
        self._discovery_job = PollJob(f"spanner-watcher-discovery-{id(self):x}", self._discover_cycle)

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

    def add_table_listener(self, listener: TableListener) -> None:
        """Call ``listener(event)`` when a table joins (``event.kind == "added"``) or its watcher
        ends because the table was dropped (``"dropped"``); runs on a poll or discovery thread."""
        with self._lock:
            self._table_listeners.append(listener)

    def table_infos(self) -> list[TableInfo]:
        """The schema of every table watched so far (as discovered when its watcher started)."""
        with self._lock:
            watchers = list(self.watchers.values())
        return [info for w in watchers for info in w.table_infos()]

    def tables(self) -> list[str]:
        """The tables this watcher watches (resolved against the database's schema)."""
        return self._select(self._discover() if not self.selection.fixed else None)

    def _select(self, discovery: Discovery | None) -> list[str]:
        return select_tables(self.selection, discovery, self.database.name)

    def _discover(self) -> Discovery:
        return discover_tables(self.database, request_settings=self.request_settings)

    def _make_watcher(self, name: str, scheduler: BaseScheduler, start_at: dt.datetime | None) -> TableWatcher:
        options = dict(self.options)
        if start_at is not None:
            given = options.get("initial_timestamp")
            options["initial_timestamp"] = start_at if given is None else max(given, start_at)
        w = TableWatcher(self.database, name, shard_provider=per_table(self.shard_provider, name),
                         table_hint=per_table(self.table_hint, name, ""),
                         commit_timestamp_column=per_table(self.commit_timestamp_column, name),
                         checkpoints=self.checkpoints, scheduler=scheduler, request_settings=self.request_settings,
                         max_batches_in_flight=self.max_batches_in_flight, **options)
        for cb in self._callbacks:
            w.add_callback(cb)
        for bcb in self._batch_callbacks:
            w.add_batch_callback(bcb)
        for listener in self._poll_listeners:
            w.add_poll_listener(listener)
        w.add_failure_listener(self._on_table_failure)
        return w

    def start(self) -> DatabaseWatcher:
        with self._lock:
            stopper = self._stopper
        if stopper is not None and stopper is not threading.current_thread():
            stopper.join(30)  # after a failure: the other tables finish stopping before the restart
        with self._lock:
            if self._state == State.RUNNING:
                return self
            discovery = self._discover() if not self.selection.fixed else None
            names = self._select(discovery)
            if self._user_scheduler is None and (self._scheduler is None or not self._scheduler.running):
                workers = self.max_workers or min(len(names) + 1, 32)
                self._scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(workers)}, daemon=True)
                self._scheduler.start()
            scheduler = self._user_scheduler or self._scheduler
            assert scheduler is not None
            self._failure = None
            self._reopen_iterators()
            started: list[TableWatcher] = []
            try:
                for name in names:
                    w = self.watchers.get(name)
                    if w is None:
                        # A table the last discovery before a stop did not see was created since.
                        w = self._make_watcher(name, scheduler, self._tables.start_of(name))
                        self.watchers[name] = w
                        self.dropped.pop(name, None)
                    else:
                        # A restart after stop() runs on a new private scheduler (the old one was shut down).
                        w.run_on(scheduler)
                    w.start()
                    self._tables.started(name)
                    started.append(w)
            except BaseException:
                for w in started:
                    w.stop()
                raise
            # Dropped while the watcher was stopped: it ends without starting.
            ended = [self._mark_dropped(n, "the table is no longer in INFORMATION_SCHEMA")
                     for n in list(self.watchers) if not has_name(names, n)]
            self._tables.last = discovery or self._tables.last
            self._state = State.RUNNING
            if self.discover_interval and not self.selection.fixed:  # a list of names: no table can join
                self._discovery_job.run_on(scheduler)
                self._discovery_job.start()  # the first look at once: a table created meanwhile joins soon
        for item in ended:
            if item is not None:
                self._emit(item[1])
        return self

    # --- tables joining and leaving ------------------------------------------------------------------

    def _discover_cycle(self) -> None:
        """One look for created and dropped tables (a job on the scheduler, every discover_interval)."""
        if self._state != State.RUNNING:
            return
        try:
            current = self._discover()
        except Exception as exc:  # noqa: BLE001 - classified here
            if isinstance(exc, gexc.NotFound) and not is_transient(exc):
                self._fail_all(exc, f"the database {self.database.name} is gone: {exc}")
                return
            log.warning("looking for created and dropped tables in %s failed (trying again in %.1fs): %s",
                        self.database.name, self.discover_interval, exc)
        else:
            try:
                self._apply(current)
            except Exception:
                # Whatever went wrong with one look, the next one must still come: a discovery
                # loop that ended here would leave every later CREATE and DROP unseen.
                log.exception("taking in the tables of %s failed (looking again in %.1fs)",
                              self.database.name, self.discover_interval)
        if self._state == State.RUNNING and self.discover_interval:
            self._discovery_job.next_in(self.discover_interval)

    def _apply(self, current: Discovery) -> None:
        with self._lock:
            if self._state != State.RUNNING:
                return
            pending, gone = self._tables.observe(current, self.watchers)
        for name in gone:
            self._table_dropped(name, "the table is no longer in INFORMATION_SCHEMA")
        for name, since in pending.items():
            self._add_table(name, since)

    def _add_table(self, name: str, since: dt.datetime) -> None:
        with self._lock:
            scheduler = self._user_scheduler or self._scheduler
            if self._state != State.RUNNING or scheduler is None:
                return
            try:
                # Per-table settings given as functions are the user's code: one may not know a new table.
                w = self._make_watcher(name, scheduler, since)
                w.start()
            except Exception as exc:  # noqa: BLE001 - it stays pending: the next discovery tries again
                log.warning("could not start watching the new table %s (trying again at the next discovery): %s: %s",
                            name, type(exc).__name__, exc)
                return
            self.watchers[name] = w
            self.dropped.pop(name, None)
            self._tables.started(name)
            self._added += 1
            at = w.clock()
        log.info("watching the new table %s from %s", name, since.isoformat())
        self._emit(TableEvent("added", name, at, start=since))

    def _table_dropped(self, name: str, reason: str) -> None:
        """End the watcher of a dropped table alone (from a discovery or its own failing poll)."""
        with self._lock:
            ended = self._mark_dropped(name, reason)
        if ended is not None:
            ended[0].stop()  # outside the lock: its poll thread may be waiting for the lock in _on_table_failure
            self._emit(ended[1])

    def _mark_dropped(self, name: str, reason: str) -> tuple[TableWatcher, TableEvent] | None:
        key = next((k for k in self.watchers if k.casefold() == name.casefold()), None)
        if key is None:
            return None
        w = self.watchers.pop(key)
        self.dropped[key] = w
        self._dropped_count += 1
        log.warning("the table %s was dropped; its watcher ended (%s); the other tables go on", key, reason)
        return w, TableEvent("dropped", key, w.clock(), reason=reason)

    def _emit(self, event: TableEvent) -> None:
        for listener in list(self._table_listeners):
            try:
                listener(event)
            except Exception:
                log.exception("a table listener of the watcher on %s raised", self.database.name)

    # --- failures ---------------------------------------------------------------------------------------

    def _on_table_failure(self, watcher: TableWatcher, exc: BaseException) -> None:
        if isinstance(exc, (TableNotWatchableError, ColumnNotFoundError)):
            # The world changed under one table (invariant 6): it fails alone, the others keep going.
            log.error("the watcher on %s failed and stopped; the other tables keep going: %s", watcher.table, exc)
            return
        table = str(watcher.table)
        if isinstance(exc, TableNotFoundError):
            try:
                now = self._discover()
            except Exception:  # noqa: BLE001 - the database itself is gone or unreachable: a failure of the whole
                now = None
            if now is not None:
                self._table_dropped(table, str(exc))
                if now.has(table) and self.selection.matches(table):
                    # Dropped and created again: a new watcher, from the old one's checkpoint (older than
                    # the new table), or else from the last discovery's read timestamp.
                    last = self._tables.last or now
                    self._add_table(table, last.read_timestamp)
                return
        self._fail_all(exc, f"the watcher on {table} failed: {exc}")

    def _fail_all(self, exc: BaseException, why: str) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = exc
            self._state = State.FAILED
            self._discovery_job.cancel()
            self._end_iterators()
            # Assigned with the state, so that a restart always finds (and waits for) it.
            self._stopper = threading.Thread(target=self._stop_all, daemon=True)
            self._stopper.start()
        log.error("database watcher failed because %s", why)

    def _stop_all(self) -> None:
        for w in list(self.watchers.values()):
            w.stop()

    def stop(self, timeout: float | None = 30.0) -> None:
        with self._lock:
            was_failed = self._state == State.FAILED
            if self._state == State.RUNNING:
                self._state = State.STOPPING  # a discovery in flight adds no table now
        self._discovery_job.cancel()
        self._end_iterators()
        for w in list(self.watchers.values()):
            w.stop(timeout)
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        with self._lock:
            if not was_failed:
                self._state = State.STOPPED
