"""The watching process of test_change_stream_crash: a ChangeStreamWatcher appending each change to a file, fsync'd.

Usage: python -m tests.watcher.stream_crash_child PROJECT INSTANCE DATABASE STREAM OUT SEGMENT START MAX_BATCH_ROWS

Each line is ``<segment> <txn>/<record sequence>/<mod index> <key> <FirstName>``. Connects to
SPANNER_EMULATOR_HOST and keeps its partitions' progress in WATCHER_CHANGE_STREAM_PARTITIONS of
the watched database, so a restarted process resumes where the killed one stopped.
"""

from __future__ import annotations

import datetime as dt
import sys

from tests.child_process import connect, line_appender, run_until_failure
from watcher import ChangeStreamWatcher


def main(argv: list[str]) -> int:
    project, instance, database, stream, out, segment, start, max_batch_rows = argv
    db = connect(project, instance, database)
    append = line_appender(out)

    def record(change) -> None:
        ident = f"{change.server_transaction_id}/{change.record_sequence}/{change.mod_index}"
        append(f"{segment} {ident} {change.keys[0]} {change.row['FirstName']}")

    watcher = ChangeStreamWatcher(db, stream, heartbeat=dt.timedelta(seconds=1), start=dt.datetime.fromisoformat(start),
                                  watcher_id="crash", max_batch_rows=int(max_batch_rows), max_concurrent_partitions=4)
    watcher.add_callback(record)
    return run_until_failure(watcher)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
