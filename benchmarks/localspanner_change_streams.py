"""Write throughput with a change stream FOR ALL (OLD_AND_NEW_VALUES) vs without, and commit -> record latency.

Two databases with the same Singers table on one server process, one of them with
``CREATE CHANGE STREAM S FOR ALL``. The write load of ``localspanner_writes`` (100
single-row InsertOrUpdate mutations per commit, N writer threads) runs against each in
turn, alternating for several rounds so both see the same machine; the ratio of their
mutations per second is the change stream's write cost (over all rounds, and per round:
each round's two windows follow each other within seconds). Target: >= 0.75.

Then an open change stream query (end_timestamp NULL, the partition the first query
names) runs in a reader thread while single-row commits follow each other every 20 ms;
latency = the time the client receives a data change record minus its commit timestamp
(same machine, same clock). p50 and p99 are reported; target p50 <= 100 ms.
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import SINGERS_COLUMNS, RowMaker, ServerProcess, connect, singers_database
from .localspanner_writes import MUTATIONS_PER_COMMIT, ROW_SHAPE, WARMUP_SECONDS, _run_threads

NAME = "localspanner_change_streams"
TITLE = "writes with a change stream FOR ALL vs without (same run), commit -> record latency of an open query"

PLAIN_ID = "cs_plain"
STREAM_ID = "cs_stream"
STREAM_DDL = "CREATE CHANGE STREAM S FOR ALL"
RATIO_TARGET = 0.75
LATENCY_P50_TARGET_MS = 100.0
#: (seconds per window, rounds, writer threads, latency commits)
FULL = (6.0, 6, 4, 200)
QUICK = (1.0, 1, 2, 20)
QUERY = ("SELECT ChangeRecord FROM READ_S(start_timestamp => @start, end_timestamp => NULL, "
         "partition_token => @token, heartbeat_milliseconds => 1000)")


def _stream_database(instance: Any) -> Any:
    database = singers_database(instance, STREAM_ID)
    database.reload()
    if not any(s.startswith("CREATE CHANGE STREAM S ") or s == STREAM_DDL for s in database.ddl_statements):
        database.update_ddl([STREAM_DDL]).result(120)
    return database


def _throughput(plain: Any, streamed: Any, server: ServerProcess, seconds: float, rounds: int, threads: int) -> dict[str, Any]:
    per_round: dict[str, list[float]] = {"without": [], "with": []}
    cpu_us: dict[str, list[float]] = {"without": [], "with": []}  # server CPU per mutation: steadier than rates on a busy machine
    for r in range(rounds):
        order = [("without", plain), ("with", streamed)] if r % 2 == 0 else [("with", streamed), ("without", plain)]
        for label, database in order:
            start = time.time() + WARMUP_SECONDS
            part = _run_threads(database, threads, (start, start + seconds), seed=r * 10 + len(label), server=server)
            if part["errors"]:
                raise RuntimeError(f"writer errors ({label}): {part['errors'][:3]}")
            per_round[label].append(part["mutations"] / seconds)
            cpu_us[label].append(part["server_cpu_seconds"] * 1e6 / max(part["mutations"], 1))
    cpu_ratios = [o / w for w, o in zip(cpu_us["with"], cpu_us["without"], strict=True) if w]
    without, with_ = sum(per_round["without"]) / rounds, sum(per_round["with"]) / rounds
    ratios = [w / o for w, o in zip(per_round["with"], per_round["without"], strict=True) if o]
    return {"mutations_per_second_without_stream": round(without), "mutations_per_second_with_stream": round(with_),
            "ratio_with_over_without": round(with_ / without, 3) if without else None,
            "mutations_per_second_without_stream_per_round": [round(x) for x in per_round["without"]],
            "mutations_per_second_with_stream_per_round": [round(x) for x in per_round["with"]],
            "ratio_per_round": [round(x, 3) for x in ratios],
            "ratio_per_round_min_median_max": [round(min(ratios), 3), round(statistics.median(ratios), 3), round(max(ratios), 3)]
            if ratios else None,
            "server_cpu_us_per_mutation_without_stream": [round(x, 1) for x in cpu_us["without"]],
            "server_cpu_us_per_mutation_with_stream": [round(x, 1) for x in cpu_us["with"]],
            "server_cpu_ratio_without_over_with_per_round": [round(x, 3) for x in cpu_ratios],
            "server_cpu_ratio_median": round(statistics.median(cpu_ratios), 3) if cpu_ratios else None}


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


def run(ctx: RunContext) -> Result:
    seconds, rounds, threads, commits = QUICK if ctx.quick else FULL
    result = Result(settings={
        "seconds_per_window": seconds, "rounds": rounds, "writer_threads": threads, "latency_commits": commits,
        "write": f"database.batch(); insert_or_update one Singers row x {MUTATIONS_PER_COMMIT}; commit",
        "stream": STREAM_DDL + " (value_capture_type OLD_AND_NEW_VALUES, the default)",
        "latency": "open READ_S query (end NULL) in a reader thread; single-row commits every 20 ms; arrival - commit timestamp",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
    })
    with ServerProcess(os.path.join(ctx.workdir, "data")) as server:
        instance = connect(server)
        plain = singers_database(instance, PLAIN_ID)
        streamed = _stream_database(instance)
        figures = _throughput(plain, streamed, server, seconds, rounds, threads)
        ctx.log(f"without stream {figures['mutations_per_second_without_stream']:,} mutations/s, with "
                f"{figures['mutations_per_second_with_stream']:,} (ratio {figures['ratio_with_over_without']}; "
                f"per round {figures['ratio_per_round']}); server CPU us/mutation without "
                f"{figures['server_cpu_us_per_mutation_without_stream']}, with {figures['server_cpu_us_per_mutation_with_stream']}")
        figures.update(_latency(streamed, commits))
        ctx.log(f"commit -> record p50 {figures['latency_ms_p50']} ms, p99 {figures['latency_ms_p99']} ms "
                f"({figures['records']} records)")
    result.figures = figures
    result.checks.append(check("writes with stream / without", figures["ratio_with_over_without"] or 0, ">=", RATIO_TARGET))
    result.checks.append(check("commit -> record p50 ms", figures["latency_ms_p50"] or 1e9, "<=", LATENCY_P50_TARGET_MS))
    return result
