"""A streaming changelog query in its own process (the tests kill it with SIGKILL and start it again).

``python streaming_driver.py --database projects/p/instances/i/databases/d --table T --warehouse W
--checkpoint C --stop-file F [--option name=value ...]``: runs the ``spanner_watcher`` source into
the changelog writer with a checkpoint until the stop file exists, then drains what is available
and exits 0. SPANNER_EMULATOR_HOST names the server. This project's ``watcher`` is imported from
the source tree this file belongs to.
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
    for name in ("--database", "--table", "--warehouse", "--checkpoint", "--stop-file"):
        parser.add_argument(name, required=True)
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--trigger", default="500 milliseconds")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from watcher.changelog import streaming

    spark = (SparkSession.builder.master("local[2]").appName("streaming-driver")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.session.timeZone", "UTC")
             # Python workers on a loaded machine may take longer than the default 15 s to connect back.
             .config("spark.python.authenticate.socketTimeout", "120s")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    streaming.register(spark)
    reader = spark.readStream.format("spanner_watcher").option("database", args.database).option("table", args.table)
    for item in args.option:
        name, _, value = item.partition("=")
        reader = reader.option(name, value)
    query = (reader.load().writeStream.foreachBatch(streaming.changelog_writer(args.warehouse))
             .option("checkpointLocation", args.checkpoint).trigger(processingTime=args.trigger).start())
    print("started", flush=True)
    while not os.path.exists(args.stop_file):
        if not query.isActive:
            print(f"query failed: {query.exception()}", file=sys.stderr, flush=True)
            return 1
        time.sleep(0.2)
    query.processAllAvailable()
    query.stop()
    spark.stop()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
