"""Generated STORED columns and NULL_FILTERED indexes, on the benchmark's Singers schema."""

from __future__ import annotations

import random

import farmhash
import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

POLL = ("SELECT SingerId, ShardId FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} "
        "WHERE ShardId IS NOT NULL AND ShardId IN UNNEST(@shards) AND LastUpdated > @ts ORDER BY LastUpdated, SingerId")


def _fingerprint(text: str) -> int:
    """Spanner's FARM_FINGERPRINT: FarmHash Fingerprint64 of the UTF-8 bytes, as a signed INT64."""
    value = farmhash.fingerprint64(text)
    return value - 2**64 if value >= 2**63 else value


def _spanner_mod(dividend: int, divisor: int) -> int:
    """MOD with the sign of the dividend (Python's % takes the divisor's)."""
    result = abs(dividend) % abs(divisor)
    return -result if dividend < 0 else result


def _expected_shard(first: str | None, last: str, processed: bool | None) -> int | None:
    if processed:
        return None
    return _spanner_mod(_fingerprint(((first + " ") if first is not None else "") + last), 19)


def _rows(db, sql: str, **kw) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, **kw)]


def _shards(db) -> dict[int, int | None]:
    return {r[0]: r[1] for r in _rows(db, "SELECT SingerId, ShardId FROM Singers")}


def test_farm_fingerprint_known_values(singers_db):
    texts = ["1footrue", "2applefalse", "3true", "", "abc", "Ünïcode ✓"]
    sql = "SELECT " + ", ".join(f"FARM_FINGERPRINT(@p{i})" for i in range(len(texts)))
    got = _rows(singers_db, sql, params={f"p{i}": t for i, t in enumerate(texts)},
                param_types={f"p{i}": param_types.STRING for i in range(len(texts))})[0]
    assert got[:5] == [-1541654101129638711, 2794438866806483259, -4880158226897771312, -7286425919675154353,
                       2640714258260161385]
    assert got == [_fingerprint(t) for t in texts]


def test_shard_id_matches_farm_fingerprint_for_many_rows(singers_db):
    rng = random.Random(3)
    names = ["Ann", "Bo", "Cy", "Dee", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Zoë", "Łukasz"]
    rows = []
    for i in range(300):
        first = None if i % 7 == 0 else rng.choice(names) + str(rng.randrange(1000))
        rows.append((i, first, rng.choice(names) + str(i), spanner.COMMIT_TIMESTAMP, False if i % 11 else None))
    with singers_db.batch() as b:
        b.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed"), rows)
    shards = _shards(singers_db)
    for sid, first, last, _, processed in rows:
        assert shards[sid] == _expected_shard(first, last, processed), (sid, first, last)
    assert {s for s in shards.values()} <= set(range(-18, 19))
    assert min(shards.values()) < 0 < max(shards.values())  # both signs occur: MOD keeps the dividend's sign


def test_shard_recomputed_on_mutation_update_and_processed_gives_null(singers_db):
    cols = ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed")
    with singers_db.batch() as b:
        b.insert("Singers", cols, [(1, "Ann", "Lee", spanner.COMMIT_TIMESTAMP, False)])
    assert _shards(singers_db)[1] == _expected_shard("Ann", "Lee", False)
    with singers_db.batch() as b:
        b.update("Singers", ("SingerId", "FirstName"), [(1, "Anna")])
    assert _shards(singers_db)[1] == _expected_shard("Anna", "Lee", False)
    with singers_db.batch() as b:
        b.insert_or_update("Singers", ("SingerId", "LastName"), [(1, "Long")])
    assert _shards(singers_db)[1] == _expected_shard("Anna", "Long", False)
    with singers_db.batch() as b:
        b.update("Singers", ("SingerId", "Processed"), [(1, True)])
    assert _shards(singers_db)[1] is None
    with singers_db.batch() as b:
        b.replace("Singers", ("SingerId", "LastName", "Processed"), [(1, "Again", False)])  # FirstName back to NULL
    assert _shards(singers_db)[1] == _expected_shard(None, "Again", False)


def test_shard_recomputed_by_dml(singers_db):
    def work(txn):
        txn.execute_update("INSERT INTO Singers (SingerId, FirstName, LastName, Processed, LastUpdated) "
                           "VALUES (5, 'Kim', 'Wu', FALSE, PENDING_COMMIT_TIMESTAMP())")
        txn.execute_update("UPDATE Singers SET LastName = 'Woo' WHERE SingerId = 5")

    singers_db.run_in_transaction(work)
    assert _shards(singers_db)[5] == _expected_shard("Kim", "Woo", False)
    singers_db.run_in_transaction(lambda t: t.execute_update("UPDATE Singers SET Processed = TRUE WHERE TRUE"))
    assert _shards(singers_db)[5] is None


def test_generated_column_cannot_be_written(singers_db):
    with pytest.raises((exceptions.InvalidArgument, exceptions.FailedPrecondition), match="ShardId"):
        with singers_db.batch() as b:
            b.insert("Singers", ("SingerId", "LastName", "ShardId"), [(1, "x", 3)])
    with pytest.raises((exceptions.InvalidArgument, exceptions.FailedPrecondition), match="ShardId"):
        singers_db.run_in_transaction(lambda t: t.execute_update("UPDATE Singers SET ShardId = 1 WHERE TRUE"))


def test_add_generated_column_backfills_existing_rows(make_database):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (Id)"])
    with db.batch() as b:
        b.insert("T", ("Id", "Name"), [(1, "a"), (2, None), (3, "ccc")])
    db.update_ddl(["ALTER TABLE T ADD COLUMN Bucket INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(Name, '')), 11)) STORED",
                   "ALTER TABLE T ADD COLUMN NameLen INT64 AS (CHAR_LENGTH(Name)) STORED"]).result(60)
    assert _rows(db, "SELECT Id, Bucket, NameLen FROM T ORDER BY Id") == [
        [1, _spanner_mod(_fingerprint("a"), 11), 1], [2, _spanner_mod(_fingerprint(""), 11), None],
        [3, _spanner_mod(_fingerprint("ccc"), 11), 3]]
    with db.batch() as b:
        b.insert("T", ("Id", "Name"), [(4, "dddd")])
    assert _rows(db, "SELECT Bucket, NameLen FROM T WHERE Id = 4") == [[_spanner_mod(_fingerprint("dddd"), 11), 4]]


def test_generated_column_over_generated_column(make_database):
    db = make_database(["""CREATE TABLE T (Id INT64 NOT NULL, A INT64, B INT64 AS (A * 2) STORED,
                           C INT64 AS (B + 1) STORED) PRIMARY KEY (Id)"""])
    with db.batch() as b:
        b.insert("T", ("Id", "A"), [(1, 5)])
    with db.batch() as b:
        b.update("T", ("Id", "A"), [(1, 10)])
    assert _rows(db, "SELECT B, C FROM T") == [[20, 21]]


def test_null_filtered_index_holds_no_null_keys(singers_db):
    cols = ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed")
    with singers_db.batch() as b:
        b.insert("Singers", cols, [(i, f"f{i}", f"l{i}", spanner.COMMIT_TIMESTAMP, i % 3 == 0) for i in range(30)])
    with singers_db.batch() as b:
        b.insert("Singers", ("SingerId", "LastName", "Processed"), [(100, "no ts", False)])  # LastUpdated NULL
    with singers_db.snapshot() as snap:
        via_index = [list(r) for r in snap.read("Singers", ("ShardId", "LastUpdated", "SingerId"),
                                                spanner.KeySet(all_=True), index="Idx_Singers_ShardId_LastUpdated")]
    expected = sorted(((s, sid) for sid, s in _shards(singers_db).items() if s is not None and sid != 100))
    # Index order: ShardId, then LastUpdated (one commit: equal), then the table key.
    assert [(r[0], r[2]) for r in via_index] == expected
    assert all(r[0] is not None and r[1] is not None for r in via_index)
    assert len(via_index) == 20


def test_force_index_poll_query_filters_nulls(singers_db):
    cols = ("SingerId", "FirstName", "LastName", "LastUpdated", "Processed")
    with singers_db.batch() as b:
        b.insert("Singers", cols, [(i, f"f{i}", f"l{i}", spanner.COMMIT_TIMESTAMP, i % 4 == 0) for i in range(40)])
    shards = _shards(singers_db)
    wanted = sorted({s for s in shards.values() if s is not None})[:5]
    got = _rows(singers_db, POLL, params={"shards": wanted, "ts": "1970-01-01T00:00:00Z"},
                param_types={"shards": param_types.Array(param_types.INT64), "ts": param_types.TIMESTAMP})
    assert sorted(r[0] for r in got) == sorted(sid for sid, s in shards.items() if s in wanted)
    assert all(r[1] is not None for r in got)
    not_null = _rows(singers_db, "SELECT COUNT(*) FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} "
                                 "WHERE ShardId IS NOT NULL AND LastUpdated IS NOT NULL")
    assert not_null == [[sum(1 for s in shards.values() if s is not None)]]


def test_force_index_on_unknown_index_is_invalid_argument(singers_db):
    with pytest.raises(exceptions.InvalidArgument, match="NoSuchIndex"):
        _rows(singers_db, "SELECT * FROM Singers@{FORCE_INDEX=NoSuchIndex} WHERE SingerId = 1")


def test_force_index_on_null_filtered_index_without_null_filter_is_refused(singers_db):
    with pytest.raises(exceptions.InvalidArgument) as info:
        _rows(singers_db, "SELECT SingerId FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} WHERE SingerId > 0")
    assert "Idx_Singers_ShardId_LastUpdated" in info.value.message
    assert "NULL" in info.value.message.upper()


def test_index_read_on_unknown_index_is_an_error(singers_db):
    with pytest.raises((exceptions.NotFound, exceptions.InvalidArgument), match="NoSuchIndex"):
        with singers_db.snapshot() as snap:
            list(snap.read("Singers", ("SingerId",), spanner.KeySet(all_=True), index="NoSuchIndex"))
