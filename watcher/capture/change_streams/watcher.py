"""ChangeStreamWatcher: the second capture mode, reading a Spanner change stream partition by partition.

The watcher runs the stream's first query (no partition token), which names the first
partitions, then reads every partition on a bounded thread pool, each from where it stood.
A partition's child starts once all its parents finished (a child of a merge is read once).
Unlike polling, a change stream gives every version of a row, deletes at their commit
time, old values (by the stream's value capture type) and the transaction of each change.

Delivery follows the :class:`~watcher.capture.base.Watcher` contract: what a partition's
query returned since its last batch is one batch, delivered as :mod:`.delivery` says (one
batch at a time, so the changes of one key come in commit order); only then the partition's
progress is stored (:mod:`.progress`; in Spanner by default). A restart resumes each
unfinished partition from its watermark, skipping the records there it had delivered, never
reads a finished partition again, and starts the children of partitions that finished
before. A finished partition's progress row is pruned once it finished (its children's rows
were saved before it), so the table does not grow with partition churn (:mod:`.pruning`). Heartbeats move an idle partition's watermark; the watcher's watermark is the lowest
of its unfinished partitions'. Both partition modes are read, as the stream's options in
INFORMATION_SCHEMA say: in ``MUTABLE_KEY_RANGE`` partitions live on and key ranges move
between them; a partition start record names new partitions (read at once), a partition end
record ends one, and a partition that keys moved into waits at the move until their source
partitions processed everything up to it (:mod:`.key_range_moves`), so each key's changes
still come in commit order. At most ``max_concurrent_partitions`` partitions are read at once;
when more are ready (live partitions outnumber the slots), partitions take turns
(:mod:`.partitions`): one that has read for :data:`TURN_SECONDS` gives up its slot at its next
batch, and one waiting at a move-in gives up its slot at once and is read again only once its
sources caught up, the sources going first; a partition read again starts from its progress,
as after a restart. So a move-in never waits for a source that has no slot. Only the client's
public API is used (Spanner, the official emulator and the embedded server alike). Changes of
the progress table itself (a stream ``FOR ALL`` sees them) are never delivered, and never cause
a progress write.

Example::

    from watcher import ChangeStreamWatcher
    w = ChangeStreamWatcher(database, "SingersStream", heartbeat=dt.timedelta(seconds=2), watcher_id="orders")
    w.add_callback(lambda c: print(c.mod_type, c.table, c.keys, c.row, c.old_values))
    with w:                                            # start(): raises for an unknown stream
        ...
    w.stats()["partitions_finished"], w.watermark()
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc

from ...errors import CallbackError, ConfigurationError
from ...model import Change, TableId, as_nanos_timestamp, from_nanos, timestamp_nanos
from ...request_settings import RequestSettings, settings_or_default
from ..acks import DEFAULT_MAX_BATCHES_IN_FLIGHT, InFlight, checked_limit
from ..base import BatchCallback, Callback, OwnStateWatcher, PollListener, PollRecord, State
from ..handoff import StopDelivery
from ..metrics import prometheus_text, stream_text
from ..retry import RetryPolicy, is_transient
from ..table_info import TableInfo
from . import records
from .batching import steps
from .delivery import Delivery
from .key_range_moves import after_move_out, sources_done
from .key_range_records import PartitionEventRecord
from .partitions import PartitionScheduler
from .progress import CREATED, FINISHED, ROOT_TOKEN, PartitionProgress, ProgressStore, watermark
from .pruning import Pruner
from .reader import PartitionReader, ReadRun, first_partitions, query_text
from .spanner_progress import TABLE as PROGRESS_TABLE
from .spanner_progress import SpannerProgressStore
from .stream_info import StreamInfo, describe_stream, describe_tables, read_error, server_now

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

log = logging.getLogger(__name__)

DEFAULT_HEARTBEAT = dt.timedelta(seconds=2)
DEFAULT_MAX_CONCURRENT_PARTITIONS = 16
#: Result rows taken from a partition's queue into one batch at most.
DEFAULT_MAX_BATCH_ROWS = 1000
#: Seconds a stopping partition waits for the acknowledgements of its batches in flight.
STOP_ACK_SECONDS = 30.0
#: How often a partition at a move-in looks whether its sources caught up (or another partition wants its slot).
MOVE_IN_POLL_SECONDS = 0.02
#: How long a partition reads before it gives up its slot to a partition waiting for one.
TURN_SECONDS = 2.0
#: How a partition's read on a slot ended: read to its end, stopped (or failed), or gave up its slot.
DONE, STOPPED, YIELDED = "done", "stopped", "yielded"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ChangeStreamWatcher(OwnStateWatcher):
    """Watches the change stream ``stream`` of ``database`` (see the module docstring).

    Args:
        database: the database (``google.cloud.spanner_v1.database.Database``).
        stream: the change stream's name.
        heartbeat: how often an idle partition reports (1 s to 300 s); also bounds how long stop() waits.
        start: read changes committed from here on when the watcher has no stored progress
            (default: now, as the database's clock says); must be within the stream's retention.
        end: stop by itself after the changes committed up to here (default: run until stopped).
        max_concurrent_partitions: partitions read at the same time at most; when more are ready
            (in a MUTABLE_KEY_RANGE stream partitions live on), they take turns, so every change
            still comes, later (allow as many as are live at once for the lowest lag).
        progress: where partition progress is stored (default: a SpannerProgressStore on ``database``).
        watcher_id: names this watcher's progress rows (two watchers of one stream with
            different ids each get every change).
        max_batch_rows: result rows delivered as one batch at most.
        max_batches_in_flight: a partition's batches handed to sinks that acknowledge later
            (:meth:`Sink.submit_batch <watcher.sinks.base.Sink.submit_batch>`) before it waits for
            the oldest; its progress moves over acknowledged batches only, in order (:mod:`..acks`).
        retry_policy: backoff for transient errors (a partition's read is retried from its progress).
        ignore_tables: tables whose changes are never delivered (besides the progress store's own),
            e.g. a polling watcher's checkpoint table that a stream ``FOR ALL`` also sees.
        clock: the wall clock for lag and times in stats() (tests drive it).
        request_settings: the priority of the change-stream reads, the request tag of every
            statement and the transaction tag of the default progress store's writes (None: the
            default tags, no priority).
    """

    def __init__(self, database: Database, stream: str, *, heartbeat: dt.timedelta | float = DEFAULT_HEARTBEAT,
                 start: dt.datetime | None = None, end: dt.datetime | None = None,
                 max_concurrent_partitions: int = DEFAULT_MAX_CONCURRENT_PARTITIONS,
                 progress: ProgressStore | None = None, watcher_id: str = "default",
                 max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS, retry_policy: RetryPolicy | None = None,
                 ignore_tables: Collection[str] = (), clock: Callable[[], dt.datetime] = _utc_now,
                 request_settings: RequestSettings | None = None,
                 max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT) -> None:
        seconds = heartbeat.total_seconds() if isinstance(heartbeat, dt.timedelta) else float(heartbeat)
        if not 1.0 <= seconds <= 300.0:
            raise ConfigurationError(f"heartbeat must be between 1 s and 300 s, got {seconds} s")
        if max_concurrent_partitions < 1:
            raise ConfigurationError(f"max_concurrent_partitions must be >= 1, got {max_concurrent_partitions}")
        if max_batch_rows < 1:
            raise ConfigurationError(f"max_batch_rows must be >= 1, got {max_batch_rows}")
        checked_limit(max_batches_in_flight)
        if start is not None and end is not None and end < start:
            raise ConfigurationError(f"end ({end}) must not be before start ({start})")
        if not watcher_id:
            raise ConfigurationError("watcher_id must not be empty")
        query_text(stream)  # validates the name
        super().__init__()
        self.database = database
        self.stream = stream
        self.heartbeat_ms = int(seconds * 1000)
        self.start_at = as_nanos_timestamp(start) if start is not None else None
        self.end = as_nanos_timestamp(end) if end is not None else None
        self.max_concurrent_partitions = max_concurrent_partitions
        self.request_settings = settings_or_default(request_settings)
        self.progress = progress if progress is not None else SpannerProgressStore(
            database, request_settings=self.request_settings)
        self.watcher_id = watcher_id
        self.max_batch_rows = max_batch_rows
        self.max_batches_in_flight = max_batches_in_flight
        self.retry_policy = retry_policy or RetryPolicy(initial=0.1, maximum=10.0)
        self.clock = clock
        self.ignore_tables = tuple(ignore_tables)
        self.info: StreamInfo | None = None
        self._lock = threading.RLock()
        self._delivery = Delivery()
        self._tables: dict[str, TableInfo] = {}
        self._scheduler = PartitionScheduler()
        self._partitions: dict[str, PartitionProgress] = {}
        #: Partitions that gave up their slot at a move-in, with the move they wait at.
        self._parked: dict[str, PartitionEventRecord] = {}
        self._pruner = Pruner(self.progress)
        self._run: ReadRun | None = None
        self._ended = threading.Event()
        self._counts = {"polls": 0, "rows": 0, "records": 0, "heartbeats": 0, "failures": 0, "retries": 0}
        self._last: dict[str, Any] = {"last_poll_at": None, "last_poll_seconds": 0.0, "last_poll_rows": 0}

    # --- the Watcher interface --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The stream's name as the schema spells it (known once started)."""
        return self.info.name if self.info is not None else self.stream

    def add_callback(self, callback: Callback) -> None:
        self._delivery.add_callback(callback)

    def remove_callback(self, callback: Callback) -> None:
        self._delivery.remove_callback(callback)

    def add_batch_callback(self, callback: BatchCallback) -> None:
        """Call ``callback(changes)`` with each batch's changes of one table, before the
        per-change callbacks and before the progress moves (a batch may come again after a crash)."""
        self._delivery.add_batch_callback(callback)

    def add_poll_listener(self, listener: PollListener) -> None:
        """Call ``listener(record)`` after each batch (``record.table`` is the stream's name)."""
        self._delivery.add_poll_listener(listener)

    def table_infos(self) -> list[TableInfo]:
        with self._lock:
            return list(self._tables.values())

    def start(self) -> ChangeStreamWatcher:
        """Start reading; raises ChangeStreamNotFoundError for an unknown stream and
        ChangeStreamRetentionError for a start outside its retention."""
        with self._lock:
            if self._state == State.RUNNING:
                return self
            old = self._run
        if old is not None:  # after a failure: its partitions end first (they need the lock to)
            old.close(30.0)
        with self._lock:
            if self._state == State.RUNNING:
                return self
            self.info = info = describe_stream(self.database, self.stream, request_settings=self.request_settings)
            self.progress.initialize()
            rows = {p.token: p for p in self.progress.load(info.name, self.watcher_id)}
            root = rows.get(ROOT_TOKEN)
            now = server_now(self.database, request_settings=self.request_settings)
            if root is None:
                begin = self.start_at or now
                info.check_start(begin, now)
                root = PartitionProgress(ROOT_TOKEN, (), begin, begin, CREATED)
                self.progress.save(info.name, self.watcher_id, [root])
            for p in rows.values():  # stopped for longer than the retention: say so now, not from a reader thread
                if p.state != FINISHED:
                    info.check_start(p.watermark, now)
            if root.state != FINISHED:
                rows.update({p.token: p for p in self._read_root(root)})
            rows = self._pruner.at_start(info.name, self.watcher_id, rows)
            self._scheduler = PartitionScheduler()
            for p in rows.values():
                if p.token != ROOT_TOKEN:
                    self._scheduler.restore(p.token, p.parents, p.start, finished=p.state == FINISHED)
            self._partitions = {t: p for t, p in rows.items() if t != ROOT_TOKEN}
            self._parked = {}
            self._tables.update(describe_tables(self.database, info, request_settings=self.request_settings))
            self._failure = None
            self._ended.clear()
            self._reopen_iterators()
            self._run = ReadRun(self.max_concurrent_partitions)
            self._state = State.RUNNING
            self._schedule()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop reading; waits up to ``timeout`` seconds (about one heartbeat) for partitions in flight."""
        with self._lock:
            run, was_failed = self._run, self._state == State.FAILED
            if self._state == State.RUNNING:
                self._state = State.STOPPING
        if run is not None:
            run.stop.set()
        self._end_iterators()
        if run is not None:
            run.close(timeout)
        with self._lock:
            if not was_failed and self._state != State.FAILED:
                self._state = State.STOPPED
        self._ended.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the watcher ended (read up to ``end``, stopped or failed); False after ``timeout`` s."""
        return self._ended.wait(timeout)

    def watermark(self) -> Any:
        """Every change committed up to this time was delivered (see :func:`.progress.watermark`)."""
        with self._lock:
            return watermark(self._partitions.values(), self.end, self._pruner.mark)

    def stats(self) -> dict[str, Any]:
        """Partitions active, waiting and finished, records, changes, heartbeats, watermark and lag."""
        with self._lock:
            mark = self.watermark()
            out: dict[str, Any] = {
                "table": self.name, "shard": "all", "stream": self.name, "watcher_id": self.watcher_id,
                "state": self._state.value, "running": int(self._state == State.RUNNING),
                "partitions_active": len(self._scheduler.active), "partitions_waiting": len(self._scheduler.waiting),
                "partitions_finished": len(self._scheduler.finished) + self._scheduler.forgotten, **self._counts, **self._last,
                "watermark": mark, "failure": repr(self._failure) if self._failure else None}
        if mark is not None:
            out["watermark_seconds"] = mark.timestamp()
            out["lag_seconds"] = max(0.0, (self.clock() - mark).total_seconds())
        return out

    def poll_stats(self) -> list[dict[str, Any]]:
        return [self.stats()]

    def prometheus(self) -> str:
        """The figures of :meth:`stats` (and the partition counts) in the Prometheus text format."""
        stats = self.stats()
        return prometheus_text([stats]) + stream_text(stats)

    # --- reading ---------------------------------------------------------------------------------------

    def _read_root(self, root: PartitionProgress) -> list[PartitionProgress]:
        """The first query: the first partitions, stored (CREATED) with the root FINISHED."""
        info = info_of(self)
        try:
            found = first_partitions(self.database, info.name, root.start, end=self.end, heartbeat_ms=self.heartbeat_ms,
                                     request_settings=self.request_settings, mutable_key_range=info.mutable_key_range)
        except gexc.GoogleAPICallError as exc:
            raise read_error(info, exc, root.start) from exc
        rows = [*(PartitionProgress(c.token, c.parents, at, at, CREATED) for c, at in found), root.finished()]
        self.progress.save(info.name, self.watcher_id, rows)
        return rows

    def _schedule(self) -> None:
        """Hand partitions whose parents all finished to the pool, as many as there are free slots (the
        sources of partitions parked at a move-in first); end when all finished up to ``end``."""
        with self._lock:
            run = self._run
            if run is None or run.stop.is_set() or self._state != State.RUNNING:
                return
            for token, event in list(self._parked.items()):
                if sources_done(self._partitions, event.sources, event.commit_timestamp, token):
                    del self._parked[token]
            free = self.max_concurrent_partitions - len(self._scheduler.active)
            wanted = {t for event in self._parked.values() for t in event.sources}
            for p in self._scheduler.take_ready(max(free, 0), held=self._parked, first=wanted):
                future = run.pool.submit(self._run_partition, run, p.token)
                run.futures.add(future)
                future.add_done_callback(run.futures.discard)
            finished = self.end is not None and not self._scheduler.unfinished
            if finished:
                self._state = State.STOPPED
                run.stop.set()
        if finished:
            self._end_iterators()
            run.pool.shutdown(wait=False)
            self._ended.set()

    def _slot_wanted(self) -> bool:
        """Whether a partition is ready to read but has no slot (then a partition that waits or has had
        its turn gives up its own)."""
        with self._lock:
            if self.max_concurrent_partitions > len(self._scheduler.active):
                return False
            return bool(self._scheduler.ready(held=self._parked))

    def _run_partition(self, run: ReadRun, token: str) -> None:
        backoff = self.retry_policy.backoff()
        outcome = STOPPED
        while not run.stop.is_set():
            try:
                outcome = self._read_partition(run, token)
                break
            except StopDelivery:
                break
            except Exception as exc:  # noqa: BLE001 - transient: retried; else the watcher fails
                if run.stop.is_set():
                    break
                if not isinstance(exc, CallbackError) and is_transient(exc):
                    with self._lock:
                        self._counts["retries"] += 1
                    log.warning("change stream %s partition %s: %s; retrying", self.name, token[:16], exc)
                    run.stop.wait(backoff.next_delay())
                    continue
                with self._lock:
                    at = self._partitions[token].watermark
                self._fail(run, read_error(info_of(self), exc, at), exc)
                break
        if outcome == DONE:
            self._retire(token)
            self._schedule()
        elif outcome == YIELDED:
            with self._lock:
                self._scheduler.yield_turn(token)
            self._schedule()
        else:
            with self._lock:
                self._scheduler.release(token)

    def _read_partition(self, run: ReadRun, token: str) -> str:
        """Read ``token`` from its progress: DONE once it ended (progress FINISHED), STOPPED when the
        watcher stopped, YIELDED when it gave up its slot (its progress says where to go on from)."""
        info = info_of(self)
        with self._lock:
            start = self._partitions[token]
        reader = PartitionReader(self.database, info.name, token, start.watermark, end=self.end,
                                 heartbeat_ms=self.heartbeat_ms, request_settings=self.request_settings,
                                 mutable_key_range=info.mutable_key_range)
        with self._lock:
            run.readers = {r for r in run.readers if r.alive} | {reader}
        reader.start()
        window: InFlight[PartitionProgress] = InFlight(start, self.max_batches_in_flight)
        try:
            outcome = self._read_batches(run, token, reader, window)
        except BaseException:
            self._release(token, window)
            raise
        finally:
            reader.stop.set()
        if outcome != DONE:  # stopped or yielded: its progress must hold every batch it handed over
            self._settle(token, window, STOP_ACK_SECONDS)
            window.abandon()
        return outcome

    def _read_batches(self, run: ReadRun, token: str, reader: PartitionReader,
                      window: InFlight[PartitionProgress]) -> str:
        """The loop of :meth:`_read_partition`: batches handed over through ``window``."""
        info = info_of(self)
        start = window.acknowledged
        skip = set(start.delivered_at_watermark)
        ignored = (PROGRESS_TABLE, *self.progress.own_tables(), *self.ignore_tables)
        turn_ends = time.monotonic() + TURN_SECONDS
        while not run.stop.is_set():
            taken = reader.take(self.max_batch_rows)
            for step in steps(taken, skip_at=start.watermark, skip_ids=skip, ignore_tables=ignored,
                              in_sequence_order=info.mutable_key_range):
                with self._lock:
                    self._counts["heartbeats"] += step.heartbeats
                self._flush(run, token, window, step.records, step.heartbeat)
                if step.children is not None:
                    self._add_children(step.children.start_timestamp,
                                       [(c.token, c.parents) for c in step.children.children])
                if step.starts is not None:  # new partitions have no parents: read them now
                    self._add_children(step.starts.start_timestamp, [(t, ()) for t in step.starts.tokens])
                    self._schedule()
                if step.event is not None:
                    self._settle(token, window, None)  # the move sees every batch before it acknowledged
                    moved = self._moved(run, token, step.event)
                    with self._lock:  # the move's own progress row is where the next batches go on from
                        window.acknowledged = self._partitions[token]
                    if moved != DONE:
                        return moved
                if step.error is not None:
                    raise step.error
                if step.end:
                    self._settle(token, window, None)
                    with self._lock:
                        finished = self._partitions[token].finished()
                    self._save(token, finished)
                    return DONE
            if time.monotonic() >= turn_ends and self._slot_wanted():
                return YIELDED  # between batches: its progress holds everything delivered once settled
        return STOPPED

    def _settle(self, token: str, window: InFlight[PartitionProgress], wait: float | None,
                room: threading.Event | None = None) -> None:
        """Store ``token``'s progress after its acknowledged batches (waiting up to ``wait`` s, or, with
        ``room``, for room for one more batch unless that stop event is set first: StopDelivery then); a
        refused batch raises CallbackError, the progress stays before it."""
        try:
            if room is None:
                window.settle(wait)
            elif not window.make_room(room):
                raise StopDelivery()
        finally:
            with self._lock:
                saved = self._partitions[token]
            if window.acknowledged != saved:
                self._save(token, window.acknowledged)

    def _release(self, token: str, window: InFlight[PartitionProgress]) -> None:
        """The read failed or stopped: keep what was acknowledged (best effort), forget the rest."""
        try:
            self._settle(token, window, STOP_ACK_SECONDS)
        except CallbackError as exc:
            log.warning("change stream %s partition %s: %s", self.name, token[:16], exc)
        finally:
            window.abandon()

    def _moved(self, run: ReadRun, token: str, event: PartitionEventRecord) -> str:
        """Key ranges moved at ``event``: note the move-outs in the progress (the destinations may go on),
        then wait until the move-ins' sources processed everything up to the move (per-key commit
        order, :mod:`.key_range_moves`). DONE once they did; STOPPED when the watcher stopped while
        waiting; YIELDED when another partition wants the slot: the partition is parked at the move
        (not read again until its sources caught up; read again from its progress, it meets the move again)."""
        if event.destinations:
            with self._lock:
                after = after_move_out(self._partitions[token], event.commit_timestamp, event.destinations)
            self._save(token, after)
        while event.sources:
            with self._lock:
                if sources_done(self._partitions, event.sources, event.commit_timestamp, token):
                    return DONE
            if self._slot_wanted():
                with self._lock:
                    self._parked[token] = event
                return YIELDED
            if run.stop.wait(MOVE_IN_POLL_SECONDS):
                return STOPPED
        return DONE

    def _retire(self, token: str) -> None:
        """``token`` finished (its row says so; its children have rows): prune its row, then let
        its children start. Pruned first, while no child can start: a child's row rewritten
        by the prune is still the one in use. A failed prune leaves the FINISHED row to the next start."""
        try:
            self._pruner.finished(info_of(self).name, self.watcher_id, token, self._partitions, self._lock)
            forget = True
        except Exception as exc:  # noqa: BLE001 - not pruned now: nothing lost, pruned at the next start
            log.warning("change stream %s: could not prune finished partition %s: %s", self.name, token[:16], exc)
            forget = False
        with self._lock:
            self._scheduler.finish(token)
            if forget:
                self._scheduler.forget(token)

    def _add_children(self, start: Any, children: list[tuple[str, tuple[str, ...]]]) -> None:
        """Partitions (token, parents) to read from ``start``: a partition's children, or the new
        partitions of a partition start record (no parents)."""
        if self.end is not None and start > self.end:
            return
        new = []
        with self._lock:
            for child, parents in children:
                if child not in self._partitions and self._scheduler.add(child, parents, start):
                    row = PartitionProgress(child, parents, start, start, CREATED)
                    self._partitions[child] = row
                    new.append(row)
        if new:
            self.progress.save(info_of(self).name, self.watcher_id, new)

    def _flush(self, run: ReadRun, token: str, window: InFlight[PartitionProgress],
               batch: list[records.DataChangeRecord], beat: Any) -> None:
        """Deliver ``batch``, then store the partition's new watermark (the heartbeat's when later) once
        the batch and every batch before it were acknowledged."""
        if not batch and beat is None:
            return
        if run.stop.is_set():
            raise StopDelivery()
        began = time.monotonic()
        read_at = self.clock() if batch else None
        before = window.newest  # the progress after the last batch handed over, acknowledged or not
        after = before
        if batch:
            last = batch[-1].commit_timestamp
            after = after.moved(last, [r.record_id for r in batch if r.commit_timestamp == last])
        if beat is not None and beat > after.watermark:
            after = after.moved(beat)
        mark = self._watermark_after(token, after) if batch else None
        changes = [c for rec in batch for c in rec.changes(token, read_at, mark)]
        acks = self._deliver(run, batch, changes) if changes else []
        if after != before:
            what = f"a batch of {len(changes)} changes of change stream {self.name} partition {token[:16]}"
            window.add(after, acks, what)
            self._settle(token, window, 0.0, room=run.stop if window.full else None)
        seconds = time.monotonic() - began
        with self._lock:
            self._counts["records"] += len(batch)
            if changes:
                self._counts["polls"] += 1
                self._counts["rows"] += len(changes)
                self._last = {"last_poll_at": self.clock(), "last_poll_seconds": seconds, "last_poll_rows": len(changes)}
        if changes:
            self._delivery.polled(PollRecord(self.name, self._last["last_poll_at"], seconds, len(changes), False))

    def _watermark_after(self, token: str, after: PartitionProgress) -> Any:
        """The watcher's watermark once ``token`` moved to ``after``, less a nanosecond (a partition at
        a record's commit timestamp may hold more records of it): every change committed up to it
        is delivered by then. The other partitions' watermarks move only after their batches were
        delivered, so none counts a batch still on its way."""
        with self._lock:
            mark = watermark([after if t == token else p for t, p in self._partitions.items()], self.end,
                             self._pruner.mark)
        return from_nanos(timestamp_nanos(mark) - 1) if mark is not None else None

    def _save(self, token: str, row: PartitionProgress) -> None:
        self.progress.save(info_of(self).name, self.watcher_id, [row])
        with self._lock:
            self._partitions[token] = row
            parked = bool(self._parked)
        if parked:  # a parked partition's source may have caught up
            self._schedule()

    def _deliver(self, run: ReadRun, batch: list[records.DataChangeRecord], changes: list[Change]) -> list[Any]:
        self._delivery.wait_for_consumer(run.stop)
        with self._lock:
            for rec in batch:
                if rec.table_name not in self._tables:  # a table created after the start
                    self._tables[rec.table_name] = TableInfo(TableId(rec.table_name), "", rec.key_columns,
                                                             rec.types(), commit_timestamp_option=False)
        return self._delivery.deliver(changes, self.name)

    def _fail(self, run: ReadRun, error: BaseException, cause: BaseException) -> None:
        with self._lock:
            if run is not self._run or self._state != State.RUNNING:
                return
            self._failure = error
            self._counts["failures"] += 1
            self._state = State.FAILED
            run.stop.set()
        if error is not cause and error.__cause__ is None:
            error.__cause__ = cause
        self._end_iterators()
        self._ended.set()
        log.error("change stream watcher %s failed: %s", self.name, error)


def info_of(w: ChangeStreamWatcher) -> StreamInfo:
    """The stream a started watcher reads (described by start())."""
    assert w.info is not None, "start() describes the stream first"
    return w.info
