"""Transactions sent with exclude_txn_from_change_streams, through the official client.

A stream created with ``allow_txn_exclusion = true`` records nothing of such a
transaction; a stream without the option still records it (Spanner's rule: the client
asks, the stream decides). Each way the client sends the flag is covered: a read/write
transaction, a batch, a batch write of mutation groups and partitioned DML.
"""

from __future__ import annotations

import datetime as dt

import pytest
from google.api_core import exceptions
from google.cloud.spanner_v1 import TransactionOptions

from tests.change_stream_reader import read_stream

TABLE = "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (SingerId)"
STREAMS = ["CREATE CHANGE STREAM Allowing FOR Singers OPTIONS (allow_txn_exclusion = true)",
           "CREATE CHANGE STREAM Plain FOR Singers"]


def _now(db) -> dt.datetime:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def _keys(db, stream: str, start: dt.datetime) -> list[tuple[str, str]]:
    return [(r["mod_type"], m["keys"]["SingerId"]) for r in read_stream(db, stream, start, _now(db)) for m in r["mods"]]


def _database(make_database):
    db = make_database([TABLE, *STREAMS])
    return db, _now(db)


def _insert(txn, key: int) -> None:
    txn.insert("Singers", ("SingerId", "Name"), [(key, f"n{key}")])


def test_read_write_transaction_left_out_only_where_the_stream_allows_it(make_database):
    db, start = _database(make_database)
    db.run_in_transaction(lambda t: _insert(t, 1), exclude_txn_from_change_streams=True)
    db.run_in_transaction(lambda t: _insert(t, 2))
    db.run_in_transaction(lambda t: t.execute_update("UPDATE Singers SET Name = 'x' WHERE SingerId = 2"),
                          exclude_txn_from_change_streams=True)
    assert _keys(db, "Allowing", start) == [("INSERT", "2")]
    assert _keys(db, "Plain", start) == [("INSERT", "1"), ("INSERT", "2"), ("UPDATE", "2")]


def test_batch_left_out(make_database):
    db, start = _database(make_database)
    with db.batch(exclude_txn_from_change_streams=True) as batch:
        _insert(batch, 1)
    with db.batch() as batch:
        _insert(batch, 2)
    assert _keys(db, "Allowing", start) == [("INSERT", "2")]
    assert _keys(db, "Plain", start) == [("INSERT", "1"), ("INSERT", "2")]


def test_batch_write_of_mutation_groups_left_out(make_database):
    db, start = _database(make_database)
    with db.mutation_groups() as groups:
        _insert(groups.group(), 1)
        _insert(groups.group(), 2)
        responses = list(groups.batch_write(exclude_txn_from_change_streams=True))
    assert [r.status.code for r in responses] == [0, 0]
    with db.mutation_groups() as groups:
        _insert(groups.group(), 3)
        list(groups.batch_write())
    assert _keys(db, "Allowing", start) == [("INSERT", "3")]
    assert sorted(_keys(db, "Plain", start)) == [("INSERT", "1"), ("INSERT", "2"), ("INSERT", "3")]


def test_partitioned_dml_left_out(make_database):
    db, start = _database(make_database)
    db.run_in_transaction(lambda t: _insert(t, 1))
    assert db.execute_partitioned_dml("UPDATE Singers SET Name = 'p' WHERE SingerId > 0",
                                      exclude_txn_from_change_streams=True) == 1
    db.execute_partitioned_dml("DELETE FROM Singers WHERE SingerId > 0")
    assert _keys(db, "Allowing", start) == [("INSERT", "1"), ("DELETE", "1")]
    assert _keys(db, "Plain", start) == [("INSERT", "1"), ("UPDATE", "1"), ("DELETE", "1")]


def test_a_read_only_transaction_cannot_ask_to_be_left_out(make_database):
    db, _ = _database(make_database)
    api = db.spanner_api
    session = api.create_session(database=db.name)
    try:
        options = TransactionOptions(read_only=TransactionOptions.ReadOnly(strong=True), exclude_txn_from_change_streams=True)
        with pytest.raises(exceptions.InvalidArgument, match="exclude_txn_from_change_streams"):
            api.begin_transaction(session=session.name, options=options)
    finally:
        api.delete_session(name=session.name)
