"""Row deletion policies (Spanner's TTL) through the official client: DDL, INFORMATION_SCHEMA, the deletes.

The policy is schema: CREATE TABLE and ALTER TABLE ADD | REPLACE | DROP ROW DELETION POLICY,
printed back by GetDatabaseDdl and shown in INFORMATION_SCHEMA.TABLES. The deletes are
system transactions: a change stream records them with ``is_system_transaction`` and the
tag ``RowDeletionPolicy``, unless it was created with ``exclude_ttl_deletes``.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from tests.change_stream_reader import read_stream
from tests.watcher.core_support import wait_until

# Read at import (collection), before the shared fixtures point the variable at their own server.
_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")

TABLE = ("CREATE TABLE Events (Id INT64 NOT NULL, CreatedAt TIMESTAMP, Name STRING(MAX)) PRIMARY KEY (Id), "
         "ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))")
CHILD = ("CREATE TABLE Notes (Id INT64 NOT NULL, NoteId INT64 NOT NULL, Text STRING(MAX)) PRIMARY KEY (Id, NoteId), "
         "INTERLEAVE IN PARENT Events ON DELETE CASCADE")


def _now(db) -> dt.datetime:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def _policy(db, table: str = "Events"):
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT ROW_DELETION_POLICY_EXPRESSION FROM INFORMATION_SCHEMA.TABLES "
                                     "WHERE TABLE_SCHEMA = '' AND TABLE_NAME = @t", params={"t": table},
                                     param_types={"t": param_types.STRING}))[0][0]


def _ddl(db) -> list[str]:
    db.reload()
    return list(db.ddl_statements)


def test_policy_is_printed_back_and_shown_in_information_schema(make_database):
    db = make_database([TABLE])
    assert _ddl(db)[0].endswith(") PRIMARY KEY(Id),\n  ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))")
    assert _policy(db) == "OLDER_THAN(CreatedAt, INTERVAL 1 DAY)"
    db.update_ddl(["ALTER TABLE Events REPLACE ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 30 DAY))"]).result(60)
    assert _policy(db) == "OLDER_THAN(CreatedAt, INTERVAL 30 DAY)"
    assert "INTERVAL 30 DAY" in _ddl(db)[0]
    db.update_ddl(["ALTER TABLE Events DROP ROW DELETION POLICY"]).result(60)
    assert _policy(db) is None
    assert "ROW DELETION POLICY" not in _ddl(db)[0]
    db.update_ddl(["ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 7 DAY))"]).result(60)
    assert _policy(db) == "OLDER_THAN(CreatedAt, INTERVAL 7 DAY)"


def test_policy_after_interleave_clause(make_database):
    db = make_database([TABLE, CHILD.replace("Text STRING(MAX))", "Ts TIMESTAMP)")
                        + ", ROW DELETION POLICY (OLDER_THAN(Ts, INTERVAL 2 DAY))"])
    notes = [s for s in _ddl(db) if s.startswith("CREATE TABLE Notes")][0]
    assert notes.endswith("INTERLEAVE IN PARENT Events ON DELETE CASCADE,\n  ROW DELETION POLICY (OLDER_THAN(Ts, INTERVAL 2 DAY))")


@pytest.mark.parametrize(("statement", "named"), [
    ("ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(Missing, INTERVAL 1 DAY))", ("Events", "Missing")),
    ("ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(Name, INTERVAL 1 DAY))", ("Events", "Name", "TIMESTAMP")),
    ("ALTER TABLE Events REPLACE ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))", ("Events",)),
    ("ALTER TABLE Events DROP ROW DELETION POLICY", ("Events",)),
])
def test_bad_policy_is_refused_naming_table_and_column(make_database, statement, named):
    db = make_database(["CREATE TABLE Events (Id INT64 NOT NULL, CreatedAt TIMESTAMP, Name STRING(MAX)) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition) as info:
        db.update_ddl([statement]).result(60)
    for name in named:
        assert name in info.value.message


def test_policy_twice_and_its_column_dropped_are_refused(make_database):
    db = make_database([TABLE])
    with pytest.raises(exceptions.FailedPrecondition, match="already has a row deletion policy"):
        db.update_ddl(["ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 2 DAY))"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="Events.CreatedAt"):
        db.update_ddl(["ALTER TABLE Events DROP COLUMN CreatedAt"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="ON DELETE NO ACTION"):
        db.update_ddl([CHILD.replace("CASCADE", "NO ACTION")]).result(60)


def test_expired_rows_are_deleted_in_system_transactions(make_database, local_server):
    db = make_database([TABLE, CHILD, "CREATE CHANGE STREAM Everything FOR ALL",
                        "CREATE CHANGE STREAM NoTtl FOR ALL OPTIONS (exclude_ttl_deletes = true)"])
    start = now = _now(db)  # before the inserts: the server's own sweeper may run at any moment
    old, fresh = now - dt.timedelta(days=2), now - dt.timedelta(hours=1)
    db.run_in_transaction(lambda t: (
        t.insert("Events", ("Id", "CreatedAt", "Name"), [(1, old, "old"), (2, fresh, "fresh"), (3, None, "never")]),
        t.insert("Notes", ("Id", "NoteId", "Text"), [(1, 1, "goes with its event"), (2, 1, "stays")])))
    local_server.service.sweep_expired_rows()
    with db.snapshot(multi_use=True) as snap:
        assert sorted(r[0] for r in snap.execute_sql("SELECT Id FROM Events")) == [2, 3]
        assert [tuple(r) for r in snap.execute_sql("SELECT Id, NoteId FROM Notes")] == [(2, 1)]
    end = _now(db)
    deletes = [r for r in read_stream(db, "Everything", start, end) if r["mod_type"] == "DELETE"]
    assert {(r["table_name"], r["mod_type"], r["is_system_transaction"], r["transaction_tag"]) for r in deletes} == {
        ("Events", "DELETE", True, "RowDeletionPolicy"), ("Notes", "DELETE", True, "RowDeletionPolicy")}
    assert [m["keys"] for r in deletes if r["table_name"] == "Events" for m in r["mods"]] == [{"Id": "1"}]
    assert {r["mod_type"] for r in read_stream(db, "NoTtl", start, end)} == {"INSERT"}  # the user's inserts only
    # A user's delete is no system transaction, and streams excluding TTL deletes still record it.
    db.run_in_transaction(lambda t: t.execute_update("DELETE FROM Events WHERE Id = 3"))
    user = read_stream(db, "NoTtl", end, _now(db))
    assert [(r["mod_type"], r["is_system_transaction"], r["transaction_tag"]) for r in user] == [("DELETE", False, "")]


def _own_database(server, monkeypatch, *, create: bool):
    monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
    client = spanner.Client(project="ttl-project")
    instance = client.instance("ttl-instance", configuration_name="projects/ttl-project/instanceConfigs/emulator-config",
                               node_count=1)
    db = instance.database("ttl-db", ddl_statements=[TABLE, "CREATE CHANGE STREAM S FOR ALL"])
    if create:
        instance.create().result(30)
        db.create().result(60)
    return db


def _ids(db) -> list[int]:
    with db.snapshot() as snap:
        return sorted(r[0] for r in snap.execute_sql("SELECT Id FROM Events"))


def test_the_background_sweeper_follows_the_servers_clock_and_the_policy_survives_a_restart(tmp_path, monkeypatch):
    """The server's wall clock is driven by the test: a row written now expires when the clock
    is two days on, and the sweeper (every 0.1 s here) deletes it without being asked."""
    from watcher.localspanner.server import LocalSpanner

    if _EXTERNAL:
        pytest.skip("starts its own local server; SPANNER_EMULATOR_HOST is set")
    offset = [0]
    clock = lambda: time.time_ns() + offset[0]  # noqa: E731
    with LocalSpanner(str(tmp_path), now_nanos=clock, row_deletion_sweep_seconds=0.1) as server:
        db = _own_database(server, monkeypatch, create=True)
        db.run_in_transaction(lambda t: t.insert("Events", ("Id", "CreatedAt"), [(1, _now(db)), (2, None)]))
        time.sleep(0.3)
        assert _ids(db) == [1, 2]  # not expired yet: the sweeper left it
        offset[0] = 2 * 86_400 * 10**9
        wait_until(lambda: _ids(db) == [2], timeout=10)
    with LocalSpanner(str(tmp_path), now_nanos=clock, row_deletion_sweep_seconds=0) as server:
        db = _own_database(server, monkeypatch, create=False)
        assert _policy(db) == "OLDER_THAN(CreatedAt, INTERVAL 1 DAY)"
        assert "ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))" in _ddl(db)[0]


def test_a_foreign_key_to_a_table_with_a_policy_needs_on_delete_cascade(make_database):
    db = make_database(["CREATE TABLE Events (Id INT64 NOT NULL, CreatedAt TIMESTAMP) PRIMARY KEY (Id)",
                        "CREATE TABLE Refs (Id INT64 NOT NULL, EventId INT64, CONSTRAINT FK_Event FOREIGN KEY (EventId) "
                        "REFERENCES Events (Id)) PRIMARY KEY (Id)"])
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Event"):
        db.update_ddl(["ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))"]).result(60)
    db.update_ddl(["ALTER TABLE Refs DROP CONSTRAINT FK_Event",
                   "ALTER TABLE Events ADD ROW DELETION POLICY (OLDER_THAN(CreatedAt, INTERVAL 1 DAY))"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Again.*ON DELETE CASCADE"):
        db.update_ddl(["ALTER TABLE Refs ADD CONSTRAINT FK_Again FOREIGN KEY (EventId) REFERENCES Events (Id)"]).result(60)
    db.update_ddl(["ALTER TABLE Refs ADD CONSTRAINT FK_Again FOREIGN KEY (EventId) REFERENCES Events (Id) "
                   "ON DELETE CASCADE"]).result(60)
