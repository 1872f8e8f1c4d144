"""Detection lag of a running TableWatcher: from a row's commit to its callback, at 1,000 changes/s.

A writer process (separate from the watcher's, as an application would be) commits 100
transactions per second, each inserting 10 new Singers rows (``LastUpdated`` = the commit
timestamp) with one ``database.batch()`` commit, paced to a fixed schedule by 4 threads
(open loop: a slow commit does not slow the schedule down). New keys make every change
visible exactly once, so the benchmark also checks that every committed row was delivered.

The watcher (``FixedShardProvider('ShardId', range(-18, 19))``, the FORCE_INDEX hint, limit
10,000, poll interval 100 ms, default Spanner checkpoint store, starting at "now") runs in
the benchmark's process; its callback records the wall clock. Lag = callback wall time
minus the row's commit timestamp; both clocks are the machine's (the server stamps commits
with ``time.time_ns()``). Rows committed in the first seconds (warm-up) are not counted.
Target: p99 under 500 ms.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from typing import Any

from watcher.capture.table_watcher import TableWatcher
from watcher.model import timestamp_nanos

from . import Result, RunContext, check
from .localspanner_server import (
    SINGERS_COLUMNS,
    RowMaker,
    child_database,
    cpu_seconds,
    percentile,
    run_threads,
    singers_server,
)
from .watcher_delivery import DATA_FOLDER, DATABASE_ID, HINT, LIMIT, TABLE, ensure_table, shard_provider

NAME = "watcher_lag"
TITLE = "commit-to-callback lag at 1,000 changes/s (100 commits/s x 10 new rows), poll interval 100 ms"

COMMITS_PER_SECOND = 100
ROWS_PER_COMMIT = 10
WRITER_THREADS = 4
POLL_INTERVAL = 0.1
TARGET_P99_MS = 500.0
FULL = {"seconds": 45.0, "warmup_seconds": 3.0, "table_rows": 200_000}
QUICK = {"seconds": 5.0, "warmup_seconds": 1.0, "table_rows": 5_000}
#: Seconds the writer process gets to import the client and connect.
WRITER_START_DELAY = 3.0
#: Seconds the watcher gets to deliver the last rows after the writer stopped.
DRAIN_TIMEOUT = 15.0


# --- the writer process ------------------------------------------------------------------------------

def _writer(host: str, first_id: int, start_at: float, warmup: float, seconds: float, out: Any,
            database_id: str = DATABASE_ID, commits_per_second: int = COMMITS_PER_SECOND,
            rows_per_commit: int = ROWS_PER_COMMIT, threads: int = WRITER_THREADS) -> None:
    """Commit ``commits_per_second`` batches of ``rows_per_commit`` new rows from ``start_at`` (wall clock) on.

    Commit latency and lateness against the schedule are kept for commits due after ``warmup``.
    """
    database = child_database(host, database_id)
    total = int((warmup + seconds) * commits_per_second)
    first_measured = int(warmup * commits_per_second)
    slot_lock = threading.Lock()
    next_slot = [0]
    late: list[float] = []
    committed: list[int] = []
    latencies: list[float] = []
    errors: list[str] = []

    def take() -> int:
        with slot_lock:
            slot = next_slot[0]
            next_slot[0] += 1
            return slot

    def work(seed: int) -> None:
        maker = RowMaker(seed)
        while (slot := take()) < total:
            due = start_at + slot / commits_per_second
            time.sleep(max(0.0, due - time.time()))
            began = time.time()
            ids = range(first_id + slot * rows_per_commit, first_id + (slot + 1) * rows_per_commit)
            try:
                with database.batch() as batch:
                    batch.insert_or_update(TABLE, SINGERS_COLUMNS, maker.rows(ids))
            except Exception as exc:  # noqa: BLE001 - reported, not swallowed
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            committed.append(slot)
            if slot >= first_measured:
                late.append(began - due)
                latencies.append(time.time() - began)

    run_threads(threads, work, start_at=start_at)
    finished = time.time()
    out.put({"commits": len(committed), "rows": len(committed) * rows_per_commit, "seconds": finished - start_at,
             "commit_ms_p50": percentile(latencies, 0.5) * 1000 if latencies else None,
             "commit_ms_p99": percentile(latencies, 0.99) * 1000 if latencies else None,
             "late_vs_schedule_ms_p50": percentile(late, 0.5) * 1000 if late else None,
             "late_vs_schedule_ms_p99": percentile(late, 0.99) * 1000 if late else None,
             "errors": errors[:5], "error_count": len(errors), "slots": committed})


# --- the watching side -------------------------------------------------------------------------------

class LagRecorder:
    """The watcher's callback: notes when each change arrived (wall clock, ns), its commit and poll
    read timestamps and its key."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, Any, Any, Any]] = []

    def __call__(self, change: Any) -> None:
        self.seen.append((time.time_ns(), change.commit_timestamp, change.read_timestamp, change.keys[0]))


class SleepProbe:
    """How late a thread of this process wakes from a 10 ms sleep: the CPU starvation the watcher's thread
    sees too (other processes, the GIL), so a lag tail can be told apart from the watcher's own delays."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.late_ms: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.perf_counter()
            time.sleep(self.period)
            self.late_ms.append((time.perf_counter() - began - self.period) * 1000)

    def __enter__(self) -> SleepProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _figures(lags_ms: list[float]) -> dict[str, float]:
    return {name: round(percentile(lags_ms, q), 1) for name, q in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99), ("max_ms", 1.0))}


def run(ctx: RunContext) -> Result:
    settings = dict(QUICK if ctx.quick else FULL)
    seconds, warmup = settings["seconds"], settings["warmup_seconds"]
    result = Result(settings={
        **settings, "commits_per_second": COMMITS_PER_SECOND, "rows_per_commit": ROWS_PER_COMMIT,
        "changes_per_second": COMMITS_PER_SECOND * ROWS_PER_COMMIT, "writer": f"separate process, {WRITER_THREADS} threads, "
        "fixed schedule; each commit = database.batch() insert_or_update of new SingerIds",
        "watcher": f"poll_interval={POLL_INTERVAL}, limit={LIMIT}, FixedShardProvider('ShardId', range(-18, 19)), hint {HINT}, "
                   "SpannerCommitTimestampRepository (default), initial timestamp = now",
        "lag": "callback time.time_ns() minus the row's commit timestamp, rows committed after the warm-up",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/watcher-data",
    })
    with singers_server(os.path.join(ctx.workdir, DATA_FOLDER), DATABASE_ID) as (server, database):
        ensure_table(database, int(settings["table_rows"]), ctx)
        with database.snapshot() as snap:
            first_id = int(next(iter(snap.execute_sql(f"SELECT MAX(SingerId) FROM {TABLE}")))[0]) + 1
        recorder = LagRecorder()
        watcher = TableWatcher(database, TABLE, shard_provider=shard_provider(), table_hint=HINT,
                               poll_interval=POLL_INTERVAL, limit=LIMIT, name="bench-lag")
        watcher.add_callback(recorder)
        watcher.start()
        try:
            context = multiprocessing.get_context("spawn")
            out = context.Queue()
            start_at = time.time() + WRITER_START_DELAY
            writer = context.Process(target=_writer, args=(server.emulator_host, first_id, start_at, warmup, seconds, out))
            writer.start()
            ctx.log(f"writing {COMMITS_PER_SECOND * ROWS_PER_COMMIT:,} changes/s for {warmup + seconds:.0f} s")
            time.sleep(max(0.0, start_at - time.time()))
            client0, server0 = cpu_seconds(), server.cpu_seconds()
            with SleepProbe() as probe:
                written = out.get(timeout=warmup + seconds + 120)
            window = time.time() - start_at
            client_cpu, server_cpu = cpu_seconds() - client0, server.cpu_seconds() - server0
            writer.join(30)
            drain_until = time.monotonic() + DRAIN_TIMEOUT
            while len(recorder.seen) < written["rows"] and time.monotonic() < drain_until:
                time.sleep(0.05)
            stats = watcher.stats()
        finally:
            watcher.stop()
        if watcher.failure is not None:
            raise RuntimeError(f"the watcher failed: {watcher.failure!r}")

    counted_from = int((start_at + warmup) * 1e9)
    measured = [(seen, timestamp_nanos(ts), timestamp_nanos(read)) for seen, ts, read, _ in recorder.seen]
    measured = [m for m in measured if m[1] >= counted_from]
    lags_ms = [(seen - stamp) / 1e6 for seen, stamp, _ in measured]
    # The lag in two parts: until a poll's snapshot included the row, then running that poll and the callbacks.
    until_read_ms = [(read - stamp) / 1e6 for _, stamp, read in measured]
    read_to_callback_ms = [(seen - read) / 1e6 for seen, _, read in measured]
    delivered_ids = [key for *_, key in recorder.seen]
    slots = written.pop("slots")
    expected = {first_id + slot * ROWS_PER_COMMIT + i for slot in slots for i in range(ROWS_PER_COMMIT)}
    missing = len(expected - set(delivered_ids))
    figures = _figures(lags_ms) if lags_ms else {}
    result.figures = {
        "lag": figures, "lag_commit_to_poll_read": _figures(until_read_ms) if measured else {},
        "lag_poll_read_to_callback": _figures(read_to_callback_ms) if measured else {},
        "wake_up_late_10ms_sleep": _figures(probe.late_ms), "rows_measured": len(lags_ms), "rows_written": written["rows"], "rows_delivered": len(recorder.seen),
        "rows_missing": missing, "rows_delivered_twice": len(delivered_ids) - len(set(delivered_ids)),
        "writer": {k: round(v, 1) if isinstance(v, float) else v for k, v in written.items()},
        "achieved_changes_per_second": round(written["rows"] / written["seconds"]),
        "watcher_polls": stats["polls"], "rows_per_poll": round(len(recorder.seen) / max(1, stats["polls"]), 1),
        "cpu_cores_during_writes": {"watcher_process": round(client_cpu / window, 2), "server": round(server_cpu / window, 2)},
        "loadavg_1min_after": round(os.getloadavg()[0], 1),
    }
    ctx.log("commit -> poll read: " + ", ".join(f"{k} {v}" for k, v in result.figures["lag_commit_to_poll_read"].items()))
    ctx.log("poll read -> callback: " + ", ".join(f"{k} {v}" for k, v in result.figures["lag_poll_read_to_callback"].items()))
    ctx.log("10 ms sleep wakes late by: " + ", ".join(f"{k} {v}" for k, v in result.figures["wake_up_late_10ms_sleep"].items()))
    ctx.log(f"lag over {len(lags_ms):,} rows: " + ", ".join(f"{k} {v}" for k, v in figures.items())
            + f"; {written['rows']:,} rows written ({result.figures['achieved_changes_per_second']:,}/s), "
            f"{len(recorder.seen):,} delivered in {stats['polls']} polls")
    result.checks.append(check("lag p99 (ms)", figures.get("p99_ms", float("inf")), "<", TARGET_P99_MS))
    result.checks.append(check("committed rows not delivered", missing, "<=", 0))
    if written["error_count"]:
        result.checks.append(check("writer errors", written["error_count"], "<=", 0))
    return result
