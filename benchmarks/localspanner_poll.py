"""The watcher's poll query costs what it returns, not what the table holds.

On the benchmark schema (``ddl/samples/singers``: Singers with a FARM_FINGERPRINT shard
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

The machine may be busy with other work, and load that changes between the two
measurements moves their ratio. So a second database that stays at 10,000 rows (same
rows, same kind of tail) is polled alternately with the grown table, poll by poll:
before the growth as a control (ratio about 1), after it side by side. Both ratios are
checked: the same table before/after, and the grown table against the reference.

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
from dataclasses import asdict, dataclass
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

#: The database that grows (the stream benchmark reuses it when it finds it loaded).
DATABASE_ID = "singers"
#: A second database that stays small: polled alternately with the grown one, so both see the same machine load.
REFERENCE_ID = "singers_ref"
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
OLD_TS = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)

@dataclass(frozen=True)
class Sizes:
    """Table sizes, polls timed per table and phase, runs of each informational query, tail rows."""

    small: int
    large: int
    polls: int
    info_runs: int
    tail_rows: int = 1500


FULL = Sizes(small=10_000, large=1_000_000, polls=200, info_runs=5)
QUICK = Sizes(small=2_000, large=10_000, polls=20, info_runs=2)
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


@dataclass
class Subject:
    """A Singers table under test, and the ``@ts`` its poll starts from."""

    name: str
    database: Any
    table_rows: int
    ts: Any = None
    rows_newer: int = 0

    def write_tail(self, count: int, seed: int) -> None:
        """A caught-up watcher's view: ``count`` recent changes after ``ts``."""
        self.ts = max_last_updated(self.database)
        _write_tail(self.database, self.table_rows, count, seed)
        self.rows_newer = _count_newer(self.database, self.ts)
        for _ in range(WARMUP_POLLS):
            _, rows = _run_query(self.database, POLL_SQL, self.ts)
        _check_poll_rows(rows, self.ts)


def _time_polls(subjects: list[Subject], polls: int, server: ServerProcess) -> dict[str, dict[str, Any]]:
    """Poll every subject ``polls`` times, alternating (the first one rotates), so load on the machine hits them alike.

    Server CPU is read from /proc around each poll and summed per subject.
    """
    latencies: dict[str, list[float]] = {s.name: [] for s in subjects}
    server_cpu = dict.fromkeys(latencies, 0.0)
    client_cpu = dict.fromkeys(latencies, 0.0)
    returned = dict.fromkeys(latencies, 0)
    for i in range(polls):
        for k in range(len(subjects)):
            subject = subjects[(i + k) % len(subjects)]
            client0, server0 = cpu_seconds(), server.cpu_seconds()
            seconds, rows = _run_query(subject.database, POLL_SQL, subject.ts)
            server_cpu[subject.name] += server.cpu_seconds() - server0
            client_cpu[subject.name] += cpu_seconds() - client0
            latencies[subject.name].append(seconds)
            returned[subject.name] = len(rows)
    out = {}
    for s in subjects:
        lat = latencies[s.name]
        out[s.name] = {
            "table_rows": count_rows(s.database),
            "rows_newer_than_ts": s.rows_newer,
            "rows_returned": returned[s.name],
            "polls": polls,
            "median_ms": _ms(statistics.median(lat)),
            "p95_ms": _ms(percentile(lat, 0.95)),
            "min_ms": _ms(min(lat)),
            "server_cpu_ms_per_poll": _ms(server_cpu[s.name] / polls),
            "client_cpu_ms_per_poll": _ms(client_cpu[s.name] / polls),
        }
    return out


def _variants(subject: Subject, runs: int, ctx: RunContext) -> dict[str, Any]:
    """The informational queries (old @ts, no hint, base table, no shard filter) on ``subject``."""
    info: dict[str, Any] = {}
    for name, sql, since in [("old_ts", POLL_SQL, OLD_TS)] + [(n, q, subject.ts) for n, q in VARIANTS.items()]:
        timed = [_run_query(subject.database, sql, since) for _ in range(runs)]
        info[name] = {"median_ms": _ms(statistics.median(t[0] for t in timed)), "rows_returned": len(timed[-1][1])}
        ctx.log(f"           {name}: median {info[name]['median_ms']} ms")
    return info


def _log(ctx: RunContext, label: str, figures: dict[str, Any]) -> None:
    ctx.log(f"{label}: {figures['table_rows']:>9,} rows, poll median {figures['median_ms']} ms, p95 {figures['p95_ms']} ms "
            f"(server CPU {figures['server_cpu_ms_per_poll']} ms/poll)")


def _check_poll_rows(rows: list[Any], ts: Any) -> None:
    """The poll must return what it promises, or its latency means nothing."""
    stamps = [r[SINGERS_COLUMNS.index("LastUpdated")] for r in rows]
    if not rows or any(s <= ts for s in stamps) or stamps != sorted(stamps):
        raise AssertionError("the poll returned rows that are not newer than @ts in commit-timestamp order")


def _fresh(instance: Any, database_id: str) -> Any:
    database = instance.database(database_id)
    if database.exists():
        database.drop()
    return singers_database(instance, database_id)


def run(ctx: RunContext) -> Result:
    sizes = QUICK if ctx.quick else FULL
    small, large, polls, tail = sizes.small, sizes.large, sizes.polls, sizes.tail_rows
    data_dir = os.path.join(ctx.workdir, "data")
    result = Result(settings={
        **asdict(sizes), "query": POLL_SQL, "shards": f"{ALL_SHARDS[0]}..{ALL_SHARDS[-1]}", "rows": ROW_SHAPE.describe(),
        "load": f"InsertOrUpdate, {LOAD_BATCH_ROWS} rows per commit (one mutation), {LOAD_THREADS} client threads",
        "tail": f"{tail} single-row InsertOrUpdate mutations of random existing rows, {TAIL_COMMIT_ROWS} per commit; "
                "@ts = newest commit timestamp before the tail",
        "reference": f"a second database ({REFERENCE_ID}) that stays at {small:,} rows, polled alternately with the "
                     "grown table after the growth (side by side), and before it (control)",
        "read": "strong single-use read-only query (database.snapshot().execute_sql), all rows consumed",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
    })
    with ServerProcess(data_dir) as server:
        instance = connect(server)
        grown = Subject("grown", _fresh(instance, DATABASE_ID), small)
        reference = Subject("reference", _fresh(instance, REFERENCE_ID), small)
        ctx.log(f"loading {small:,} rows into {DATABASE_ID} and {REFERENCE_ID}")
        for subject, seed in ((grown, 1), (reference, 5)):
            load_singers(subject.database, 0, small, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS, shape=ROW_SHAPE, seed=seed)
            subject.write_tail(tail, seed=seed)
        before = _time_polls([grown, reference], polls, server)
        _log(ctx, "before growth", before["grown"])
        _log(ctx, "reference    ", before["reference"])
        before["grown"]["variants"] = _variants(grown, sizes.info_runs, ctx)

        ctx.log(f"growing {DATABASE_ID} to {large:,} rows")
        client0, server0 = cpu_seconds(), server.cpu_seconds()
        load = load_singers(grown.database, small, large, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS, shape=ROW_SHAPE, seed=2)
        load.update(client_cpu_seconds=cpu_seconds() - client0, server_cpu_seconds=server.cpu_seconds() - server0,
                    server_rss_mib=mib(server.rss_bytes()), data_folder_mib=mib(_folder_bytes(data_dir)))
        load = {k: round(v, 1) if isinstance(v, float) else v for k, v in load.items()}
        ctx.log(f"loaded {load['rows']:,} rows in {load['seconds']} s ({load['rows_per_second']:,.0f} rows/s; "
                f"CPU client {load['client_cpu_seconds']} s, server {load['server_cpu_seconds']} s)")
        grown.table_rows = large
        grown.write_tail(tail, seed=large)
        after = _time_polls([grown, reference], polls, server)
        _log(ctx, "after growth ", after["grown"])
        _log(ctx, "reference    ", after["reference"])
        after["grown"]["variants"] = _variants(grown, sizes.info_runs, ctx)

    same_table = round(after["grown"]["median_ms"] / before["grown"]["median_ms"], 2)
    side_by_side = round(after["grown"]["median_ms"] / after["reference"]["median_ms"], 2)
    result.figures = {
        "small": before["grown"], "large": after["grown"],
        "reference_before_growth": before["reference"], "reference_after_growth": after["reference"],
        "load": load,
        "median_ratio_same_table": same_table,
        "median_ratio_side_by_side": side_by_side,
        "median_ratio_control_before_growth": round(before["grown"]["median_ms"] / before["reference"]["median_ms"], 2),
        "p95_ratio_same_table": round(after["grown"]["p95_ms"] / before["grown"]["p95_ms"], 2),
        "server_cpu_ratio_same_table": round(after["grown"]["server_cpu_ms_per_poll"] / before["grown"]["server_cpu_ms_per_poll"], 2),
        "server_cpu_ratio_side_by_side": round(after["grown"]["server_cpu_ms_per_poll"] / after["reference"]["server_cpu_ms_per_poll"], 2),
    }
    result.checks += [
        check(f"poll median latency, same table at {large:,} / at {small:,} rows", same_table, "<=", TARGET_RATIO),
        check(f"poll median latency at {large:,} / {small:,}-row reference polled alternately", side_by_side, "<=", TARGET_RATIO),
    ]
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
