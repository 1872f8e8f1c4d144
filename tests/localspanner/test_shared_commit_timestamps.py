"""The shared-commit-timestamps switch, through the official client: non-conflicting commits
may share a commit timestamp (as on Spanner); a row's commits and anything after a read never do."""

from __future__ import annotations

import subprocess
import sys

import pytest
from google.cloud import spanner

from tests.localspanner.test_cli import CLIENT_SCRIPT, _env, _free_port, _host_line, _start, _stop

SCHEMA = ["CREATE TABLE Events (Id INT64 NOT NULL, V INT64, "
          "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"]


@pytest.fixture
def db(make_database):
    return make_database(SCHEMA)


def _write(db, *ids: int) -> object:
    with db.batch() as b:
        b.insert_or_update("Events", ("Id", "V", "Ts"), [(i, i, spanner.COMMIT_TIMESTAMP) for i in ids])
    return b.committed


def _stored(db) -> dict[int, object]:
    with db.snapshot() as snap:
        return {r[0]: r[1] for r in snap.execute_sql("SELECT Id, Ts FROM Events")}


def test_non_conflicting_commits_share_a_timestamp(db, shared_commit_timestamps):
    first, second, third = _write(db, 1, 2), _write(db, 3), _write(db, 4, 5)
    assert first == second == third
    assert set(_stored(db).values()) == {first}


def test_commits_writing_the_same_row_never_share(db, shared_commit_timestamps):
    stamps = [_write(db, 1), _write(db, 2), _write(db, 1), _write(db, 3), _write(db, 3, 4)]
    # Row 1 again: a new timestamp, which row 3 then shares; row 3 again: a new one.
    assert stamps[0] == stamps[1] < stamps[2] == stamps[3] < stamps[4]
    assert _stored(db) == {1: stamps[2], 2: stamps[0], 3: stamps[4], 4: stamps[4]}


def test_no_commit_after_a_strong_read_gets_its_timestamp_or_an_earlier_one(db, shared_commit_timestamps):
    before = _write(db, 1)
    with db.snapshot() as snap:
        list(snap.execute_sql("SELECT 1"))
        read_at = snap._transaction_read_timestamp
    after = _write(db, 2)
    assert before < read_at < after
    assert _write(db, 3) == after  # sharing resumes with the next commit


def test_a_transaction_that_read_never_shares(db, shared_commit_timestamps):
    blind = _write(db, 1)

    def read_then_write(txn):
        list(txn.execute_sql("SELECT COUNT(*) FROM Events"))
        txn.insert("Events", ("Id", "V", "Ts"), [(2, 0, spanner.COMMIT_TIMESTAMP)])

    db.run_in_transaction(read_then_write)
    assert _stored(db)[2] > blind


def test_off_every_commit_timestamp_is_unique(db, local_server):
    assert local_server.clock.share_timestamps is False
    assert _write(db, 1) < _write(db, 2) < _write(db, 3)


SHARED_SCRIPT = CLIENT_SCRIPT + """
stamps = []
for i in (10, 11):
    with db.batch() as b:
        b.insert("T", ("Id", "Ts"), [(i, spanner.COMMIT_TIMESTAMP)])
    stamps.append(b.committed)
print("shared", stamps[0] == stamps[1])
"""


def test_the_command_line_switch():
    port = _free_port()
    proc = _start(port, "--shared-commit-timestamps")
    try:
        host = _host_line(proc)
        client = subprocess.run([sys.executable, "-c", SHARED_SCRIPT], capture_output=True, text=True,
                                env=_env(SPANNER_EMULATOR_HOST=host), timeout=120)
        assert client.returncode == 0, client.stderr[-2000:]
        assert "shared True" in client.stdout
    finally:
        assert _stop(proc) == 0
