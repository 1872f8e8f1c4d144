"""Write throughput with a change stream FOR ALL vs without in both partition modes, and commit -> callback lag.

Three databases with the same Singers table on one server process: one without a change
stream, one with ``CREATE CHANGE STREAM S FOR ALL`` (the original partition mode,
IMMUTABLE_KEY_RANGE) and one with the same stream in ``partition_mode = 'MUTABLE_KEY_RANGE'``.
The write load of ``localspanner_writes`` (100 single-row InsertOrUpdate mutations per
commit, N writer threads) runs against each in turn, the order rotating over several rounds
so all see the same machine; the ratio of mutations per second with a stream over without
is the stream's write cost, per mode (over all rounds, and per round). Target: >= 0.75.

Then an open change stream query (end_timestamp NULL, the partition the first query names)
on the original-mode stream runs in a reader thread while single-row commits follow each
other every 20 ms; latency = the time the client receives a data change record minus its
commit timestamp (same machine, same clock). Target: p50 <= 100 ms.

Last, a :class:`~watcher.ChangeStreamWatcher` reads each mode's stream on a second server
process whose partitions follow load (``--change-stream-split-rate``), while a writer
process commits 5,000 new rows per second (50 commits of 100 rows; ``watcher_lag``'s
writer). Every commit writes one record per key bucket, so the split rate (records/s of a
whole partition) is below twice the commit rate and the merge rate (records/s of each split
one) above the commit rate: the stream splits and merges back every load window while the
load lasts. Lag = callback wall time minus commit timestamp, commits after the warm-up;
every written row must be delivered exactly once. The modes alternate over rounds. Target:
p99 <= 100 ms in MUTABLE_KEY_RANGE (the original mode's figure is reported beside it).
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import queue
import random
import statistics
import threading
import time
from typing import Any

from watcher.localspanner.change_streams.load import TIMELINES_SUFFIX

from . import Result, RunContext, check
from .localspanner_server import SINGERS_COLUMNS, RowMaker, ServerProcess, connect, singers_database
from .localspanner_writes import MUTATIONS_PER_COMMIT, ROW_SHAPE, WARMUP_SECONDS, _run_threads
from .watcher_lag import LagRecorder, SleepProbe, _figures, _writer

NAME = "localspanner_change_streams"
TITLE = ("writes with a change stream FOR ALL vs without in both partition modes (same run), commit -> record latency, "
         "commit -> ChangeStreamWatcher callback lag at 5,000 changes/s with load-driven splits")

PLAIN_ID = "cs_plain"
STREAM_DDL = "CREATE CHANGE STREAM S FOR ALL"
#: The partition modes, each with its database and the stream's DDL there.
ORIGINAL, MUTABLE = "IMMUTABLE_KEY_RANGE", "MUTABLE_KEY_RANGE"
STREAMS = {ORIGINAL: ("cs_stream", STREAM_DDL),
           MUTABLE: ("cs_stream_mkr", f"{STREAM_DDL} OPTIONS (partition_mode = '{MUTABLE}')")}
RATIO_TARGET = 0.75
LATENCY_P50_TARGET_MS = 100.0
LAG_P99_TARGET_MS = 100.0
#: (seconds per window, rounds, writer threads, latency commits)
FULL = (6.0, 6, 4, 200)
QUICK = (1.0, 1, 2, 20)
QUERY = ("SELECT ChangeRecord FROM READ_S(start_timestamp => @start, end_timestamp => NULL, "
         "partition_token => @token, heartbeat_milliseconds => 1000)")
#: The lag part: 5,000 changes/s as 50 commits/s of 100 new rows (the commit size of the write part), paced by a writer process.
LAG_COMMITS_PER_SECOND, LAG_ROWS_PER_COMMIT, LAG_WRITER_THREADS = 50, 100, 8
#: ``start_delay``: seconds the writer process gets to import the client and connect on a loaded machine
#: (a late start would begin with a burst of overdue commits, which a quick run's figures may show).
LAG_FULL = {"seconds": 30.0, "warmup_seconds": 3.0, "rounds": 2, "start_delay": 8.0}
LAG_QUICK = {"seconds": 4.0, "warmup_seconds": 1.0, "rounds": 1, "start_delay": 2.0}
#: A whole partition gets ~2 records per commit (100/s), each split one ~1 per commit (50/s): split above
#: 60 records/s, merge below 55, so the stream splits and merges back every window under the load.
SPLIT_OPTIONS = ("--change-stream-split-rate", "60", "--change-stream-merge-rate", "55",
                 "--change-stream-load-window-seconds", "2")
HEARTBEAT_SECONDS = 1.0
#: Seconds the watcher gets to deliver the last rows after the writer stopped.
DRAIN_TIMEOUT = 20.0


def _stream_database(instance: Any, mode: str) -> Any:
    database_id, ddl = STREAMS[mode]
    database = singers_database(instance, database_id)
    database.reload()
    if not any(s.startswith("CREATE CHANGE STREAM S ") or s == ddl for s in database.ddl_statements):
        database.update_ddl([ddl]).result(120)
    return database


def _round(values: list[float], digits: int = 1) -> list[float]:
    return [round(x, digits) for x in values]


def _min_median_max(values: list[float], digits: int = 3) -> list[float] | None:
    return [round(min(values), digits), round(statistics.median(values), digits), round(max(values), digits)] if values else None


def _throughput(databases: dict[str, Any], server: ServerProcess, seconds: float, rounds: int, threads: int) -> dict[str, Any]:
    """Rates and server CPU per mutation of each database (``"without"`` and one per mode), the order rotating per round."""
    labels = list(databases)
    rates: dict[str, list[float]] = {label: [] for label in labels}
    cpu_us: dict[str, list[float]] = {label: [] for label in labels}  # server CPU per mutation: steadier than rates on a busy machine
    for r in range(rounds):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            start = time.time() + WARMUP_SECONDS
            part = _run_threads(databases[label], threads, (start, start + seconds), seed=r * 10 + len(label), server=server)
            if part["errors"]:
                raise RuntimeError(f"writer errors ({label}): {part['errors'][:3]}")
            rates[label].append(part["mutations"] / seconds)
            cpu_us[label].append(part["server_cpu_seconds"] * 1e6 / max(part["mutations"], 1))
    without = sum(rates["without"]) / rounds
    out: dict[str, Any] = {"mutations_per_second_without_stream": round(without),
                           "mutations_per_second_without_stream_per_round": _round(rates["without"], 0),
                           "server_cpu_us_per_mutation_without_stream": _round(cpu_us["without"])}
    for mode in labels[1:]:
        with_ = sum(rates[mode]) / rounds
        ratios = [w / o for w, o in zip(rates[mode], rates["without"], strict=True) if o]
        cpu_ratios = [o / w for w, o in zip(cpu_us[mode], cpu_us["without"], strict=True) if w]
        out[mode] = {"mutations_per_second_with_stream": round(with_),
                     "ratio_with_over_without": round(with_ / without, 3) if without else None,
                     "mutations_per_second_with_stream_per_round": _round(rates[mode], 0),
                     "ratio_per_round": _round(ratios, 3), "ratio_per_round_min_median_max": _min_median_max(ratios),
                     "server_cpu_us_per_mutation_with_stream": _round(cpu_us[mode]),
                     "server_cpu_ratio_without_over_with_per_round": _round(cpu_ratios, 3),
                     "server_cpu_ratio_median": round(statistics.median(cpu_ratios), 3) if cpu_ratios else None}
    return out


def _latency(database: Any, commits: int) -> dict[str, Any]:
    from google.cloud.spanner_v1 import param_types

    with database.snapshot() as snap:
        start = next(iter(snap.execute_sql("SELECT CURRENT_TIMESTAMP()")))[0]
    with database.snapshot() as snap:
        first = list(snap.execute_sql(QUERY.replace("partition_token => @token", "partition_token => NULL"),
                                      params={"start": start}, param_types={"start": param_types.TIMESTAMP}))
    token = first[0][0][0][2][0][2][0][0]
    latencies: list[float] = []
    ready = threading.Event()

    def reader() -> None:
        with database.snapshot() as snap:
            rows = snap.execute_sql(QUERY, params={"start": start, "token": token},
                                    param_types={"start": param_types.TIMESTAMP, "token": param_types.STRING})
            ready.set()
            for row in rows:
                arrived = time.time()
                for record in row[0][0][0]:
                    latencies.append((arrived - record[0].timestamp()) * 1000)
                if len(latencies) >= commits:
                    return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    ready.wait(30)
    maker, rng = RowMaker(7, ROW_SHAPE), random.Random(7)
    for _ in range(commits):
        with database.batch() as batch:
            batch.insert_or_update("Singers", SINGERS_COLUMNS, [maker.row(rng.randrange(1_000_000))])
        time.sleep(0.02)
    thread.join(60)
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else None
    return {"records": len(ordered), "latency_ms_p50": round(statistics.median(ordered), 1) if ordered else None,
            "latency_ms_p99": round(p99, 1) if p99 is not None else None,
            "latency_ms_max": round(ordered[-1], 1) if ordered else None}


def _load_generations(data_dir: str, database_id: str) -> int:
    """How many partition generations (whole or split) load gave stream S of ``database_id`` so far."""
    for path in glob.glob(os.path.join(data_dir, "databases", "*", f"{database_id}.sqlite{TIMELINES_SUFFIX}")):
        with open(path, encoding="utf-8") as f:
            return sum(len(starts) for name, _, starts in json.load(f).get("streams", []) if name == "s")
    return 0


def _lag_round(ctx: RunContext, server: ServerProcess, database: Any, mode: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One mode's watcher under the writer process: lags, delivery, partitions read, load generations."""
    from watcher import ChangeStreamWatcher, InMemoryProgressStore
    from watcher.model import timestamp_nanos

    database_id = STREAMS[mode][0]
    seconds, warmup, start_delay = settings["seconds"], settings["warmup_seconds"], settings["start_delay"]
    with database.snapshot() as snap:
        start, top = next(iter(snap.execute_sql("SELECT CURRENT_TIMESTAMP(), MAX(SingerId) FROM Singers")))
    first_id = (top or 0) + 1
    generations0 = _load_generations(server.data_dir or "", database_id)
    recorder = LagRecorder()
    watcher = ChangeStreamWatcher(database, "S", heartbeat=HEARTBEAT_SECONDS, start=start, progress=InMemoryProgressStore())
    watcher.add_callback(recorder)
    watcher.start()
    most_active, load0 = 0, os.getloadavg()[0]
    try:
        mp = multiprocessing.get_context("spawn")
        out = mp.Queue()
        start_at = time.time() + start_delay
        writer = mp.Process(target=_writer, args=(server.emulator_host, first_id, start_at, warmup, seconds, out, database_id,
                                                  LAG_COMMITS_PER_SECOND, LAG_ROWS_PER_COMMIT, LAG_WRITER_THREADS))
        writer.start()
        with SleepProbe() as probe:
            deadline = time.monotonic() + start_delay + warmup + seconds + 120
            while True:
                most_active = max(most_active, watcher.stats()["partitions_active"])
                try:
                    written = out.get(timeout=0.25)
                    break
                except queue.Empty:
                    if time.monotonic() > deadline or not writer.is_alive():
                        raise RuntimeError(f"the writer process did not report ({mode})") from None
        writer.join(30)
        drain_until = time.monotonic() + DRAIN_TIMEOUT
        while len(recorder.seen) < written["rows"] and time.monotonic() < drain_until:
            time.sleep(0.05)
        time.sleep(0.5)  # a change delivered twice would come now
        stats = watcher.stats()
    finally:
        watcher.stop()
    if watcher.failure is not None:
        raise RuntimeError(f"the change stream watcher ({mode}) failed: {watcher.failure!r}")
    counted_from = int((start_at + warmup) * 1e9)
    lags_ms = [(seen - timestamp_nanos(ts)) / 1e6 for seen, ts, _, _ in recorder.seen if timestamp_nanos(ts) >= counted_from]
    keys = [int(key) for *_, key in recorder.seen]
    slots = written.pop("slots")
    expected = {first_id + slot * LAG_ROWS_PER_COMMIT + i for slot in slots for i in range(LAG_ROWS_PER_COMMIT)}
    figures = {
        "lag": _figures(lags_ms) if lags_ms else {}, "lags_ms": lags_ms, "rows_measured": len(lags_ms),
        "rows_written": written["rows"], "rows_delivered": len(keys), "rows_missing": len(expected - set(keys)),
        "rows_delivered_twice": len(keys) - len(set(keys)), "rows_not_written_delivered": len(set(keys) - expected),
        "achieved_changes_per_second": round(written["rows"] / written["seconds"]),
        "writer": {k: round(v, 1) if isinstance(v, float) else v for k, v in written.items()},
        "partitions_read": stats["partitions_active"] + stats["partitions_finished"], "partitions_active_most": most_active,
        "load_generations": _load_generations(server.data_dir or "", database_id) - generations0,
        "wake_up_late_10ms_sleep": _figures(probe.late_ms), "loadavg_1min_before_after": [round(load0, 1), round(os.getloadavg()[0], 1)],
    }
    ctx.log(f"{mode}: lag {figures['lag']} over {len(lags_ms):,} rows; {written['rows']:,} written "
            f"({figures['achieved_changes_per_second']:,}/s), {len(keys):,} delivered, {figures['rows_missing']} missing, "
            f"{figures['rows_delivered_twice']} twice; {figures['partitions_read']} partitions read (at most "
            f"{most_active} at once), {figures['load_generations']} load generations; load {figures['loadavg_1min_before_after']}")
    return figures


def _lag(ctx: RunContext) -> dict[str, Any]:
    """Both modes' watcher lag on a server whose partitions follow load, alternating over rounds."""
    settings = LAG_QUICK if ctx.quick else LAG_FULL
    rounds: dict[str, list[dict[str, Any]]] = {ORIGINAL: [], MUTABLE: []}
    with ServerProcess(os.path.join(ctx.workdir, "lag-data"), options=SPLIT_OPTIONS) as server:
        instance = connect(server)
        databases = {mode: _stream_database(instance, mode) for mode in rounds}
        for r in range(int(settings["rounds"])):
            for mode in ([MUTABLE, ORIGINAL] if r % 2 == 0 else [ORIGINAL, MUTABLE]):
                rounds[mode].append(_lag_round(ctx, server, databases[mode], mode, settings))
    out: dict[str, Any] = {}
    for mode, parts in rounds.items():
        pooled = [x for part in parts for x in part.pop("lags_ms")]
        out[mode] = {"lag_all_rounds": _figures(pooled) if pooled else {},
                     "lag_p99_ms_per_round": [part["lag"].get("p99_ms") for part in parts],
                     "rows_missing": sum(p["rows_missing"] for p in parts),
                     "rows_delivered_twice": sum(p["rows_delivered_twice"] for p in parts),
                     "load_generations": sum(p["load_generations"] for p in parts), "rounds": parts}
    return out


def run(ctx: RunContext) -> Result:
    seconds, rounds, threads, commits = QUICK if ctx.quick else FULL
    lag_settings = LAG_QUICK if ctx.quick else LAG_FULL
    result = Result(settings={
        "seconds_per_window": seconds, "rounds": rounds, "writer_threads": threads, "latency_commits": commits,
        "write": f"database.batch(); insert_or_update one Singers row x {MUTATIONS_PER_COMMIT}; commit",
        "streams": {mode: ddl + " (value_capture_type OLD_AND_NEW_VALUES, the default)" for mode, (_, ddl) in STREAMS.items()},
        "latency": "open READ_S query (end NULL) in a reader thread on the original-mode stream; single-row commits every "
                   "20 ms; arrival - commit timestamp",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
        "lag": {**lag_settings, "changes_per_second": LAG_COMMITS_PER_SECOND * LAG_ROWS_PER_COMMIT,
                "writer": f"separate process, {LAG_WRITER_THREADS} threads, {LAG_COMMITS_PER_SECOND} commits/s of "
                          f"{LAG_ROWS_PER_COMMIT} new SingerIds (database.batch() insert_or_update), fixed schedule",
                "watcher": f"ChangeStreamWatcher(database, 'S', heartbeat={HEARTBEAT_SECONDS}, start=now, "
                           "progress=InMemoryProgressStore()) in the benchmark process",
                "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/lag-data " + " ".join(SPLIT_OPTIONS),
                "lag": "callback time.time_ns() minus the change's commit timestamp, rows committed after the warm-up"},
    })
    with ServerProcess(os.path.join(ctx.workdir, "data")) as server:
        instance = connect(server)
        databases = {"without": singers_database(instance, PLAIN_ID), **{mode: _stream_database(instance, mode) for mode in STREAMS}}
        figures = _throughput(databases, server, seconds, rounds, threads)
        for mode in STREAMS:
            m = figures[mode]
            ctx.log(f"{mode}: without stream {figures['mutations_per_second_without_stream']:,} mutations/s, with "
                    f"{m['mutations_per_second_with_stream']:,} (ratio {m['ratio_with_over_without']}; per round "
                    f"{m['ratio_per_round']}); server CPU us/mutation without {figures['server_cpu_us_per_mutation_without_stream']}, "
                    f"with {m['server_cpu_us_per_mutation_with_stream']}")
        figures.update(_latency(databases[ORIGINAL], commits))
        ctx.log(f"commit -> record p50 {figures['latency_ms_p50']} ms, p99 {figures['latency_ms_p99']} ms "
                f"({figures['records']} records)")
    figures["watcher_lag"] = lag = _lag(ctx)
    result.figures = figures
    for mode in STREAMS:
        result.checks.append(check(f"writes with stream / without ({mode})", figures[mode]["ratio_with_over_without"] or 0,
                                   ">=", RATIO_TARGET))
    result.checks.append(check("commit -> record p50 ms", figures["latency_ms_p50"] or 1e9, "<=", LATENCY_P50_TARGET_MS))
    result.checks.append(check(f"commit -> callback p99 ms ({MUTABLE}, load splits, 5,000 changes/s)",
                               lag[MUTABLE]["lag_all_rounds"].get("p99_ms", 1e9), "<=", LAG_P99_TARGET_MS))
    for mode in STREAMS:
        result.checks.append(check(f"rows missing or delivered twice ({mode})",
                                   lag[mode]["rows_missing"] + lag[mode]["rows_delivered_twice"], "<=", 0))
        result.checks.append(check(f"load generations during the lag rounds ({mode})", lag[mode]["load_generations"], ">=", 2))
    return result
