"""CHECK constraints and foreign keys: defined in DDL, enforced on every write path, shown back.

Every test goes through the official client. A broken CHECK is OUT_OF_RANGE naming the
table, the constraint and the row's key; a broken foreign key is FAILED_PRECONDITION naming
the constraint; adding a constraint that existing rows break is refused naming a row.
"""

from __future__ import annotations

import os

import pytest
from google.api_core import exceptions
from google.cloud import spanner

from tests.conftest import emulator_lacks
from tests.localspanner.test_change_streams import _mods, _now, read_stream

# Read at import (collection), before the shared fixtures point the variable at their own server.
_EMBEDDED = not os.environ.get("SPANNER_EMULATOR_HOST")

SCHEMA = [
    """CREATE TABLE Customers (
         CustomerId INT64 NOT NULL,
         Name STRING(MAX),
         Email STRING(100),
         Age INT64,
         CONSTRAINT AgeNotNegative CHECK (Age >= 0),
       ) PRIMARY KEY (CustomerId)""",
    """CREATE TABLE Orders (
         OrderId INT64 NOT NULL,
         CustomerId INT64,
         Quantity INT64,
         CONSTRAINT FK_OrderCustomer FOREIGN KEY (CustomerId) REFERENCES Customers (CustomerId) ON DELETE CASCADE,
         CHECK (Quantity > 0),
       ) PRIMARY KEY (OrderId)""",
    """CREATE TABLE Invoices (
         InvoiceId INT64 NOT NULL,
         CustomerId INT64,
         CONSTRAINT FK_InvoiceCustomer FOREIGN KEY (CustomerId) REFERENCES Customers (CustomerId),
       ) PRIMARY KEY (InvoiceId)""",
]


@pytest.fixture
def db(make_database):
    database = make_database(SCHEMA)
    with database.batch() as b:
        b.insert("Customers", ("CustomerId", "Name", "Age"), [(1, "ann", 30), (2, "bob", 40), (3, "cid", None)])
        b.insert("Orders", ("OrderId", "CustomerId", "Quantity"), [(10, 1, 1), (11, 1, 2), (20, 2, 5)])
        b.insert("Invoices", ("InvoiceId", "CustomerId"), [(100, 2)])
    return database


def _rows(db, sql: str) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


def _dml(db, sql: str) -> int:
    return db.run_in_transaction(lambda txn: txn.execute_update(sql))


# --- CHECK ------------------------------------------------------------------------------------------


def test_check_refuses_an_insert_mutation_naming_table_constraint_and_key(db):
    with pytest.raises(exceptions.OutOfRange) as err:
        with db.batch() as b:
            b.insert("Customers", ("CustomerId", "Age"), [(7, -1)])
    assert "Check constraint `Customers`.`AgeNotNegative` is violated for key (7)" in err.value.message
    assert _rows(db, "SELECT COUNT(*) FROM Customers") == [[3]]


@pytest.mark.parametrize("op", ["update", "insert_or_update", "replace"])
def test_check_refuses_every_mutation_kind(db, op):
    with pytest.raises(exceptions.OutOfRange, match="AgeNotNegative"):
        with db.batch() as b:
            getattr(b, op)("Customers", ("CustomerId", "Age"), [(1, -5)])
    assert _rows(db, "SELECT Age FROM Customers WHERE CustomerId = 1") == [[30]]


def test_check_passes_null_and_true(db):
    with db.batch() as b:
        b.insert("Customers", ("CustomerId", "Age"), [(8, None), (9, 0)])
    assert _rows(db, "SELECT CustomerId FROM Customers WHERE CustomerId > 7 ORDER BY 1") == [[8], [9]]


def test_check_refuses_dml_and_the_transaction_goes_on(db):
    def work(txn):
        txn.execute_update("UPDATE Customers SET Name = 'b' WHERE CustomerId = 2")  # begins the transaction
        with pytest.raises(exceptions.OutOfRange, match=r"`Customers`.`AgeNotNegative` is violated for key \(2\)"):
            txn.execute_update("UPDATE Customers SET Age = -1 WHERE CustomerId = 2")
        return txn.execute_update("UPDATE Customers SET Age = 41 WHERE CustomerId = 2")

    assert db.run_in_transaction(work) == 1
    assert _rows(db, "SELECT Age FROM Customers WHERE CustomerId = 2") == [[41]]


def test_check_refuses_batch_dml_and_stops_the_batch(db):
    def work(txn):
        return txn.batch_update([
            "UPDATE Customers SET Age = 50 WHERE CustomerId = 1",
            "INSERT INTO Orders (OrderId, CustomerId, Quantity) VALUES (30, 1, 0)",
            "UPDATE Customers SET Age = 51 WHERE CustomerId = 1",
        ])

    status, counts = db.run_in_transaction(work)
    assert counts == [1]
    assert status.code == 11  # OUT_OF_RANGE
    assert "Orders" in status.message and "CK_Orders_" in status.message


def test_check_refuses_partitioned_dml(db):
    with pytest.raises(exceptions.OutOfRange, match="AgeNotNegative"):
        db.execute_partitioned_dml("UPDATE Customers SET Age = Age - 35 WHERE Age IS NOT NULL")
    assert _rows(db, "SELECT Age FROM Customers ORDER BY CustomerId") == [[30], [40], [None]]


def test_check_refuses_one_batch_write_group_and_applies_the_other(db):
    with db.mutation_groups() as groups:
        groups.group().insert("Customers", ("CustomerId", "Age"), [(50, -2)])
        groups.group().insert("Customers", ("CustomerId", "Age"), [(51, 2)])
        responses = list(groups.batch_write())
    codes = {i: r.status.code for r in responses for i in r.indexes}
    assert codes[0] == 11 and codes[1] == 0
    assert _rows(db, "SELECT CustomerId FROM Customers WHERE CustomerId >= 50") == [[51]]


def test_adding_a_check_validates_existing_rows(db):
    with pytest.raises(exceptions.FailedPrecondition) as err:
        db.update_ddl(["ALTER TABLE Customers ADD CONSTRAINT NameShort CHECK (CHAR_LENGTH(Name) < 3)"]).result(60)
    assert "NameShort" in err.value.message and "Customers" in err.value.message and "(1)" in err.value.message
    db.update_ddl(["ALTER TABLE Customers ADD CONSTRAINT NameShort CHECK (CHAR_LENGTH(Name) < 10)"]).result(60)
    with pytest.raises(exceptions.OutOfRange, match="NameShort"):
        with db.batch() as b:
            b.update("Customers", ("CustomerId", "Name"), [(1, "a very long name")])


def test_drop_constraint_lifts_the_check(db):
    db.update_ddl(["ALTER TABLE Customers DROP CONSTRAINT AgeNotNegative"]).result(60)
    with db.batch() as b:
        b.update("Customers", ("CustomerId", "Age"), [(1, -3)])
    assert _rows(db, "SELECT Age FROM Customers WHERE CustomerId = 1") == [[-3]]
    assert "AgeNotNegative" not in "\n".join(db.reload() or db.ddl_statements)


def test_check_naming_an_unknown_column_is_refused(make_database):
    db = make_database(["CREATE TABLE T (K INT64) PRIMARY KEY (K)"])
    with pytest.raises(exceptions.GoogleAPICallError, match="Nope"):
        db.update_ddl(["ALTER TABLE T ADD CONSTRAINT C CHECK (Nope > 0)"]).result(60)


# --- FOREIGN KEY ----------------------------------------------------------------------------------------


def test_foreign_key_refuses_a_row_without_its_referenced_row(db):
    with pytest.raises(exceptions.FailedPrecondition) as err:
        with db.batch() as b:
            b.insert("Orders", ("OrderId", "CustomerId", "Quantity"), [(40, 99, 1)])
    assert "Foreign key constraint `FK_OrderCustomer` is violated on table `Orders`" in err.value.message
    assert "Cannot find referenced values in Customers(CustomerId)" in err.value.message


def test_foreign_key_accepts_referenced_row_written_in_the_same_commit_and_null(db):
    with db.batch() as b:
        b.insert("Orders", ("OrderId", "CustomerId", "Quantity"), [(41, 60, 1), (42, None, 1)])
        b.insert("Customers", ("CustomerId", "Name"), [(60, "late")])
    assert _rows(db, "SELECT OrderId FROM Orders WHERE OrderId > 40 ORDER BY 1") == [[41], [42]]


def test_foreign_key_refuses_dml_at_the_end_of_the_statement(db):
    with pytest.raises(exceptions.FailedPrecondition, match="FK_OrderCustomer"):
        _dml(db, "INSERT INTO Orders (OrderId, CustomerId, Quantity) VALUES (43, 77, 1)")
    with pytest.raises(exceptions.FailedPrecondition, match="FK_OrderCustomer"):
        _dml(db, "UPDATE Orders SET CustomerId = 77 WHERE OrderId = 10")
    assert _rows(db, "SELECT CustomerId FROM Orders WHERE OrderId = 10") == [[1]]


def test_no_action_refuses_deleting_a_referenced_row(db):
    with pytest.raises(exceptions.FailedPrecondition, match="FK_InvoiceCustomer"):
        with db.batch() as b:
            b.delete("Customers", spanner.KeySet(keys=[[2]]))
    with pytest.raises(exceptions.FailedPrecondition, match="FK_InvoiceCustomer"):
        _dml(db, "DELETE FROM Customers WHERE CustomerId = 2")
    assert _rows(db, "SELECT COUNT(*) FROM Customers WHERE CustomerId = 2") == [[1]]


def test_on_delete_cascade_deletes_referencing_rows_on_every_path(db):
    with db.batch() as b:
        b.delete("Customers", spanner.KeySet(keys=[[1]]))
    assert _rows(db, "SELECT OrderId FROM Orders ORDER BY 1") == [[20]]
    with db.batch() as b:
        b.insert("Customers", ("CustomerId",), [(5,)])
        b.insert("Orders", ("OrderId", "CustomerId", "Quantity"), [(50, 5, 1)])
    assert _dml(db, "DELETE FROM Customers WHERE CustomerId = 5") == 1
    assert _rows(db, "SELECT COUNT(*) FROM Orders WHERE OrderId = 50") == [[0]]


def test_not_enforced_foreign_key_is_accepted_and_not_enforced(make_database):
    db = make_database([
        "CREATE TABLE P (Id INT64) PRIMARY KEY (Id)",
        "CREATE TABLE C (Id INT64, PId INT64, CONSTRAINT FK_Info FOREIGN KEY (PId) REFERENCES P (Id) NOT ENFORCED) PRIMARY KEY (Id)",
    ])
    with db.batch() as b:
        b.insert("C", ("Id", "PId"), [(1, 123)])
    assert _rows(db, "SELECT PId FROM C") == [[123]]
    assert any("NOT ENFORCED" in s for s in db.ddl_statements or [db.reload()] and db.ddl_statements)


def test_adding_a_foreign_key_validates_existing_rows(db):
    with db.batch() as b:
        b.insert("Customers", ("CustomerId", "Email"), [(4, "x@y")])
    _dml(db, "INSERT INTO Invoices (InvoiceId, CustomerId) VALUES (101, 4)")
    db.update_ddl(["CREATE TABLE Emails (Email STRING(100) NOT NULL) PRIMARY KEY (Email)"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition) as err:
        db.update_ddl(["ALTER TABLE Customers ADD CONSTRAINT FK_Email FOREIGN KEY (Email) REFERENCES Emails (Email)"]).result(60)
    assert "FK_Email" in err.value.message and "(4)" in err.value.message
    with db.batch() as b:
        b.insert("Emails", ("Email",), [("x@y",)])
    db.update_ddl(["ALTER TABLE Customers ADD CONSTRAINT FK_Email FOREIGN KEY (Email) REFERENCES Emails (Email)"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Email"):
        with db.batch() as b:
            b.update("Customers", ("CustomerId", "Email"), [(1, "nobody@")])


def test_foreign_key_on_non_key_referenced_columns(make_database):
    db = make_database([
        "CREATE TABLE Users (Id INT64, Login STRING(50)) PRIMARY KEY (Id)",
        "CREATE TABLE Posts (Id INT64, Author STRING(50), FOREIGN KEY (Author) REFERENCES Users (Login)) PRIMARY KEY (Id)",
    ])
    with db.batch() as b:
        b.insert("Users", ("Id", "Login"), [(1, "ann")])
        b.insert("Posts", ("Id", "Author"), [(1, "ann")])
    with pytest.raises(exceptions.FailedPrecondition, match=r"FK_Posts_Users_\w+.*Users\(Login\)"):
        with db.batch() as b:
            b.insert("Posts", ("Id", "Author"), [(2, "bob")])
    with pytest.raises(exceptions.FailedPrecondition):
        _dml(db, "UPDATE Users SET Login = 'anna' WHERE Id = 1")
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Posts_Users_"):
        db.update_ddl(["ALTER TABLE Posts ALTER COLUMN Author BYTES(50)"]).result(60)
    db.update_ddl(["ALTER TABLE Posts ALTER COLUMN Author STRING(60)"]).result(60)


def test_interleaved_cascade_may_not_delete_a_referenced_child(make_database):
    db = make_database([
        "CREATE TABLE Singers (SingerId INT64 NOT NULL) PRIMARY KEY (SingerId)",
        "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL) PRIMARY KEY (SingerId, AlbumId), "
        "INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
        "CREATE TABLE Reviews (Id INT64 NOT NULL, SingerId INT64, AlbumId INT64, CONSTRAINT FK_Album "
        "FOREIGN KEY (SingerId, AlbumId) REFERENCES Albums (SingerId, AlbumId)) PRIMARY KEY (Id)",
    ])
    with db.batch() as b:
        b.insert("Singers", ("SingerId",), [(1,), (2,)])
        b.insert("Albums", ("SingerId", "AlbumId"), [(1, 1), (2, 1)])
        b.insert("Reviews", ("Id", "SingerId", "AlbumId"), [(1, 1, 1)])
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Album"):
        with db.batch() as b:
            b.delete("Singers", spanner.KeySet(keys=[[1]]))
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Album"):
        _dml(db, "DELETE FROM Singers WHERE SingerId = 1")
    assert _dml(db, "DELETE FROM Singers WHERE SingerId = 2") == 1
    assert _rows(db, "SELECT SingerId, AlbumId FROM Albums") == [[1, 1]]


def test_self_referencing_foreign_key_cascades_down_a_tree(make_database):
    db = make_database([
        "CREATE TABLE Nodes (Id INT64 NOT NULL, ParentId INT64, "
        "CONSTRAINT FK_Parent FOREIGN KEY (ParentId) REFERENCES Nodes (Id) ON DELETE CASCADE) PRIMARY KEY (Id)",
    ])
    with db.batch() as b:
        b.insert("Nodes", ("Id", "ParentId"), [(1, None), (2, 1), (3, 2), (4, None)])
    with pytest.raises(exceptions.FailedPrecondition, match="FK_Parent"):
        with db.batch() as b:
            b.insert("Nodes", ("Id", "ParentId"), [(5, 99)])
    with db.batch() as b:
        b.delete("Nodes", spanner.KeySet(keys=[[1]]))
    assert _rows(db, "SELECT Id FROM Nodes") == [[4]]


def test_referenced_columns_stay_unique(make_database):
    db = make_database([
        "CREATE TABLE Users (Id INT64, Login STRING(50)) PRIMARY KEY (Id)",
        "CREATE TABLE Posts (Id INT64, Author STRING(50), FOREIGN KEY (Author) REFERENCES Users (Login)) PRIMARY KEY (Id)",
    ])
    with db.batch() as b:
        b.insert("Users", ("Id", "Login"), [(1, "ann"), (2, None), (3, None)])
    with pytest.raises(exceptions.AlreadyExists):
        with db.batch() as b:
            b.insert("Users", ("Id", "Login"), [(4, "ann")])


def test_dropping_a_referenced_table_or_column_is_refused(db):
    with pytest.raises(exceptions.FailedPrecondition, match="FK_OrderCustomer|FK_InvoiceCustomer"):
        db.update_ddl(["DROP TABLE Customers"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="FK_OrderCustomer"):
        db.update_ddl(["ALTER TABLE Orders DROP COLUMN CustomerId"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="AgeNotNegative"):
        db.update_ddl(["ALTER TABLE Customers DROP COLUMN Age"]).result(60)
    db.update_ddl(["DROP TABLE Orders", "ALTER TABLE Invoices DROP CONSTRAINT FK_InvoiceCustomer",
                   "DROP TABLE Customers"]).result(60)


def test_constraint_names_share_the_schema_namespace(db):
    with pytest.raises(exceptions.GoogleAPICallError, match="Orders"):
        db.update_ddl(["ALTER TABLE Invoices ADD CONSTRAINT Orders CHECK (InvoiceId > 0)"]).result(60)
    with pytest.raises(exceptions.NotFound, match="Nothing"):
        db.update_ddl(["ALTER TABLE Invoices DROP CONSTRAINT Nothing"]).result(60)


# --- the schema shown back -----------------------------------------------------------------------------


def test_get_database_ddl_prints_constraints_and_they_load_again(db, make_database):
    db.reload()
    ddl = db.ddl_statements
    text = "\n".join(ddl)
    assert "CONSTRAINT AgeNotNegative CHECK (Age >= 0)" in text
    assert "CONSTRAINT FK_OrderCustomer FOREIGN KEY (CustomerId) REFERENCES Customers (CustomerId) ON DELETE CASCADE" in text
    assert "CONSTRAINT CK_Orders_" in text
    again = make_database(ddl)
    again.reload()
    assert again.ddl_statements == ddl


@emulator_lacks("every INFORMATION_SCHEMA constraint view")
def test_information_schema_constraint_views(db):
    rows = _rows(db, "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS "
                     "WHERE TABLE_SCHEMA = '' AND CONSTRAINT_TYPE IN ('CHECK', 'FOREIGN KEY') "
                     "AND NOT STARTS_WITH(CONSTRAINT_NAME, 'CK_IS_NOT_NULL') ORDER BY 1")
    assert ["AgeNotNegative", "Customers", "CHECK"] in rows
    assert ["FK_OrderCustomer", "Orders", "FOREIGN KEY"] in rows
    assert _rows(db, "SELECT CHECK_CLAUSE, SPANNER_STATE FROM INFORMATION_SCHEMA.CHECK_CONSTRAINTS "
                     "WHERE CONSTRAINT_NAME = 'AgeNotNegative'") == [["Age >= 0", "COMMITTED"]]
    assert _rows(db, "SELECT UNIQUE_CONSTRAINT_NAME, DELETE_RULE, SPANNER_STATE FROM INFORMATION_SCHEMA.REFERENTIAL_CONSTRAINTS "
                     "WHERE CONSTRAINT_NAME = 'FK_OrderCustomer'") == [["PK_Customers", "CASCADE", "COMMITTED"]]
    assert _rows(db, "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, POSITION_IN_UNIQUE_CONSTRAINT "
                     "FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE WHERE CONSTRAINT_NAME = 'FK_OrderCustomer'") == [
        ["Orders", "CustomerId", 1, 1]]
    used = _rows(db, "SELECT TABLE_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.CONSTRAINT_COLUMN_USAGE "
                     "WHERE CONSTRAINT_NAME IN ('FK_OrderCustomer', 'AgeNotNegative') ORDER BY 1, 2")
    assert used == [["Customers", "Age"], ["Customers", "CustomerId"]]


# --- versions and change streams see cascades ---------------------------------------------------------


@emulator_lacks("reads in the past of rows deleted by a foreign key cascade")
def test_versions_keep_rows_a_cascade_deleted(db):
    with db.snapshot() as snap:
        before = snap.execute_sql("SELECT CURRENT_TIMESTAMP()")
        ts = list(before)[0][0]
    with db.batch() as b:
        b.delete("Customers", spanner.KeySet(keys=[[1]]))
    with db.snapshot(read_timestamp=ts) as snap:
        assert [list(r) for r in snap.execute_sql("SELECT OrderId FROM Orders ORDER BY 1")] == [[10], [11], [20]]


def test_change_stream_records_cascaded_deletes(db):
    db.update_ddl(["CREATE CHANGE STREAM Everything FOR ALL"]).result(60)
    start = _now(db)
    with db.batch() as b:
        b.delete("Customers", spanner.KeySet(keys=[[1]]))
    records = read_stream(db, "Everything", start, _now(db))
    deleted = sorted(m[1]["OrderId"] for m in _mods(records, "Orders") if m[0] == "DELETE")
    assert deleted == ["10", "11"]
    assert [m[0] for m in _mods(records, "Customers")] == ["DELETE"]
    assert len({r["server_transaction_id"] for r in records}) == 1


# --- persisted --------------------------------------------------------------------------------------------


def test_constraints_survive_a_restart_of_a_data_directory(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    if os.environ.get("SPANNER_EMULATOR_HOST") and not _EMBEDDED:
        pytest.skip("starts its own local server")
    data_dir = str(tmp_path / "data")

    def database(server, create: bool):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        instance = spanner.Client(project="cons-project").instance(
            "cons-instance", configuration_name="projects/cons-project/instanceConfigs/emulator-config", node_count=1)
        db = instance.database("cons-db", ddl_statements=SCHEMA)
        if create:
            instance.create().result(30)
            db.create().result(60)
        return db

    with LocalSpanner(data_dir=data_dir) as server:
        db = database(server, create=True)
        db.update_ddl(["ALTER TABLE Customers ADD CONSTRAINT NameSet CHECK (Name IS NOT NULL)"]).result(60)
        db.reload()
        before = db.ddl_statements
    with LocalSpanner(data_dir=data_dir) as server:
        db = database(server, create=False)
        db.reload()
        assert db.ddl_statements == before
        with pytest.raises(exceptions.OutOfRange, match="NameSet"):
            with db.batch() as b:
                b.insert("Customers", ("CustomerId",), [(1,)])
        with pytest.raises(exceptions.FailedPrecondition, match="FK_OrderCustomer"):
            with db.batch() as b:
                b.insert("Orders", ("OrderId", "CustomerId"), [(1, 5)])
