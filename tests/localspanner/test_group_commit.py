"""Group commit under load, through the official client: 8 concurrent writers and pollers.

Commits that queue for the database's writer are applied together, each with its own
commit timestamp and its own failure. What a user relies on must hold as before: a strong
read at R sees exactly the commits with timestamps below R; a commit that fails leaves
nothing behind and fails alone; injected faults hit single commits; an acknowledged
commit survives a killed server.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from google.api_core import exceptions
from google.cloud import spanner

from tests.localspanner.test_cli import _env, _free_port, _host_line, _start, _stop

SCHEMA = ["CREATE TABLE Events (Writer INT64 NOT NULL, Seq INT64 NOT NULL, Payload STRING(100), "
          "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Writer, Seq)"]
COLUMNS = ("Writer", "Seq", "Payload", "Ts")
WRITERS = 8
COMMITS_PER_WRITER = 25
ROWS_PER_COMMIT = 5
POLLERS = 3


@pytest.fixture
def db(make_database):
    return make_database(SCHEMA)


def _rows(writer: int, commit: int) -> list[tuple]:
    return [(writer, commit * ROWS_PER_COMMIT + r, f"w{writer}c{commit}", spanner.COMMIT_TIMESTAMP)
            for r in range(ROWS_PER_COMMIT)]


def _run_threads(targets: list) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads)


def _bad_commit(writer: int, commit: int) -> str | None:
    """Every 5th commit fails at apply (a duplicate key), every 7th before it (a value of the wrong type)."""
    if commit % 5 == 4:
        return "duplicate"
    if commit % 7 == 6:
        return "bad value"
    return None


def test_every_commit_is_visible_exactly_from_its_timestamp(db, commit_timestamps):
    acknowledged: dict[tuple[int, int], object] = {}
    failed: dict[tuple[int, int], Exception] = {}
    polls: list[tuple[object, set[tuple[int, int]]]] = []
    stop = threading.Event()
    problems: list[str] = []
    shared = commit_timestamps == "shared"

    def writer(w: int) -> None:
        previous = None
        for c in range(COMMITS_PER_WRITER):
            rows = _rows(w, c)
            kind = _bad_commit(w, c)
            try:
                with db.batch() as b:
                    if kind == "duplicate":  # its first row repeats a key of this commit: ALREADY_EXISTS
                        b.insert("Events", COLUMNS, rows + [rows[0]])
                    elif kind == "bad value":
                        b.insert("Events", COLUMNS, rows[:-1] + [(w, rows[-1][1], "x", "not a timestamp")])
                    else:
                        b.insert("Events", COLUMNS, rows)
            except exceptions.GoogleAPICallError as exc:
                failed[(w, c)] = exc
                continue
            # Shared timestamps (the switch): a later commit on other rows may share the previous one's.
            if previous is not None and not (b.committed > previous or (shared and b.committed == previous)):
                problems.append(f"writer {w}: commit {c} at {b.committed} not after {previous}")
            previous = b.committed
            acknowledged[(w, c)] = b.committed

    def poller() -> None:
        while not stop.is_set():
            with db.snapshot() as snap:
                seen = {(r[0], r[1]) for r in snap.execute_sql("SELECT Writer, Seq FROM Events")}
                polls.append((snap._transaction_read_timestamp, seen))

    pollers = [threading.Thread(target=poller) for _ in range(POLLERS)]
    for p in pollers:
        p.start()
    try:
        _run_threads([lambda w=w: writer(w) for w in range(WRITERS)])
    finally:
        stop.set()
        for p in pollers:
            p.join(60)

    assert problems == []
    expected_failures = {(w, c) for w in range(WRITERS) for c in range(COMMITS_PER_WRITER) if _bad_commit(w, c)}
    assert set(failed) == expected_failures  # each failed commit failed on its own, none merged into another
    assert all(isinstance(failed[k], exceptions.AlreadyExists) for k in failed if _bad_commit(*k) == "duplicate")
    assert all(isinstance(failed[k], exceptions.FailedPrecondition) for k in failed if _bad_commit(*k) == "bad value")
    assert len(acknowledged) == WRITERS * COMMITS_PER_WRITER - len(expected_failures)

    with db.snapshot() as snap:
        final = {(r[0], r[1]): r[2] for r in snap.execute_sql("SELECT Writer, Seq, Ts FROM Events")}
    # Every acknowledged commit is there, with its timestamp in every row; no row of a failed commit is.
    want = {(w, c * ROWS_PER_COMMIT + r): ts for (w, c), ts in acknowledged.items() for r in range(ROWS_PER_COMMIT)}
    assert final == want
    assert len(polls) > 10
    for read_ts, seen in polls:
        # A read at R sees every commit below R and nothing at or after it: no commit is seen early or late.
        assert seen == {key for key, ts in final.items() if ts < read_ts}, read_ts
    if commit_timestamps == "unique":
        assert len(set(acknowledged.values())) == len(acknowledged)


def test_a_failing_commit_fails_alone_among_concurrent_commits_on_other_rows(db):
    with db.batch() as b:
        b.insert("Events", COLUMNS, [(99, 0, "taken", spanner.COMMIT_TIMESTAMP)])
    outcomes: dict[int, str] = {}

    def commit(i: int) -> None:
        try:
            with db.batch() as b:
                b.insert("Events", COLUMNS, [(i, 0, "new", spanner.COMMIT_TIMESTAMP)])
                if i % 2:
                    b.insert("Events", COLUMNS, [(99, 0, "again", spanner.COMMIT_TIMESTAMP)])
            outcomes[i] = "ok"
        except exceptions.AlreadyExists as exc:
            outcomes[i] = "already exists" if "already exists" in str(exc) else str(exc)

    for _ in range(4):
        outcomes.clear()
        _run_threads([lambda i=i: commit(i) for i in range(16)])
        assert outcomes == {i: "already exists" if i % 2 else "ok" for i in range(16)}
        with db.snapshot() as snap:
            writers = sorted(r[0] for r in snap.execute_sql("SELECT Writer FROM Events WHERE Writer < 99"))
        assert writers == list(range(0, 16, 2))
        with db.batch() as b:
            b.delete("Events", spanner.KeySet(all_=True))
            b.insert("Events", COLUMNS, [(99, 0, "taken", spanner.COMMIT_TIMESTAMP)])


INTERLEAVED = ["CREATE TABLE Parents (P INT64 NOT NULL) PRIMARY KEY (P)",
               "CREATE TABLE Kids (P INT64 NOT NULL, K INT64 NOT NULL) PRIMARY KEY (P, K), INTERLEAVE IN PARENT Parents"]


def test_a_commit_failing_only_at_commit_time_fails_alone(make_database):
    """A child row without its parent is found when the storage commits (a deferred check): in a group,
    only that commit fails, with the error it gets when it commits alone."""
    db = make_database(INTERLEAVED)

    def orphan(i: int) -> None:
        with db.batch() as b:
            b.insert("Kids", ("P", "K"), [(10_000 + i, 1)])

    with pytest.raises(exceptions.GoogleAPICallError) as alone:
        orphan(0)
    outcomes: dict[int, object] = {}

    def commit(i: int) -> None:
        try:
            if i % 2:
                orphan(i)
            else:
                with db.batch() as b:
                    b.insert("Parents", ("P",), [(i,)])
                    b.insert("Kids", ("P", "K"), [(i, 1)])
            outcomes[i] = "ok"
        except exceptions.GoogleAPICallError as exc:
            outcomes[i] = type(exc)

    _run_threads([lambda i=i: commit(i) for i in range(16)])
    assert outcomes == {i: type(alone.value) if i % 2 else "ok" for i in range(16)}
    with db.snapshot() as snap:
        kids = sorted(r[0] for r in snap.execute_sql("SELECT P FROM Kids"))
    assert kids == list(range(0, 16, 2))


DEFERRED = [*INTERLEAVED,  # Kids: interleaved with ON DELETE NO ACTION
            "CREATE TABLE Refs (R INT64 NOT NULL, P INT64, CONSTRAINT FK_Refs_Parents FOREIGN KEY (P) REFERENCES Parents (P)) "
            "PRIMARY KEY (R)"]
ORPHANS = ("SELECT (SELECT COUNT(*) FROM Kids AS k WHERE k.P NOT IN (SELECT P FROM Parents)) + "
           "(SELECT COUNT(*) FROM Refs AS r WHERE r.P NOT IN (SELECT P FROM Parents))")


def _queued_behind_a_transaction(db, first, second) -> tuple[object, object]:
    """Start the single-use commits ``first`` then ``second`` while a read/write transaction holds the
    database's writer: both queue, and are applied as one group once it ends. Their outcomes: a commit
    timestamp or an error."""
    outcomes: dict[str, object] = {}
    threads: list[threading.Thread] = []

    def run(name: str, write) -> None:
        try:
            with db.batch() as b:
                write(b)
            outcomes[name] = b.committed
        except exceptions.GoogleAPICallError as exc:
            outcomes[name] = exc

    def hold(txn) -> None:
        list(txn.execute_sql("SELECT 1 FROM Parents"))  # the transaction takes the writer
        for name, write in (("first", first), ("second", second)):
            if name not in {t.name for t in threads}:
                threads.append(threading.Thread(target=run, args=(name, write), name=name))
                threads[-1].start()
                time.sleep(0.4)  # queued in this order

    db.run_in_transaction(hold)
    for t in threads:
        t.join(60)
    return outcomes["first"], outcomes["second"]


@pytest.mark.parametrize(("first", "second", "error"), [
    pytest.param(lambda b: b.insert("Kids", ("P", "K"), [(7, 1)]), lambda b: b.insert("Parents", ("P",), [(7,)]),
                 exceptions.NotFound, id="a child, then its parent"),
    pytest.param(lambda b: b.insert("Refs", ("R", "P"), [(1, 7)]), lambda b: b.insert("Parents", ("P",), [(7,)]),
                 exceptions.FailedPrecondition, id="a referencing row, then the referenced row"),
    pytest.param(lambda b: b.delete("Parents", spanner.KeySet(keys=[[8]])), lambda b: b.delete("Kids", spanner.KeySet(keys=[[8, 1]])),
                 exceptions.FailedPrecondition, id="a parent with NO ACTION children, then its children deleted"),
])
def test_a_later_commit_of_the_same_group_does_not_mend_a_broken_deferred_constraint(make_database, first, second, error):
    """Interleaving and foreign keys are deferred SQLite constraints, checked at COMMIT: a commit that
    breaks one must fail even when a commit applied after it in the same group would mend it. Accepted,
    it had a timestamp at which the database was inconsistent, and reads at that timestamp saw an
    orphan (test_versions' concurrent writers once saw an album of a singer who did not exist)."""
    db = make_database(DEFERRED)
    with db.batch() as b:
        b.insert("Parents", ("P",), [(8,)])
        b.insert("Kids", ("P", "K"), [(8, 1)])
    first_outcome, second_outcome = _queued_behind_a_transaction(db, first, second)
    assert not isinstance(second_outcome, Exception), second_outcome
    if isinstance(first_outcome, Exception):
        assert isinstance(first_outcome, error), first_outcome
    else:  # only as it would commit alone after the second commit (the two were not queued in the order started)
        assert first_outcome > second_outcome
    for at in (second_outcome - dt.timedelta(microseconds=1), second_outcome):
        with db.snapshot(read_timestamp=at) as snap:
            assert list(snap.execute_sql(ORPHANS)) == [[0]], at


@pytest.mark.parametrize("code", ["ABORTED", "UNAVAILABLE"])
def test_injected_faults_hit_single_commits(db, local_server, code):
    injected = 6
    local_server.faults.inject("Commit", code, count=injected)
    done: dict[tuple[int, int], bool] = {}

    def writer(w: int) -> None:
        for c in range(10):
            def work(txn, w=w, c=c):
                txn.insert("Events", COLUMNS, _rows(w, c))
            try:
                db.run_in_transaction(work)
                done[(w, c)] = True
            except exceptions.GoogleAPICallError:
                done[(w, c)] = False

    _run_threads([lambda w=w: writer(w) for w in range(WRITERS)])
    with db.snapshot() as snap:
        stored = [(r[0], r[1]) for r in snap.execute_sql("SELECT Writer, Seq FROM Events")]
    present = {(w, seq // ROWS_PER_COMMIT) for w, seq in stored}
    failed = {k for k, ok in done.items() if not ok}
    assert len(failed) <= injected  # a fault fails the one commit it hit, or the client retried it
    assert present == {k for k, ok in done.items() if ok}  # a commit that failed left nothing, one that returned is there
    assert len(stored) == len(present) * ROWS_PER_COMMIT  # and whole
    if code == "ABORTED":
        assert failed == set()  # run_in_transaction retries ABORTED: every commit landed exactly once


WRITER_SCRIPT = textwrap.dedent("""
    import sys, threading
    from google.cloud import spanner
    client = spanner.Client(project="gc-project")
    inst = client.instance("gc-inst", configuration_name="projects/gc-project/instanceConfigs/emulator-config", node_count=1)
    inst.create().result(30)
    db = inst.database("gc-db", ddl_statements=[
        "CREATE TABLE T (W INT64 NOT NULL, C INT64 NOT NULL, R INT64 NOT NULL, P STRING(MAX)) PRIMARY KEY (W, C, R)"])
    db.create().result(30)
    print("ready", flush=True)
    lock = threading.Lock()
    def writer(w):
        c = 0
        while True:
            with db.batch() as b:
                b.insert("T", ("W", "C", "R", "P"), [(w, c, r, "x" * 200) for r in range(20)])
            with lock:
                print("ack", w, c, flush=True)
            c += 1
    for w in range(8):
        threading.Thread(target=writer, args=(w,), daemon=True).start()
    threading.Event().wait()
""")

READER_SCRIPT = textwrap.dedent("""
    from google.cloud import spanner
    db = spanner.Client(project="gc-project").instance("gc-inst").database("gc-db")
    with db.snapshot() as snap:
        for w, c, n in snap.execute_sql("SELECT W, C, COUNT(*) FROM T GROUP BY W, C"):
            print("row", w, c, n)
""")


def test_a_killed_server_keeps_every_acknowledged_commit(tmp_path):
    data_dir = str(tmp_path / "data")
    port = _free_port()
    server = _start(port, "--data-dir", data_dir)
    client = None
    acks: list[str] = []
    try:
        host = _host_line(server)
        client = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=_env(SPANNER_EMULATOR_HOST=host))
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "ready", client.stderr.read() if client.stderr else ""
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            line = client.stdout.readline()
            if line.startswith("ack"):
                acks.append(line)
        os.kill(server.pid, signal.SIGKILL)  # no shutdown: what was acknowledged must already be on disk
        server.wait(20)
        client.kill()
        rest, _ = client.communicate(timeout=20)
        acks.extend(line for line in rest.splitlines() if line.startswith("ack"))
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        if server.poll() is None:
            server.kill()
    acknowledged = {tuple(int(x) for x in line.split()[1:3]) for line in acks}
    assert len(acknowledged) > 20

    server = _start(port, "--data-dir", data_dir)
    try:
        host = _host_line(server)
        read = subprocess.run([sys.executable, "-c", READER_SCRIPT], capture_output=True, text=True,
                              env=_env(SPANNER_EMULATOR_HOST=host), timeout=120)
        assert read.returncode == 0, read.stderr[-2000:]
    finally:
        assert _stop(server) == 0
    stored = {(int(w), int(c)): int(n) for _, w, c, n in (line.split() for line in read.stdout.splitlines())}
    assert acknowledged <= set(stored)  # every acknowledged commit survived the kill
    assert set(stored.values()) == {20}  # and every commit there is whole
