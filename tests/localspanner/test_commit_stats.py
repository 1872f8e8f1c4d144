"""Commit statistics and max_commit_delay through the official client.

Spanner's count: each column of each row an insert or update writes (key columns
included), one per deleted key or key range; DML counts the same way. Index entries,
which Spanner adds on top, are left out here, so the tables below have no index.
"""

from __future__ import annotations

import datetime
import logging

import pytest
from google.api_core import exceptions
from google.cloud import spanner

from tests.conftest import emulator_lacks

COLS = ("Id", "Name", "Score")
DDL = ["CREATE TABLE T (Id INT64 NOT NULL, Name STRING(MAX), Score INT64) PRIMARY KEY (Id)"]
#: The databases' logger: the client logs the commit stats of a batch or transaction to it.
LOGGER = logging.getLogger("tests.commit_stats")


@pytest.fixture
def tdb(make_database):
    db = make_database(DDL, logger=LOGGER)
    with db.batch() as b:
        b.insert("T", COLS, [(i, f"n{i}", i) for i in range(1, 11)])
    return db


class _Stats(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.counts: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        stats = getattr(record, "commit_stats", None)
        if stats is not None:
            self.counts.append(stats.mutation_count)


def _logged_count(db, run) -> int:
    """The mutation count the client logs (its log_commit_stats asks Commit for commit stats) for ``run()``."""
    handler = _Stats()
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    db.log_commit_stats = True
    try:
        run()
    finally:
        db.log_commit_stats = False
        LOGGER.removeHandler(handler)
    assert len(handler.counts) == 1
    return handler.counts[0]


def _batch_count(db, build, **batch_kwargs) -> int:
    def run():
        with db.batch(**batch_kwargs) as batch:
            build(batch)
    return _logged_count(db, run)


def _transaction_count(db, work) -> int:
    return _logged_count(db, lambda: db.run_in_transaction(work))


def test_insert_counts_every_column_of_every_row(tdb):
    assert _batch_count(tdb, lambda b: b.insert("T", COLS, [(11, "a", 1), (12, "b", 2)])) == 6


def test_update_counts_the_columns_it_names_key_included(tdb):
    assert _batch_count(tdb, lambda b: b.update("T", ("Id", "Score"), [(1, 5), (2, 6), (3, 7)])) == 6
    assert _batch_count(tdb, lambda b: b.insert_or_update("T", ("Id", "Name"), [(20, "x")])) == 2
    assert _batch_count(tdb, lambda b: b.replace("T", COLS, [(1, "r", 0)])) == 3


def test_delete_counts_one_per_key_and_per_range(tdb):
    keys = spanner.KeySet(keys=[[1], [2]], ranges=[spanner.KeyRange(start_closed=[5], end_closed=[8])])
    assert _batch_count(tdb, lambda b: b.delete("T", keys)) == 3
    with tdb.snapshot() as snap:
        assert [r[0] for r in snap.read("T", ("Id",), spanner.KeySet(all_=True))] == [3, 4, 9, 10]


def test_delete_of_all_rows_counts_one(tdb):
    assert _batch_count(tdb, lambda b: b.delete("T", spanner.KeySet(all_=True))) == 1


def test_mutations_of_several_kinds_add_up(tdb):
    def build(b):
        b.insert("T", COLS, [(30, "a", 1)])                 # 3
        b.update("T", ("Id", "Name"), [(1, "u")])           # 2
        b.delete("T", spanner.KeySet(keys=[[2], [3]]))      # 2
    assert _batch_count(tdb, build) == 7


def test_read_write_transaction_reports_its_mutations(tdb):
    def work(txn):
        assert list(txn.read("T", ("Id",), spanner.KeySet(keys=[[1]]))) == [[1]]
        txn.insert("T", COLS, [(40, "a", 1), (41, "b", 2)])
    assert _transaction_count(tdb, work) == 6


@emulator_lacks("commit statistics of DML")
def test_dml_counts_as_its_mutations_would(tdb):
    def work(txn):
        txn.execute_update("INSERT INTO T (Id, Name) VALUES (50, 'a'), (51, 'b')")   # 2 rows x 2 columns
        txn.execute_update("UPDATE T SET Name = 'u', Score = 0 WHERE Id <= 3")      # 3 rows x (key + 2)
        txn.execute_update("DELETE FROM T WHERE Id IN (9, 10)")                     # 2 rows x 1
        txn.insert("T", COLS, [(60, "m", 1)])                                       # 3
    assert _transaction_count(tdb, work) == 4 + 9 + 2 + 3


@emulator_lacks("commit statistics of DML")
def test_dml_that_fails_adds_nothing(tdb):
    def work(txn):
        txn.execute_update("UPDATE T SET Score = 1 WHERE Id = 1")                    # 2
        with pytest.raises(exceptions.AlreadyExists):
            txn.execute_update("INSERT INTO T (Id) VALUES (2)")
    assert _transaction_count(tdb, work) == 2


@pytest.mark.parametrize("delay", [datetime.timedelta(0), datetime.timedelta(milliseconds=100),
                                   datetime.timedelta(milliseconds=500)])
def test_max_commit_delay_in_range_is_accepted(tdb, delay):
    assert _batch_count(tdb, lambda b: b.insert("T", COLS, [(80, "a", 1)]), max_commit_delay=delay) == 3
    with tdb.snapshot() as snap:
        assert list(snap.read("T", ("Name",), spanner.KeySet(keys=[[80]]))) == [["a"]]


def test_max_commit_delay_in_a_transaction_is_accepted(tdb):
    tdb.run_in_transaction(lambda txn: txn.insert("T", COLS, [(81, "a", 1)]),
                           max_commit_delay=datetime.timedelta(milliseconds=10))
    with tdb.snapshot() as snap:
        assert list(snap.read("T", ("Id",), spanner.KeySet(keys=[[81]]))) == [[81]]


@emulator_lacks("the range check of max_commit_delay")
@pytest.mark.parametrize("delay", [datetime.timedelta(milliseconds=501), datetime.timedelta(seconds=2)])
def test_max_commit_delay_beyond_500_ms_is_invalid_and_writes_nothing(tdb, delay):
    with pytest.raises(exceptions.InvalidArgument, match="max_commit_delay"):
        with tdb.batch(max_commit_delay=delay) as batch:
            batch.insert("T", COLS, [(90, "a", 1)])
    with tdb.snapshot() as snap:
        assert list(snap.read("T", ("Id",), spanner.KeySet(keys=[[90]]))) == []


WIDE = ["CREATE TABLE W (Id INT64 NOT NULL, A INT64, B INT64, C INT64, D INT64) PRIMARY KEY (Id)"]


@emulator_lacks("the commit mutation limit as commit statistics count it")
def test_commit_limit_is_on_counted_mutations(make_database):
    db = make_database(WIDE, logger=LOGGER)
    columns = ("Id", "A", "B", "C", "D")
    with pytest.raises(exceptions.InvalidArgument, match="80005"):
        with db.batch() as b:   # one mutation of 16,001 rows x 5 columns
            b.insert("W", columns, [(i, i, i, i, i) for i in range(16_001)])
    assert _batch_count(db, lambda b: b.insert("W", columns, [(i, i, i, i, i) for i in range(16_000)])) == 80_000


@emulator_lacks("the commit mutation limit as commit statistics count it")
def test_commit_limit_counts_the_transactions_dml(make_database):
    db = make_database(WIDE, logger=LOGGER)
    with db.batch() as b:
        b.insert("W", ("Id",), [(i,) for i in range(20_000)])

    def work(txn):
        txn.execute_update("UPDATE W SET A = 1, B = 1, C = 1 WHERE Id < 20000")   # 20,000 x 4 = 80,000
        txn.insert("W", ("Id",), [(99_999,)])                                       # one more
    with pytest.raises(exceptions.InvalidArgument, match="80001"):
        db.run_in_transaction(work)
    with db.snapshot() as snap:
        assert list(snap.execute_sql("SELECT COUNT(*) FROM W WHERE A IS NOT NULL OR Id = 99999")) == [[0]]
