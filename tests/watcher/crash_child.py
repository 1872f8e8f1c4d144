"""The watching process of test_crash_resume: watch a table, append each change to a file, fsync'd.

Usage: python -m tests.watcher.crash_child PROJECT INSTANCE DATABASE TABLE OUT SEGMENT LIMIT

Each line is ``<segment> <key> <commit timestamp>``. Connects to SPANNER_EMULATOR_HOST and
keeps its place in LAST_SEEN_COMMIT_TIMESTAMPS of the watched database, so a restarted
process resumes where the killed one stopped.
"""

from __future__ import annotations

import sys

from tests.child_process import connect, line_appender, run_until_failure
from watcher import MIN_TIMESTAMP, SpannerCommitTimestampRepository, TableWatcher


def main(argv: list[str]) -> int:
    project, instance, database, table, out, segment, limit = argv
    db = connect(project, instance, database)
    append = line_appender(out)

    def record(change) -> None:
        append(f"{segment} {change.keys[0]} {change.commit_timestamp.rfc3339()}")

    watcher = TableWatcher(db, table, poll_interval=0.02, limit=int(limit), initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=SpannerCommitTimestampRepository(db))
    watcher.add_callback(record)
    return run_until_failure(watcher)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
