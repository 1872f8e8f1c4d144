"""What the watcher costs on top of its own poll queries: delivery rows/s, watcher vs bare loop.

The benchmark's Singers table (``ddl/samples/singers``: a generated ShardId and its NULL_FILTERED
index) is pre-loaded with N rows (1,000 rows per
commit, so every commit timestamp groups 1,000 rows and a poll of 10,000 never cuts a
group: the bare loop below, which resumes from a timestamp only, loses no row). Then,
from the beginning of the table (``MIN_TIMESTAMP``), every row is delivered to a no-op
callback (it counts) three ways, timed from the start to the N-th callback:

* ``bare_loop``: ``discover`` the table, then call :func:`watcher.capture.polling.run_poll` with
  :func:`watcher.capture.polling.simple_query` back-to-back, each from the last seen commit
  timestamp, handing each change to the callback;
* ``watcher_memory``: a :class:`TableWatcher` with ``InMemoryCommitTimestampRepository``;
* ``watcher_spanner``: the same with ``SpannerCommitTimestampRepository`` (its table in
  the watched database; created before timing; a fresh checkpoint row per run);
* ``watcher_fixed_types``: ``watcher_memory`` with the older poll path (values
  typed by the schema found at start, :mod:`benchmarks.fixed_types_poll`), so that what typing
  every row by its own result set's metadata costs is measured side by side: new/old ratios of
  rows/s and client CPU per row, ``watcher_memory`` over ``watcher_fixed_types``, per round.

Both watchers run the same poll as the loop (``FixedShardProvider('ShardId', range(-18, 19))``,
``@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}``, limit 10,000, poll interval 0), with
the WITH-query fallback off so that the queries really are the same; what the watcher
adds is its scheduling, per-change bookkeeping, checkpoint writes and the continuation
query after each full poll (its exact position inside a commit-timestamp group).

The modes run in rounds, rotating which goes first (the two typing paths back to back,
alternating which of them goes first: :func:`round_order`), in one run against one server
process. Targets: the watchers' rows/s at most 20% below the loop's (median over rounds of
each round's ratio; the ratio of the median rates and the CPU per row are reported too);
typing by result set at least 0.95x the fixed-types path's rows/s (median of rounds).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from watcher.capture.polling import continuation_query, run_poll, simple_query
from watcher.capture.shards import FixedShardProvider
from watcher.capture.table_info import discover
from watcher.capture.table_watcher import TableWatcher
from watcher.checkpoints import InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
from watcher.model import MIN_TIMESTAMP, Change, Checkpoint, TableId

from . import Result, RunContext, check
from .fixed_types_poll import old_typing
from .localspanner_server import ServerProcess, count_rows, cpu_seconds, load_singers, singers_server

NAME = "watcher_delivery"
TITLE = "TableWatcher delivery rows/s vs its poll queries run back-to-back (37 shards, FORCE_INDEX)"

#: Shared with the lag benchmark, which reuses the loaded table when it finds it.
DATABASE_ID = "watcher_singers"
DATA_FOLDER = "watcher-data"
TABLE = "Singers"
HINT = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
SHARDS = range(-18, 19)
LIMIT = 10_000
#: Divides LIMIT, so no poll's LIMIT cuts through the rows of one commit.
LOAD_BATCH_ROWS = 1_000
LOAD_THREADS = 4
TARGET_OVERHEAD = 0.20
#: Rows/s of typing by each result set over typing by the schema found at start.
TARGET_TYPING_RATIO = 0.95
MODES = ("bare_loop", "watcher_memory", "watcher_spanner", "watcher_fixed_types")
#: Modes compared with the bare loop (the last one is compared with watcher_memory instead).
OVERHEAD_MODES = ("watcher_memory", "watcher_spanner")

FULL = {"rows": 200_000, "rounds": 5}
QUICK = {"rows": 20_000, "rounds": 2}
#: Runs of the informational single-query timings.
PROBE_RUNS = 20
#: Seconds one delivery may take before the benchmark gives up.
DELIVERY_TIMEOUT = 600.0


def round_order(r: int) -> list[str]:
    """The modes of round ``r``: rotated, with the two typing paths always back to back, alternating which goes first.

    >>> round_order(0)
    ['bare_loop', 'watcher_spanner', 'watcher_memory', 'watcher_fixed_types']
    >>> round_order(1)
    ['watcher_spanner', 'watcher_fixed_types', 'watcher_memory', 'bare_loop']
    """
    pair = ["watcher_memory", "watcher_fixed_types"][:: 1 if r % 2 == 0 else -1]
    units: list[list[str]] = [["bare_loop"], ["watcher_spanner"], pair]
    shift = r % len(units)
    return [mode for unit in units[shift:] + units[:shift] for mode in unit]


def shard_provider() -> FixedShardProvider:
    return FixedShardProvider("ShardId", SHARDS)


def ensure_table(database: Any, rows: int, ctx: RunContext) -> dict[str, Any]:
    """Make ``database`` hold Singers ``0 .. rows-1`` (loading what is missing); returns the load figures."""
    present = count_rows(database)
    if present >= rows:
        ctx.log(f"reusing {present:,} loaded rows")
        return {"rows": 0, "seconds": 0.0, "reused_rows": present}
    ctx.log(f"loading {rows - present:,} rows ({LOAD_BATCH_ROWS:,} per commit)")
    load = load_singers(database, present, rows, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS)
    return {k: round(v, 1) for k, v in load.items()}


class CountingCallback:
    """The "no-op" callback: counts, and says when the ``target``-th change arrived."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.done = threading.Event()
        self.done_at = 0.0

    def __call__(self, change: Change) -> None:
        self.count += 1
        if self.count == self.target:
            self.done_at = time.perf_counter()
            self.done.set()


def _bare_loop(database: Any, rows: int) -> tuple[CountingCallback, float, int]:
    callback = CountingCallback(rows)
    provider = shard_provider()
    started = time.perf_counter()
    info = discover(database, TableId(TABLE))
    shard = provider.shard_filter()
    since = MIN_TIMESTAMP
    polls = 0
    while callback.count < rows:
        result = run_poll(database, info, simple_query(info, HINT, limit=LIMIT, shard=shard, since=since),
                          limit=LIMIT, shard_value=provider.shard_value)
        polls += 1
        if not result.changes:
            break
        for change in result.changes:
            callback(change)
        since = result.changes[-1].commit_timestamp
    return callback, started, polls


def _watcher(database: Any, rows: int, run_id: int, checkpoints: Any) -> tuple[CountingCallback, float, int]:
    callback = CountingCallback(rows)
    watcher = TableWatcher(database, TABLE, shard_provider=shard_provider(), table_hint=HINT, poll_interval=0.0,
                           limit=LIMIT, fallback_to_with_query_seconds=float("inf"), checkpoints=checkpoints,
                           initial_timestamp=MIN_TIMESTAMP, name=f"bench-{run_id}")
    watcher.add_callback(callback)
    started = time.perf_counter()
    watcher.start()
    try:
        callback.done.wait(DELIVERY_TIMEOUT)
    finally:
        polls = int(watcher.stats()["polls"])
        watcher.stop()
    if watcher.failure is not None:
        raise RuntimeError(f"the watcher failed: {watcher.failure!r}")
    return callback, started, polls


def _checkpoints(mode: str, database: Any, run_id: int) -> Any:
    """The mode's checkpoint store, ready before timing starts (the Spanner table exists, is verified)."""
    if mode in ("watcher_memory", "watcher_fixed_types"):
        return InMemoryCommitTimestampRepository()
    # A fresh checkpoint row per run (the key holds DATABASE_NAME), so each run starts from the beginning.
    repo = SpannerCommitTimestampRepository(database, watched_database_name=f"bench-run-{run_id}")
    repo.initialize()
    return repo


def _measure(mode: str, database: Any, server: ServerProcess, rows: int, run_id: int) -> dict[str, Any]:
    checkpoints = None if mode == "bare_loop" else _checkpoints(mode, database, run_id)
    client0, server0 = cpu_seconds(), server.cpu_seconds()
    if checkpoints is None:
        callback, started, polls = _bare_loop(database, rows)
    elif mode == "watcher_fixed_types":
        with old_typing():
            callback, started, polls = _watcher(database, rows, run_id, checkpoints)
    else:
        callback, started, polls = _watcher(database, rows, run_id, checkpoints)
    client_cpu, server_cpu = cpu_seconds() - client0, server.cpu_seconds() - server0
    if callback.count != rows or not callback.done_at:
        raise AssertionError(f"{mode} delivered {callback.count:,} of {rows:,} rows")
    seconds = callback.done_at - started
    return {"mode": mode, "seconds": round(seconds, 3), "rows_per_second": round(rows / seconds), "polls": polls,
            "loadavg_1min": round(os.getloadavg()[0], 1),
            "client_cpu_us_per_row": round(client_cpu / rows * 1e6, 1), "server_cpu_us_per_row": round(server_cpu / rows * 1e6, 1)}


def _probes(database: Any) -> dict[str, float]:
    """Median milliseconds of what the watcher runs besides the loop's polls (for reading the overhead)."""
    info = discover(database, TableId(TABLE))
    provider = shard_provider()
    first = run_poll(database, info, simple_query(info, HINT, limit=LIMIT, shard=provider.shard_filter(), since=MIN_TIMESTAMP),
                     limit=LIMIT).changes[-1]
    position = Checkpoint(first.commit_timestamp, first.keys)
    cont = continuation_query(info, HINT, limit=LIMIT, since=position, shard=provider.shard_filter())
    repo = SpannerCommitTimestampRepository(database, watched_database_name="bench-probe")

    def timed(action: Callable[[], Any]) -> float:
        samples = []
        for _ in range(PROBE_RUNS):
            started = time.perf_counter()
            action()
            samples.append(time.perf_counter() - started)
        return round(statistics.median(samples) * 1000, 2)

    return {"continuation_query_ms": timed(lambda: run_poll(database, info, cont, limit=LIMIT)),
            "spanner_checkpoint_write_ms": timed(lambda: repo.set(TableId(TABLE), position, provider.shard_value))}


def run(ctx: RunContext) -> Result:
    settings = dict(QUICK if ctx.quick else FULL)
    rows, rounds = settings["rows"], settings["rounds"]
    result = Result(settings={
        **settings, "limit": LIMIT, "poll_interval": 0.0, "hint": HINT, "shards": "FixedShardProvider('ShardId', range(-18, 19))",
        "load": f"InsertOrUpdate, {LOAD_BATCH_ROWS} rows per commit, {LOAD_THREADS} client threads",
        "start": "MIN_TIMESTAMP (replay the whole table); timed from start to the last row's callback",
        "callback": "counts rows (no work)", "fallback_to_with_query_seconds": "inf (the watcher runs the loop's simple query)",
        "order": "one untimed bare-loop pass to warm caches, then rounds; modes rotate each round, "
                 "watcher_memory and watcher_fixed_types back to back, alternating which goes first", "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/watcher-data",
    })
    runs: list[dict[str, Any]] = []
    with singers_server(os.path.join(ctx.workdir, DATA_FOLDER), DATABASE_ID) as (server, database):
        load = ensure_table(database, rows, ctx)
        rows = count_rows(database)
        # One untimed pass first, so that no mode pays for a cold page cache.
        _bare_loop(database, rows)
        run_id = 0
        for r in range(rounds):
            for mode in round_order(r):
                run_id += 1
                point = _measure(mode, database, server, rows, run_id)
                point["round"] = r
                runs.append(point)
                ctx.log(f"round {r}: {mode:<16} {point['rows_per_second']:>7,} rows/s ({point['seconds']} s, {point['polls']} polls; "
                        f"CPU us/row client {point['client_cpu_us_per_row']}, server {point['server_cpu_us_per_row']})")
        probes = _probes(database)
    ctx.log(f"continuation query {probes['continuation_query_ms']} ms, Spanner checkpoint write {probes['spanner_checkpoint_write_ms']} ms")

    per_mode = {m: [p for p in runs if p["mode"] == m] for m in MODES}
    summary = {m: {"median_rows_per_second": round(statistics.median(p["rows_per_second"] for p in ps)),
                   "best_rows_per_second": max(p["rows_per_second"] for p in ps),
                   "median_client_cpu_us_per_row": round(statistics.median(p["client_cpu_us_per_row"] for p in ps), 1),
                   "median_server_cpu_us_per_row": round(statistics.median(p["server_cpu_us_per_row"] for p in ps), 1)}
               for m, ps in per_mode.items()}
    base = summary["bare_loop"]["median_rows_per_second"]
    result.figures = {"table_rows": rows, "load": load, "summary": summary, "runs": runs, "probes": probes}
    for mode in OVERHEAD_MODES:
        # Each round's runs follow each other within seconds, so a round's ratio sees about the same
        # background load on both sides; the median of those ratios is the figure checked.
        paired = [1 - w["rows_per_second"] / b["rows_per_second"] for w, b in zip(per_mode[mode], per_mode["bare_loop"], strict=True)]
        overhead = round(statistics.median(paired), 3)
        of_medians = round(1 - summary[mode]["median_rows_per_second"] / base, 3)
        result.figures[f"{mode}_overhead"] = overhead
        result.figures[f"{mode}_overhead_per_round"] = [round(x, 3) for x in paired]
        result.figures[f"{mode}_overhead_of_median_rates"] = of_medians
        result.figures[f"{mode}_client_cpu_per_row_ratio"] = round(
            summary[mode]["median_client_cpu_us_per_row"] / summary["bare_loop"]["median_client_cpu_us_per_row"], 2)
        ctx.log(f"{mode}: overhead {overhead:.1%} (median of rounds), {of_medians:.1%} (of median rows/s)")
        result.checks.append(check(f"{mode} rows/s below the bare loop's (median of rounds, fraction)", overhead, "<=", TARGET_OVERHEAD))
    typing = _typing_ratios(per_mode["watcher_memory"], per_mode["watcher_fixed_types"])
    result.figures["typing_by_result_set"] = typing
    ctx.log(f"typing by result set / by schema at start: rows/s {typing['rows_per_second_ratio_range']} "
            f"(median {typing['rows_per_second_ratio_median']}), client CPU/row {typing['client_cpu_per_row_ratio_range']} "
            f"(median {typing['client_cpu_per_row_ratio_median']})")
    result.checks.append(check("rows/s typing by result set / by schema at start (median of rounds)",
                               typing["rows_per_second_ratio_median"], ">=", TARGET_TYPING_RATIO))
    return result


def _typing_ratios(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-round new/old ratios of rows/s and client CPU per row, with their range and median."""
    figures: dict[str, Any] = {}
    for key, label in (("rows_per_second", "rows_per_second_ratio"), ("client_cpu_us_per_row", "client_cpu_per_row_ratio")):
        ratios = [round(n[key] / o[key], 3) for n, o in zip(new, old, strict=True)]
        figures[f"{label}_per_round"] = ratios
        figures[f"{label}_range"] = [min(ratios), max(ratios)]
        figures[f"{label}_median"] = round(statistics.median(ratios), 3)
    return figures
