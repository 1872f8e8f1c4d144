"""External consistency under concurrent writers and strong readers.

For every strong read with read timestamp R: every row committed at or before R is in it,
and no row in it was committed after R. If a commit that started after the read could
still get a timestamp <= R, commit-timestamp polling would miss rows: this is the
property the watcher relies on.
"""

from __future__ import annotations

import threading
import time

from google.api_core import exceptions
from google.cloud import spanner

WRITERS = 8
POLLERS = 8
DURATION = 2.0

SCHEMA = ["""CREATE TABLE Commits (
    Id INT64 NOT NULL,
    Writer INT64 NOT NULL,
    Ts TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)
) PRIMARY KEY (Id)"""]


def _strong_read(db) -> tuple[object, dict[int, object]]:
    """One strong read: (its read timestamp, {Id: Ts} it saw)."""
    with db.snapshot(multi_use=True) as snap:
        rows = {r[0]: r[1] for r in snap.execute_sql("SELECT Id, Ts FROM Commits")}
        read_ts = snap._transaction_read_timestamp  # the client keeps what the server reported
    assert read_ts is not None
    return read_ts, rows


def test_strong_reads_are_externally_consistent(make_database):
    db = make_database(SCHEMA)
    stop = threading.Event()
    failures: list[BaseException] = []
    commits: list[tuple[int, object]] = []
    reads: list[tuple[object, dict[int, object]]] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        i = 0
        try:
            while not stop.is_set():
                row_id = w * 1_000_000 + i
                with db.batch() as b:
                    b.insert("Commits", ("Id", "Writer", "Ts"), [(row_id, w, spanner.COMMIT_TIMESTAMP)])
                with lock:
                    commits.append((row_id, b.committed))
                i += 1
        except BaseException as exc:
            failures.append(exc)

    def poller() -> None:
        try:
            while not stop.is_set():
                result = _strong_read(db)
                with lock:
                    reads.append(result)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=poller) for _ in range(POLLERS)]
    for t in threads:
        t.start()
    time.sleep(DURATION)
    stop.set()
    for t in threads:
        t.join(30)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)

    final_ts, final = _strong_read(db)
    assert dict(commits) == final  # every commit is there, with the timestamp its commit returned
    assert len(commits) >= WRITERS and len(reads) >= POLLERS
    stamps = sorted(final.values())
    assert len(set(stamps)) == len(stamps)
    assert all(ts <= final_ts for ts in stamps)

    for read_ts, seen in reads:
        expected = {row_id for row_id, ts in final.items() if ts <= read_ts}
        missing = expected - seen.keys()
        too_new = {row_id for row_id, ts in seen.items() if ts > read_ts}
        assert not missing, f"read at {read_ts} missed rows committed at or before it: {sorted(missing)[:5]}"
        assert not too_new, f"read at {read_ts} saw rows committed after it: {sorted(too_new)[:5]}"
        assert all(seen[row_id] == final[row_id] for row_id in seen)
    # Reads that overlapped the writes saw a growing table: the check above was not vacuous.
    assert len({len(seen) for _, seen in reads}) > 1


def test_read_timestamp_of_single_use_and_multi_use_snapshots(make_database):
    db = make_database(SCHEMA)
    with db.batch() as b:
        b.insert("Commits", ("Id", "Writer", "Ts"), [(1, 0, spanner.COMMIT_TIMESTAMP)])
    read_ts, rows = _strong_read(db)
    assert rows == {1: b.committed}
    assert read_ts >= b.committed
    with db.batch() as b2:
        b2.insert("Commits", ("Id", "Writer", "Ts"), [(2, 0, spanner.COMMIT_TIMESTAMP)])
    assert b2.committed > read_ts  # a commit after a read returned gets a later timestamp
    # A snapshot at the earlier read timestamp sees exactly what that read saw, or (a server
    # without old versions) is refused: never today's data presented as the past.
    try:
        with db.snapshot(read_timestamp=read_ts) as snap:
            assert {r[0] for r in snap.execute_sql("SELECT Id FROM Commits")} == {1}
    except exceptions.FailedPrecondition as exc:
        assert "read" in exc.message.lower()
