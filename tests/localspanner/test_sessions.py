"""Sessions through the official client: multiplexed (the default), pooled, and explicit create/get/list/delete."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import BurstyPool
from google.cloud.spanner_v1.database_sessions_manager import TransactionType
from google.cloud.spanner_v1.session import Session

DDL = ["CREATE TABLE S (Id INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (Id)"]
#: The client reads these on every checkout; "false" switches each kind of work to pooled sessions.
MULTIPLEXED_ENV = (
    "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS",
    "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW",
    "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_PARTITIONED_OPS",
)


def _session_names(db):
    return {s.name for s in db.spanner_api.list_sessions(database=db.name)}


def _exercise(db):
    """Reads, writes, a read/write transaction, DML and partitioned DML; returns the final rows."""
    with db.batch() as b:
        b.insert("S", ("Id", "V"), [(1, "a"), (2, "b")])
    db.run_in_transaction(lambda txn: txn.execute_update("UPDATE S SET V = 'c' WHERE Id = 2"))

    def rmw(txn):
        (row,) = list(txn.read("S", ("V",), spanner.KeySet(keys=[[1]])))
        txn.update("S", ("Id", "V"), [(1, row[0] + "!")])

    db.run_in_transaction(rmw)
    assert db.execute_partitioned_dml("UPDATE S SET V = CONCAT(V, '.') WHERE TRUE") == 2
    with db.snapshot(multi_use=True) as snap:
        rows = [list(r) for r in snap.execute_sql("SELECT Id, V FROM S ORDER BY Id")]
        assert [list(r) for r in snap.read("S", ("Id",), spanner.KeySet(all_=True))] == [[1], [2]]
    return rows


def test_multiplexed_sessions_by_default(make_database, monkeypatch):
    for name in MULTIPLEXED_ENV:
        monkeypatch.delenv(name, raising=False)
    db = make_database(DDL)
    assert _exercise(db) == [[1, "a!."], [2, "c."]]
    session = db.sessions_manager.get_session(TransactionType.READ_WRITE)
    assert session.is_multiplexed and session.exists()


def test_pooled_sessions(make_database, instance, monkeypatch):
    for name in MULTIPLEXED_ENV:
        monkeypatch.setenv(name, "false")
    created = make_database(DDL)
    # The default pool (BurstyPool); this client's FixedSizePool mixes naive and aware datetimes.
    pool = BurstyPool(target_size=3)
    db = instance.database(created.database_id, pool=pool)
    assert _exercise(db) == [[1, "a!."], [2, "c."]]
    names = _session_names(db)
    pooled = {s.name for s in list(pool._sessions.queue)}
    assert pooled and pooled <= names  # the pool's sessions exist on the server
    for s in pool._sessions.queue:
        assert not s.is_multiplexed and s.exists()
    pool.clear()  # deletes them
    assert not (_session_names(db) & pooled)


def test_session_create_get_list_delete(make_database):
    db = make_database(DDL)
    session = Session(db, labels={"team": "watchers"})
    session.create()
    assert session.exists()
    assert session.name in _session_names(db)
    got = db.spanner_api.get_session(name=session.name)
    assert got.name == session.name and dict(got.labels) == {"team": "watchers"}
    session.delete()
    assert not session.exists()
    assert session.name not in _session_names(db)
    with pytest.raises(exceptions.NotFound) as info:
        db.spanner_api.get_session(name=session.name)
    assert session.session_id in info.value.message


def test_using_a_deleted_session_is_not_found(make_database):
    db = make_database(DDL)
    session = Session(db)
    session.create()
    name = session.name
    session.delete()
    from google.cloud.spanner_v1 import ExecuteSqlRequest

    with pytest.raises(exceptions.NotFound) as info:
        db.spanner_api.execute_sql(request=ExecuteSqlRequest(session=name, sql="SELECT 1"))
    assert "Session not found" in info.value.message


def test_sessions_of_a_database_are_listed_only_for_it(make_database):
    a, b = make_database(DDL), make_database(DDL)
    sa, sb = Session(a), Session(b)
    sa.create()
    sb.create()
    try:
        assert sa.name in _session_names(a) and sa.name not in _session_names(b)
        assert sb.name in _session_names(b) and sb.name not in _session_names(a)
    finally:
        sa.delete()
        sb.delete()


def test_session_of_unknown_database_is_not_found(instance):
    db = instance.database("no-such-db")
    with pytest.raises(exceptions.NotFound):
        Session(db).create()
