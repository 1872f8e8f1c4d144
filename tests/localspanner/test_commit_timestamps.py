"""Commit timestamps: where they are allowed, what they equal, and that they only go up."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

SCHEMA = ["""CREATE TABLE Events (
    Id INT64 NOT NULL,
    Writer INT64,
    Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    Plain TIMESTAMP
) PRIMARY KEY (Id)"""]

REJECTED = (exceptions.FailedPrecondition, exceptions.InvalidArgument)


@pytest.fixture
def db(make_database):
    return make_database(SCHEMA)


def _rows(db, sql: str, **kw) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, **kw)]


def test_row_commit_timestamp_equals_the_commit_timestamp(db):
    with db.batch() as b:
        b.insert("Events", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP), (2, spanner.COMMIT_TIMESTAMP)])
    assert b.committed is not None
    assert _rows(db, "SELECT Ts FROM Events ORDER BY Id") == [[b.committed], [b.committed]]
    assert _rows(db, "SELECT COUNT(*) FROM Events WHERE Ts = @ts", params={"ts": b.committed},
                 param_types={"ts": param_types.TIMESTAMP}) == [[2]]


def test_run_in_transaction_commit_timestamp_matches_pending_commit_timestamp(db):
    seen = {}

    def work(txn):
        txn.execute_update("INSERT INTO Events (Id, Ts) VALUES (1, PENDING_COMMIT_TIMESTAMP())")
        txn.update("Events", ("Id", "Writer"), [(1, 7)])
        seen["txn"] = txn

    db.run_in_transaction(work)
    assert _rows(db, "SELECT Ts, Writer FROM Events") == [[seen["txn"].committed, 7]]


def test_commit_timestamp_refused_on_plain_timestamp_column(db):
    with pytest.raises(REJECTED, match="Plain"):
        with db.batch() as b:
            b.insert("Events", ("Id", "Plain"), [(1, spanner.COMMIT_TIMESTAMP)])
    with pytest.raises(REJECTED, match="Plain"):
        db.run_in_transaction(lambda t: t.execute_update(
            "INSERT INTO Events (Id, Plain) VALUES (1, PENDING_COMMIT_TIMESTAMP())"))
    assert _rows(db, "SELECT COUNT(*) FROM Events") == [[0]]


@pytest.mark.parametrize("sql", [
    "SELECT PENDING_COMMIT_TIMESTAMP()",
    "SELECT Id FROM Events WHERE Ts < PENDING_COMMIT_TIMESTAMP()",
])
def test_pending_commit_timestamp_only_as_a_written_value_in_queries(db, sql):
    with pytest.raises(exceptions.InvalidArgument):
        _rows(db, sql)


def test_pending_commit_timestamp_refused_in_dml_where_clause(db):
    with db.batch() as b:
        b.insert("Events", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    with pytest.raises(exceptions.InvalidArgument):
        db.run_in_transaction(lambda t: t.execute_update(
            "UPDATE Events SET Writer = 1 WHERE Ts < PENDING_COMMIT_TIMESTAMP()"))


def test_pending_commit_timestamp_in_update_set(db):
    with db.batch() as b:
        b.insert("Events", ("Id", "Ts"), [(1, "2020-01-01T00:00:00Z")])
    holder = {}

    def work(txn):
        holder["n"] = txn.execute_update("UPDATE Events SET Ts = PENDING_COMMIT_TIMESTAMP() WHERE Id = 1")
        holder["txn"] = txn

    db.run_in_transaction(work)
    assert holder["n"] == 1
    assert _rows(db, "SELECT Ts FROM Events") == [[holder["txn"].committed]]


def test_user_supplied_future_timestamp_is_failed_precondition(db):
    future = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with pytest.raises(exceptions.FailedPrecondition, match="Ts"):
        with db.batch() as b:
            b.insert("Events", ("Id", "Ts"), [(1, future)])
    with pytest.raises(exceptions.FailedPrecondition):
        db.run_in_transaction(lambda t: t.execute_update(
            "INSERT INTO Events (Id, Ts) VALUES (1, @ts)", params={"ts": future}, param_types={"ts": param_types.TIMESTAMP}))
    # A plain TIMESTAMP column takes any time.
    with db.batch() as b:
        b.insert("Events", ("Id", "Plain"), [(2, future)])


def test_user_supplied_past_timestamp_is_accepted(db):
    past = dt.datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=dt.UTC)
    with db.batch() as b:
        b.insert("Events", ("Id", "Ts"), [(1, past)])
    assert _rows(db, "SELECT Ts FROM Events") == [[past]]


def test_commit_timestamps_strictly_increase_across_sequential_commits(db):
    stamps = []
    for i in range(30):
        with db.batch() as b:
            b.insert("Events", ("Id", "Ts"), [(i, spanner.COMMIT_TIMESTAMP)])
        stamps.append(b.committed)
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
    assert [r[0] for r in _rows(db, "SELECT Ts FROM Events ORDER BY Id")] == stamps
    now = dt.datetime.now(dt.UTC)
    assert abs((now - stamps[-1]).total_seconds()) < 30


def test_commit_timestamps_unique_and_increasing_across_threads(db):
    threads, per_thread = 8, 15
    results: list[tuple[dt.datetime, int, int]] = []
    lock = threading.Lock()
    failures: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(per_thread):
                with db.batch() as b:
                    b.insert("Events", ("Id", "Writer", "Ts"), [(w * 1000 + i, w, spanner.COMMIT_TIMESTAMP)])
                with lock:
                    results.append((b.committed, w, i))
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    pool = [threading.Thread(target=writer, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    assert not failures, failures
    stamps = [r[0] for r in results]
    assert len(set(stamps)) == threads * per_thread  # unique
    for w in range(threads):  # per writer, in its own commit order
        own = [r[0] for r in sorted((r for r in results if r[1] == w), key=lambda r: r[2])]
        assert own == sorted(own)
    stored = {r[0]: r[1] for r in _rows(db, "SELECT Id, Ts FROM Events")}
    assert {w * 1000 + i: ts for ts, w, i in results} == stored


def test_read_write_transactions_get_increasing_timestamps(db):
    stamps = []
    for i in range(5):
        holder = {}

        def work(txn, i=i, holder=holder):
            txn.insert("Events", ("Id", "Ts"), [(i, spanner.COMMIT_TIMESTAMP)])
            holder["t"] = txn

        db.run_in_transaction(work)
        stamps.append(holder["t"].committed)
    assert stamps == sorted(stamps) and len(set(stamps)) == 5
