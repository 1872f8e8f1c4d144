"""Mutations through the official client: the five write kinds, deletes by key, range and all.

Every check reads the table back, so a mutation that was silently ignored or applied to
the wrong rows fails.
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner

COLS = ("Id", "Name", "Score")
DDL = ["CREATE TABLE T (Id INT64 NOT NULL, Name STRING(MAX), Score INT64) PRIMARY KEY (Id)"]
COMPOSITE_DDL = [
    "CREATE TABLE C (A STRING(20) NOT NULL, B INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (A, B DESC)",
]


def _rows(db, table="T", columns=COLS, keyset=None):
    with db.snapshot() as snap:
        return [list(r) for r in snap.read(table, columns, keyset or spanner.KeySet(all_=True))]


def _ids(db, table="T", key="Id"):
    return [r[0] for r in _rows(db, table, (key,))]


@pytest.fixture
def tdb(make_database):
    db = make_database(DDL)
    with db.batch() as b:
        b.insert("T", COLS, [(i, f"n{i}", i * 10) for i in range(1, 11)])
    return db


def test_insert_then_read_back(tdb):
    assert _rows(tdb)[:3] == [[1, "n1", 10], [2, "n2", 20], [3, "n3", 30]]
    assert len(_rows(tdb)) == 10


def test_insert_of_existing_key_is_already_exists_and_writes_nothing(tdb):
    with pytest.raises(exceptions.AlreadyExists) as info:
        with tdb.batch() as b:
            b.insert("T", COLS, [(100, "new", 1), (3, "dup", 0)])
    assert "T" in info.value.message
    # The whole commit failed: neither row changed.
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[3], [100]])) == [[3, "n3", 30]]


def test_insert_same_key_twice_in_one_commit_is_already_exists(tdb):
    with pytest.raises(exceptions.AlreadyExists):
        with tdb.batch() as b:
            b.insert("T", COLS, [(200, "a", 1)])
            b.insert("T", COLS, [(200, "b", 2)])
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[200]])) == []


def test_update_changes_only_given_columns(tdb):
    with tdb.batch() as b:
        b.update("T", ("Id", "Score"), [(2, 99)])
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[2]])) == [[2, "n2", 99]]


def test_update_of_missing_key_is_not_found_and_writes_nothing(tdb):
    with pytest.raises(exceptions.NotFound) as info:
        with tdb.batch() as b:
            b.update("T", ("Id", "Score"), [(1, 111), (404, 1)])
    assert "T" in info.value.message
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[1]])) == [[1, "n1", 10]]


def test_insert_or_update_inserts_new_and_keeps_unspecified_columns_of_existing(tdb):
    with tdb.batch() as b:
        b.insert_or_update("T", ("Id", "Score"), [(1, 5), (50, 7)])
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[1], [50]])) == [[1, "n1", 5], [50, None, 7]]


def test_replace_clears_unspecified_columns(tdb):
    with tdb.batch() as b:
        b.replace("T", ("Id", "Score"), [(4, 1), (60, 2)])
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[4], [60]])) == [[4, None, 1], [60, None, 2]]


def test_mutations_apply_in_order_within_a_commit(tdb):
    with tdb.batch() as b:
        b.insert("T", COLS, [(70, "x", 1)])
        b.update("T", ("Id", "Name"), [(70, "y")])
        b.delete("T", spanner.KeySet(keys=[[1]]))
        b.insert("T", COLS, [(1, "again", 0)])
    assert _rows(tdb, keyset=spanner.KeySet(keys=[[1], [70]])) == [[1, "again", 0], [70, "y", 1]]


def test_delete_by_keys_ignores_missing_keys(tdb):
    with tdb.batch() as b:
        b.delete("T", spanner.KeySet(keys=[[2], [4], [999]]))
    assert _ids(tdb) == [1, 3, 5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize(
    "key_range, remaining",
    [
        (spanner.KeyRange(start_closed=[3], end_closed=[5]), [1, 2, 6, 7, 8, 9, 10]),
        (spanner.KeyRange(start_open=[3], end_open=[5]), [1, 2, 3, 5, 6, 7, 8, 9, 10]),
        (spanner.KeyRange(start_closed=[3], end_open=[5]), [1, 2, 5, 6, 7, 8, 9, 10]),
        (spanner.KeyRange(start_open=[3], end_closed=[5]), [1, 2, 3, 6, 7, 8, 9, 10]),
        (spanner.KeyRange(start_closed=[8], end_closed=[100]), [1, 2, 3, 4, 5, 6, 7]),
        (spanner.KeyRange(start_closed=[5], end_closed=[3]), list(range(1, 11))),  # empty range
    ],
    ids=["closed", "open", "closed-open", "open-closed", "past-the-end", "empty"],
)
def test_delete_by_range(tdb, key_range, remaining):
    with tdb.batch() as b:
        b.delete("T", spanner.KeySet(ranges=[key_range]))
    assert _ids(tdb) == remaining


def test_delete_all(tdb):
    with tdb.batch() as b:
        b.delete("T", spanner.KeySet(all_=True))
    assert _ids(tdb) == []


@pytest.fixture
def cdb(make_database):
    db = make_database(COMPOSITE_DDL)
    with db.batch() as b:
        b.insert("C", ("A", "B", "V"), [(a, n, f"{a}{n}") for a in ("x", "y") for n in range(1, 6)])
    return db


def test_composite_desc_key_orders_rows(cdb):
    keys = [r[:2] for r in _rows(cdb, "C", ("A", "B", "V"))]
    assert keys == [["x", n] for n in range(5, 0, -1)] + [["y", n] for n in range(5, 0, -1)]


def test_composite_key_insert_update_delete(cdb):
    with pytest.raises(exceptions.AlreadyExists):
        with cdb.batch() as b:
            b.insert("C", ("A", "B", "V"), [("x", 3, "dup")])
    with pytest.raises(exceptions.NotFound):
        with cdb.batch() as b:
            b.update("C", ("A", "B", "V"), [("x", 99, "missing")])
    with cdb.batch() as b:
        b.update("C", ("A", "B", "V"), [("y", 2, "changed")])
        b.delete("C", spanner.KeySet(keys=[["x", 1]]))
    got = _rows(cdb, "C", ("A", "B", "V"), spanner.KeySet(keys=[["y", 2], ["x", 1]]))
    assert got == [["y", 2, "changed"]]


def test_delete_prefix_range_on_composite_key(cdb):
    # A prefix [x] covers every row whose first key part is x.
    with cdb.batch() as b:
        b.delete("C", spanner.KeySet(ranges=[spanner.KeyRange(start_closed=["x"], end_closed=["x"])]))
    assert {r[0] for r in _rows(cdb, "C", ("A", "B"))} == {"y"}


def test_delete_range_on_desc_key_part_follows_key_order(cdb):
    # B is DESC: in key order, 4 comes before 2, so [y,4]..[y,2] covers 4, 3, 2.
    with cdb.batch() as b:
        b.delete("C", spanner.KeySet(ranges=[spanner.KeyRange(start_closed=["y", 4], end_closed=["y", 2])]))
    assert [r[1] for r in _rows(cdb, "C", ("A", "B")) if r[0] == "y"] == [5, 1]


def test_mutation_on_unknown_table_or_column_is_not_found(tdb):
    with pytest.raises(exceptions.NotFound) as info:
        with tdb.batch() as b:
            b.insert("Nope", ("Id",), [(1,)])
    assert "Nope" in info.value.message
    with pytest.raises(exceptions.NotFound) as info:
        with tdb.batch() as b:
            b.insert("T", ("Id", "Bogus"), [(1000, 1)])
    assert "Bogus" in info.value.message
    assert 1000 not in _ids(tdb)


def test_null_in_not_null_column_is_rejected(make_database):
    db = make_database(["CREATE TABLE N (Id INT64 NOT NULL, V STRING(10) NOT NULL) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        with db.batch() as b:
            b.insert("N", ("Id", "V"), [(1, None)])
    assert "V" in info.value.message
    with pytest.raises(exceptions.GoogleAPICallError):
        with db.batch() as b:
            b.insert("N", ("Id",), [(2,)])  # V omitted: NULL in a NOT NULL column
    assert _rows(db, "N", ("Id", "V")) == []


def test_string_length_limit_is_enforced(make_database):
    db = make_database(["CREATE TABLE S (Id INT64 NOT NULL, V STRING(3)) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        with db.batch() as b:
            b.insert("S", ("Id", "V"), [(1, "abcd")])
    assert "V" in info.value.message
    with db.batch() as b:
        b.insert("S", ("Id", "V"), [(1, "abc")])
    assert _rows(db, "S", ("Id", "V")) == [[1, "abc"]]


def test_commit_timestamp_via_mutation(make_database):
    db = make_database(["CREATE TABLE CT (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("CT", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    assert _rows(db, "CT", ("Ts",))[0][0] == b.committed
    with db.batch() as b2:
        b2.update("CT", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    assert b2.committed > b.committed
    assert _rows(db, "CT", ("Ts",))[0][0] == b2.committed


def test_commit_timestamp_on_column_without_option_is_rejected(make_database):
    db = make_database(["CREATE TABLE NCT (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        with db.batch() as b:
            b.insert("NCT", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
    assert "Ts" in info.value.message


def test_interleaved_children_cascade_and_need_a_parent(make_database):
    db = make_database([
        "CREATE TABLE P (Pid INT64 NOT NULL) PRIMARY KEY (Pid)",
        "CREATE TABLE K (Pid INT64 NOT NULL, Kid INT64 NOT NULL) PRIMARY KEY (Pid, Kid), INTERLEAVE IN PARENT P ON DELETE CASCADE",
    ])
    with pytest.raises(exceptions.NotFound):
        with db.batch() as b:
            b.insert("K", ("Pid", "Kid"), [(1, 1)])
    with db.batch() as b:
        b.insert("P", ("Pid",), [(1,), (2,)])
        b.insert("K", ("Pid", "Kid"), [(1, 1), (1, 2), (2, 1)])
    with db.batch() as b:
        b.delete("P", spanner.KeySet(keys=[[1]]))
    assert _rows(db, "K", ("Pid", "Kid")) == [[2, 1]]
