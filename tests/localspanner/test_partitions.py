"""PartitionQuery and PartitionRead through the client's batch snapshot: every row once, at one timestamp."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

DDL = [
    "CREATE TABLE Items (Id INT64 NOT NULL, Grp INT64, V STRING(MAX)) PRIMARY KEY (Id)",
    "CREATE INDEX ItemsByGrp ON Items (Grp) STORING (V)",
]
ROWS = 500


@pytest.fixture
def db(make_database):
    database = make_database(DDL)
    with database.batch() as b:
        b.insert("Items", ("Id", "Grp", "V"), [(i, i % 7, f"v{i}") for i in range(ROWS)])
    return database


class Writers:
    """Writers that keep changing and deleting rows while partitions are read."""

    def __init__(self, db) -> None:
        self.db = db
        self.stop = threading.Event()
        self.errors: list[Exception] = []
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(4)]

    def _run(self, n: int) -> None:
        i = 0
        try:
            while not self.stop.is_set():
                i += 1
                with self.db.batch() as b:
                    b.insert_or_update("Items", ("Id", "Grp", "V"), [((n * 97 + i) % ROWS, -1, "changed"), (ROWS + n * 10_000 + i, -1, "new")])
                    b.delete("Items", spanner.KeySet(keys=[[(n * 31 + i * 7) % ROWS]]))
        except Exception as exc:  # pragma: no cover - reported by the test
            self.errors.append(exc)

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()
        assert not self.errors, self.errors


def _expected(db, ts):
    with db.snapshot(read_timestamp=ts) as snap:
        return sorted(tuple(r) for r in snap.execute_sql("SELECT Id, Grp, V FROM Items"))


def test_partitioned_query_returns_every_row_once_at_the_snapshot_timestamp(db):
    with Writers(db):
        batch = db.batch_snapshot()
        try:
            batches = list(batch.generate_query_batches("SELECT Id, Grp, V FROM Items WHERE Id >= @low",
                                                        params={"low": 0}, param_types={"low": param_types.INT64},
                                                        max_partitions=5))
            ts = batch._get_snapshot()._transaction_read_timestamp
            rows = [tuple(r) for b in batches for r in batch.process(b)]
        finally:
            batch.close()
    assert len(batches) == 5
    assert len(rows) == len(set(rows))  # exactly once
    assert sorted(rows) == _expected(db, ts)
    assert sorted(rows) != _expected(db, dt.datetime.now(dt.UTC))  # the writers did change the table


def test_partitioned_read_by_key_set_and_index(db):
    with Writers(db):
        batch = db.batch_snapshot()
        try:
            table_batches = list(batch.generate_read_batches("Items", ("Id", "Grp", "V"), spanner.KeySet(all_=True)))
            index_batches = list(batch.generate_read_batches("Items", ("Grp", "Id"), spanner.KeySet(all_=True),
                                                             index="ItemsByGrp", max_partitions=3))
            ranged = list(batch.generate_read_batches(
                "Items", ("Id",), spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[100], end_open=[200])]), max_partitions=2))
            ts = batch._get_snapshot()._transaction_read_timestamp
            table_rows = [tuple(r) for b in table_batches for r in batch.process(b)]
            index_rows = [tuple(r) for b in index_batches for r in batch.process(b)]
            ranged_rows = [r[0] for b in ranged for r in batch.process(b)]
        finally:
            batch.close()
    expected = _expected(db, ts)
    assert len(table_batches) > 1 and len(index_batches) == 3
    assert sorted(table_rows) == expected and len(table_rows) == len(set(table_rows))
    assert sorted(index_rows) == sorted((g, i) for i, g, _ in expected)
    assert sorted(ranged_rows) == [i for i, _, _ in expected if 100 <= i < 200]


def test_partitions_of_a_snapshot_in_the_past(db):
    with db.batch() as b:
        b.delete("Items", spanner.KeySet(all_=True))
    past = db.batch_snapshot(exact_staleness=dt.timedelta(seconds=0))  # now: the table is empty
    try:
        assert [r for b in past.generate_query_batches("SELECT Id FROM Items") for r in past.process(b)] == []
    finally:
        past.close()


def test_partition_tokens_are_bound_to_their_transaction_and_request(db):
    batch = db.batch_snapshot()
    try:
        (first, *_) = list(batch.generate_query_batches("SELECT Id FROM Items"))
        first["partition"] = b"not a token"
        with pytest.raises(exceptions.InvalidArgument, match="partition token"):
            list(batch.process(first))
        good = list(batch.generate_query_batches("SELECT Id FROM Items"))[0]
        good["query"]["sql"] = "SELECT Grp FROM Items"
        with pytest.raises(exceptions.InvalidArgument, match="partition token"):
            list(batch.process(good))
        with pytest.raises(exceptions.InvalidArgument):
            list(batch.generate_query_batches("UPDATE Items SET V = 'x' WHERE true"))
    finally:
        batch.close()
