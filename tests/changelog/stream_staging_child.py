"""The watching process of test_change_stream_ground_truth: a ChangeStreamWatcher staging into a StagingSink.

Usage: python -m tests.changelog.stream_staging_child PROJECT INSTANCE DATABASE STREAM STAGING START WATCHER_ID

Connects to SPANNER_EMULATOR_HOST, keeps its partitions' progress in WATCHER_CHANGE_STREAM_PARTITIONS
of the watched database (so a restarted process resumes where a killed one stopped), and stages
every batch before that progress moves, as ``spanner-watcher watch`` would.
"""

from __future__ import annotations

import datetime as dt
import sys

from tests.child_process import connect, run_until_failure
from watcher import ChangeStreamWatcher
from watcher.staging.sink import StagingSink


def main(argv: list[str]) -> int:
    project, instance, database, stream, staging, start, watcher_id = argv
    db = connect(project, instance, database)
    watcher = ChangeStreamWatcher(db, stream, heartbeat=dt.timedelta(seconds=1), start=dt.datetime.fromisoformat(start),
                                  watcher_id=watcher_id, max_batch_rows=50, max_concurrent_partitions=4)
    StagingSink(staging, watcher_id=watcher_id, fsync=False).attach(watcher)  # a SIGKILL keeps the page cache
    return run_until_failure(watcher)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
