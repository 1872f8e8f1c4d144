"""The watching process of test_change_stream_ground_truth: a ChangeStreamWatcher staging into a StagingSink.

Usage: python -m tests.changelog.stream_staging_child PROJECT INSTANCE DATABASE STREAM STAGING START WATCHER_ID

Connects to SPANNER_EMULATOR_HOST, keeps its partitions' progress in WATCHER_CHANGE_STREAM_PARTITIONS
of the watched database (so a restarted process resumes where a killed one stopped), and stages
every batch before that progress moves, as ``spanner-watcher watch`` would.
"""

from __future__ import annotations

import datetime as dt
import sys
import time


def main(argv: list[str]) -> int:
    from google.cloud import spanner

    from watcher import ChangeStreamWatcher
    from watcher.staging.sink import StagingSink

    project, instance, database, stream, staging, start, watcher_id = argv
    db = spanner.Client(project=project).instance(instance).database(database)
    watcher = ChangeStreamWatcher(db, stream, heartbeat=dt.timedelta(seconds=1), start=dt.datetime.fromisoformat(start),
                                  watcher_id=watcher_id, max_batch_rows=50, max_concurrent_partitions=4)
    StagingSink(staging, watcher_id=watcher_id, fsync=False).attach(watcher)  # a SIGKILL keeps the page cache
    watcher.start()
    print("started", flush=True)
    while watcher.failure is None:
        time.sleep(0.05)
    print(f"failed: {watcher.failure!r}", file=sys.stderr, flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
