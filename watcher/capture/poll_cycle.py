"""One poll loop's cycle: poll, hand the changes over, move the checkpoint; repeat while polls come back full.

The position is exact (commit timestamp plus, inside a group of rows sharing one timestamp,
the last key), so a stop, a crash or a failure repeats at most the rows of the polls whose batches
were not acknowledged yet and never skips one. A sink may acknowledge a batch later than its
batch callback returns (:mod:`.acks`): the cycle goes on polling while up to
``max_batches_in_flight`` batches are in flight and stores the position after the newest batch
acknowledged together with every batch before it; a refused batch sends the cycle back there. The cycle knows nothing of scheduling: :class:`~watcher.capture.table_watcher.TableWatcher`
runs it on a :class:`~watcher.capture.scheduling.PollJob` and decides what an error does.

Example::

    cycle = PollCycle(database, TableId("Singers"), checkpoints, limit=100)
    cycle.begin(discover(database, "Singers"))
    cycle.run(Deliveries(callbacks=[print]), stopping=threading.Event())
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions as gexc

from ..checkpoints import CommitTimestampRepository
from ..errors import CallbackError, ColumnNotFoundError, PollError, TableNotFoundError, WatcherError
from ..model import Change, Checkpoint, PollStats, TableId, as_nanos_timestamp, from_nanos, timestamp_nanos
from ..request_settings import DEFAULT_SETTINGS, RequestSettings
from .acks import DEFAULT_MAX_BATCHES_IN_FLIGHT, InFlight, pending
from .base import BatchCallback, Callback, PollListener, PollRecord
from .handoff import StopDelivery
from .polling import PollQuery, continuation_query, run_poll, simple_query, with_query, with_query_eligible
from .shards import ShardProvider, shard_filter_for
from .table_info import TableInfo, is_table_not_found, recheck

log = logging.getLogger(__name__)

# What Spanner (and the emulator) answer a query naming a column that no longer exists; a PostgreSQL
# database says 'column "x" does not exist' (the local server: 'column or table "x" does not exist').
_COLUMN_NOT_FOUND = re.compile(r'Unrecognized name: `?([A-Za-z_][A-Za-z0-9_]*)`?'
                               r'|column (?:or table )?"([A-Za-z_][A-Za-z0-9_]*)" does not exist')


@dataclass(frozen=True)
class Deliveries:
    """Who gets a cycle's changes (a snapshot of the watcher's lists, taken once per cycle)."""

    callbacks: Sequence[Callback] = ()
    batch_callbacks: Sequence[BatchCallback] = ()
    poll_listeners: Sequence[PollListener] = ()

    @property
    def idle(self) -> bool:
        """Nobody to hand changes to: polling now would move the checkpoint past unseen changes."""
        return not self.callbacks and not self.batch_callbacks


@dataclass
class PollCycle:
    """The poll loop of one table (and shard set): its position, its checkpoint and its figures."""

    database: Any
    table: TableId
    checkpoints: CommitTimestampRepository
    shard_provider: ShardProvider | None = None
    table_hint: str = ""
    limit: int = 10_000
    fallback_to_with_query_seconds: float = 60.0
    initial_timestamp: dt.datetime | None = None
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
    info: TableInfo | None = None
    position: Checkpoint | None = None
    stats: PollStats = field(default_factory=PollStats)
    #: Seconds between checks that the table can still be watched (a removed commit-timestamp
    #: option leaves the poll query valid, so only the schema tells).
    schema_check_interval: float = 60.0
    #: The tags of every statement, the priority of the polls.
    request_settings: RequestSettings = DEFAULT_SETTINGS
    #: Batches handed to the batch callbacks whose acknowledgements may still be due (back-pressure).
    max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT
    _window: InFlight[Checkpoint] | None = field(default=None, init=False, repr=False)
    _stored: Checkpoint | None = field(default=None, init=False, repr=False)  # the position last written
    _next_schema_check: dt.datetime | None = field(default=None, init=False, repr=False)
    _seen_types: Any = field(default=None, init=False, repr=False)  # the column types of the last poll with rows

    @property
    def shard_value(self) -> Any:
        return self.shard_provider.shard_value if self.shard_provider is not None else None

    def begin(self, info: TableInfo) -> None:
        """Fix the table's schema for the coming polls and, the first time, the starting point."""
        self.info = info
        self._next_schema_check = self.clock() + dt.timedelta(seconds=self.schema_check_interval)
        self._seen_types = None
        if self.position is None:
            self.position = self._starting_point()
        if self._window is None:
            self._window = InFlight(self.position, self.max_batches_in_flight)

    def _recheck_schema(self, reason: str) -> None:
        """Fail with the reason when the table can no longer be watched (raises from :func:`recheck`)."""
        assert self.info is not None
        self.info = recheck(self.database, self.info, reason, request_settings=self.request_settings)
        self._next_schema_check = self.clock() + dt.timedelta(seconds=self.schema_check_interval)

    def _starting_point(self) -> Checkpoint:
        stored = self.checkpoints.get(self.table, self.shard_value)
        if stored is not None:
            self._stored = stored
            return stored
        ts = self.initial_timestamp
        if ts is None:
            assert self.info is not None
            with self.database.snapshot() as snap:
                ts = list(snap.execute_sql(self.info.dialect.current_timestamp_sql,
                                           request_options=self.request_settings.request_options(with_priority=False)))[0][0]
        start = Checkpoint(as_nanos_timestamp(ts))
        # Stored at once, so that a crash before the first poll cannot move the starting point.
        self.checkpoints.set(self.table, start, self.shard_value)
        self._stored = start
        return start

    def run(self, deliveries: Deliveries, stopping: threading.Event) -> None:
        """Poll and deliver until a poll comes back short; raises StopDelivery, CallbackError or the poll's error."""
        assert self.info is not None, "begin() fixes the schema before the first run"
        self.flush_checkpoint()
        if self._next_schema_check is not None and self.clock() >= self._next_schema_check:
            self._recheck_schema("found by the periodic schema check")
        while not deliveries.idle and not stopping.is_set():
            query = self.next_query()
            started = time.monotonic()
            result = run_poll(self.database, self.info, query, limit=self.limit, shard_value=self.shard_value,
                              request_settings=self.request_settings)
            self._record_poll(len(result.changes), time.monotonic() - started, deliveries.poll_listeners)
            if result.changes:
                if self._seen_types is not None and result.column_types != self._seen_types:
                    # The columns changed under the watcher: check it can still watch before delivering.
                    self._recheck_schema("the table's columns changed while it was watched")
                self._seen_types = result.column_types
            acks = self._stage(result.changes, deliveries.batch_callbacks)
            try:
                self._deliver(result.changes, deliveries.callbacks, stopping)
                self._advance(query, result)
            finally:  # the position reached, also a partial one, waits for the batch's acknowledgements
                self._handed_over(result.changes, acks)
            self.flush_checkpoint()
            if self._window is not None and self._window.full:
                self._acknowledged(room=stopping)
                self.flush_checkpoint()
            if not (result.full or query.continuation):
                break

    def next_query(self) -> PollQuery:
        """The next poll: continue inside a commit-timestamp group, or the simple or WITH query."""
        assert self.info is not None and self.position is not None
        pos = self.position
        shard = (shard_filter_for(self.shard_provider, self.info.dialect, self.info.column_types)
                 if self.shard_provider is not None else None)
        if pos.key is not None:
            return continuation_query(self.info, self.table_hint, limit=self.limit, since=pos, shard=shard)
        behind = (self.clock() - pos.commit_timestamp).total_seconds()
        use_with = behind > self.fallback_to_with_query_seconds and with_query_eligible(self.shard_provider, self.limit)
        self.stats.using_with_query = use_with
        if use_with:
            return with_query(self.info, self.table_hint, limit=self.limit, provider=self.shard_provider,  # type: ignore[arg-type]
                              since=pos.commit_timestamp)
        return simple_query(self.info, self.table_hint, limit=self.limit, shard=shard, since=pos.commit_timestamp)

    def _record_poll(self, rows: int, seconds: float, listeners: Sequence[PollListener]) -> None:
        s = self.stats
        s.polls += 1
        s.last_poll_at = self.clock()
        s.last_poll_seconds = seconds
        s.last_poll_rows = rows
        record = PollRecord(str(self.table), s.last_poll_at, seconds, rows, s.using_with_query)
        for listener in listeners:
            try:
                listener(record)
            except Exception:
                log.exception("a poll listener of the watcher on %s raised", self.table)

    def _stage(self, changes: list[Change], batch_callbacks: Sequence[BatchCallback]) -> list[Any]:
        """Hand the batch to the batch callbacks; the acknowledgements still to come."""
        if not changes:
            return []
        results = []
        for cb in batch_callbacks:
            try:
                results.append(cb(changes))
            except Exception as exc:
                raise CallbackError(f"A batch callback of the watcher on {self.table} failed on {self._batch(changes)}: "
                                    f"{exc!r}") from exc
        return pending(results)

    def _batch(self, changes: Sequence[Change]) -> str:
        return f"a batch of {len(changes)} changes from {changes[0].commit_timestamp.isoformat()}"

    def _handed_over(self, changes: list[Change], acks: list[Any]) -> None:
        if self._window is not None and self.position is not None:
            what = f"{self._batch(changes)} of the watcher on {self.table}" if changes else ""
            self._window.add(self.position, acks, what)

    def _acknowledged(self, wait: float | None = 0.0, room: threading.Event | None = None) -> Checkpoint | None:
        """The position after every acknowledged batch (waiting up to ``wait`` s, or, with ``room``, for room
        for one more batch unless that stop event is set first: StopDelivery then); a refused batch raises
        CallbackError and sends the position back to the acknowledged one."""
        window = self._window
        if window is None:
            return self.position
        try:
            if room is None:
                return window.settle(wait)
            if not window.make_room(room):
                raise StopDelivery()
            return window.acknowledged
        except CallbackError:
            self.position = window.acknowledged
            raise

    def _deliver(self, changes: list[Change], callbacks: Sequence[Callback], stopping: threading.Event) -> None:
        """Hand changes to the callbacks; on a stop or an error the position stops after the last one delivered."""
        for i, change in enumerate(changes):
            if stopping.is_set():
                self._set_partial(changes, i)
                raise StopDelivery()
            for cb in callbacks:
                try:
                    cb(change)
                except StopDelivery:
                    self._set_partial(changes, i)
                    raise
                except Exception as exc:
                    self._set_partial(changes, i)
                    raise CallbackError(f"A callback of the watcher on {self.table} failed on the change with key "
                                        f"{change.keys} at {change.commit_timestamp.isoformat()}: {exc!r}") from exc
            self.stats.rows += 1
            self.stats.last_commit_timestamp = change.commit_timestamp

    def _set_partial(self, changes: list[Change], delivered: int) -> None:
        """Position after the first ``delivered`` changes of a poll (exact, inside the group)."""
        if delivered > 0:
            last = changes[delivered - 1]
            self.position = Checkpoint(last.commit_timestamp, last.keys)
            self._raise_watermark(from_nanos(timestamp_nanos(last.commit_timestamp) - 1))

    def _advance(self, query: PollQuery, result: Any) -> None:
        assert self.position is not None
        if result.changes:
            last = result.changes[-1]
            self.position = Checkpoint(last.commit_timestamp, last.keys if result.full else None)
        elif query.continuation:
            self.position = Checkpoint(self.position.commit_timestamp, None)
        if result.full:
            self._raise_watermark(from_nanos(timestamp_nanos(self.position.commit_timestamp) - 1))
        elif result.read_timestamp is not None and not query.continuation:
            self._raise_watermark(as_nanos_timestamp(result.read_timestamp))

    def _raise_watermark(self, ts: dt.datetime) -> None:
        if self.stats.watermark is None or ts > self.stats.watermark:
            self.stats.watermark = ts  # type: ignore[assignment]

    def flush_checkpoint(self, best_effort: bool = False, wait: float | None = 0.0) -> None:
        """Store the acknowledged position if it moved (after waiting up to ``wait`` s for the batches in
        flight); ``best_effort`` logs a failure (a refused batch too) instead of raising it."""
        try:
            pos = self._acknowledged(wait)
        except CallbackError:
            if not best_effort:
                raise
            log.warning("the checkpoint of %s stays before a refused batch", self.table, exc_info=True)
            pos = self.position
        if pos is None or pos == self._stored:
            return
        try:
            self.checkpoints.set(self.table, pos, self.shard_value)
            self._stored = pos
        except Exception:
            if not best_effort:
                raise
            log.warning("could not store the checkpoint of %s at %s", self.table, pos, exc_info=True)

    def release(self, wait: float | None) -> None:
        """Stopping or failed: store what was acknowledged within ``wait`` s (best effort), then go back to it,
        so that a restart hands the batches still in flight over again."""
        self.flush_checkpoint(best_effort=True, wait=wait)
        if self._window is not None:
            self.position = self._window.abandon()

    def explain(self, exc: BaseException) -> BaseException:
        """A poll error as the WatcherError the application sees (a dropped table says so)."""
        if isinstance(exc, WatcherError):
            return exc
        found = _COLUMN_NOT_FOUND.search(str(exc)) if isinstance(exc, gexc.InvalidArgument) else None
        column = next(g for g in found.groups() if g) if found is not None else None
        if is_table_not_found(exc) or (column is not None and self.info is not None
                                       and column.casefold() == self.info.table.table.casefold()):
            message = getattr(exc, "message", str(exc))
            err: WatcherError = TableNotFoundError(str(self.table), f"it was dropped or is not readable: {message}")
        elif column is not None:
            err = ColumnNotFoundError(str(self.table), column, self._column_role(column))
        else:
            err = PollError(f"Polling {self.table} failed: {exc}")
        err.__cause__ = exc
        return err

    def _column_role(self, column: str) -> str:
        """Why the poll needs ``column`` (for the message of a column dropped while watching)."""
        low = column.lower()
        info = self.info
        shard_column = getattr(self.shard_provider, "column", None)
        if info is not None and low == info.commit_timestamp_column.lower():
            role = "the commit-timestamp column the watcher polls"
        elif isinstance(shard_column, str) and low == shard_column.lower():
            role = "the shard column of the watcher's shard provider"
        elif info is not None and low in (k.lower() for k in info.key_columns):
            role = "a primary key column"
        else:
            role = "named by the poll query (e.g. in its table hint)"
        return f"it was dropped while the table was watched, and it is {role}; the table cannot be watched any more"
