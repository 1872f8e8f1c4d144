"""Instance and database administration through the official client."""

from __future__ import annotations

import uuid

import pytest
from google.api_core import exceptions
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_admin_database_v1.types import Database as DatabasePb


def _config(client) -> str:
    return f"projects/{client.project}/instanceConfigs/emulator-config"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_instance_create_get_list_exists_delete(spanner_client):
    inst = spanner_client.instance(_name("inst"), configuration_name=_config(spanner_client), display_name="Admin test", node_count=1)
    assert not inst.exists()
    inst.create().result(30)
    try:
        assert inst.exists()
        fetched = spanner_client.instance(inst.instance_id)
        fetched.reload()
        assert fetched.display_name == "Admin test"
        assert fetched.configuration_name == _config(spanner_client)
        listed = {i.name for i in spanner_client.list_instances()}
        assert inst.name in listed
    finally:
        inst.delete()
    assert not inst.exists()
    assert inst.name not in {i.name for i in spanner_client.list_instances()}


def test_instance_create_twice_is_already_exists(spanner_client):
    inst = spanner_client.instance(_name("inst"), configuration_name=_config(spanner_client), display_name="dup", node_count=1)
    inst.create().result(30)
    try:
        with pytest.raises(exceptions.AlreadyExists):
            spanner_client.instance(inst.instance_id, configuration_name=_config(spanner_client), node_count=1).create().result(30)
    finally:
        inst.delete()


def test_get_missing_instance_is_not_found(spanner_client):
    with pytest.raises(exceptions.NotFound):
        spanner_client.instance(_name("missing")).reload()


def test_database_create_with_statements_get_list_drop(instance):
    ddl = ["CREATE TABLE T (Id INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (Id)",
           "CREATE INDEX T_ByName ON T (Name)"]
    db = instance.database(_name("db"), ddl_statements=ddl)
    assert not db.exists()
    db.create().result(60)
    try:
        assert db.exists()
        db.reload()
        assert db.state == DatabasePb.State.READY
        assert db.database_dialect == DatabaseDialect.GOOGLE_STANDARD_SQL
        assert [s.split()[:3] for s in db.ddl_statements] == [["CREATE", "TABLE", "T"], ["CREATE", "INDEX", "T_ByName"]]
        assert db.name in {d.name for d in instance.list_databases()}
        with db.snapshot() as snap:
            assert list(snap.execute_sql("SELECT COUNT(*) FROM T")) == [[0]]
    finally:
        db.drop()
    assert not db.exists()
    assert db.name not in {d.name for d in instance.list_databases()}


def test_database_create_twice_is_already_exists(make_database, instance):
    db = make_database()
    with pytest.raises(exceptions.AlreadyExists):
        instance.database(db.database_id).create().result(60)


def test_drop_missing_database_and_query_missing_database_are_not_found(instance):
    db = instance.database(_name("nodb"))
    with pytest.raises(exceptions.NotFound):
        db.reload()
    with pytest.raises(exceptions.NotFound):
        with db.snapshot() as snap:
            list(snap.execute_sql("SELECT 1"))


def test_database_in_missing_instance_is_not_found(spanner_client):
    inst = spanner_client.instance(_name("gone"))
    with pytest.raises(exceptions.NotFound):
        inst.database(_name("db")).create().result(60)


def test_update_ddl_and_get_ddl_return_current_schema(make_database):
    db = make_database(["CREATE TABLE A (Id INT64 NOT NULL) PRIMARY KEY (Id)"])
    db.update_ddl(["CREATE TABLE B (Id INT64 NOT NULL, V STRING(10)) PRIMARY KEY (Id)",
                   "ALTER TABLE A ADD COLUMN X BOOL"]).result(60)
    db.reload()
    text = "\n".join(db.ddl_statements)
    assert "CREATE TABLE B" in text and "STRING(10)" in text
    assert "X BOOL" in text
    db.update_ddl(["DROP TABLE B"]).result(60)
    db.reload()
    assert not any("CREATE TABLE B" in s for s in db.ddl_statements)
    # The returned DDL recreates the same schema in a fresh database.
    copy = make_database(db.ddl_statements)
    copy.reload()
    assert copy.ddl_statements == db.ddl_statements


def test_a_schema_change_failing_midway_keeps_the_earlier_statements_and_says_how_many(make_database):
    db = make_database([])
    statements = ["CREATE TABLE A (Id INT64 NOT NULL) PRIMARY KEY (Id)", "CREATE TABLE B (Id INT64 NOT NULL) PRIMARY KEY (Id)",
                  "CREATE INDEX AByName ON A (Name)", "CREATE TABLE C (Id INT64 NOT NULL) PRIMARY KEY (Id)"]
    operation = db.update_ddl(statements)
    with pytest.raises(exceptions.FailedPrecondition, match="Name"):
        operation.result(60)
    # As on Spanner: one commit timestamp per completed statement, so the third one failed.
    assert list(operation.metadata.statements) == statements
    assert len(operation.metadata.commit_timestamps) == 2
    db.reload()
    assert [s.split()[2] for s in db.ddl_statements] == ["A", "B"]


def test_database_operations_are_listed_per_database(make_database):
    db, other = make_database([]), make_database([])
    db.update_ddl(["CREATE TABLE A (Id INT64 NOT NULL) PRIMARY KEY (Id)", "CREATE TABLE B (Id INT64 NOT NULL) PRIMARY KEY (Id)"]).result(60)
    other.update_ddl(["CREATE TABLE X (Id INT64 NOT NULL) PRIMARY KEY (Id)"]).result(60)
    kinds = [type(op.metadata).__name__ for op in db.list_database_operations()]
    assert kinds == ["CreateDatabaseMetadata", "UpdateDatabaseDdlMetadata"]
    ddl_only = db.list_database_operations(filter_="metadata.@type:type.googleapis.com/"
                                                   "google.spanner.admin.database.v1.UpdateDatabaseDdlMetadata")
    assert [list(op.metadata.statements)[1] for op in ddl_only] == ["CREATE TABLE B (Id INT64 NOT NULL) PRIMARY KEY (Id)"]
    with pytest.raises(exceptions.MethodNotImplemented, match="filters operations only by"):
        list(db.list_database_operations(filter_="done:true"))


def test_create_database_with_bad_statement_fails_and_leaves_nothing(instance):
    db = instance.database(_name("bad"), ddl_statements=[
        "CREATE TABLE Ok (Id INT64 NOT NULL) PRIMARY KEY (Id)",
        "CREATE TABLE Broken (Id INT64 NOT NULL PRIMARY KEY (Id)",
    ])
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        db.create().result(60)
    assert isinstance(info.value, (exceptions.InvalidArgument, exceptions.FailedPrecondition))
    assert not db.exists()
    assert db.name not in {d.name for d in instance.list_databases()}


def test_create_database_with_semantically_bad_statement_leaves_nothing(instance):
    db = instance.database(_name("bad"), ddl_statements=[
        "CREATE TABLE Ok (Id INT64 NOT NULL) PRIMARY KEY (Id)",
        "CREATE INDEX Idx ON Missing (Id)",
    ])
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        db.create().result(60)
    assert "Missing" in str(info.value)
    assert not db.exists()
