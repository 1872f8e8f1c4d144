"""Error paths through the official client: the right status class, a message naming what is wrong,
and a server that keeps working afterwards (no crash, no hang, no Python traceback).
"""

from __future__ import annotations

import datetime as dt

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import ExecuteSqlRequest, ReadRequest, param_types
from google.cloud.spanner_v1.session import Session
from google.cloud.spanner_v1.types import KeySet
from google.protobuf import struct_pb2

DDL = [
    "CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(10) NOT NULL, Qty INT64, "
    "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
    "CREATE TABLE Pairs (A INT64 NOT NULL, B STRING(MAX) NOT NULL) PRIMARY KEY (A, B)",
]


@pytest.fixture(scope="module")
def edb(instance):
    import uuid

    db = instance.database(f"errors-{uuid.uuid4().hex[:8]}", ddl_statements=DDL)
    db.create().result(60)
    with db.batch() as b:
        b.insert("Items", ("Id", "Name", "Qty"), [(1, "one", 1), (2, "two", 2)])
    yield db
    db.drop()


def _still_works(db):
    with db.snapshot() as snap:
        assert list(snap.execute_sql("SELECT COUNT(*) FROM Items WHERE Id IN (1, 2)")) == [[2]]


def _read(db, table, columns, keyset, **kw):
    with db.snapshot() as snap:
        return list(snap.read(table, columns, keyset, **kw))


def _query(db, sql, params=None, types=None):
    with db.snapshot() as snap:
        return list(snap.execute_sql(sql, params=params, param_types=types))


def _dml(db, sql, params=None, types=None):
    return db.run_in_transaction(lambda txn: txn.execute_update(sql, params=params, param_types=types))


def _write(db, kind, table, columns, rows):
    with db.batch() as b:
        getattr(b, kind)(table, columns, rows)


# (call, expected exception class, words the message must contain)
CASES = {
    "read unknown table": (lambda db: _read(db, "Nope", ("Id",), spanner.KeySet(all_=True)),
                           exceptions.NotFound, ["Nope"]),
    "read unknown column": (lambda db: _read(db, "Items", ("Id", "Colour"), spanner.KeySet(all_=True)),
                            exceptions.NotFound, ["Colour"]),
    "read wrong key arity": (lambda db: _read(db, "Items", ("Id",), spanner.KeySet(keys=[[1, 2]])),
                             exceptions.InvalidArgument, ["Items"]),
    "read wrong key type": (lambda db: _read(db, "Items", ("Id",), spanner.KeySet(keys=[["abc"]])),
                            exceptions.InvalidArgument, ["abc"]),
    "read unknown index": (lambda db: _read(db, "Items", ("Id",), spanner.KeySet(all_=True), index="ByNothing"),
                           exceptions.NotFound, ["ByNothing"]),
    "query syntax error": (lambda db: _query(db, "SELEC Id FROM Items"), exceptions.InvalidArgument, ["SELEC"]),
    "query unknown table": (lambda db: _query(db, "SELECT Id FROM Missing"), exceptions.InvalidArgument, ["Missing"]),
    "query unknown column": (lambda db: _query(db, "SELECT Weight FROM Items"),
                             exceptions.InvalidArgument, ["Weight"]),
    "query bad param value": (lambda db: _query(db, "SELECT @p + 1", {"p": "x1"}, {"p": param_types.INT64}),
                              exceptions.InvalidArgument, ["@p"]),
    "query unbound param": (lambda db: _query(db, "SELECT @missing"), exceptions.InvalidArgument, ["missing"]),
    "query type mismatch": (lambda db: _query(db, "SELECT Id FROM Items WHERE Name = 5"),
                            exceptions.InvalidArgument, ["SELECT Id FROM Items"]),
    "query division by zero": (lambda db: _query(db, "SELECT Qty / 0 FROM Items"),
                               exceptions.OutOfRange, ["Qty / 0"]),
    "dml unknown table": (lambda db: _dml(db, "DELETE FROM Ghost WHERE TRUE"), exceptions.InvalidArgument, ["Ghost"]),
    "dml unknown column": (lambda db: _dml(db, "UPDATE Items SET Weight = 1 WHERE TRUE"),
                           exceptions.InvalidArgument, ["Weight"]),
    "dml null in not null": (lambda db: _dml(db, "UPDATE Items SET Name = NULL WHERE Id = 1"),
                             exceptions.FailedPrecondition, ["Name"]),
    "dml insert duplicate": (lambda db: _dml(db, "INSERT INTO Items (Id, Name) VALUES (1, 'x')"),
                             exceptions.AlreadyExists, ["Items"]),
    "mutation wrong value type": (lambda db: _write(db, "insert", "Items", ("Id", "Name", "Qty"), [(10, "ten", "many")]),
                                  exceptions.FailedPrecondition, ["Qty", "Items", "INT64"]),
    "mutation value too long": (lambda db: _write(db, "insert", "Items", ("Id", "Name"), [(10, "x" * 11)]),
                                exceptions.FailedPrecondition, ["Name"]),
    "mutation missing key column": (lambda db: _write(db, "insert", "Pairs", ("A",), [(1,)]),
                                    exceptions.InvalidArgument, ["B", "Pairs"]),
    "mutation too few values": (lambda db: _write(db, "insert", "Items", ("Id", "Name"), [(11,)]),
                                exceptions.InvalidArgument, ["Items"]),
    "mutation future commit timestamp": (
        lambda db: _write(db, "insert_or_update", "Items", ("Id", "Name", "Ts"),
                          [(1, "one", dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))]),
        exceptions.FailedPrecondition, ["Ts"]),
    "update missing row": (lambda db: _write(db, "update", "Items", ("Id", "Qty"), [(404, 1)]),
                           exceptions.NotFound, ["Items"]),
    "insert existing row": (lambda db: _write(db, "insert", "Items", ("Id", "Name"), [(2, "dup")]),
                            exceptions.AlreadyExists, ["Items"]),
    "read far in the future": (lambda db: _future_read(db), exceptions.InvalidArgument, ["future"]),
}


def _future_read(db):
    with db.snapshot(read_timestamp=dt.datetime.now(dt.UTC) + dt.timedelta(days=2)) as snap:
        return list(snap.read("Items", ("Id",), spanner.KeySet(all_=True)))


@pytest.mark.parametrize("case", list(CASES))
def test_error_has_status_and_message_and_server_survives(edb, case):
    call, expected, words = CASES[case]
    with pytest.raises(expected) as info:
        call(edb)
    message = info.value.message
    for word in words:
        assert word in message, (case, message)
    assert "Traceback" not in message
    _still_works(edb)


def test_failed_writes_change_nothing(edb):
    with edb.snapshot() as snap:
        rows = [list(r) for r in snap.execute_sql("SELECT Id, Name, Qty FROM Items ORDER BY Id")]
    assert rows == [[1, "one", 1], [2, "two", 2]]


# --- malformed requests, sent with the client's low-level API ------------------------------------


@pytest.fixture(scope="module")
def raw(edb):
    session = Session(edb)
    session.create()
    yield edb.spanner_api, session.name
    session.delete()


def _stream(call):
    return list(call)


#: name -> (request, whether it must fail); the others may be served or refused, but cleanly.
MALFORMED = {
    "empty sql": (lambda api, s: _stream(api.execute_streaming_sql(request=ExecuteSqlRequest(session=s, sql=""))), True),
    "garbage session": (lambda api, s: api.execute_sql(request=ExecuteSqlRequest(session="not/a/session", sql="SELECT 1")),
                        True),
    "read without table": (lambda api, s: _stream(api.streaming_read(
        request=ReadRequest(session=s, table="", columns=["Id"], key_set=KeySet(all_=True)))), True),
    "read without columns": (lambda api, s: _stream(api.streaming_read(
        request=ReadRequest(session=s, table="Items", columns=[], key_set=KeySet(all_=True)))), False),
    "read bool key": (lambda api, s: _stream(api.streaming_read(
        request=ReadRequest(session=s, table="Items", columns=["Id"],
                            key_set=KeySet(keys=[struct_pb2.ListValue(values=[struct_pb2.Value(bool_value=True)])])))),
                      True),
    "param struct value": (lambda api, s: _stream(api.execute_streaming_sql(request=ExecuteSqlRequest(
        session=s, sql="SELECT @p", params=struct_pb2.Struct(fields={"p": struct_pb2.Value(
            struct_value=struct_pb2.Struct(fields={"a": struct_pb2.Value(number_value=1)}))})))), True),
    "unknown transaction id": (lambda api, s: api.commit(request={"session": s, "transaction_id": b"nope"}), True),
    "negative limit": (lambda api, s: _stream(api.streaming_read(
        request=ReadRequest(session=s, table="Items", columns=["Id"], key_set=KeySet(all_=True), limit=-1))), False),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_request_is_a_clean_error(edb, raw, case):
    api, session = raw
    request, must_fail = MALFORMED[case]
    try:
        request(api, session)
    except exceptions.GoogleAPICallError as exc:
        assert isinstance(exc, (exceptions.InvalidArgument, exceptions.NotFound, exceptions.FailedPrecondition)), exc
        assert "Traceback" not in exc.message and "Internal error" not in exc.message
    else:
        assert not must_fail, f"{case} was accepted"
    _still_works(edb)
