"""The privilege checks of fine-grained access control, on catalogs built from DDL (no server)."""

from __future__ import annotations

import pytest

from watcher.localspanner.access_checks import check_mutations, check_read, check_statement
from watcher.localspanner.common.requests import Mutation
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.schema.catalog import Catalog
from watcher.localspanner.schema.schema_updater import apply_statements

CATALOG, _ = apply_statements(Catalog(), [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Secret STRING(MAX)) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId)",
    "CREATE VIEW Open SQL SECURITY DEFINER AS SELECT Singers.Secret FROM Singers",
    "CREATE VIEW Shown SQL SECURITY INVOKER AS SELECT Singers.Secret FROM Singers",
    "CREATE ROLE reader", "CREATE ROLE albums", "CREATE ROLE lead", "CREATE ROLE writer",
    "GRANT SELECT(SingerId, Name) ON TABLE Singers TO ROLE reader",
    "GRANT SELECT ON VIEW Open, Shown TO ROLE reader",
    "GRANT SELECT ON TABLE Albums TO ROLE albums",
    "GRANT ROLE reader, albums TO ROLE lead",
    "GRANT INSERT(SingerId, Name), UPDATE(Name), DELETE ON TABLE Singers TO ROLE writer",
    "GRANT SELECT(SingerId) ON TABLE Singers TO ROLE writer",
])


def refusal(call) -> str:
    with pytest.raises(SpannerError) as info:
        call()
    assert info.value.code == Code.PERMISSION_DENIED
    return info.value.message


@pytest.mark.parametrize("sql", [
    "SELECT Name FROM Singers WHERE SingerId > 1",
    "SELECT s.Name FROM Singers AS s",
    "SELECT COUNT(*) FROM Singers",
    "SELECT x.Name FROM (SELECT Name FROM Singers) AS x",
    "WITH n AS (SELECT Name FROM Singers) SELECT Name FROM n",
    "SELECT Secret FROM Open",
    "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES",
    "SELECT 1",
])
def test_a_reader_runs_what_its_column_grants_cover(sql):
    check_statement(CATALOG, "reader", sql)


@pytest.mark.parametrize(("sql", "named"), [
    ("SELECT Secret FROM Singers", "column Singers.Secret"),
    ("SELECT * FROM Singers", "column Singers.Secret"),
    ("SELECT s.* FROM Singers s", "column Singers.Secret"),
    ("SELECT Name FROM Singers WHERE Secret IS NULL", "column Singers.Secret"),
    ("SELECT a.Title FROM Albums a JOIN Singers s ON a.SingerId = s.SingerId", "table Albums"),
    ("SELECT Secret FROM Shown", "column Singers.Secret"),  # an INVOKER view needs what its query needs
    ("SELECT * FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE", "spanner_sys_reader"),
])
def test_a_reader_is_refused_what_they_do_not_cover(sql, named):
    message = refusal(lambda: check_statement(CATALOG, "reader", sql))
    assert message.startswith("Role reader does not have required privileges") and named in message


def test_a_member_has_its_roles_privileges_and_no_role_has_everything():
    check_statement(CATALOG, "lead", "SELECT a.Title, s.Name FROM Albums a JOIN Singers s ON a.SingerId = s.SingerId")
    check_statement(CATALOG, "", "SELECT * FROM Singers")
    refusal(lambda: check_statement(CATALOG, "albums", "SELECT Name FROM Singers"))


@pytest.mark.parametrize(("sql", "allowed"), [
    ("INSERT INTO Singers (SingerId, Name) VALUES (1, 'a')", True),
    ("INSERT INTO Singers (SingerId, Secret) VALUES (1, 'a')", False),
    ("UPDATE Singers SET Name = 'b' WHERE SingerId = 1", True),
    ("UPDATE Singers SET Secret = 'b' WHERE SingerId = 1", False),
    ("UPDATE Singers SET Name = 'b' WHERE Secret = 'x'", False),  # WHERE reads Secret
    ("DELETE FROM Singers WHERE SingerId = 1", True),
    ("DELETE FROM Albums WHERE TRUE", False),
    ("INSERT OR UPDATE INTO Singers (SingerId, Name) VALUES (1, 'a')", True),
    ("INSERT OR UPDATE INTO Singers (SingerId, Name, Secret) VALUES (1, 'a', 'b')", False),
    ("INSERT INTO Singers (SingerId, Name) VALUES (1, 'a') THEN RETURN WITH ACTION AS a SingerId", True),
    ("INSERT INTO Singers (SingerId, Name) VALUES (1, 'a') THEN RETURN *", False),  # SELECT on every column
    ("DELETE FROM Singers WHERE SingerId = 1 THEN RETURN Name", False),
])
def test_dml_needs_the_privilege_of_its_kind_on_what_it_writes(sql, allowed):
    if allowed:
        check_statement(CATALOG, "writer", sql)
    else:
        refusal(lambda: check_statement(CATALOG, "writer", sql))


def test_reads_and_mutations_are_checked_per_column():
    check_read(CATALOG, "reader", "Singers", ["SingerId", "name"])
    assert "column Singers.Secret" in refusal(lambda: check_read(CATALOG, "reader", "Singers", ["Secret"]))
    check_mutations(CATALOG, "writer", [Mutation("insert", "Singers", ("SingerId", "Name")),
                                        Mutation("update", "Singers", ("SingerId", "Name")),
                                        Mutation("delete", "Singers")])
    for m in (Mutation("insert_or_update", "Singers", ("SingerId", "Secret")),
              Mutation("update", "Singers", ("SingerId", "Secret")), Mutation("delete", "Albums")):
        refusal(lambda m=m: check_mutations(CATALOG, "writer", [m]))
    check_read(CATALOG, "reader", "Missing", ["X"])  # an unknown table is the read's own NOT_FOUND
