"""Interleaved tables: cascading deletes, NO ACTION, and children that need a parent."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner

SCHEMA = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (SingerId)",
    """CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX))
       PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE""",
    """CREATE TABLE Songs (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, TrackId INT64 NOT NULL, Name STRING(MAX))
       PRIMARY KEY (SingerId, AlbumId, TrackId), INTERLEAVE IN PARENT Albums ON DELETE CASCADE""",
    """CREATE TABLE Tours (SingerId INT64 NOT NULL, TourId INT64 NOT NULL)
       PRIMARY KEY (SingerId, TourId), INTERLEAVE IN PARENT Singers ON DELETE NO ACTION""",
]


@pytest.fixture
def db(make_database):
    database = make_database(SCHEMA)
    with database.batch() as b:
        b.insert("Singers", ("SingerId", "Name"), [(i, f"s{i}") for i in range(1, 6)])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(s, a, f"a{s}.{a}") for s in range(1, 6) for a in (1, 2)])
        b.insert("Songs", ("SingerId", "AlbumId", "TrackId", "Name"),
                 [(s, a, t, "x") for s in range(1, 6) for a in (1, 2) for t in (1, 2, 3)])
    return database


def _count(db, table: str, where: str = "TRUE") -> int:
    with db.snapshot() as snap:
        return list(snap.execute_sql(f"SELECT COUNT(*) FROM {table} WHERE {where}"))[0][0]


def _counts(db) -> tuple[int, int, int]:
    return _count(db, "Singers"), _count(db, "Albums"), _count(db, "Songs")


def test_mutation_delete_cascades_through_two_levels(db):
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(keys=[[2]]))
    assert _counts(db) == (4, 8, 24)
    assert _count(db, "Albums", "SingerId = 2") == 0 and _count(db, "Songs", "SingerId = 2") == 0


def test_mutation_delete_of_middle_level_cascades_only_below(db):
    with db.batch() as b:
        b.delete("Albums", spanner.KeySet(keys=[[3, 1]]))
    assert _counts(db) == (5, 9, 27)
    assert _count(db, "Songs", "SingerId = 3 AND AlbumId = 1") == 0
    assert _count(db, "Songs", "SingerId = 3 AND AlbumId = 2") == 3


def test_key_range_delete_cascades(db):
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[2], end_open=[4])]))
    assert _counts(db) == (3, 6, 18)
    with db.snapshot() as snap:
        assert [r[0] for r in snap.execute_sql("SELECT DISTINCT SingerId FROM Songs ORDER BY SingerId")] == [1, 4, 5]


def test_delete_all_cascades(db):
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(all_=True))
    assert _counts(db) == (0, 0, 0)


def test_dml_delete_cascades(db):
    def work(txn):
        return txn.execute_update("DELETE FROM Singers WHERE SingerId >= 4")

    assert db.run_in_transaction(work) == 2  # the row count names parent rows only
    assert _counts(db) == (3, 6, 18)


def test_cascade_then_reinsert_in_same_transaction(db):
    def work(txn):
        txn.delete("Singers", spanner.KeySet(keys=[[1]]))
        txn.insert("Singers", ("SingerId", "Name"), [(1, "again")])
        txn.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 9, "new")])

    db.run_in_transaction(work)
    with db.snapshot() as snap:
        assert list(snap.execute_sql("SELECT AlbumId FROM Albums WHERE SingerId = 1")) == [[9]]
    assert _count(db, "Songs", "SingerId = 1") == 0


def test_no_action_refuses_delete_of_parent_with_children(db):
    with db.batch() as b:
        b.insert("Tours", ("SingerId", "TourId"), [(5, 1)])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        with db.batch() as b:
            b.delete("Singers", spanner.KeySet(keys=[[5]]))
    assert "Tours" in info.value.message and "Singers" in info.value.message
    assert _count(db, "Singers", "SingerId = 5") == 1 and _count(db, "Albums", "SingerId = 5") == 2

    def dml(txn):
        return txn.execute_update("DELETE FROM Singers WHERE SingerId = 5")

    with pytest.raises(exceptions.FailedPrecondition) as info:
        db.run_in_transaction(dml)
    assert "Tours" in info.value.message
    # Once the NO ACTION children are gone, the delete cascades as usual.
    with db.batch() as b:
        b.delete("Tours", spanner.KeySet(all_=True))
        b.delete("Singers", spanner.KeySet(keys=[[5]]))
    assert _counts(db) == (4, 8, 24)


def test_parent_without_no_action_children_deletes_fine(db):
    with db.batch() as b:
        b.insert("Tours", ("SingerId", "TourId"), [(5, 1)])
        b.delete("Singers", spanner.KeySet(keys=[[4]]))  # singer 4 has no tours
    assert _count(db, "Singers", "SingerId = 4") == 0


def test_child_without_parent_is_not_found(db):
    with pytest.raises(exceptions.NotFound) as info:
        with db.batch() as b:
            b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(42, 1, "orphan")])
    assert "Singers" in info.value.message and "Albums" in info.value.message
    with pytest.raises(exceptions.NotFound):
        with db.batch() as b:
            b.insert_or_update("Songs", ("SingerId", "AlbumId", "TrackId"), [(1, 7, 1)])

    def dml(txn):
        return txn.execute_update("INSERT INTO Albums (SingerId, AlbumId) VALUES (43, 1)")

    with pytest.raises(exceptions.NotFound) as info:
        db.run_in_transaction(dml)
    assert "Singers" in info.value.message
    assert _counts(db) == (5, 10, 30)


def test_parent_and_child_inserted_in_one_commit(db):
    with db.batch() as b:
        b.insert("Albums", ("SingerId", "AlbumId"), [(6, 1)])  # the parent comes later in the same commit
        b.insert("Singers", ("SingerId", "Name"), [(6, "six")])
    assert _count(db, "Albums", "SingerId = 6") == 1


def test_orphan_in_failed_commit_leaves_nothing(db):
    with pytest.raises(exceptions.NotFound):
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Name"), [(7, "seven")])
            b.insert("Albums", ("SingerId", "AlbumId"), [(8, 1)])
    assert _count(db, "Singers", "SingerId = 7") == 0
