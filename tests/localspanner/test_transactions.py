"""Transactions through the official client: serializability, snapshots, stale reads, rollback, commit, BatchWrite."""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types
from google.rpc import code_pb2

DDL = [
    "CREATE TABLE Kv (K STRING(100) NOT NULL, V INT64) PRIMARY KEY (K)",
    "CREATE TABLE Log (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
]


@pytest.fixture
def db(make_database):
    return make_database(DDL)


def _get(db, key, **snapshot_options):
    with db.snapshot(**snapshot_options) as snap:
        rows = list(snap.read("Kv", ("V",), spanner.KeySet(keys=[[key]])))
    return rows[0][0] if rows else None


def _put(db, key, value):
    with db.batch() as b:
        b.insert_or_update("Kv", ("K", "V"), [(key, value)])
    return b.committed


THREADS = 8
INCREMENTS = 6


@pytest.mark.parametrize("via", ["read", "sql"])
def test_concurrent_read_modify_write_counters_are_exact(db, via):
    _put(db, "counter", 0)
    calls = []
    lock = threading.Lock()

    def increment(txn):
        with lock:
            calls.append(1)
        if via == "read":
            (row,) = list(txn.read("Kv", ("V",), spanner.KeySet(keys=[["counter"]])))
        else:
            (row,) = list(txn.execute_sql("SELECT V FROM Kv WHERE K = @k", params={"k": "counter"},
                                          param_types={"k": param_types.STRING}))
        txn.update("Kv", ("K", "V"), [("counter", row[0] + 1)])

    def worker(_):
        for _ in range(INCREMENTS):
            db.run_in_transaction(increment)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    assert _get(db, "counter") == THREADS * INCREMENTS
    assert len(calls) >= THREADS * INCREMENTS  # retries (ABORTED) re-run the function


def test_concurrent_dml_counters_are_exact(db):
    _put(db, "dml", 0)

    def worker(_):
        for _ in range(INCREMENTS):
            db.run_in_transaction(lambda txn: txn.execute_update("UPDATE Kv SET V = V + 1 WHERE K = 'dml'"))

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    assert _get(db, "dml") == THREADS * INCREMENTS


def test_multi_use_snapshot_sees_a_consistent_view_while_writes_happen(db):
    with db.batch() as b:
        b.insert("Kv", ("K", "V"), [(f"k{i}", 10) for i in range(10)])
    with db.snapshot(multi_use=True) as snap:
        first = list(snap.execute_sql("SELECT SUM(V), COUNT(*) FROM Kv"))
        # Transfers keep the sum constant; inserts add rows. The snapshot must see neither.
        for i in range(5):
            with db.batch() as b:
                b.update("Kv", ("K", "V"), [(f"k{i}", 5), (f"k{i + 5}", 15)])
                b.insert("Kv", ("K", "V"), [(f"new{i}", 1000)])
        second = list(snap.execute_sql("SELECT SUM(V), COUNT(*) FROM Kv"))
        read = list(snap.read("Kv", ("K", "V"), spanner.KeySet(keys=[["k0"], ["new0"]])))
        read_ts = snap._transaction_read_timestamp
    assert first == second == [[100, 10]]
    assert read == [["k0", 10]]
    assert isinstance(read_ts, dt.datetime)
    # A fresh strong read sees all the writes.
    with db.snapshot() as fresh:
        assert list(fresh.execute_sql("SELECT SUM(V), COUNT(*) FROM Kv")) == [[5100, 15]]


def test_snapshot_read_timestamp_is_reported_and_orders_with_commits(db):
    committed = _put(db, "a", 1)
    with db.snapshot(multi_use=True) as snap:
        assert list(snap.execute_sql("SELECT V FROM Kv")) == [[1]]
        read_ts = snap._transaction_read_timestamp
    assert read_ts >= committed
    later = _put(db, "a", 2)
    assert later > read_ts  # external consistency: a later commit gets a later timestamp


def test_stale_read_never_returns_newer_data(db):
    t1 = _put(db, "x", 1)
    _put(db, "x", 2)
    for options in ({"read_timestamp": t1}, {"exact_staleness": dt.timedelta(microseconds=1)}):
        try:
            value = _get(db, "x", **options)
        except exceptions.FailedPrecondition:
            continue  # refusing to serve an old version is allowed
        if "read_timestamp" in options:
            assert value == 1  # never v2 for a time before v2 was written
        else:
            assert value in (1, 2)
    # Before the first write nothing existed: the row must not appear (or the read is refused).
    try:
        assert _get(db, "x", read_timestamp=t1 - dt.timedelta(microseconds=1)) is None
    except exceptions.FailedPrecondition:
        pass


def test_stale_read_with_query_never_returns_newer_data(db):
    t1 = _put(db, "q", 1)
    _put(db, "q", 2)
    try:
        with db.snapshot(read_timestamp=t1) as snap:
            rows = list(snap.execute_sql("SELECT V FROM Kv WHERE K = 'q'"))
    except exceptions.FailedPrecondition as exc:
        assert "Cannot read at" in exc.message or "timestamp" in exc.message.lower()
    else:
        assert rows == [[1]]


def test_read_at_latest_commit_timestamp_sees_that_commit(db):
    _put(db, "y", 1)
    t2 = _put(db, "y", 2)
    assert _get(db, "y", read_timestamp=t2) == 2
    assert _get(db, "y", max_staleness=dt.timedelta(seconds=10)) in (1, 2)  # bounded staleness may lag
    assert _get(db, "y", min_read_timestamp=t2) == 2


def test_rollback_discards_mutations_and_dml(db):
    _put(db, "r", 1)
    session = db.session()
    session.create()
    try:
        txn = session.transaction()
        txn.begin()
        txn.execute_update("UPDATE Kv SET V = 99 WHERE K = 'r'")
        txn.insert("Kv", ("K", "V"), [("gone", 1)])
        txn.rollback()
    finally:
        session.delete()
    assert _get(db, "r") == 1 and _get(db, "gone") is None


def test_exception_in_run_in_transaction_rolls_back(db):
    _put(db, "e", 1)

    class Boom(Exception):
        pass

    def work(txn):
        txn.execute_update("UPDATE Kv SET V = 50 WHERE K = 'e'")
        txn.insert("Kv", ("K", "V"), [("e2", 1)])
        raise Boom

    with pytest.raises(Boom):
        db.run_in_transaction(work)
    assert _get(db, "e") == 1 and _get(db, "e2") is None
    _put(db, "e", 3)  # the database is not left locked
    assert _get(db, "e") == 3


def test_commit_returns_increasing_commit_timestamps(db):
    stamps = []
    for i in range(5):
        with db.batch() as b:
            b.insert("Log", ("Id", "Ts"), [(i, spanner.COMMIT_TIMESTAMP)])
        stamps.append(b.committed)
    holder = {}

    def work(txn):
        holder["txn"] = txn
        txn.insert("Log", ("Id", "Ts"), [(99, spanner.COMMIT_TIMESTAMP)])

    db.run_in_transaction(work)
    stamps.append(holder["txn"].committed)
    assert all(isinstance(s, dt.datetime) for s in stamps)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    now = dt.datetime.now(dt.UTC)
    assert abs((now - stamps[-1]).total_seconds()) < 60
    with db.snapshot() as snap:
        stored = [r[0] for r in snap.execute_sql("SELECT Ts FROM Log ORDER BY Id")]
    assert stored == stamps


def test_commit_timestamps_are_unique_under_concurrency(db):
    def commit(i):
        with db.batch() as b:
            b.insert("Log", ("Id", "Ts"), [(i, spanner.COMMIT_TIMESTAMP)])
        return b.committed

    with ThreadPoolExecutor(8) as pool:
        stamps = list(pool.map(commit, range(40)))
    assert len(set(stamps)) == 40


def test_batch_write_reports_per_group_results(db):
    _put(db, "taken", 0)
    with db.mutation_groups() as groups:
        g0 = groups.group()
        g0.insert("Kv", ("K", "V"), [("bw1", 1), ("bw2", 2)])
        g1 = groups.group()
        g1.insert("Kv", ("K", "V"), [("taken", 1)])  # fails: the key exists
        g2 = groups.group()
        g2.insert_or_update("Kv", ("K", "V"), [("bw3", 3)])
        responses = list(groups.batch_write())
    by_group = {}
    for response in responses:
        for index in response.indexes:
            by_group[index] = response
    assert sorted(by_group) == [0, 1, 2]
    assert by_group[0].status.code == code_pb2.OK and by_group[2].status.code == code_pb2.OK
    assert by_group[1].status.code == code_pb2.ALREADY_EXISTS
    assert by_group[0].commit_timestamp is not None
    assert _get(db, "bw1") == 1 and _get(db, "bw2") == 2 and _get(db, "bw3") == 3
    assert _get(db, "taken") == 0
