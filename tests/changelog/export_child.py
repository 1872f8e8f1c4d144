"""An export into a folder killed at its worst moment, for the crash test.

``python export_child.py WAREHOUSE OUT FORMAT KILL_AFTER``: plans the export and runs its steps in
order (write, publish, record), SIGKILLing itself right after the step KILL_AFTER. Small on
purpose: one core (``local[1]``), one shuffle partition, no UI.
"""

from __future__ import annotations

import os
import signal
import sys


def main(warehouse: str, out: str, format_name: str, kill_after: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from watcher.changelog.exports.folder_target import FolderExport
    from watcher.changelog.tables import runtime

    builder = SparkSession.builder.master("local[1]").appName("export-child")
    for key, value in {**runtime.spark_settings({}), **runtime.LOCAL_DELTA_SETTINGS}.items():
        builder = builder.config(key, value)
    spark = (builder.config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    export = FolderExport(spark, warehouse, out, format_name)
    plan = export.plan()
    assert plan is not None, "nothing to export"
    for step in (export.write, export.publish, export.record):
        step(plan)
        if step.__name__ == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(*sys.argv[1:5])
