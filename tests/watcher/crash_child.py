"""The watching process of test_crash_resume: watch a table, append each change to a file, fsync'd.

Usage: python -m tests.watcher.crash_child PROJECT INSTANCE DATABASE TABLE OUT SEGMENT LIMIT

Each line is ``<segment> <key> <commit timestamp>``. Connects to SPANNER_EMULATOR_HOST and
keeps its place in LAST_SEEN_COMMIT_TIMESTAMPS of the watched database, so a restarted
process resumes where the killed one stopped.
"""

from __future__ import annotations

import os
import sys
import time


def main(argv: list[str]) -> int:
    from google.cloud import spanner

    from watcher import MIN_TIMESTAMP, SpannerCommitTimestampRepository, TableWatcher

    project, instance, database, table, out, segment, limit = argv
    db = spanner.Client(project=project).instance(instance).database(database)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(change) -> None:
        os.write(fd, f"{segment} {change.keys[0]} {change.commit_timestamp.rfc3339()}\n".encode())
        os.fsync(fd)

    watcher = TableWatcher(db, table, poll_interval=0.02, limit=int(limit), initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=SpannerCommitTimestampRepository(db))
    watcher.add_callback(record)
    watcher.start()
    print("started", flush=True)
    while watcher.failure is None:
        time.sleep(0.05)
    print(f"failed: {watcher.failure!r}", file=sys.stderr, flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
