"""Stress: concurrent writers against a watcher with a small LIMIT and a 10 ms poll interval.

1. Polling a data table (8 writer threads, 5,000 random upserts over 500 keys, several rows
   per transaction so commit-timestamp groups exist and LIMIT 50 keeps cutting them): for
   every key the last delivered version is the last written one, every delivered version
   was written (with the commit timestamp it was written at), and per key the delivered
   commit timestamps strictly increase.
   Run twice: unique commit timestamps, then shared ones (the embedded server's switch:
   several transactions per commit timestamp, as on Spanner).
2. History-table mode, the same load plus deletes: every written version and every delete
   is delivered exactly once, in commit order per key, with the right operation. (Run once:
   its transactions read, so they never share a commit timestamp.)
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from google.cloud import spanner

from tests.watcher.core_support import wait_until
from watcher import InMemoryCommitTimestampRepository, TableWatcher
from watcher.capture.helper_tables.history import HistoryTable, HistoryWatcher

WRITERS = 8
UPSERTS = 5_000
KEYS = 500
POLL_INTERVAL = 0.01
LIMIT = 50
MAX_ROWS_PER_TXN = 6
DELETE_SHARE = 0.15

STRESS_DDL = ("CREATE TABLE Stress (K INT64 NOT NULL, Version INT64 NOT NULL, "
              "Ts TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (K)")
DOCS_DDL = "CREATE TABLE Docs (K INT64 NOT NULL, Version INT64) PRIMARY KEY (K)"


def run_writers(work: Callable[[random.Random, int], None], max_per_txn: int) -> float:
    """Run ``WRITERS`` threads sharing ``UPSERTS`` operations; each transaction gets 1..max_per_txn
    of them (``work(rng, n)``). Returns the seconds taken."""
    remaining = [UPSERTS]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while True:
                with lock:
                    n = min(remaining[0], rng.randint(1, max_per_txn))
                    remaining[0] -= n
                if n == 0:
                    return
                work(rng, n)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    return time.monotonic() - started


def test_stress_data_table(make_database, commit_timestamps):
    db = make_database([STRESS_DDL])
    versions = itertools.count(1)
    written: dict[int, tuple[int, Any]] = {}  # version -> (key, commit timestamp)
    lock = threading.Lock()
    delivered: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    commits: list[Any] = []

    def on_change(change):
        delivered[change.keys[0]].append((change.row["Version"], change.commit_timestamp))

    def upsert(rng: random.Random, n: int) -> None:
        keys = rng.sample(range(KEYS), n)
        rows = [(k, next(versions), spanner.COMMIT_TIMESTAMP) for k in keys]
        with db.batch() as batch:
            batch.insert_or_update("Stress", ("K", "Version", "Ts"), rows)
        with lock:
            commits.append(batch.committed)
            for k, v, _ in rows:
                written[v] = (k, batch.committed)

    w = TableWatcher(db, "Stress", poll_interval=POLL_INTERVAL, limit=LIMIT, checkpoints=InMemoryCommitTimestampRepository())
    w.add_callback(on_change)
    with w:
        seconds = run_writers(upsert, MAX_ROWS_PER_TXN)
        last_written: dict[int, tuple[Any, int]] = {}
        for v, (k, ts) in written.items():
            if k not in last_written or ts > last_written[k][0]:
                last_written[k] = (ts, v)
        wait_until(lambda: all(delivered[k] and delivered[k][-1][0] == v for k, (_, v) in list(last_written.items())), 30)
        stats = w.stats()
    assert w.failure is None
    assert len(written) == UPSERTS
    for k, versions_seen in delivered.items():
        for version, ts in versions_seen:
            assert written[version] == (k, ts), f"key {k}: delivered version {version} at {ts} was not written so"
        stamps = [ts for _, ts in versions_seen]
        assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False)), f"key {k}: commit timestamps not increasing"
        assert versions_seen[-1][0] == last_written[k][1]
    assert set(delivered) == set(last_written)
    if commit_timestamps == "shared":  # the run did exercise transactions sharing a commit timestamp
        assert len(set(commits)) < len(commits)
    print(f"\ndata-table stress: {UPSERTS} upserts in {len(commits)} transactions at {len(set(commits))} commit "
          f"timestamps in {seconds:.2f}s ({UPSERTS / seconds:.0f}/s), "
          f"{sum(map(len, delivered.values()))} versions delivered in {stats['polls']} polls")


def test_stress_history_table(make_database):
    db = make_database([DOCS_DDL])
    history = HistoryTable.discover(db, "Docs")
    history.create(db)
    versions = itertools.count(1)
    committed: list[tuple[Any, list[tuple[int, str, int | None]]]] = []  # (commit ts, ops in order)
    lock = threading.Lock()
    delivered: dict[int, list[tuple[str, int | None, Any]]] = defaultdict(list)

    def on_change(change):
        delivered[change.keys[0]].append((change.mod_type, change.row.get("Version"), change.commit_timestamp))

    def transaction(rng: random.Random, n: int) -> None:
        plan = [(rng.randrange(KEYS), rng.random() < DELETE_SHARE) for _ in range(n)]
        attempt: dict[str, Any] = {}

        def work(txn):
            ops: list[tuple[int, str, int | None]] = []
            attempt.update(txn=txn, ops=ops)
            h = history.writer(txn)
            for key, is_delete in plan:
                if is_delete:
                    h.delete([(key,)])
                    ops.append((key, "delete", None))
                else:
                    v = next(versions)
                    h.insert_or_update(["K", "Version"], [[key, v]])
                    ops.append((key, "upsert", v))

        db.run_in_transaction(work)
        with lock:
            committed.append((attempt["txn"].committed, attempt["ops"]))

    # Per key, replay the committed operations in commit order: what must be delivered.
    def expected() -> dict[int, list[tuple[str, int | None, Any]]]:
        out: dict[int, list[tuple[str, int | None, Any]]] = defaultdict(list)
        exists: dict[int, bool] = {}
        for ts, ops in sorted(committed, key=lambda c: c[0]):
            for key, op, v in ops:
                if op == "upsert":
                    out[key].append(("UPDATE" if exists.get(key) else "INSERT", v, ts))
                    exists[key] = True
                elif exists.get(key):
                    out[key].append(("DELETE", None, ts))
                    exists[key] = False
        return out

    w = HistoryWatcher(db, "Docs", poll_interval=POLL_INTERVAL, limit=LIMIT, checkpoints=InMemoryCommitTimestampRepository())
    w.add_callback(on_change)
    with w:
        seconds = run_writers(transaction, 4)
        want = expected()
        total = sum(map(len, want.values()))
        wait_until(lambda: sum(map(len, list(delivered.values()))) >= total, 30)
        time.sleep(5 * POLL_INTERVAL)  # anything beyond `total` would be a duplicate: give it a chance to show
        stats = w.stats()
    assert w.failure is None
    assert {k: v for k, v in delivered.items()} == dict(want)
    print(f"\nhistory stress: {UPSERTS} operations in {len(committed)} transactions at "
          f"{len({ts for ts, _ in committed})} commit timestamps in {seconds:.2f}s "
          f"({UPSERTS / seconds:.0f} ops/s), {total} history rows delivered in {stats['polls']} polls")
