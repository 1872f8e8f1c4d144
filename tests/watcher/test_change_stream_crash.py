"""Crash and resume of a ChangeStreamWatcher: SIGKILL the watching process at random points while
partitions split and merge and writers commit versions of a few keys.

A real subprocess (tests/watcher/stream_crash_child.py) keeps its progress in the Spanner
progress table and appends every delivered change to a file, fsync'd. After the kills and a
final catch-up: every committed version was delivered; each process delivered the versions of
each key in commit order; and what a restarted process repeats is bounded by the batches the
killed one had in flight (at most one batch per partition).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import wait_until

from .test_change_stream_watcher import STREAMS, TABLES, now

ROOT = Path(__file__).resolve().parents[2]
KILLS = 4
MAX_BATCH_ROWS = 3
MAX_PARTITIONS = 4


def read_lines(path: Path) -> list[tuple[int, str, int, str]]:
    """Complete lines only: a kill in the middle of a write leaves a partial last line."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().split("\n")[:-1]:
        segment, ident, key, name = line.split(" ")
        out.append((int(segment), ident, int(key), name))
    return out


@pytest.mark.parametrize("ddl", list(STREAMS.values()), ids=list(STREAMS))
def test_killed_change_stream_watcher_resumes_without_loss(make_database, tmp_path, churn, ddl):
    """In both partition modes: splits and merges, or key ranges moving between long-lived partitions."""
    run(make_database, tmp_path, ddl)


def run(make_database, tmp_path, ddl=STREAMS["IMMUTABLE_KEY_RANGE"]):
    db = make_database(TABLES + [ddl])
    out = tmp_path / "changes.txt"
    rng = random.Random(4321)
    written: dict[int, list[str]] = defaultdict(list)
    done = threading.Event()
    start = now(db).isoformat()

    def writer() -> None:
        for n in range(200):
            key = rng.randrange(5)
            db.run_in_transaction(lambda t, k=key, v=f"v{n}": t.insert_or_update("Singers", ("SingerId", "FirstName"),
                                                                                   [(k, v)]))
            written[key].append(f"v{n}")
            time.sleep(rng.uniform(0.0, 0.05))
        done.set()

    def spawn(segment: int) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.Popen([sys.executable, "-m", "tests.watcher.stream_crash_child", PROJECT, INSTANCE,
                                 db.database_id, "S", str(out), str(segment), start, str(MAX_BATCH_ROWS)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for segment in range(KILLS):
            proc = spawn(segment)
            try:
                # Kill once this process delivers (or, the writers done, once it had time to start).
                wait_until(lambda seg=segment, p=proc: any(s == seg for s, *_ in read_lines(out)) or p.poll() is not None
                           or done.is_set(), 30, 0.01)
                time.sleep(rng.uniform(0.0, 0.5))
                assert proc.poll() is None, proc.stderr.read().decode()
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        thread.join(60)
        assert done.is_set()
        total = sum(map(len, written.values()))
        final = spawn(KILLS)
        try:
            wait_until(lambda: len({i for _, i, _, _ in read_lines(out)}) >= total or final.poll() is not None, 60, 0.05)
            time.sleep(0.5)
            assert final.poll() is None, final.stderr.read().decode()
        finally:
            final.send_signal(signal.SIGKILL)
            final.wait(10)
    finally:
        thread.join(60)
        # The server notices a killed reader at its next heartbeat (1 s); the database is dropped after the
        # test, which must not happen while the server still serves those reads (the embedded server can
        # crash when a database is dropped under an open change-stream read: reported, not fixed here).
        time.sleep(2.5)

    lines = read_lines(out)
    delivered: dict[int, set[str]] = defaultdict(set)
    for _, _, key, name in lines:
        delivered[key].add(name)
    assert {k: set(v) for k, v in written.items()} == dict(delivered), "versions missing after restarts"
    assert len({i for _, i, _, _ in lines}) == total
    seen: set[str] = set()
    repeats = []
    for segment in range(KILLS + 1):
        mine = [(ident, key, name) for s, ident, key, name in lines if s == segment]
        assert len({i for i, _, _ in mine}) == len(mine), f"process {segment} delivered a change twice"
        for key in written:
            names = [n for _, k, n in mine if k == key]
            order = [n for n in written[key] if n in set(names)]
            assert names == order, f"process {segment} delivered key {key} out of commit order"
        repeated = [i for i, _, _ in mine if i in seen]
        assert len(repeated) <= MAX_BATCH_ROWS * MAX_PARTITIONS, f"process {segment} repeated {len(repeated)} changes"
        repeats.append(len(repeated))
        seen.update(i for i, _, _ in mine)
    print(f"\nchange stream crash/resume: {total} versions, {KILLS} kills, repeats per restart {repeats[1:]}")
