"""The real changelog job, SIGKILLed at one step of its run, for the crash tests (test_job_crashes.py).

``python job_crash_child.py STAGING WAREHOUSE STEP``: runs ``Changelog(...).run()`` over the
staging folder on a local Spark session of its own, and kills itself (SIGKILL, nothing cleaned
up) at STEP: ``before:runs`` (before the run's first commit), ``after:<table>`` (right after the
run's commit to ``runs``, ``changelog``, ``current_state`` or ``watermarks``: between two
commits, or after the last).
"""

from __future__ import annotations

import os
import signal
import sys

#: The steps a test may kill the run at.
STEPS = ("before:runs", "after:runs", "after:changelog", "after:current_state", "after:watermarks")
SOFT_DELETE = ("Singers", "Deleted")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(staging: str, warehouse: str, step: str) -> None:
    from watcher.changelog import Changelog
    from watcher.changelog.engines.spark import engine
    from watcher.changelog.spark.session import get_session
    from watcher.changelog.tables.ledger import Ledger

    when, _, table = step.partition(":")
    begin, write = Ledger.begin, engine.SparkRun.write

    def begin_then_die(self, *args, **kwargs):
        if step == "before:runs":
            _die()
        run = begin(self, *args, **kwargs)
        if step == "after:runs":
            _die()
        return run

    def write_then_die(self, name):
        write(self, name)
        if when == "after" and name == table:
            _die()

    Ledger.begin, engine.SparkRun.write = begin_then_die, write_then_die
    spark = get_session("local[1]", "job-crash-child", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                                        "spark.sql.session.timeZone": "UTC"})
    Changelog(spark).staging(staging).warehouse(warehouse).views(False).soft_delete_column(*SOFT_DELETE).run()


if __name__ == "__main__":
    main(*sys.argv[1:4])
