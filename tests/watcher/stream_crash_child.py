"""The watching process of test_change_stream_crash: a ChangeStreamWatcher appending each change to a file, fsync'd.

Usage: python -m tests.watcher.stream_crash_child PROJECT INSTANCE DATABASE STREAM OUT SEGMENT START MAX_BATCH_ROWS

Each line is ``<segment> <txn>/<record sequence>/<mod index> <key> <FirstName>``. Connects to
SPANNER_EMULATOR_HOST and keeps its partitions' progress in WATCHER_CHANGE_STREAM_PARTITIONS of
the watched database, so a restarted process resumes where the killed one stopped.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time


def main(argv: list[str]) -> int:
    from google.cloud import spanner

    from watcher import ChangeStreamWatcher

    project, instance, database, stream, out, segment, start, max_batch_rows = argv
    db = spanner.Client(project=project).instance(instance).database(database)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(change) -> None:
        ident = f"{change.server_transaction_id}/{change.record_sequence}/{change.mod_index}"
        os.write(fd, f"{segment} {ident} {change.keys[0]} {change.row['FirstName']}\n".encode())
        os.fsync(fd)

    watcher = ChangeStreamWatcher(db, stream, heartbeat=dt.timedelta(seconds=1), start=dt.datetime.fromisoformat(start),
                                  watcher_id="crash", max_batch_rows=int(max_batch_rows), max_concurrent_partitions=4)
    watcher.add_callback(record)
    watcher.start()
    print("started", flush=True)
    while watcher.failure is None:
        time.sleep(0.05)
    print(f"failed: {watcher.failure!r}", file=sys.stderr, flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
