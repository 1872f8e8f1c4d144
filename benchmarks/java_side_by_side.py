"""The Java Spanner Change Watcher (1.2.1) and our TableWatcher side by side, each in a process of its own.

One local server process holds the benchmark application's Singers table (ShardId =
MOD(FARM_FINGERPRINT(...), 19) STORED, the NULL_FILTERED index on (ShardId, LastUpdated));
writer processes run the application's writes (:mod:`watcher.devtools.bench_writers`:
InsertOrUpdate of random 63-bit SingerIds, 1..100 rows per transaction, 32 threads paced to
a schedule). Each library runs as a child given the same config
(:func:`watcher.devtools.java_library.watch_config`): a FixedShardProvider over the 37 shard
values -18..18, ``@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}``, limit 10,000, poll interval
100 ms, no WITH-query fallback (both run the same poll query), the Spanner checkpoint table
``LAST_SEEN_COMMIT_TIMESTAMPS`` (its rows of Singers deleted before every round). The Java one is the library's SpannerTableTailer
(:class:`~watcher.devtools.java_library.JavaWatcherProcess`, default JVM options), ours
``python -m watcher.devtools.watcher_process`` (:class:`~watcher.devtools.watcher_process.WatcherProcess`);
both print one JSON line per change with its commit timestamp and the callback's wall clock,
and their own CPU time when they start and when they stop. Rounds alternate: Java, ours, Java, ours.

* backlog: the table is loaded first (``backlog_rows``); each round starts a watcher from the
  minimum timestamp and stops it at the last row; changes/s = rows / (last row's receive time
  minus the ``started`` line's time).
* lag: writers commit ``rate`` changes/s for ``lag_seconds`` to a watcher started at "now";
  lag = receive time minus commit timestamp (both this machine's clock), rows committed after
  the warm-up. At 1,000 changes/s, then stepping the rate up (:data:`STEP_RATES`) until neither
  keeps up: a watcher keeps up at a rate when it delivered every committed row and its lag p99
  stayed under :data:`KEEP_UP_P99_MS`, with the writers within 15% of the rate.
* CPU per change: the child's user+sys CPU from its ``started`` line to its ``stopped`` line,
  divided by the changes it delivered.

Targets: ours at least the Java library's backlog changes/s (median of rounds), and a lag p99
no higher than Java's at 1,000 changes/s and at the highest rate both keep up with (medians).
"""

from __future__ import annotations

import calendar
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from watcher.devtools import java_library
from watcher.devtools.bench import ALL_SHARDS, INDEX, SHARD_COLUMN, TABLE, BenchOptions, reset_checkpoints
from watcher.devtools.bench_writers import Endpoint, WriterProcesses
from watcher.devtools.watcher_process import NO_WITH_QUERY, WatcherProcess

from . import Result, RunContext, check
from .localspanner_server import count_rows, percentile, singers_server

NAME = "java_side_by_side"
TITLE = ("the Java Spanner Change Watcher 1.2.1 and our TableWatcher, each in its own process: backlog changes/s, "
         "lag p50/p99 at 1,000 changes/s and up, CPU per change")

DATABASE_ID = "side_by_side"
DATA_FOLDER = "side-by-side-data"
HINT = f"@{{FORCE_INDEX={INDEX}}}"
LIMIT = 10_000
POLL_INTERVAL = 0.1
LIBRARIES = ("java", "ours")
#: Writes per transaction are 1..2m rows (the application's pattern): a mean of m + 0.5.
MUTATIONS_PER_TRANSACTION = 50
WRITER_THREADS = 32
LAG_RATE = 1_000
STEP_RATES = (2_000, 4_000, 8_000)
#: A watcher keeps up at a rate when every row arrived and its lag p99 stayed under this.
KEEP_UP_P99_MS = 1_000.0
#: The writers reached the rate when they committed at least this share of it.
WRITER_SHARE = 0.85
#: A watcher of a lag round stops itself after this many polls in a row found nothing (3 s).
IDLE_POLLS_TO_STOP = 30
#: Lag is counted for rows committed after ``warmup_seconds``: a fresh JVM compiles its hot code in
#: the first seconds (``lag_all_rows`` keeps the whole round, start included).
FULL: dict[str, Any] = {"backlog_rows": 50_000, "backlog_rounds": 3, "lag_rounds": 3, "lag_seconds": 30.0,
                        "step_rounds": 2, "step_seconds": 20.0, "warmup_seconds": 10.0, "step_rates": STEP_RATES}
QUICK: dict[str, Any] = {"backlog_rows": 3_000, "backlog_rounds": 1, "lag_rounds": 1, "lag_seconds": 4.0,
                         "step_rounds": 0, "step_seconds": 0.0, "warmup_seconds": 1.0, "step_rates": ()}
#: Rows/s the backlog is loaded at (two writer processes).
LOAD_RATE = 10_000
START_TIMEOUT = 120.0
#: Seconds of commits per point of a lag round's trend.
TREND_SECONDS = 5.0
#: Seconds a watcher gets to deliver the rows after the writes ended.
DRAIN_TIMEOUT = 60.0


# --- one watcher child ---------------------------------------------------------------------------------

class Child:
    """One library's watcher process: launched, awaited until its ``started`` line, stopped."""

    def __init__(self, library: str, config: dict[str, Any], build: java_library.Build, host: str) -> None:
        self.library = library
        self.launched_ns = time.time_ns()
        self.proc: Any = (java_library.JavaWatcherProcess(build, config, emulator_host=host) if library == "java"
                          else WatcherProcess(config, emulator_host=host))
        killer = threading.Timer(START_TIMEOUT, self.proc.process.kill)
        killer.start()
        try:
            started = next((e for e in self.proc.events() if e.get("event") == "started"), None)
        finally:
            killer.cancel()
        if started is None:
            self.finish().check()
            raise RuntimeError(f"the {library} watcher ended before it started")
        self.started: dict[str, Any] = started

    def wait(self, timeout: float) -> bool:
        """True when the child ended by itself (a stop condition of its config) within ``timeout`` seconds."""
        try:
            self.proc.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def finish(self) -> java_library.JavaRun:
        return self.proc.stop()


def _nanos(rfc3339: str) -> int:
    """Nanoseconds since the epoch of ``YYYY-MM-DDTHH:MM:SS.fffffffffZ`` (the lines' form)."""
    seconds = calendar.timegm(time.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S"))
    fraction = rfc3339[20:-1] if len(rfc3339) > 20 else ""
    return seconds * 1_000_000_000 + int((fraction + "000000000")[:9] or 0)


def _cpu_us_per_change(run: java_library.JavaRun, started: dict[str, Any]) -> float | None:
    if not run.changes or run.stopped is None:
        return None
    return round((run.stopped["cpu_ns"] - started["cpu_ns"]) / 1000 / len(run.changes), 1)


def _lags(lags_ms: list[float]) -> dict[str, float]:
    if not lags_ms:
        return {}
    return {name: round(percentile(lags_ms, q), 1) for name, q in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99),
                                                                     ("max_ms", 1.0))}


# --- the rounds -----------------------------------------------------------------------------------------

class Bench:
    """The server, its database, the Java build, and the settings of one benchmark run."""

    def __init__(self, server: Any, database: Any, build: java_library.Build, settings: dict[str, Any],
                 log: Callable[[str], None]) -> None:
        self.server, self.database, self.build, self.settings, self.log = server, database, build, settings, log
        self.host = server.emulator_host
        self.seed = 1

    def config(self, **options: Any) -> dict[str, Any]:
        return java_library.watch_config(self.database, TABLE, shard_column=SHARD_COLUMN, shard=list(ALL_SHARDS),
                                         poll_interval=POLL_INTERVAL, limit=LIMIT, table_hint=HINT,
                                         fallback_to_with_query_seconds=NO_WITH_QUERY, **options)

    def writers(self, rate: float, processes: int = 1) -> WriterProcesses:
        self.seed += 1
        options = BenchOptions(write_transactions_per_second=rate / (MUTATIONS_PER_TRANSACTION + 0.5),
                               mutations_per_transaction=MUTATIONS_PER_TRANSACTION, update_parallelism=WRITER_THREADS,
                               writer_processes=processes, warmup=0.0, seed=self.seed)
        return WriterProcesses(Endpoint(self.database.name, self.host), options)

    def load(self, rows: int) -> int:
        """Write about ``rows`` rows with the application's writes; returns the table's row count."""
        pool = self.writers(LOAD_RATE, processes=2)
        try:
            pool.prepare()
            began = time.time()
            pool.start(began + 3600)
            while pool.log.total_mutations < rows and not pool.log.errors:
                time.sleep(0.05)
            pool.stop()
            pool.join()
        finally:
            pool.close()
        if pool.log.errors:
            raise RuntimeError(f"loading the backlog failed: {pool.log.errors[0]}")
        total = count_rows(self.database, TABLE)
        self.log(f"backlog: {total:,} rows in {time.time() - began:.1f} s")
        return total

    def backlog_round(self, library: str, rows: int) -> dict[str, Any]:
        reset_checkpoints(self.database, log=lambda _: None)
        child = Child(library, self.config(initial_commit_timestamp="min", stop_after_changes=rows), self.build, self.host)
        server0 = self.server.cpu_seconds()
        ended = child.wait(DRAIN_TIMEOUT + rows / 1000)
        server_cpu = self.server.cpu_seconds() - server0
        run = child.finish().check()
        started_ns = child.started["time_ns"]
        last_ns = run.changes[-1]["received_ns"] if run.changes else started_ns
        seconds = (last_ns - started_ns) / 1e9
        keys = {int(c["keys"][0]) for c in run.changes}
        out = {"library": library, "rows": rows, "delivered": len(run.changes), "distinct_rows": len(keys),
               "seconds": round(seconds, 2), "changes_per_second": round(len(run.changes) / seconds) if seconds > 0 else None,
               "start_seconds": round((started_ns - child.launched_ns) / 1e9, 2),
               "first_change_seconds": round((run.changes[0]["received_ns"] - started_ns) / 1e9, 2) if run.changes else None,
               "cpu_us_per_change": _cpu_us_per_change(run, child.started),
               "child_cpu_seconds_total": round(run.stopped["cpu_ns"] / 1e9, 2) if run.stopped else None,
               "server_cpu_cores": round(server_cpu / seconds, 2) if seconds > 0 else None,
               "polls": run.stopped.get("polls") if run.stopped else None, "ended_by_itself": ended}
        self.log(f"backlog {library}: {out['delivered']:,} rows in {out['seconds']} s = {out['changes_per_second']:,}/s, "
                 f"{out['cpu_us_per_change']} us CPU/change, server {out['server_cpu_cores']} cores")
        return out

    def lag_round(self, library: str, rate: int, seconds: float) -> dict[str, Any]:
        warmup = self.settings["warmup_seconds"]
        reset_checkpoints(self.database, log=lambda _: None)
        pool = self.writers(rate, processes=1 if rate <= 2_000 else 2)
        try:
            pool.prepare()
            child = Child(library, self.config(stop_after_idle_polls=IDLE_POLLS_TO_STOP), self.build, self.host)
            began = time.time()
            server0 = self.server.cpu_seconds()
            pool.start(began + seconds)
            pool.join(seconds + 60)
            writes_seconds = time.time() - began
            server_cpu = self.server.cpu_seconds() - server0
            ended = child.wait(DRAIN_TIMEOUT)
            run = child.finish().check()
        finally:
            pool.close()
        counted_from = int((began + warmup) * 1e9)
        arrivals = [(c["received_ns"], _nanos(c["commit_timestamp"]), int(c["keys"][0])) for c in run.changes]
        lags_ms = [(received - committed) / 1e6 for received, committed, _ in arrivals if committed >= counted_from]
        written = set(pool.log.keys)
        delivered = [key for *_, key in arrivals]
        missing = len(written - set(delivered))
        achieved = pool.log.total_mutations / seconds
        lag = _lags(lags_ms)
        # Lag growing through the round says the watcher fell behind; a flat one, that it kept pace.
        buckets: dict[int, list[float]] = {}
        for received, committed, _ in arrivals:
            buckets.setdefault(int((committed / 1e9 - began) // TREND_SECONDS), []).append((received - committed) / 1e6)
        out = {"library": library, "rate": rate, "achieved_changes_per_second": round(achieved), "written": len(written),
               "delivered": len(delivered), "missing": missing, "delivered_twice": len(delivered) - len(set(delivered)),
               "lag": lag, "rows_measured": len(lags_ms),
               "lag_all_rows": _lags([(received - committed) / 1e6 for received, committed, _ in arrivals]),
               f"lag_p50_ms_per_{TREND_SECONDS:g}s": [round(percentile(v, 0.5)) for _, v in sorted(buckets.items())], "cpu_us_per_change": _cpu_us_per_change(run, child.started),
               "server_cpu_cores": round(server_cpu / writes_seconds, 2), "writer_errors": len(pool.log.errors),
               "ended_by_itself": ended}
        out["writers_reached_rate"] = achieved >= WRITER_SHARE * rate
        out["kept_up"] = bool(missing == 0 and lag and lag["p99_ms"] < KEEP_UP_P99_MS)
        self.log(f"lag {library} at {rate:,}/s (written {out['achieved_changes_per_second']:,}/s): "
                 + ", ".join(f"{k} {v}" for k, v in lag.items())
                 + f"; missing {missing}, {out['cpu_us_per_change']} us CPU/change, server {out['server_cpu_cores']} cores")
        return out


def _median(rounds: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float | None]) -> float | None:
    values = [v for v in (pick(r) for r in rounds) if v is not None]
    return round(statistics.median(values), 1) if values else None


def _range(rounds: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float | None]) -> list[float]:
    values = [v for v in (pick(r) for r in rounds) if v is not None]
    return [min(values), max(values)] if values else []


def _summary(rounds: list[dict[str, Any]], figures: dict[str, Callable[[dict[str, Any]], float | None]]) -> dict[str, Any]:
    """Per library: the median and the range over its rounds of each figure."""
    out: dict[str, Any] = {}
    for library in LIBRARIES:
        mine = [r for r in rounds if r["library"] == library]
        out[library] = {name: {"median": _median(mine, pick), "range": _range(mine, pick)} for name, pick in figures.items()}
    return out


def _lag_summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    summary = _summary(rounds, {"p50_ms": lambda r: r["lag"].get("p50_ms"), "p99_ms": lambda r: r["lag"].get("p99_ms"),
                                "p99_ms_all_rows": lambda r: r["lag_all_rows"].get("p99_ms"),
                                "cpu_us_per_change": lambda r: r["cpu_us_per_change"],
                                "achieved_changes_per_second": lambda r: r["achieved_changes_per_second"]})
    for library in LIBRARIES:
        mine = [r for r in rounds if r["library"] == library]
        summary[library]["kept_up_rounds"] = f"{sum(r['kept_up'] for r in mine)}/{len(mine)}"
    return summary


def run(ctx: RunContext) -> Result:
    settings = dict(QUICK if ctx.quick else FULL)
    result = Result(settings={
        **settings, "libraries": {"java": f"SpannerTableTailer {java_library.LIBRARY_VERSION} (JavaWatcherProcess, default JVM options)",
                                  "ours": "TableWatcher (python -m watcher.devtools.watcher_process)"},
        "watcher": f"FixedShardProvider('{SHARD_COLUMN}', -18..18), {HINT}, limit {LIMIT}, poll interval {POLL_INTERVAL} s, "
                   "no WITH-query fallback, SpannerCommitTimestampRepository (its Singers rows deleted before each round)",
        "writes": f"bench_writers: InsertOrUpdate of random SingerIds, 1..{2 * MUTATIONS_PER_TRANSACTION} rows per transaction, "
                  f"{WRITER_THREADS} threads paced to a schedule, in 1 (<= 2,000/s) or 2 writer processes",
        "keep_up": f"every committed row delivered and lag p99 < {KEEP_UP_P99_MS:g} ms",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/" + DATA_FOLDER,
        "cpu_per_change": "the child's user+sys CPU from its started line to its stopped line / changes delivered",
    })
    build = java_library.build()
    previous = os.environ.get("SPANNER_EMULATOR_HOST")
    try:
        with singers_server(os.path.join(ctx.workdir, DATA_FOLDER), DATABASE_ID) as (server, database):
            bench = Bench(server, database, build, settings, ctx.log)
            rows = bench.load(settings["backlog_rows"])
            backlog = [bench.backlog_round(lib, rows) for _ in range(settings["backlog_rounds"]) for lib in LIBRARIES]
            lag = [bench.lag_round(lib, LAG_RATE, settings["lag_seconds"]) for _ in range(settings["lag_rounds"])
                   for lib in LIBRARIES]
            steps: dict[int, list[dict[str, Any]]] = {}
            for rate in settings["step_rates"]:
                steps[rate] = [bench.lag_round(lib, rate, settings["step_seconds"]) for _ in range(settings["step_rounds"])
                               for lib in LIBRARIES]
                if not any(r["kept_up"] for r in steps[rate]) or not any(r["writers_reached_rate"] for r in steps[rate]):
                    break  # neither keeps up (or the writers cannot write this fast): higher rates tell nothing more
    finally:
        os.environ.pop("SPANNER_EMULATOR_HOST", None)
        if previous is not None:
            os.environ["SPANNER_EMULATOR_HOST"] = previous
    return _result(result, backlog, lag, steps)


def _result(result: Result, backlog: list[dict[str, Any]], lag: list[dict[str, Any]],
            steps: dict[int, list[dict[str, Any]]]) -> Result:
    by_rate = {LAG_RATE: lag, **steps}
    kept_up = {lib: [rate for rate, rounds in by_rate.items()
                     if all(r["kept_up"] and r["writers_reached_rate"] for r in rounds if r["library"] == lib)]
               for lib in LIBRARIES}
    both = [rate for rate in by_rate if rate in kept_up["java"] and rate in kept_up["ours"]]
    highest = max(both) if both else None
    result.figures = {
        "backlog": _summary(backlog, {"changes_per_second": lambda r: r["changes_per_second"],
                                      "cpu_us_per_change": lambda r: r["cpu_us_per_change"],
                                      "seconds": lambda r: r["seconds"], "server_cpu_cores": lambda r: r["server_cpu_cores"]}),
        "lag": {str(rate): _lag_summary(rounds) for rate, rounds in by_rate.items()},
        "rates_kept_up": {lib: sorted(rates) for lib, rates in kept_up.items()},
        "highest_rate_both_keep_up": highest,
        "rounds": {"backlog": backlog, "lag": [r for rounds in by_rate.values() for r in rounds]},
    }
    b = result.figures["backlog"]
    java_rate, our_rate = b["java"]["changes_per_second"]["median"], b["ours"]["changes_per_second"]["median"]
    if java_rate and our_rate:
        result.checks.append(check("backlog changes/s, ours / Java (medians)", round(our_rate / java_rate, 2), ">=", 1.0))
    for rate in sorted({LAG_RATE, *([highest] if highest else [])}):
        s = result.figures["lag"][str(rate)]
        java_p99, our_p99 = s["java"]["p99_ms"]["median"], s["ours"]["p99_ms"]["median"]
        if java_p99 and our_p99:
            result.checks.append(check(f"lag p99 at {rate:,}/s, ours / Java (medians)", round(our_p99 / java_p99, 2), "<=", 1.0))
    missing = sum(r["missing"] for rounds in by_rate.values() for r in rounds if r["writers_reached_rate"])
    result.checks.append(check("committed rows not delivered (rounds at their rate)", missing, "<=", 0))
    return result
