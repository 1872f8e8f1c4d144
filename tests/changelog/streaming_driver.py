"""A streaming changelog query in its own process, for the test that kills it with SIGKILL.

``python streaming_driver.py --database projects/p/instances/i/databases/d --table T --warehouse W
--checkpoint C [--option name=value ...]`` (or ``--option change_stream=S`` in place of ``--table``): runs the ``spanner_watcher`` source into the
changelog writer with a checkpoint until it is killed (or its parent is gone, or
``--max-seconds`` passed: a test that died must not leave it running), or until it kills itself at
``--die-at`` (a step of :mod:`tests.changelog.crash_points`). SPANNER_EMULATOR_HOST
names the server. This project's ``watcher`` is imported from the source tree this file
belongs to. Small on purpose: one core (``local[1]``), one shuffle partition, no UI.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--database", "--warehouse", "--checkpoint"):
        parser.add_argument(name, required=True)
    parser.add_argument("--table")  # or --option change_stream=<stream> (change-stream mode)
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--trigger", default="200 milliseconds")
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--die-at", help="kill itself at this step of a micro-batch's run (crash_points.STEPS)")
    parser.add_argument("--die-after-runs", type=int, default=0, help="runs (micro-batches) left whole before --die-at")
    args = parser.parse_args()
    if args.die_at:
        from tests.changelog.crash_points import install

        install(args.die_at, args.die_after_runs)
    parent = os.getppid()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from watcher.changelog import streaming
    from watcher.changelog.tables import runtime

    builder = SparkSession.builder.master("local[1]").appName("streaming-driver")
    for key, value in {**runtime.spark_settings({}), **runtime.LOCAL_DELTA_SETTINGS}.items():  # the warehouse is Delta
        builder = builder.config(key, value)
    spark = (builder
             .config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             # Python workers on a loaded machine may take longer than the default 15 s to connect back.
             .config("spark.python.authenticate.socketTimeout", "120s")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    streaming.register(spark)
    reader = spark.readStream.format("spanner_watcher").option("database", args.database)
    if args.table:
        reader = reader.option("table", args.table)
    for item in args.option:
        name, _, value = item.partition("=")
        reader = reader.option(name, value)
    query = (reader.load().writeStream.foreachBatch(streaming.changelog_writer(args.warehouse))
             .option("checkpointLocation", args.checkpoint).trigger(processingTime=args.trigger).start())
    print("started", flush=True)
    deadline = time.monotonic() + args.max_seconds
    while query.isActive and os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.2)
    if not query.isActive:
        print(f"query failed: {query.exception()}", file=sys.stderr, flush=True)
        return 1
    query.stop()
    return 2  # not killed in time: the test failed


if __name__ == "__main__":
    sys.exit(main())
