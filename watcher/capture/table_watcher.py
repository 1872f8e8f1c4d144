"""TableWatcher: watch one table for inserts and updates by polling its commit-timestamp column.

A watcher runs one poll loop (:mod:`watcher.capture.poll_cycle`) as a job on an APScheduler
scheduler (:mod:`watcher.capture.scheduling`); this module holds its public face and its
state machine. Each cycle polls, hands every change to the callbacks one at a time in
commit-timestamp order, then moves the checkpoint, and polls again at once while polls come
back full. Its position is exact (commit timestamp plus, inside a group of rows sharing one
timestamp, the last key), so a stop, a crash or a failure repeats at most the rows of one
poll and never skips one.

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
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from apscheduler.schedulers.base import BaseScheduler

from ..checkpoints import CommitTimestampRepository, SpannerCommitTimestampRepository
from ..dialects.hints import hint_entries
from ..errors import CallbackError, ConfigurationError
from ..model import Checkpoint, TableId, timestamp_nanos
from ..request_settings import RequestSettings, settings_or_default
from .acks import DEFAULT_MAX_BATCHES_IN_FLIGHT, checked_limit
from .base import BatchCallback, Callback, OwnStateWatcher, PollListener, State
from .handoff import StopDelivery
from .poll_cycle import Deliveries, PollCycle
from .polling import PollQuery
from .retry import RetryPolicy, is_transient
from .scheduling import PollJob
from .shards import ShardProvider
from .table_info import TableInfo, discover

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

__all__ = ["Callback", "CallbackErrorPolicy", "State", "TableWatcher"]

log = logging.getLogger(__name__)


class CallbackErrorPolicy(enum.Enum):
    """What a callback exception does: fail the watcher (default) or retry the change with backoff."""

    FAIL = "fail"
    RETRY = "retry"


#: Seconds a stop from inside a callback waits for the acknowledgements of the batches in flight.
_STOP_ACK_SECONDS = 30.0


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class TableWatcher(OwnStateWatcher):
    """Watches one table (optionally some of its shards) for changes.

    Args:
        database: a ``google.cloud.spanner_v1.database.Database``.
        table: the table name (or a TableId).
        shard_provider: restricts the poll to some shards (see :mod:`watcher.capture.shards`).
        table_hint: follows the table name, e.g. ``@{FORCE_INDEX=Idx}`` or PostgreSQL's
            ``/*@ FORCE_INDEX=idx */`` (either form; sent in the database's).
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
        schema_check_interval: seconds between checks that the table can still be watched (its
            commit-timestamp option still set); a change of the polled columns checks at once.
        request_settings: the priority of its polls, the request tag of every statement it sends
            and the transaction tag of its checkpoint writes (default checkpoints only; a store
            given in ``checkpoints`` keeps its own). None: the default tags, no priority.
        max_batches_in_flight: batches handed to sinks that acknowledge later (:meth:`Sink.submit_batch
            <watcher.sinks.base.Sink.submit_batch>`) before the next poll waits for the oldest; the
            checkpoint moves over acknowledged batches only, in order (:mod:`.acks`).
    """

    def __init__(self, database: Database, table: str | TableId, *, shard_provider: ShardProvider | None = None,
                 table_hint: str = "", commit_timestamp_column: str | None = None, poll_interval: float = 1.0,
                 limit: int = 10_000, fallback_to_with_query_seconds: float = 60.0,
                 checkpoints: CommitTimestampRepository | None = None, initial_timestamp: dt.datetime | None = None,
                 scheduler: BaseScheduler | None = None, executor: Any = None,
                 callback_error_policy: CallbackErrorPolicy | str = CallbackErrorPolicy.FAIL,
                 retry_policy: RetryPolicy | None = None, clock: Callable[[], dt.datetime] = _utcnow,
                 name: str | None = None, schema_check_interval: float = 60.0,
                 request_settings: RequestSettings | None = None,
                 max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT) -> None:
        if poll_interval < 0:
            raise ConfigurationError(f"poll_interval must be >= 0 seconds, got {poll_interval}")
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a positive integer, got {limit!r}")
        checked_limit(max_batches_in_flight)
        hint_entries(table_hint)  # either dialect's form; sent in the database's (watcher.dialects.hints)
        super().__init__()
        self.database = database
        self.table = table if isinstance(table, TableId) else TableId(table)
        self.shard_provider = shard_provider
        self.table_hint = table_hint.strip()
        self.commit_timestamp_column = commit_timestamp_column
        self.poll_interval = float(poll_interval)
        self.limit = limit
        self.max_batches_in_flight = max_batches_in_flight
        self.fallback_to_with_query_seconds = fallback_to_with_query_seconds
        self.request_settings = settings_or_default(request_settings)
        self.checkpoints = checkpoints or SpannerCommitTimestampRepository(database, request_settings=self.request_settings)
        self.initial_timestamp = initial_timestamp
        self.callback_error_policy = CallbackErrorPolicy(callback_error_policy)
        self.retry_policy = retry_policy or RetryPolicy()
        self.clock = clock
        self.name = name or f"{self.table}-{uuid.uuid4().hex[:8]}"

        self._cycle = PollCycle(database, self.table, self.checkpoints, shard_provider, self.table_hint, limit,
                                fallback_to_with_query_seconds, initial_timestamp, clock,
                                schema_check_interval=schema_check_interval, request_settings=self.request_settings,
                                max_batches_in_flight=max_batches_in_flight)
        self._job = PollJob(f"spanner-watcher-{self.name}", self._run_cycle, scheduler=scheduler, executor=executor)
        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[BatchCallback] = []
        self._poll_listeners: list[PollListener] = []
        self._lock = threading.RLock()
        self._cycle_lock = threading.Lock()
        self._cycle_thread: int | None = None
        self._cleanup: threading.Thread | None = None
        self._stop_in_cycle = False
        self._stopping = threading.Event()
        self._backoff = self.retry_policy.backoff()
        self._next_delay = 0.0
        self._failure_listeners: list[Callable[[TableWatcher, BaseException], None]] = []

    # --- public API -----------------------------------------------------------------------------------

    @property
    def info(self) -> TableInfo | None:
        """The table's schema as discovered at the last start (None before)."""
        return self._cycle.info

    @property
    def shard_value(self) -> Any:
        return self.shard_provider.shard_value if self.shard_provider is not None else None

    def table_infos(self) -> list[TableInfo]:
        return [self._cycle.info] if self._cycle.info is not None else []

    def add_batch_callback(self, callback: BatchCallback) -> None:
        """Call ``callback(changes)`` once per poll that found rows, before the per-change
        callbacks and before the checkpoint moves: the hook for durable staging sinks.
        A batch may be handed over again after a crash or a retried failure."""
        with self._lock:
            self._batch_callbacks.append(callback)

    def remove_batch_callback(self, callback: BatchCallback) -> None:
        with self._lock:
            if callback in self._batch_callbacks:
                self._batch_callbacks.remove(callback)

    def add_callback(self, callback: Callback) -> None:
        """Call ``callback(change)`` for every change, one at a time, in commit-timestamp order."""
        with self._lock:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def add_poll_listener(self, listener: PollListener) -> None:
        with self._lock:
            self._poll_listeners.append(listener)

    def add_failure_listener(self, listener: Callable[[TableWatcher, BaseException], None]) -> None:
        self._failure_listeners.append(listener)

    def run_on(self, scheduler: BaseScheduler | None) -> None:
        """Poll on ``scheduler`` from the next start on (a DatabaseWatcher's shared one)."""
        self._job.run_on(scheduler)

    def start(self) -> TableWatcher:
        """Fix the starting point and start polling; raises if the table cannot be watched."""
        with self._lock:
            if self._state == State.RUNNING:
                return self
            if self._cleanup is not None:
                self._cleanup.join(10)  # a failure's scheduler shutdown must not hit the restarted watcher
                self._cleanup = None
            self._stopping.clear()
            self._reopen_iterators()
            self._failure = None
            info = discover(self.database, self.table, self.commit_timestamp_column,
                            request_settings=self.request_settings)
            self.checkpoints.initialize()
            self._cycle.begin(info)
            self._backoff.reset()
            self._job.start()
            self._state = State.RUNNING
        log.info("watching %s from %s", self.table, self._cycle.position)
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop polling; waits for the callback in flight and stores the position reached."""
        with self._lock:
            if self._state not in (State.RUNNING, State.FAILED):
                return
            was_failed = self._state == State.FAILED
            self._state = State.STOPPING if not was_failed else State.FAILED
            self._stopping.set()
            self._end_iterators()
            self._job.cancel()
        if threading.get_ident() == self._cycle_thread:
            # Called by a callback: the cycle stops after this change, stores the position and
            # then finishes the stop (see _run_cycle), since it cannot wait for itself here.
            self._stop_in_cycle = True
            return
        acquired = self._cycle_lock.acquire(timeout=timeout if timeout is not None else -1)
        try:
            if acquired:
                self._cycle.release(timeout)
        finally:
            if acquired:
                self._cycle_lock.release()
        cleanup = self._cleanup
        if cleanup is not None and cleanup is not threading.current_thread():
            cleanup.join(10)  # a failure's own scheduler shutdown runs first: never shut down twice
        self._job.shutdown()
        with self._lock:
            if not was_failed:
                self._state = State.STOPPED

    @property
    def position(self) -> Checkpoint | None:
        """Where the watcher stands: everything up to here was handed to the callbacks."""
        return self._cycle.position

    def stats(self) -> dict[str, Any]:
        """Last poll time and duration, rows per poll, polls, lag, watermark, failures."""
        s = self._cycle.stats
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
            "failure": repr(self._failure) if self._failure else None,
        }

    def poll_stats(self) -> list[dict[str, Any]]:
        return [self.stats()]

    def _next_query(self) -> PollQuery:
        """The query the next poll would run (tests look at the fallback to the WITH query)."""
        return self._cycle.next_query()

    # --- one scheduled run -----------------------------------------------------------------------------

    def _run_cycle(self) -> None:
        if self._stopping.is_set() or not self._cycle_lock.acquire(blocking=False):
            return
        self._cycle_thread = threading.get_ident()
        self._next_delay = self.poll_interval
        try:
            with self._lock:
                # Nobody to hand changes to (e.g. `with w: for c in w.changes()` before the first
                # next()) makes the cycle idle: it must not poll past unseen changes.
                deliveries = Deliveries(list(self._callbacks), list(self._batch_callbacks), list(self._poll_listeners))
            self._cycle.run(deliveries, self._stopping)
            self._backoff.reset()
        except StopDelivery:
            self._cycle.release(_STOP_ACK_SECONDS)
        except CallbackError as exc:
            self._on_callback_error(exc)
        except Exception as exc:  # noqa: BLE001 - every failure is classified below
            self._on_error(exc)
        finally:
            self._cycle_thread = None
            self._cycle_lock.release()
            if self._stop_in_cycle:
                self._stop_in_cycle = False
                self._job.shutdown()
                with self._lock:
                    if self._state == State.STOPPING:
                        self._state = State.STOPPED
            if self._state == State.RUNNING:
                try:
                    self._job.next_in(self._next_delay)
                except Exception:  # the scheduler was shut down under us (stop)
                    log.debug("not rescheduling %s", self.table, exc_info=True)

    # --- failures ------------------------------------------------------------------------------------------

    def _on_error(self, exc: BaseException) -> None:
        self._cycle.stats.failures += 1
        if is_transient(exc) and not self._stopping.is_set():
            self._retry_later(f"transient error watching {self.table}: {exc}")
            return
        self._fail(self._cycle.explain(exc))

    def _on_callback_error(self, exc: CallbackError) -> None:
        self._cycle.stats.failures += 1
        try:
            self._cycle.flush_checkpoint()
        except Exception:
            log.warning("could not store the checkpoint of %s after a callback error", self.table, exc_info=True)
        if self.callback_error_policy == CallbackErrorPolicy.RETRY and not self._stopping.is_set():
            self._retry_later(str(exc))
            return
        self._fail(exc)

    def _retry_later(self, reason: str) -> None:
        self._next_delay = self._backoff.next_delay()
        self._cycle.stats.retries += 1
        log.warning("%s (attempt %d); retrying in %.2fs", reason, self._backoff.attempts, self._next_delay)

    def _fail(self, exc: BaseException) -> None:
        log.error("watcher on %s failed: %s", self.table, exc)
        self._cycle.release(0.0)  # a restart hands the batches still in flight over again
        with self._lock:
            self._failure = exc
            self._state = State.FAILED
            self._stopping.set()
            self._job.cancel()
            self._end_iterators()
            # Started under the lock, so that a restart (start() joins it) never races with it.
            self._cleanup = threading.Thread(target=self._job.shutdown, daemon=True)
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
