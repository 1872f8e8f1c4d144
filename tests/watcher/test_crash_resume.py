"""Crash and resume: SIGKILL the watching process at random points during a burst of writes.

A real subprocess (tests/watcher/crash_child.py) watches with the Spanner checkpoint table
and appends every delivered change to a file, fsync'd. We kill it several times while
writers insert rows in transactions larger than the poll LIMIT (so kills land inside
groups of rows sharing a commit timestamp), restart it each time, and finally let it catch
up. Then: every row was delivered, each process delivered in commit order, and the only
duplicates are rows a restarted process repeated from the one poll the killed process was
in the middle of (at most LIMIT per kill). Run with unique and with shared commit timestamps.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import spanner

from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import wait_until

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 20
KILLS = 4
TRANSACTIONS = 90
DDL = "CREATE TABLE Burst (K INT64 NOT NULL, Ts TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (K)"


def read_lines(path: Path) -> list[tuple[int, int, DatetimeWithNanoseconds]]:
    """Complete lines only: a kill in the middle of a write leaves a partial last line."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().split("\n")[:-1]:
        segment, key, ts = line.split(" ")
        out.append((int(segment), int(key), DatetimeWithNanoseconds.from_rfc3339(ts)))
    return out


def test_killed_watcher_resumes_without_loss(make_database, tmp_path, commit_timestamps):
    db = make_database([DDL])
    out = tmp_path / "changes.txt"
    rng = random.Random(1234)
    written: list[int] = []
    commits: list[object] = []
    done = threading.Event()

    def writer() -> None:
        key = 0
        for _ in range(TRANSACTIONS):
            n = rng.randint(1, 2 * LIMIT)  # often larger than LIMIT: the poll cuts the group
            with db.batch() as batch:
                batch.insert("Burst", ("K", "Ts"), [(k, spanner.COMMIT_TIMESTAMP) for k in range(key, key + n)])
            written.extend(range(key, key + n))
            commits.append(batch.committed)
            key += n
            time.sleep(rng.uniform(0.0, 0.06))
        done.set()

    def spawn(segment: int) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.Popen([sys.executable, "-m", "tests.watcher.crash_child", PROJECT, INSTANCE, db.database_id,
                                 "Burst", str(out), str(segment), str(LIMIT)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for segment in range(KILLS):
            proc = spawn(segment)
            try:
                # Kill at a random moment once this process is delivering (or soon after it started).
                wait_until(lambda seg=segment, p=proc: any(s == seg for s, _, _ in read_lines(out)) or p.poll() is not None, 20, 0.01)
                time.sleep(rng.uniform(0.0, 0.4))
                assert proc.poll() is None, proc.stderr.read().decode()
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        thread.join(60)
        assert done.is_set()
        final = spawn(KILLS)
        try:
            wait_until(lambda: {k for _, k, _ in read_lines(out)} >= set(written) or final.poll() is not None, 30, 0.02)
            assert final.poll() is None, final.stderr.read().decode()
        finally:
            final.send_signal(signal.SIGKILL)
            final.wait(10)
    finally:
        thread.join(60)

    lines = read_lines(out)
    with db.snapshot() as snap:
        committed = {k: ts for k, ts in snap.execute_sql("SELECT K, Ts FROM Burst")}
    assert set(committed) == set(written)
    assert {k for _, k, _ in lines} == set(written), "rows missing after restarts"
    assert all(committed[k] == ts for _, k, ts in lines)
    seen: set[int] = set()
    duplicates = []
    for segment in range(KILLS + 1):
        mine = [(ts, k) for s, k, ts in lines if s == segment]
        assert mine == sorted(mine), f"process {segment} did not deliver in commit order"
        assert len({k for _, k in mine}) == len(mine), f"process {segment} delivered a row twice"
        repeated = [k for _, k in mine if k in seen]
        assert len(repeated) <= LIMIT, f"process {segment} repeated {len(repeated)} rows, more than one poll"
        # What a restarted process repeats is the start of what it delivers.
        assert [k for _, k in mine[:len(repeated)]] == repeated
        duplicates.append(len(repeated))
        seen.update(k for _, k in mine)
    if commit_timestamps == "shared":  # the run did exercise transactions sharing a commit timestamp
        assert len(set(commits)) < len(commits)
    print(f"\ncrash/resume: {len(written)} rows in {len(commits)} transactions at {len(set(commits))} commit "
          f"timestamps, {KILLS} kills, duplicates per restart {duplicates[1:]}")
