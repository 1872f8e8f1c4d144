"""The watcher's poll query costs what it returns, not what the table holds.

On the benchmark schema (REFERENCE.md section 1: Singers with a FARM_FINGERPRINT shard
column and a NULL_FILTERED index on (ShardId, LastUpdated)) the poll

    SELECT * FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}
    WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts
    ORDER BY LastUpdated, SingerId LIMIT 1000

is timed at 10,000 rows, then the same table grows to 1,000,000 rows and it is timed
again, in one run against one server process. Each time, the poll looks like a
caught-up watcher's: a "tail" of recent changes (1,500 single-row InsertOrUpdate
mutations of existing rows, committed 100 per transaction) is written, and ``@ts`` is
the newest commit timestamp before the tail, so the poll finds 1,500 newer rows and
returns 1,000. Target: median latency at 1M within 1.5x of the median at 10K.

For information, at both sizes: the same query from an old ``@ts`` (every row is
newer), without the index hint, with ``FORCE_INDEX=_BASE_TABLE``, and without the shard
filter (what a watcher without a shard provider runs), so readers see what the index
buys.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import statistics
import time
from typing import Any

from google.cloud.spanner_v1 import param_types

from . import Result, RunContext, check
from .localspanner_server import (
    ALL_SHARDS,
    SINGERS_COLUMNS,
    RowMaker,
    RowShape,
    ServerProcess,
    connect,
    count_rows,
    cpu_seconds,
    load_singers,
    max_last_updated,
    mib,
    percentile,
    singers_database,
)

NAME = "localspanner_poll"
TITLE = "poll query latency at 10K vs 1M rows (Singers, NULL_FILTERED index)"

#: The database the stream benchmark reuses when it finds it loaded.
DATABASE_ID = "singers"
TARGET_RATIO = 1.5

POLL_SQL = ("SELECT * FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} "
            "WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts "
            "ORDER BY LastUpdated, SingerId LIMIT 1000")
#: Informational variants: what the same poll costs without the index (or without the shard filter).
VARIANTS: dict[str, str] = {
    "no_hint": ("SELECT * FROM Singers WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts "
                "ORDER BY LastUpdated, SingerId LIMIT 1000"),
    "base_table_hint": ("SELECT * FROM Singers@{FORCE_INDEX=_BASE_TABLE} "
                        "WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts "
                        "ORDER BY LastUpdated, SingerId LIMIT 1000"),
    "no_shard_filter": "SELECT * FROM Singers WHERE LastUpdated > @ts ORDER BY LastUpdated, SingerId LIMIT 1000",
}
PARAM_TYPES = {"shards": param_types.Array(param_types.INT64), "ts": param_types.TIMESTAMP}
OLD_TS = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)

#: (small, large) table sizes, polls timed per size, runs of each informational query.
FULL = {"sizes": (10_000, 1_000_000), "polls": 300, "info_runs": 5, "tail_rows": 1500}
QUICK = {"sizes": (2_000, 10_000), "polls": 20, "info_runs": 2, "tail_rows": 1500}
WARMUP_POLLS = 10
TAIL_COMMIT_ROWS = 100
LOAD_BATCH_ROWS = 2000
LOAD_THREADS = 4
ROW_SHAPE = RowShape(picture_min=1, picture_max=1024)


def _run_query(database: Any, sql: str, ts: Any) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    with database.snapshot() as snap:
        rows = list(snap.execute_sql(sql, params={"shards": ALL_SHARDS, "ts": ts}, param_types=PARAM_TYPES))
    return time.perf_counter() - started, rows


def _write_tail(database: Any, table_rows: int, count: int, seed: int) -> None:
    """``count`` single-row InsertOrUpdate mutations of existing rows, committed ``TAIL_COMMIT_ROWS`` at a time."""
    rng = random.Random(seed)
    maker = RowMaker(seed, ROW_SHAPE)
    ids = rng.sample(range(table_rows), count)
    for first in range(0, count, TAIL_COMMIT_ROWS):
        with database.batch() as batch:
            for singer_id in ids[first:first + TAIL_COMMIT_ROWS]:
                batch.insert_or_update("Singers", SINGERS_COLUMNS, [maker.row(singer_id)])


def _count_newer(database: Any, ts: Any) -> int:
    with database.snapshot() as snap:
        rows = snap.execute_sql("SELECT COUNT(*) FROM Singers WHERE LastUpdated > @ts", params={"ts": ts},
                                param_types={"ts": param_types.TIMESTAMP})
        return int(next(iter(rows))[0])


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _measure(database: Any, server: ServerProcess, table_rows: int, settings: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Write a tail, then time the poll (and the informational variants) at the current size."""
    ts = max_last_updated(database)
    _write_tail(database, table_rows, settings["tail_rows"], seed=table_rows)
    newer = _count_newer(database, ts)
    for _ in range(WARMUP_POLLS):
        _, rows = _run_query(database, POLL_SQL, ts)
    _check_poll_rows(rows, ts)
    latencies = []
    client0, server0 = cpu_seconds(), server.cpu_seconds()
    for _ in range(settings["polls"]):
        seconds, rows = _run_query(database, POLL_SQL, ts)
        latencies.append(seconds)
    client_cpu, server_cpu = cpu_seconds() - client0, server.cpu_seconds() - server0
    polls = settings["polls"]
    figures: dict[str, Any] = {
        "table_rows": count_rows(database),
        "rows_newer_than_ts": newer,
        "rows_returned": len(rows),
        "polls": polls,
        "median_ms": _ms(statistics.median(latencies)),
        "p95_ms": _ms(percentile(latencies, 0.95)),
        "min_ms": _ms(min(latencies)),
        "server_cpu_ms_per_poll": _ms(server_cpu / polls),
        "client_cpu_ms_per_poll": _ms(client_cpu / polls),
    }
    ctx.log(f"{figures['table_rows']:>9,} rows: poll median {figures['median_ms']} ms, p95 {figures['p95_ms']} ms "
            f"(server CPU {figures['server_cpu_ms_per_poll']} ms/poll)")
    info: dict[str, Any] = {}
    for name, sql, since in [("old_ts", POLL_SQL, OLD_TS)] + [(n, s, ts) for n, s in VARIANTS.items()]:
        runs = [_run_query(database, sql, since) for _ in range(settings["info_runs"])]
        info[name] = {"median_ms": _ms(statistics.median(r[0] for r in runs)), "rows_returned": len(runs[-1][1])}
        ctx.log(f"           {name}: median {info[name]['median_ms']} ms")
    figures["variants"] = info
    return figures


def _check_poll_rows(rows: list[Any], ts: Any) -> None:
    """The poll must return what it promises, or its latency means nothing."""
    stamps = [r[SINGERS_COLUMNS.index("LastUpdated")] for r in rows]
    if not rows or any(s <= ts for s in stamps) or stamps != sorted(stamps):
        raise AssertionError("the poll returned rows that are not newer than @ts in commit-timestamp order")


def run(ctx: RunContext) -> Result:
    settings = dict(QUICK if ctx.quick else FULL)
    small, large = settings["sizes"]
    data_dir = os.path.join(ctx.workdir, "data")
    result = Result(settings={
        **settings, "query": POLL_SQL, "shards": f"{ALL_SHARDS[0]}..{ALL_SHARDS[-1]}", "rows": ROW_SHAPE.describe(),
        "load": f"InsertOrUpdate, {LOAD_BATCH_ROWS} rows per commit (one mutation), {LOAD_THREADS} client threads",
        "tail": f"{settings['tail_rows']} single-row InsertOrUpdate mutations of random existing rows, {TAIL_COMMIT_ROWS} per commit; "
                "@ts = newest commit timestamp before the tail",
        "read": "strong single-use read-only query (database.snapshot().execute_sql), all rows consumed",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
    })
    with ServerProcess(data_dir) as server:
        instance = connect(server)
        database = instance.database(DATABASE_ID)
        if database.exists():
            database.drop()
        database = singers_database(instance, DATABASE_ID)

        ctx.log(f"loading {small:,} rows")
        load_singers(database, 0, small, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS, shape=ROW_SHAPE)
        at_small = _measure(database, server, small, settings, ctx)

        ctx.log(f"growing the table to {large:,} rows")
        client0, server0 = cpu_seconds(), server.cpu_seconds()
        load = load_singers(database, small, large, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS, shape=ROW_SHAPE, seed=2)
        load.update(client_cpu_seconds=cpu_seconds() - client0, server_cpu_seconds=server.cpu_seconds() - server0,
                    server_rss_mib=mib(server.rss_bytes()), database_file_mib=mib(_folder_bytes(data_dir)))
        load = {k: round(v, 1) if isinstance(v, float) else v for k, v in load.items()}
        ctx.log(f"loaded {load['rows']:,} rows in {load['seconds']} s ({load['rows_per_second']:,.0f} rows/s; "
                f"CPU client {load['client_cpu_seconds']} s, server {load['server_cpu_seconds']} s)")
        at_large = _measure(database, server, large, settings, ctx)

    ratio = round(at_large["median_ms"] / at_small["median_ms"], 2)
    result.figures = {"small": at_small, "large": at_large, "load": load, "median_ratio": ratio,
                      "p95_ratio": round(at_large["p95_ms"] / at_small["p95_ms"], 2),
                      "server_cpu_ratio": round(at_large["server_cpu_ms_per_poll"] / at_small["server_cpu_ms_per_poll"], 2)}
    result.checks.append(check(f"poll median latency at {large:,} / at {small:,} rows", ratio, "<=", TARGET_RATIO))
    return result


def _folder_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
