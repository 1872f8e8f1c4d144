"""StreamingRead through the official client: key sets, ranges, indexes, limits and key order."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner

DDL = [
    "CREATE TABLE T (Id INT64 NOT NULL, Grp STRING(10), Val INT64) PRIMARY KEY (Id)",
    "CREATE INDEX T_ByGrp ON T (Grp, Val DESC)",
    "CREATE NULL_FILTERED INDEX T_ByVal ON T (Val)",
    "CREATE TABLE D (A INT64 NOT NULL, B STRING(10) NOT NULL) PRIMARY KEY (A DESC, B)",
]


@pytest.fixture(scope="module")
def rdb(instance):
    # Read-only tests share one database (created once, dropped at the end of the module).
    import uuid

    db = instance.database(f"reads-{uuid.uuid4().hex[:8]}", ddl_statements=DDL)
    db.create().result(60)
    with db.batch() as b:
        b.insert("T", ("Id", "Grp", "Val"),
                 [(i, "even" if i % 2 == 0 else "odd", None if i % 5 == 0 else i * 10) for i in range(1, 21)])
        b.insert("D", ("A", "B"), [(a, b) for a in (1, 2, 3) for b in ("p", "q")])
    yield db
    db.drop()


def _read(db, table, columns, keyset, **kwargs):
    with db.snapshot() as snap:
        return [list(r) for r in snap.read(table, columns, keyset, **kwargs)]


def _ids(db, keyset, **kwargs):
    return [r[0] for r in _read(db, "T", ("Id",), keyset, **kwargs)]


def test_read_all_in_key_order(rdb):
    assert _ids(rdb, spanner.KeySet(all_=True)) == list(range(1, 21))


def test_read_keys_returns_existing_rows_in_key_order(rdb):
    # Spanner returns rows in key order, whatever the order of the requested keys.
    assert _ids(rdb, spanner.KeySet(keys=[[7], [3], [999], [12]])) == [3, 7, 12]


def test_read_values_and_nulls(rdb):
    assert _read(rdb, "T", ("Id", "Grp", "Val"), spanner.KeySet(keys=[[4], [5]])) == [[4, "even", 40], [5, "odd", None]]


@pytest.mark.parametrize(
    "key_range, expected",
    [
        (spanner.KeyRange(start_closed=[3], end_closed=[6]), [3, 4, 5, 6]),
        (spanner.KeyRange(start_open=[3], end_open=[6]), [4, 5]),
        (spanner.KeyRange(start_closed=[3], end_open=[6]), [3, 4, 5]),
        (spanner.KeyRange(start_open=[3], end_closed=[6]), [4, 5, 6]),
        (spanner.KeyRange(start_closed=[18], end_closed=[1000]), [18, 19, 20]),
        (spanner.KeyRange(start_closed=[6], end_closed=[3]), []),
    ],
    ids=["closed", "open", "closed-open", "open-closed", "past-the-end", "reversed-empty"],
)
def test_read_ranges(rdb, key_range, expected):
    assert _ids(rdb, spanner.KeySet(ranges=[key_range])) == expected


def test_read_keys_and_ranges_combined(rdb):
    keyset = spanner.KeySet(keys=[[1], [15]], ranges=[spanner.KeyRange(start_closed=[10], end_open=[12])])
    assert _ids(rdb, keyset) == [1, 10, 11, 15]


def test_read_with_limit(rdb):
    assert _ids(rdb, spanner.KeySet(all_=True), limit=4) == [1, 2, 3, 4]
    assert _ids(rdb, spanner.KeySet(ranges=[spanner.KeyRange(start_open=[10], end_closed=[20])]), limit=2) == [11, 12]


def test_read_desc_key_order_and_prefix_ranges(rdb):
    rows = _read(rdb, "D", ("A", "B"), spanner.KeySet(all_=True))
    assert rows == [[3, "p"], [3, "q"], [2, "p"], [2, "q"], [1, "p"], [1, "q"]]
    # Prefix bound: [2] covers every row with A = 2.
    prefix = spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[2], end_closed=[2])])
    assert _read(rdb, "D", ("A", "B"), prefix) == [[2, "p"], [2, "q"]]
    # A is DESC: start [3] (open) to end [1] (closed) in key order is A = 2 and 1.
    desc = spanner.KeySet(ranges=[spanner.KeyRange(start_open=[3], end_closed=[1])])
    assert _read(rdb, "D", ("A", "B"), desc) == [[2, "p"], [2, "q"], [1, "p"], [1, "q"]]
    # Full key within a prefix: from [2, q] to the end of A = 1.
    mixed = spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[2, "q"], end_closed=[1])])
    assert _read(rdb, "D", ("A", "B"), mixed) == [[2, "q"], [1, "p"], [1, "q"]]


def test_secondary_index_read_all_in_index_order(rdb):
    rows = _read(rdb, "T", ("Grp", "Val", "Id"), spanner.KeySet(all_=True), index="T_ByGrp")
    expected = sorted(
        ([("even" if i % 2 == 0 else "odd"), None if i % 5 == 0 else i * 10, i] for i in range(1, 21)),
        # Grp ASC, then Val DESC (NULLs sort first in ASC, last in DESC), then the primary key.
        key=lambda r: (r[0], 0 if r[1] is not None else 1, -(r[1] or 0), r[2]),
    )
    assert rows == expected


def test_secondary_index_read_by_index_key_and_prefix(rdb):
    # Index keys are (Grp, Val) plus the primary key; a prefix [odd] reads the odd group.
    rows = _read(rdb, "T", ("Id",), spanner.KeySet(keys=[["odd", 70]]), index="T_ByGrp")
    assert rows == [[7]]
    odd = spanner.KeySet(ranges=[spanner.KeyRange(start_closed=["odd"], end_closed=["odd"])])
    ids = [r[0] for r in _read(rdb, "T", ("Id",), odd, index="T_ByGrp")]
    assert sorted(ids) == [i for i in range(1, 21) if i % 2]
    # Val DESC: the largest Val first, the NULL Vals (ids 5 and 15) last.
    assert ids[:2] == [19, 17] and ids[-2:] == [5, 15]
    limited = [r[0] for r in _read(rdb, "T", ("Id",), odd, index="T_ByGrp", limit=2)]
    assert limited == ids[:2]


def test_null_filtered_index_excludes_null_rows(rdb):
    ids = [r[0] for r in _read(rdb, "T", ("Id", "Val"), spanner.KeySet(all_=True), index="T_ByVal")]
    assert ids == [i for i in range(1, 21) if i % 5]
    rng = spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[35], end_open=[80])])
    assert _read(rdb, "T", ("Val",), rng, index="T_ByVal") == [[40], [60], [70]]


def test_read_unknown_index_is_an_error(rdb):
    with pytest.raises(exceptions.NotFound) as info:
        _read(rdb, "T", ("Id",), spanner.KeySet(all_=True), index="NoSuchIndex")
    assert "NoSuchIndex" in info.value.message


def test_read_in_read_write_transaction_does_not_see_buffered_mutations(make_database):
    db = make_database(DDL[:1])

    def work(txn):
        txn.insert("T", ("Id", "Grp", "Val"), [(1, "a", 1)])
        return [list(r) for r in txn.read("T", ("Id",), spanner.KeySet(all_=True))]

    # Mutations are buffered until commit: a read in the same transaction does not see them.
    assert db.run_in_transaction(work) == []
    assert _ids(db, spanner.KeySet(all_=True)) == [1]
