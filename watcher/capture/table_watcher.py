"""TableWatcher: watch one table for inserts and updates by polling its commit-timestamp column.

A watcher runs one poll loop on an APScheduler scheduler. Each cycle polls, hands every
change to the callbacks one at a time in commit-timestamp order, then moves the
checkpoint, and polls again at once while polls come back full. Its position is exact
(commit timestamp plus, inside a group of rows sharing one timestamp, the last key), so a
stop, a crash or a failure repeats at most the rows of one poll and never skips one.

Transient errors are retried with backoff while the watcher keeps running; permanent ones
fail it, with the reason in :attr:`TableWatcher.failure`. A failed or stopped watcher can be
started again and resumes from its checkpoint.

Example::

    with TableWatcher(database, "Singers", shard_provider=FixedShardProvider("ShardId", range(-18, 19)),
                      table_hint="@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}") as w:
        for change in w.changes():
            print(change.keys, change.commit_timestamp)
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from google.api_core import exceptions as gexc

from ..checkpoints import CommitTimestampRepository, SpannerCommitTimestampRepository
from ..errors import CallbackError, ConfigurationError, PollError, TableNotFoundError, WatcherError
from ..model import Change, Checkpoint, PollStats, TableId, as_nanos_timestamp, from_nanos, timestamp_nanos
from .handoff import Handoff
from .metrics import prometheus_text
from .polling import PollQuery, continuation_query, run_poll, simple_query, with_query, with_query_eligible
from .retry import RetryPolicy, is_transient
from .shards import ShardProvider
from .table_info import TableInfo, discover

log = logging.getLogger(__name__)

Callback = Callable[[Change], Any]

_TABLE_NOT_FOUND = re.compile(r"table not found|table \S+ (was )?not found|no such table", re.IGNORECASE)


class State(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class CallbackErrorPolicy(enum.Enum):
    """What a callback exception does: fail the watcher (default) or retry the change with backoff."""

    FAIL = "fail"
    RETRY = "retry"


class _StopDelivery(Exception):
    """Raised inside a cycle when the watcher is stopping."""


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class TableWatcher:
    """Watches one table (optionally some of its shards) for changes.

    Args:
        database: a ``google.cloud.spanner_v1.database.Database``.
        table: the table name (or a TableId).
        shard_provider: restricts the poll to some shards (see :mod:`watcher.capture.shards`).
        table_hint: appended right after the table name, e.g. ``@{FORCE_INDEX=Idx}``.
        commit_timestamp_column: the column to poll; found from INFORMATION_SCHEMA when None.
        poll_interval: seconds between polls that found less than ``limit`` rows.
        limit: rows per poll.
        fallback_to_with_query_seconds: use the WITH query when this far behind (fixed array shards only).
        checkpoints: where progress is stored (default: LAST_SEEN_COMMIT_TIMESTAMPS in ``database``).
        initial_timestamp: where to start when no checkpoint exists (default: the database's
            current time; ``watcher.model.MIN_TIMESTAMP`` replays the whole table).
        scheduler: an APScheduler scheduler to run on (never shut down by the watcher).
        executor: an APScheduler executor for this watcher's polls (never shut down by the watcher).
        callback_error_policy: FAIL (default) or RETRY.
        retry_policy: backoff for transient errors and retried callbacks.
        clock: the current time, for lag and the WITH-query fallback (tests drive it).
    """

    def __init__(self, database: Any, table: str | TableId, *, shard_provider: ShardProvider | None = None,
                 table_hint: str = "", commit_timestamp_column: str | None = None, poll_interval: float = 1.0,
                 limit: int = 10_000, fallback_to_with_query_seconds: float = 60.0,
                 checkpoints: CommitTimestampRepository | None = None, initial_timestamp: dt.datetime | None = None,
                 scheduler: BaseScheduler | None = None, executor: Any = None,
                 callback_error_policy: CallbackErrorPolicy | str = CallbackErrorPolicy.FAIL,
                 retry_policy: RetryPolicy | None = None, clock: Callable[[], dt.datetime] = _utcnow,
                 name: str | None = None) -> None:
        if poll_interval < 0:
            raise ConfigurationError(f"poll_interval must be >= 0 seconds, got {poll_interval}")
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a positive integer, got {limit!r}")
        if table_hint and not table_hint.lstrip().startswith("@{"):
            raise ConfigurationError(f"table_hint must look like @{{FORCE_INDEX=...}}, got {table_hint!r}")
        self.database = database
        self.table = table if isinstance(table, TableId) else TableId(table)
        self.shard_provider = shard_provider
        self.table_hint = table_hint.strip()
        self.commit_timestamp_column = commit_timestamp_column
        self.poll_interval = float(poll_interval)
        self.limit = limit
        self.fallback_to_with_query_seconds = fallback_to_with_query_seconds
        self.checkpoints = checkpoints or SpannerCommitTimestampRepository(database)
        self.initial_timestamp = initial_timestamp
        self.callback_error_policy = CallbackErrorPolicy(callback_error_policy)
        self.retry_policy = retry_policy or RetryPolicy()
        self.clock = clock
        self.name = name or f"{self.table}-{uuid.uuid4().hex[:8]}"

        self._user_scheduler = scheduler
        self._user_executor = executor
        self._scheduler: BaseScheduler | None = None
        self._executor_alias = "default"
        self._job_id = f"spanner-watcher-{self.name}"

        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[Callable[[list[Change]], Any]] = []
        self._handoffs: list[Handoff] = []
        self._lock = threading.RLock()
        self._cycle_lock = threading.Lock()
        self._cycle_thread: int | None = None
        self._cleanup: threading.Thread | None = None
        self._stop_in_cycle = False
        self._stopping = threading.Event()
        self._state = State.NEW
        self.failure: BaseException | None = None
        self.info: TableInfo | None = None
        self._position: Checkpoint | None = None
        self._stored: Checkpoint | None = None
        self._attempt = 0
        self._next_delay = 0.0
        self._rng = random.Random()
        self._stats = PollStats()
        self._failure_listeners: list[Callable[[TableWatcher, BaseException], None]] = []

    # --- public API -----------------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def shard_value(self) -> Any:
        return self.shard_provider.shard_value if self.shard_provider is not None else None

    def add_batch_callback(self, callback: Callable[[list[Change]], Any]) -> None:
        """Call ``callback(changes)`` once per poll that found rows, before the per-change
        callbacks and before the checkpoint moves: the hook for durable staging sinks.
        A batch may be handed over again after a crash or a retried failure."""
        with self._lock:
            self._batch_callbacks.append(callback)

    def add_callback(self, callback: Callback) -> None:
        """Call ``callback(change)`` for every change, one at a time, in commit-timestamp order."""
        with self._lock:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def add_failure_listener(self, listener: Callable[[TableWatcher, BaseException], None]) -> None:
        self._failure_listeners.append(listener)

    def start(self) -> TableWatcher:
        """Fix the starting point and start polling; raises if the table cannot be watched."""
        with self._lock:
            if self._state == State.RUNNING:
                return self
            if self._cleanup is not None:
                self._cleanup.join(10)  # a failure's scheduler shutdown must not hit the restarted watcher
                self._cleanup = None
            self._stopping.clear()
            self.failure = None
            self.info = discover(self.database, self.table, self.commit_timestamp_column)
            self.checkpoints.initialize()
            if self._position is None:
                self._position = self._starting_point()
            self._attempt = 0
            self._schedule()
            self._state = State.RUNNING
        log.info("watching %s from %s", self.table, self._position)
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop polling; waits for the callback in flight and stores the position reached."""
        with self._lock:
            if self._state not in (State.RUNNING, State.FAILED):
                return
            was_failed = self._state == State.FAILED
            self._state = State.STOPPING if not was_failed else State.FAILED
            self._stopping.set()
            for h in list(self._handoffs):
                h.close()
            self._unschedule()
        if threading.get_ident() == self._cycle_thread:
            # Called by a callback: the cycle stops after this change, stores the position and
            # then finishes the stop (see _cycle), since it cannot wait for itself here.
            self._stop_in_cycle = True
            return
        acquired = self._cycle_lock.acquire(timeout=timeout if timeout is not None else -1)
        try:
            if acquired:
                self._flush_checkpoint(best_effort=True)
        finally:
            if acquired:
                self._cycle_lock.release()
        cleanup = self._cleanup
        if cleanup is not None and cleanup is not threading.current_thread():
            cleanup.join(10)  # a failure's own scheduler shutdown runs first: never shut down twice
        self._shutdown_scheduler()
        with self._lock:
            if not was_failed:
                self._state = State.STOPPED

    def __enter__(self) -> TableWatcher:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def changes(self, timeout: float | None = None) -> Iterator[Change]:
        """A blocking iterator over changes. A change counts as handled when the next one is asked
        for (or the iterator is closed), and only then may the checkpoint move past it; a change
        held when the watcher stops is delivered again after a restart. Ends when the watcher
        stops or fails, or after ``timeout`` seconds without a change. A watcher whose only
        consumer is an iterator not yet asked for a change does not poll.
        """
        handoff = Handoff()

        def offer(change: Change) -> None:
            if not handoff.put(change) and self._stopping.is_set():
                raise _StopDelivery()  # stopped while the consumer held it: not handled, delivered again later

        with self._lock:
            self._handoffs.append(handoff)
            self._callbacks.append(offer)
        try:
            yield from handoff.consume(timeout)
        finally:
            with self._lock:
                self.remove_callback(offer)
                if handoff in self._handoffs:
                    self._handoffs.remove(handoff)

    @property
    def position(self) -> Checkpoint | None:
        """Where the watcher stands: everything up to here was handed to the callbacks."""
        return self._position

    def stats(self) -> dict[str, Any]:
        """Last poll time and duration, rows per poll, polls, lag, watermark, failures."""
        s = self._stats
        now = self.clock()
        watermark = s.watermark
        return {
            "table": str(self.table),
            "shard": _shard_label(self.shard_value),
            "state": self._state.value,
            "running": 1 if self._state == State.RUNNING else 0,
            "polls": s.polls,
            "rows": s.rows,
            "last_poll_at": s.last_poll_at,
            "last_poll_seconds": s.last_poll_seconds,
            "last_poll_rows": s.last_poll_rows,
            "failures": s.failures,
            "retries": s.retries,
            "watermark": watermark,
            "watermark_seconds": timestamp_nanos(watermark) / 1e9 if watermark is not None else None,
            "lag_seconds": (now - watermark).total_seconds() if watermark is not None else None,
            "last_commit_timestamp": s.last_commit_timestamp,
            "using_with_query": s.using_with_query,
            "failure": repr(self.failure) if self.failure else None,
        }

    def prometheus(self) -> str:
        return prometheus_text([self.stats()])

    # --- scheduling ------------------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._user_scheduler is not None:
            self._scheduler = self._user_scheduler
        elif self._scheduler is None or not self._scheduler.running:
            self._scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(1)}, daemon=True)
            self._scheduler.start()
        scheduler = self._scheduler
        if self._user_executor is not None:
            self._executor_alias = f"spanner-watcher-{self.name}"
            try:
                scheduler.add_executor(self._user_executor, alias=self._executor_alias)
            except ValueError:
                pass  # already added by an earlier start
        self._next_cycle_in(0.0)

    def _next_cycle_in(self, seconds: float) -> None:
        """Run the next cycle after ``seconds``; one job at a time, so cycles never overlap."""
        if self._scheduler is None or self._stopping.is_set():
            return
        when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
        self._scheduler.add_job(self._cycle, DateTrigger(run_date=when), id=self._job_id, misfire_grace_time=None,
                                executor=self._executor_alias, replace_existing=True)

    def _unschedule(self) -> None:
        if self._scheduler is not None:
            try:
                self._scheduler.remove_job(self._job_id)
            except Exception:  # already gone
                pass

    def _shutdown_scheduler(self) -> None:
        if self._scheduler is None or self._scheduler is self._user_scheduler:
            if self._user_executor is not None and self._scheduler is not None:
                try:
                    self._scheduler.remove_executor(self._executor_alias, shutdown=False)
                except KeyError:
                    pass
            return
        if self._user_executor is not None:
            try:
                self._scheduler.remove_executor(self._executor_alias, shutdown=False)
            except KeyError:
                pass
        scheduler, self._scheduler = self._scheduler, None
        try:
            if scheduler is not None:
                scheduler.shutdown(wait=False)
        except SchedulerNotRunningError:
            pass  # shut down by a concurrent failure cleanup

    # --- the poll cycle -------------------------------------------------------------------------------------

    def _starting_point(self) -> Checkpoint:
        stored = self.checkpoints.get(self.table, self.shard_value)
        if stored is not None:
            self._stored = stored
            return stored
        ts = self.initial_timestamp
        if ts is None:
            with self.database.snapshot() as snap:
                ts = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]
        start = Checkpoint(as_nanos_timestamp(ts))
        # Stored at once, so that a crash before the first poll cannot move the starting point.
        self.checkpoints.set(self.table, start, self.shard_value)
        self._stored = start
        return start

    def _cycle(self) -> None:
        if self._stopping.is_set() or not self._cycle_lock.acquire(blocking=False):
            return
        self._cycle_thread = threading.get_ident()
        self._next_delay = self.poll_interval
        try:
            self._flush_checkpoint()
            with self._lock:
                # Nobody to hand changes to (e.g. `with w: for c in w.changes()` before the first
                # next()): do not poll, or the checkpoint would move past unseen changes.
                idle = not self._callbacks and not self._batch_callbacks
            while not idle and not self._stopping.is_set():
                query = self._next_query()
                started = time.monotonic()
                result = run_poll(self.database, self.info, query, limit=self.limit, shard_value=self.shard_value)
                self._record_poll(result, time.monotonic() - started)
                self._stage(result.changes)
                delivered = self._deliver(result.changes)
                self._advance(query, result, delivered)
                self._flush_checkpoint()
                if not (result.full or query.continuation):
                    break
            self._attempt = 0
        except _StopDelivery:
            self._flush_checkpoint(best_effort=True)
        except CallbackError as exc:
            self._on_callback_error(exc)
        except Exception as exc:  # noqa: BLE001 - every failure is classified below
            self._on_error(exc)
        finally:
            self._cycle_thread = None
            self._cycle_lock.release()
            if self._stop_in_cycle:
                self._stop_in_cycle = False
                self._shutdown_scheduler()
                with self._lock:
                    if self._state == State.STOPPING:
                        self._state = State.STOPPED
            if self._state == State.RUNNING:
                try:
                    self._next_cycle_in(self._next_delay)
                except Exception:  # the scheduler was shut down under us (stop)
                    log.debug("not rescheduling %s", self.table, exc_info=True)

    def _next_query(self) -> PollQuery:
        assert self.info is not None and self._position is not None
        pos = self._position
        shard = self.shard_provider.shard_filter() if self.shard_provider is not None else None
        if pos.key is not None:
            return continuation_query(self.info, self.table_hint, limit=self.limit, since=pos, shard=shard)
        behind = (self.clock() - pos.commit_timestamp).total_seconds()
        use_with = behind > self.fallback_to_with_query_seconds and with_query_eligible(self.shard_provider, self.limit)
        self._stats.using_with_query = use_with
        if use_with:
            return with_query(self.info, self.table_hint, limit=self.limit, provider=self.shard_provider,  # type: ignore[arg-type]
                              since=pos.commit_timestamp)
        return simple_query(self.info, self.table_hint, limit=self.limit, shard=shard, since=pos.commit_timestamp)

    def _record_poll(self, result: Any, seconds: float) -> None:
        s = self._stats
        s.polls += 1
        s.last_poll_at = self.clock()
        s.last_poll_seconds = seconds
        s.last_poll_rows = len(result.changes)

    def _stage(self, changes: list[Change]) -> None:
        if not changes:
            return
        with self._lock:
            batch_callbacks = list(self._batch_callbacks)
        for cb in batch_callbacks:
            try:
                cb(changes)
            except Exception as exc:
                raise CallbackError(f"A batch callback of the watcher on {self.table} failed on a batch of {len(changes)} "
                                    f"changes from {changes[0].commit_timestamp.isoformat()}: {exc!r}") from exc

    def _deliver(self, changes: list[Change]) -> int:
        """Hand changes to the callbacks; returns how many were fully delivered."""
        with self._lock:
            callbacks = list(self._callbacks)
        for i, change in enumerate(changes):
            if self._stopping.is_set():
                self._set_partial(changes, i)
                raise _StopDelivery()
            for cb in callbacks:
                try:
                    cb(change)
                except _StopDelivery:
                    self._set_partial(changes, i)
                    raise
                except Exception as exc:
                    self._set_partial(changes, i)
                    raise CallbackError(f"A callback of the watcher on {self.table} failed on the change with key "
                                        f"{change.keys} at {change.commit_timestamp.isoformat()}: {exc!r}") from exc
            self._stats.rows += 1
            self._stats.last_commit_timestamp = change.commit_timestamp
        return len(changes)

    def _set_partial(self, changes: list[Change], delivered: int) -> None:
        """Position after the first ``delivered`` changes of a poll (exact, inside the group)."""
        if delivered > 0:
            last = changes[delivered - 1]
            self._position = Checkpoint(last.commit_timestamp, last.keys)
            self._raise_watermark(from_nanos(timestamp_nanos(last.commit_timestamp) - 1))

    def _advance(self, query: PollQuery, result: Any, delivered: int) -> None:
        assert self._position is not None
        if result.changes:
            last = result.changes[-1]
            self._position = Checkpoint(last.commit_timestamp, last.keys if result.full else None)
        elif query.continuation:
            self._position = Checkpoint(self._position.commit_timestamp, None)
        if result.full:
            self._raise_watermark(from_nanos(timestamp_nanos(self._position.commit_timestamp) - 1))
        elif result.read_timestamp is not None and not query.continuation:
            self._raise_watermark(as_nanos_timestamp(result.read_timestamp))

    def _raise_watermark(self, ts: dt.datetime) -> None:
        if self._stats.watermark is None or ts > self._stats.watermark:
            self._stats.watermark = ts  # type: ignore[assignment]

    def _flush_checkpoint(self, best_effort: bool = False) -> None:
        pos = self._position
        if pos is None or pos == self._stored:
            return
        try:
            self.checkpoints.set(self.table, pos, self.shard_value)
            self._stored = pos
        except Exception:
            if not best_effort:
                raise
            log.warning("could not store the checkpoint of %s at %s", self.table, pos, exc_info=True)

    # --- failures ------------------------------------------------------------------------------------------

    def _on_error(self, exc: BaseException) -> None:
        self._stats.failures += 1
        if is_transient(exc) and not self._stopping.is_set():
            delay = self.retry_policy.delay(self._attempt, self._rng)
            self._attempt += 1
            self._stats.retries += 1
            log.warning("transient error watching %s (attempt %d), retrying in %.2fs: %s", self.table, self._attempt, delay, exc)
            self._next_delay = delay
            return
        self._fail(self._explain(exc))

    def _explain(self, exc: BaseException) -> BaseException:
        if isinstance(exc, WatcherError):
            return exc
        # Spanner (and the emulator) answer a query on a dropped table with INVALID_ARGUMENT
        # "Table not found: T"; some servers use NOT_FOUND.
        if isinstance(exc, (gexc.NotFound, gexc.InvalidArgument)) and _TABLE_NOT_FOUND.search(str(exc)):
            err: WatcherError = TableNotFoundError(str(self.table), f"it was dropped or is not readable: {exc.message}")
        else:
            err = PollError(f"Polling {self.table} failed: {exc}")
        err.__cause__ = exc
        return err

    def _on_callback_error(self, exc: CallbackError) -> None:
        self._stats.failures += 1
        try:
            self._flush_checkpoint()
        except Exception:
            log.warning("could not store the checkpoint of %s after a callback error", self.table, exc_info=True)
        if self.callback_error_policy == CallbackErrorPolicy.RETRY and not self._stopping.is_set():
            delay = self.retry_policy.delay(self._attempt, self._rng)
            self._attempt += 1
            self._stats.retries += 1
            log.warning("%s; retrying in %.2fs", exc, delay)
            self._next_delay = delay
            return
        self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        log.error("watcher on %s failed: %s", self.table, exc)
        with self._lock:
            self.failure = exc
            self._state = State.FAILED
            self._stopping.set()
            self._unschedule()
            for h in list(self._handoffs):
                h.close()
            # Started under the lock, so that a restart (start() joins it) never races with it.
            self._cleanup = threading.Thread(target=self._shutdown_scheduler, daemon=True)
            self._cleanup.start()
        for listener in list(self._failure_listeners):
            try:
                listener(self, exc)
            except Exception:
                log.exception("failure listener raised")


def _shard_label(value: Any) -> str:
    if value is None:
        return "all"
    if isinstance(value, (list, tuple)):
        return f"{value[0]}..{value[-1]}" if len(value) > 2 else ",".join(map(str, value))
    return str(value)
