"""PostgreSQL-dialect data: every type written by mutations and read back typed, $n parameters, DML,
spanner.pending_commit_timestamp(), NULL ordering, names, and the other dialect's syntax refused.

One PostgreSQL database for the module, through the official client.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import uuid

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import JsonObject, param_types

TABLE = """CREATE TABLE AllTypes (
  K bigint NOT NULL,
  B boolean,
  I int8,
  F double precision,
  F4 real,
  S varchar(10),
  T text,
  By bytea,
  N numeric,
  D date,
  Ts timestamptz,
  J jsonb,
  Ai bigint[],
  St text[],
  Ct spanner.commit_timestamp,
  "MixedCase" bigint,
  PRIMARY KEY (K)
)"""
COLUMNS = ("k", "b", "i", "f", "f4", "s", "t", "by", "n", "d", "ts", "j", "ai", "st", "ct", "MixedCase")
# BYTES go to the client base64-encoded and come back so (the client's convention).
ROW = [1, True, 2**62, 1.5, 0.25, "short", "a longer text", base64.b64encode(b"\x00\xff"), decimal.Decimal("12.345"), dt.date(2024, 2, 29),
       dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC), JsonObject({"a": [1, 2]}), [1, None, 3],
       ["x", None], spanner.COMMIT_TIMESTAMP, 7]


@pytest.fixture(scope="module")
def pg_db(instance):
    db = instance.database(f"pgd-{uuid.uuid4().hex[:12]}", database_dialect=DatabaseDialect.POSTGRESQL)
    db.create().result(60)
    db.update_ddl([TABLE, "CREATE TABLE Plain (K bigint NOT NULL, V varchar, PRIMARY KEY (K))",
                   "CREATE CHANGE STREAM Everything FOR ALL"]).result(120)
    yield db
    db.drop()


@pytest.fixture(scope="module")
def written(pg_db):
    """The row of ROW (k = 1) and a few sparse rows (k = 2..5), written by mutations; the first commit's timestamp."""
    with pg_db.batch() as batch:
        batch.insert("alltypes", COLUMNS, [ROW])
    with pg_db.batch() as more:
        more.insert("alltypes", ("k", "s", "i"), [[2, None, 10], [3, "b", 20], [4, "a", None], [5, "c", 30]])
    return batch.committed


def _rows(db, sql, params=None, types=None):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params, param_types=types)]


def test_every_type_written_by_mutations_is_read_back_typed(pg_db, written):
    (row,) = _rows(pg_db, 'SELECT k, b, i, f, f4, s, t, "by", n, d, ts, j, ai, st, ct, "MixedCase" FROM alltypes WHERE k = $1',
                   {"p1": 1}, {"p1": param_types.INT64})
    expected = list(ROW)
    expected[COLUMNS.index("ct")] = written
    assert row == expected
    with pg_db.snapshot() as snap:
        (read,) = list(snap.read("alltypes", COLUMNS, spanner.KeySet(keys=[[1]])))
    assert list(read) == expected


def test_positional_parameters_limit_and_order(pg_db, written):
    rows = _rows(pg_db, "SELECT k FROM alltypes WHERE i >= $1 AND k <> $2 ORDER BY i DESC LIMIT $3",
                 {"p1": 10, "p2": 5, "p3": 2}, {"p1": param_types.INT64, "p2": param_types.INT64, "p3": param_types.INT64})
    assert rows == [[1], [3]]
    assert _rows(pg_db, "SELECT k FROM alltypes WHERE k = ANY($1) ORDER BY k", {"p1": [2, 4]},
                 {"p1": param_types.Array(param_types.INT64)}) == [[2], [4]]


def test_nulls_sort_as_postgresql_sorts_them(pg_db, written):
    ascending = _rows(pg_db, "SELECT k FROM alltypes WHERE k BETWEEN 2 AND 5 ORDER BY s")
    assert ascending == [[4], [3], [5], [2]]  # NULL last ascending
    assert _rows(pg_db, "SELECT k FROM alltypes WHERE k BETWEEN 2 AND 5 ORDER BY s DESC") == [[2], [5], [3], [4]]
    assert _rows(pg_db, "SELECT k FROM alltypes WHERE k BETWEEN 2 AND 5 ORDER BY s NULLS FIRST") == [[2], [4], [3], [5]]


def test_names_fold_to_lower_case_unless_double_quoted(pg_db, written):
    assert _rows(pg_db, 'SELECT K, "MixedCase" FROM AllTypes WHERE K = 1') == [[1, 7]]
    for wrong in ("SELECT MixedCase FROM alltypes", 'SELECT "K" FROM alltypes', 'SELECT k FROM "AllTypes"'):
        with pg_db.snapshot() as snap:
            results = snap.execute_sql(wrong)
            with pytest.raises(exceptions.InvalidArgument):
                list(results)
    with pg_db.snapshot() as snap:
        results = snap.execute_sql("SELECT count(*), K AS \"Key\" FROM alltypes GROUP BY K ORDER BY K LIMIT 1")
        assert list(results) == [[1, 1]]
        assert [f.name for f in results.fields] == ["count", "Key"]


def test_casts_operators_and_spanner_functions(pg_db):
    assert _rows(pg_db, "SELECT '12'::bigint + 1, spanner.farm_fingerprint('abc'), 7 % 3, 'a' || 'b', "
                        "coalesce(NULL, 2), CAST(1.5 AS double precision) > 1") == [
        [13, 2640714258260161385, 1, "ab", 2, True]]


def test_pending_commit_timestamp_fills_a_commit_timestamp_column(pg_db):
    def write(txn):
        txn.execute_update("INSERT INTO plain (k, v) VALUES ($1, $2)", params={"p1": 1, "p2": "one"},
                           param_types={"p1": param_types.INT64, "p2": param_types.STRING})
        return txn.execute_update("INSERT INTO alltypes (k, ct) VALUES ($1, spanner.pending_commit_timestamp())",
                                  params={"p1": 100}, param_types={"p1": param_types.INT64})

    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    assert pg_db.run_in_transaction(write) == 1
    ((ct,),) = _rows(pg_db, "SELECT ct FROM alltypes WHERE k = 100")
    assert before < ct < dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
    counts = []

    def change(txn):
        counts.append(txn.execute_update("UPDATE alltypes SET ct = spanner.pending_commit_timestamp() WHERE k = $1",
                                         params={"p1": 100}, param_types={"p1": param_types.INT64}))
        counts.append(txn.execute_update("DELETE FROM plain WHERE k = 1"))

    pg_db.run_in_transaction(change)
    assert counts == [1, 1]
    ((later,),) = _rows(pg_db, "SELECT ct FROM alltypes WHERE k = 100")
    assert later > ct


def test_insert_on_conflict_and_returning(pg_db):
    def write(txn):
        inserted = list(txn.execute_sql("INSERT INTO plain (k, v) VALUES ($1, 'a') RETURNING k, v",
                                        params={"p1": 50}, param_types={"p1": param_types.INT64}))
        txn.execute_update("INSERT INTO plain (k, v) VALUES (50, 'ignored') ON CONFLICT DO NOTHING")
        txn.execute_update("INSERT INTO plain (k, v) VALUES (51, 'b') ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        txn.execute_update("INSERT INTO plain (k, v) VALUES (51, 'c') ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        return inserted

    assert pg_db.run_in_transaction(write) == [[50, "a"]]
    assert _rows(pg_db, "SELECT k, v FROM plain WHERE k >= 50 ORDER BY k") == [[50, "a"], [51, "c"]]


def test_change_stream_read_json_returns_jsonb_records(pg_db):
    with pg_db.snapshot() as snap:
        ((start,),) = list(snap.execute_sql("SELECT current_timestamp"))
    with pg_db.batch() as batch:
        batch.insert("plain", ("k", "v"), [[70, "streamed"]])
    end = batch.committed + dt.timedelta(milliseconds=200)
    query = "SELECT * FROM spanner.read_json_everything($1, $2, $3, 1000, NULL)"
    types = {"p1": param_types.TIMESTAMP, "p2": param_types.TIMESTAMP, "p3": param_types.STRING}
    pending, seen, changes = [(None, start)], set(), []
    while pending and len(seen) < 50:
        token, since = pending.pop()
        with pg_db.snapshot() as snap:
            results = snap.execute_sql(query, params={"p1": since, "p2": end, "p3": token}, param_types=types)
            records = [row[0] for row in results]
            assert [f.name for f in results.fields] == ["read_json_everything"]
        for record in records:
            for child in record.get("child_partitions_record", {}).get("child_partitions", []):
                if child["token"] not in seen:
                    seen.add(child["token"])
                    pending.append((child["token"], record["child_partitions_record"]["start_timestamp"]))
            if "data_change_record" in record:
                changes.append(record["data_change_record"])
    (change,) = [c for c in changes if c["table_name"] == "plain"]
    assert change["mod_type"] == "INSERT"
    assert change["mods"][0]["keys"] == {"k": "70"} and change["mods"][0]["new_values"] == {"v": "streamed"}


def test_a_batch_stops_at_a_statement_with_a_syntax_error(pg_db):
    def batch(txn):
        return txn.batch_update([
            ("INSERT INTO plain (k, v) VALUES ($1, 'batch')", {"p1": 60}, {"p1": param_types.INT64}),
            "UPDTAE plain SET v = 'x' WHERE k = 60",
            "DELETE FROM plain WHERE k = 60",
        ])

    status, counts = pg_db.run_in_transaction(batch)
    assert counts == [1] and status.code == 3 and "UPDTAE plain" in status.message  # INVALID_ARGUMENT
    assert _rows(pg_db, "SELECT v FROM plain WHERE k = 60") == [["batch"]]


@pytest.mark.parametrize("statement, part", [
    ("SELECT `k` FROM alltypes", "`k`"),
    ("SELECT k FROM alltypes WHERE k = @k", "@k"),
])
def test_google_sql_syntax_is_refused_naming_the_statement(pg_db, statement, part):
    with pg_db.snapshot() as snap:
        results = snap.execute_sql(statement, params={"k": 1} if "@" in statement else None,
                                   param_types={"k": param_types.INT64} if "@" in statement else None)
        with pytest.raises(exceptions.InvalidArgument) as caught:
            list(results)
    assert part in str(caught.value)


@pytest.mark.parametrize("statement", ["SELECT 1::bigint", "SELECT $1"])
def test_postgresql_syntax_is_refused_in_a_google_sql_database(make_database, statement):
    db = make_database()
    with db.snapshot() as snap:
        results = snap.execute_sql(statement, params={"p1": 1} if "$" in statement else None,
                                   param_types={"p1": param_types.INT64} if "$" in statement else None)
        with pytest.raises(exceptions.InvalidArgument) as caught:
            list(results)
    assert statement in str(caught.value)
