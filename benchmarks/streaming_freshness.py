"""End-to-end freshness of the Structured Streaming changelog: commit -> row visible in the ``changelog`` view.

The writer process of :mod:`.watcher_lag` commits 100 transactions per second of 10 new Singers
rows each (1,000 changes/s) into the local server (a separate process). In the benchmark's own
process a Spark session (``local[2]``) runs ``spark.readStream.format("spanner_watcher")`` over the
Singers table (``shard_column`` ShardId with the 37 values -18..18, the FORCE_INDEX hint, start
"now", 19 shard loops per Spark partition: two tasks per micro-batch, one per core) into the changelog writer
(``writeStream.foreachBatch(changelog_writer(warehouse))``, a checkpoint location, trigger
``processingTime`` 0: the next micro-batch as soon as the last one ended).

Freshness of a row = the wall time at which the micro-batch holding it committed its run's
changelog part (from then on the ``changelog`` view shows it) minus the row's commit timestamp; both clocks
are the machine's. Target: p99 <= 1.5 s on ``local[2]`` (2.5 s on a standalone cluster), over the rows committed after the first minute of writes
(the warm-up). The first minute is reported apart (``freshness_first_minute``): a query's first
micro-batches take up to twice as long as later ones while the JVM compiles Spark's code (on two
cores its JIT compiler takes a core's worth of CPU for the first few dozen micro-batches), once per
query start, which is not the freshness a running query keeps (a 15 s warm-up would leave most of
that transient in the measured rows).
:mod:`.streaming_freshness_cluster` runs the same on a standalone cluster.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import sys
import time
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import INSTANCE, PROJECT, ServerProcess, connect, cpu_seconds, percentile, singers_database
from .watcher_delivery import DATABASE_ID, HINT, TABLE, ensure_table
from .watcher_lag import COMMITS_PER_SECOND, ROWS_PER_COMMIT, WRITER_START_DELAY, _writer

NAME = "streaming_freshness"
TITLE = "Structured Streaming source + changelog writer: commit -> visible in the changelog view at 1,000 changes/s"

SHARDS = list(range(-18, 19))
#: Shard loops per Spark partition: the 37 loops in two tasks, one per core of local[2].
SHARDS_PER_PARTITION = 19
TARGET_P99_S = 1.5
FULL = {"seconds": 45.0, "warmup_seconds": 60.0, "table_rows": 20_000}
QUICK = {"seconds": 10.0, "warmup_seconds": 10.0, "table_rows": 2_000}
#: Seconds the query gets to make the last rows visible after the writer stopped.
DRAIN_TIMEOUT = 240.0
#: Rows committed (and made visible) before the measured writes: the first micro-batch starts
#: Spark's Python workers and their Spanner clients, a one-off cost that is not freshness.
WARMUP_ROWS = 10


#: The master of the local run: the machine's two cores.
LOCAL_MASTER = "local[2]"
#: Settings of a run on a standalone cluster: the worker's two cores, this Python on the executors.
CLUSTER_SETTINGS = {"spark.cores.max": "2", "spark.executor.memory": "1g"}


def _spark(master: str) -> Any:
    from pyspark.sql import SparkSession

    from watcher.changelog.tables import runtime

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master)
    if master != LOCAL_MASTER:
        for key, value in {**CLUSTER_SETTINGS, "spark.pyspark.python": sys.executable}.items():
            builder = builder.config(key, value)
    settings = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC",
                # Python workers on a loaded machine may take longer than the default 15 s to connect back.
                "spark.python.authenticate.socketTimeout": "120s"}
    for key, value in runtime.spark_settings(settings).items():  # the changelog's tables are Delta tables
        builder = builder.config(key, value)
    spark = builder.appName("bench-streaming-freshness").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _figures(values_s: list[float]) -> dict[str, float]:
    return {name: round(percentile(values_s, q), 2) for name, q in
            (("p50_s", 0.5), ("p95_s", 0.95), ("p99_s", 0.99), ("max_s", 1.0))}


def _visible(spark: Any, workdir: str, first_id: int, *, distinct: bool = False) -> Any:
    """Changelog rows (with ``distinct``, also the distinct (key, commit) pairs) of the ids from ``first_id``."""
    from watcher.changelog import register_views

    # Each read is of one Delta snapshot: a run committing meanwhile is seen whole or not at all.
    register_views(spark, os.path.join(workdir, "warehouse"))
    where = f"CAST(get_json_object(keys, '$.SingerId') AS BIGINT) >= {first_id}"
    if not distinct:
        return spark.sql(f"SELECT count(*) FROM changelog WHERE {where}").first()[0]
    row = spark.sql(f"SELECT count(*), count(DISTINCT keys, commit_timestamp) FROM changelog WHERE {where}").first()
    return row[0], row[1]


def _phases(reports: list[Any]) -> dict[str, float]:
    """The median of each named duration over ``reports`` (dicts of name -> duration)."""
    names = sorted({name for report in reports for name in report})
    return {name: round(percentile([float(r.get(name, 0.0)) for r in reports], 0.5), 3) for name in names}


def _spark_work(spark: Any, run_id: str) -> dict[str, int]:
    """The Spark jobs and tasks the query ran (its jobs carry its run id as their group), as far as
    Spark's status store keeps them (the latest 1,000 jobs by default)."""
    tracker = spark.sparkContext.statusTracker()
    jobs = [info for job in tracker.getJobIdsForGroup(run_id) if (info := tracker.getJobInfo(job)) is not None]
    stages = [stage for info in jobs for s in info.stageIds if (stage := tracker.getStageInfo(s)) is not None]
    return {"jobs": len(jobs), "tasks": sum(stage.numTasks for stage in stages)}


def run(ctx: RunContext) -> Result:
    """The local run (``local[2]``)."""
    return measure(ctx, LOCAL_MASTER)


def measure(ctx: RunContext, master: str, target_p99_s: float = TARGET_P99_S) -> Result:
    """Run the benchmark with the Spark ``master`` given (local, or a standalone cluster's URL)."""
    from watcher.changelog import streaming

    settings = dict(QUICK if ctx.quick else FULL)
    seconds, warmup = settings["seconds"], settings["warmup_seconds"]
    result = Result(settings={
        **settings, "changes_per_second": COMMITS_PER_SECOND * ROWS_PER_COMMIT,
        "writer": f"separate process (watcher_lag's): {COMMITS_PER_SECOND} commits/s x {ROWS_PER_COMMIT} new rows",
        "source": f"spanner_watcher, shard_column ShardId, shards -18..18, hint {HINT}, start now, shards_per_partition {SHARDS_PER_PARTITION}",
        "sink": "foreachBatch(changelog_writer(warehouse)), checkpointLocation, trigger processingTime 0",
        "master": master if master == LOCAL_MASTER else f"standalone cluster (one master, one worker of 2 cores, loopback), {CLUSTER_SETTINGS}",
        "freshness": "the run's changelog part committed (wall clock) minus the row's commit timestamp, rows after the warm-up "
                     "(freshness_first_minute: the rows of the warm-up)",
    })
    workdir = ctx.workdir
    load_before = round(os.getloadavg()[0], 1)
    with ServerProcess(os.path.join(workdir, "streaming-data")) as server:
        database = singers_database(connect(server), DATABASE_ID)
        ensure_table(database, int(settings["table_rows"]), ctx)
        with database.snapshot() as snap:
            first_id = int(next(iter(snap.execute_sql(f"SELECT MAX(SingerId) FROM {TABLE}")))[0]) + 1
        spark = _spark(master)
        streaming.register(spark)
        writer = streaming.changelog_writer(os.path.join(workdir, "warehouse"))
        changes = (spark.readStream.format("spanner_watcher")
                   .option("database", f"projects/{PROJECT}/instances/{INSTANCE}/databases/{DATABASE_ID}")
                   .option("table", TABLE).option("shard_column", "ShardId").option("shards", str(SHARDS))
                   .option("table_hint", HINT).option("start", "now")
                   .option("shards_per_partition", str(SHARDS_PER_PARTITION)).load())
        query = (changes.writeStream.foreachBatch(writer).option("checkpointLocation", os.path.join(workdir, "checkpoint"))
                 .trigger(processingTime="0 seconds").start())
        try:
            ctx.log(f"warming up: rows through the query, {WARMUP_ROWS} at a time, until some are visible")
            from google.cloud import spanner

            warm = 0  # rows committed in the warm-up
            deadline = time.monotonic() + 600
            # Again and again: the query may fix its start ("now") only after a first commit.
            while writer.stats()["changes_written"] == 0 and query.isActive and time.monotonic() < deadline:
                with database.batch() as batch:
                    batch.insert_or_update(TABLE, ("SingerId", "FirstName", "LastName", "LastUpdated"),
                                           [(first_id + i, "warm", "up", spanner.COMMIT_TIMESTAMP) for i in range(WARMUP_ROWS)])
                first_id += WARMUP_ROWS
                warm += WARMUP_ROWS
                time.sleep(5.0)
            warm_batches = [(b.records, b.seconds) for b in writer.batches() if b.records]
            context = multiprocessing.get_context("spawn")
            out = context.Queue()
            start_at = time.time() + WRITER_START_DELAY
            writer_first_id = first_id  # the measured rows: the writer process's, ids from here on
            proc = context.Process(target=_writer, args=(server.emulator_host, first_id, start_at, warmup, seconds, out))
            proc.start()
            ctx.log(f"writing {COMMITS_PER_SECOND * ROWS_PER_COMMIT:,} changes/s for {warmup + seconds:.0f} s")
            time.sleep(max(0.0, start_at - time.time()))
            cpu0 = cpu_seconds()
            written = out.get(timeout=warmup + seconds + 300)
            window = time.time() - start_at
            cpu = cpu_seconds() - cpu0
            proc.join(30)
            drain_until = time.monotonic() + DRAIN_TIMEOUT
            while (_visible(spark, workdir, writer_first_id) < written["rows"] and time.monotonic() < drain_until
                   and query.isActive):
                time.sleep(1.0)
            failure = query.exception()
            in_changelog, distinct = _visible(spark, workdir, writer_first_id, distinct=True)
            progress = [p["durationMs"] for p in query.recentProgress if p.get("numInputRows")][1:]
            spark_work = _spark_work(spark, str(query.runId))
        finally:
            query.stop()
            writer.close(120)  # a state merge under way
            spark.stop()
    if failure is not None:
        raise RuntimeError(f"the streaming query failed: {failure}")
    fresh = writer.freshness_values(committed_since=start_at + warmup)
    first_minute = writer.freshness_values(committed_since=start_at, committed_before=start_at + warmup)
    stats = writer.stats()
    batches = [b for b in writer.batches() if b.records][1:]  # after the first (warm-up) one
    figures = _figures(fresh) if fresh else {}
    written.pop("slots")
    result.figures = {
        "freshness": figures, "rows_measured": len(fresh), "rows_written": written["rows"],
        "freshness_first_minute": _figures(first_minute) if first_minute else {},
        "changes_in_changelog": in_changelog, "duplicates_dropped": stats["duplicates_dropped"],
        "rows_missing": written["rows"] - distinct, "rows_twice": in_changelog - distinct,
        "warmup_rows_committed": warm, "warmup_micro_batches_rows_seconds": warm_batches,
        "micro_batches_with_rows": len(batches),
        "rows_per_micro_batch_p50": percentile([b.records for b in batches], 0.5) if batches else 0,
        "micro_batch_seconds": _figures([b.seconds for b in batches]) if batches else {},
        "achieved_changes_per_second": round(written["rows"] / written["seconds"]),
        "writer": {k: round(v, 1) if isinstance(v, float) else v for k, v in written.items()},
        "micro_batch_phases_p50_s": _phases([b.phases for b in batches]),
        # Each micro-batch's own figures: the tail is made of a few slow ones, and which phase made them slow.
        "micro_batch_engines": dict(collections.Counter(b.engine for b in batches)),
        "micro_batches": [{"records": b.records, "seconds": b.seconds, "phases": dict(b.phases), "engine": b.engine}
                          for b in batches],
        "compactions": stats.get("compactions"),
        "trigger_phases_p50_ms": _phases(progress),
        "spark_jobs_and_tasks_per_micro_batch": {k: round(v / max(1, len(writer.batches())), 1) for k, v in spark_work.items()},
        "cpu_cores_benchmark_process_and_spark_python": round(cpu / window, 2),
        "loadavg_1min_before": load_before,
        "loadavg_1min_after": round(os.getloadavg()[0], 1),
    }
    ctx.log(f"freshness over {len(fresh):,} rows: " + ", ".join(f"{k} {v}" for k, v in figures.items())
            + f"; {len(batches)} micro-batches, {distinct:,} of the {written['rows']:,} rows written in the changelog")
    result.checks.append(check("freshness p99 (s)", figures.get("p99_s", float("inf")), "<=", target_p99_s))
    result.checks.append(check("written rows missing from or twice in the changelog", result.figures["rows_missing"] + result.figures["rows_twice"], "<=", 0))
    return result
