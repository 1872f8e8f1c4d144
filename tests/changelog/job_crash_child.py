"""The real changelog job, SIGKILLed at one step of its run, for the crash tests (test_job_crashes.py).

``python job_crash_child.py STAGING WAREHOUSE STEP``: runs ``Changelog(...).run()`` over the
staging folder on a local Spark session of its own, and kills itself (SIGKILL, nothing cleaned
up) at STEP: ``before:runs`` (before the run's first commit), ``after:<table>`` (right after the
run's commit to ``runs``, ``changelog``, ``current_state`` or ``watermarks``: between two
commits, or after the last).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # run as a script: the tests package too

from tests.changelog.crash_points import install  # noqa: E402

SOFT_DELETE = ("Singers", "Deleted")


def main(staging: str, warehouse: str, step: str) -> None:
    from watcher.changelog import Changelog
    from watcher.changelog.spark.session import get_session

    install(step)
    spark = get_session("local[1]", "job-crash-child", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                                        "spark.sql.session.timeZone": "UTC"})
    Changelog(spark).staging(staging).warehouse(warehouse).views(False).soft_delete_column(*SOFT_DELETE).run()


if __name__ == "__main__":
    main(*sys.argv[1:4])
