"""Fine-grained access control through the official client: role DDL in both dialects, GetDatabaseDdl,
the refusals Spanner gives, the roles kept across a restart."""

from __future__ import annotations

import os

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect

from tests.conftest import emulator_lacks

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")

GOOGLE_DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Secret STRING(MAX)) PRIMARY KEY (SingerId)",
    "CREATE VIEW Names SQL SECURITY INVOKER AS SELECT Singers.SingerId, Singers.Name FROM Singers",
    "CREATE CHANGE STREAM Everything FOR ALL",
]
PG_DDL = [
    "CREATE TABLE singers (singerid bigint NOT NULL, name text, secret text, PRIMARY KEY (singerid))",
    "CREATE VIEW names SQL SECURITY INVOKER AS SELECT singers.singerid, singers.name FROM singers",
    "CREATE CHANGE STREAM everything FOR ALL",
]
#: The same grants in each dialect, and what GetDatabaseDdl prints for them.
GRANTS = {
    "google": [
        "CREATE ROLE reader", "CREATE ROLE lead",
        "GRANT SELECT(SingerId, Name), UPDATE(Name) ON TABLE Singers TO ROLE reader",
        "GRANT SELECT ON VIEW Names TO ROLE reader",
        "GRANT SELECT ON CHANGE STREAM Everything TO ROLE reader",
        "GRANT EXECUTE ON TABLE FUNCTION READ_Everything TO ROLE reader",
        "GRANT INSERT, DELETE ON TABLE Singers TO ROLE lead",
        "GRANT ROLE reader TO ROLE lead",
    ],
    "postgresql": [
        "CREATE ROLE reader", "CREATE ROLE lead",
        "GRANT SELECT(singerid, name), UPDATE(name) ON TABLE singers TO reader",
        "GRANT SELECT ON TABLE names TO reader",
        "GRANT SELECT ON CHANGE STREAM everything TO reader",
        "GRANT EXECUTE ON FUNCTION spanner.read_json_everything TO reader",
        "GRANT INSERT, DELETE ON TABLE singers TO lead",
        "GRANT reader TO lead",
    ],
}
PRINTED = {
    "google": [
        "CREATE ROLE reader", "CREATE ROLE lead",
        "GRANT SELECT(SingerId, Name) ON TABLE Singers TO ROLE reader",
        "GRANT UPDATE(Name) ON TABLE Singers TO ROLE reader",
        "GRANT SELECT ON VIEW Names TO ROLE reader",
        "GRANT SELECT ON CHANGE STREAM Everything TO ROLE reader",
        "GRANT EXECUTE ON TABLE FUNCTION READ_Everything TO ROLE reader",
        "GRANT INSERT ON TABLE Singers TO ROLE lead",
        "GRANT DELETE ON TABLE Singers TO ROLE lead",
        "GRANT ROLE reader TO ROLE lead",
    ],
    "postgresql": [
        "CREATE ROLE reader", "CREATE ROLE lead",
        "GRANT SELECT(singerid, name) ON TABLE singers TO reader",
        "GRANT UPDATE(name) ON TABLE singers TO reader",
        "GRANT SELECT ON TABLE names TO reader",
        "GRANT SELECT ON CHANGE STREAM everything TO reader",
        "GRANT EXECUTE ON FUNCTION spanner.read_json_everything TO reader",
        "GRANT INSERT ON TABLE singers TO lead",
        "GRANT DELETE ON TABLE singers TO lead",
        "GRANT reader TO lead",
    ],
}
DIALECTS = ["google", "postgresql"]


def make(make_database, dialect: str, grants: bool = True):
    """A database of ``dialect`` with Singers, a view, a change stream and (``grants``) the roles above."""
    if dialect == "google":
        db = make_database(GOOGLE_DDL)
    else:
        db = make_database(database_dialect=DatabaseDialect.POSTGRESQL)
        db.update_ddl(PG_DDL).result(120)
    if grants:
        db.update_ddl(GRANTS[dialect]).result(120)
    return db


def ddl_error(db, statement: str) -> exceptions.GoogleAPICallError:
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        db.update_ddl([statement]).result(60)
    return info.value


@pytest.mark.parametrize("dialect", DIALECTS)
def test_role_statements_apply(make_database, dialect):
    db = make(make_database, dialect)
    revoke = {"google": ["REVOKE ROLE reader FROM ROLE lead", "REVOKE INSERT, DELETE ON TABLE Singers FROM ROLE lead",
                         "DROP ROLE lead"],
              "postgresql": ["REVOKE reader FROM lead", "REVOKE INSERT, DELETE ON TABLE singers FROM lead",
                             "DROP ROLE lead"]}[dialect]
    db.update_ddl(revoke).result(120)


@emulator_lacks("roles in GetDatabaseDdl")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_get_database_ddl_prints_roles_and_grants_canonically(make_database, dialect):
    db = make(make_database, dialect)
    db.reload()
    ddl = list(db.ddl_statements)
    assert ddl[-len(PRINTED[dialect]):] == PRINTED[dialect]


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_role_with_privileges_or_members_cannot_be_dropped(make_database, dialect):
    db = make(make_database, dialect)
    err = ddl_error(db, "DROP ROLE reader")
    assert isinstance(err, exceptions.FailedPrecondition)
    assert "reader" in err.message and "privileges" in err.message and "members" in err.message


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_unknown_role_table_and_column_are_not_found_and_a_duplicate_role_already_exists(make_database, dialect):
    db = make(make_database, dialect)
    table, to = ("Singers", "TO ROLE") if dialect == "google" else ("singers", "TO")
    cases = [
        (f"GRANT SELECT ON TABLE {table} {to} nobody", exceptions.NotFound, "Role not found: nobody"),
        (f"GRANT SELECT ON TABLE Missing {to} reader", exceptions.NotFound,
         "Table not found: missing" if dialect == "postgresql" else "Table not found: Missing"),
        (f"GRANT SELECT(Nope) ON TABLE {table} {to} reader", exceptions.NotFound, "nope" if dialect == "postgresql" else "Nope"),
        ("DROP ROLE nobody", exceptions.NotFound, "Role not found: nobody"),
    ]
    for statement, kind, words in cases:
        err = ddl_error(db, statement)
        assert isinstance(err, kind), (statement, err)
        assert words in err.message, (statement, err.message)
    err = ddl_error(db, "CREATE ROLE reader")
    assert isinstance(err, exceptions.AlreadyExists) and "reader" in err.message


@emulator_lacks("fine-grained access control")
def test_system_roles_cannot_be_created_dropped_or_given_privileges(make_database):
    db = make(make_database, "google", grants=False)
    for statement in ("CREATE ROLE public", "DROP ROLE spanner_info_reader", "CREATE ROLE spanner_mine",
                      "GRANT SELECT ON TABLE Singers TO ROLE spanner_sys_reader"):
        assert isinstance(ddl_error(db, statement), exceptions.FailedPrecondition), statement
    db.update_ddl(["GRANT SELECT ON TABLE Singers TO ROLE public", "CREATE ROLE r",
                   "GRANT ROLE spanner_info_reader TO ROLE r"]).result(60)


@emulator_lacks("fine-grained access control")
def test_dropping_a_table_drops_its_grants(make_database):
    db = make_database(["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "CREATE ROLE r",
                        "GRANT SELECT ON TABLE T TO ROLE r"])
    db.update_ddl(["DROP TABLE T", "DROP ROLE r"]).result(60)
    db.reload()
    assert list(db.ddl_statements) == []


@pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_roles_and_grants_survive_a_restart(tmp_path, monkeypatch, dialect):
    from watcher.localspanner.server import LocalSpanner

    def instance(server, create: bool):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        inst = spanner.Client(project="roles-project").instance(
            "roles-instance", configuration_name="projects/roles-project/instanceConfigs/emulator-config", node_count=1)
        if create:
            inst.create().result(30)
        return inst

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        inst = instance(server, create=True)
        make(lambda ddl=(), **kw: _created(inst.database("kept", ddl_statements=list(ddl), **kw)), dialect)
    with LocalSpanner(data_dir=data_dir) as server:
        db = instance(server, create=False).database("kept")
        db.reload()
        assert list(db.ddl_statements)[-len(PRINTED[dialect]):] == PRINTED[dialect]


def _created(db):
    db.create().result(60)
    return db


def rows(db, sql: str) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql)]


@emulator_lacks("roles in INFORMATION_SCHEMA")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_information_schema_lists_roles_memberships_and_privileges(make_database, dialect):
    db = make(make_database, dialect)
    pg = dialect == "postgresql"
    yes, no, schema = ("YES", "NO", "public") if pg else (True, False, "")

    def name(n: str) -> str:
        return n.lower() if pg else n

    assert rows(db, "SELECT role_name, is_system FROM information_schema.roles ORDER BY role_name") == [
        ["lead", no], ["public", yes], ["reader", no], ["spanner_info_reader", yes], ["spanner_sys_reader", yes]]
    assert rows(db, "SELECT role_name, grantee FROM information_schema.role_grantees") == [["reader", "lead"]]
    assert rows(db, "SELECT privilege_type, table_schema, table_name, grantee FROM information_schema.table_privileges "
                    "ORDER BY table_name, privilege_type") == [
        ["SELECT", schema, name("Names"), "reader"], ["DELETE", schema, name("Singers"), "lead"],
        ["INSERT", schema, name("Singers"), "lead"]]
    granted = [["SELECT", name("Singers"), name("Name"), "reader"], ["SELECT", name("Singers"), name("SingerId"), "reader"],
               ["UPDATE", name("Singers"), name("Name"), "reader"]]
    # with what each column inherits from a grant on its table or view (PostgreSQL's column_privileges, and
    # role_column_grants in both dialects)
    inherited = [["INSERT", name("Singers"), name("Name"), "lead"], ["INSERT", name("Singers"), name("Secret"), "lead"],
                 ["INSERT", name("Singers"), name("SingerId"), "lead"], ["SELECT", name("Names"), name("Name"), "reader"],
                 granted[0], ["SELECT", name("Names"), name("SingerId"), "reader"], *granted[1:]]
    by_column = "ORDER BY privilege_type, column_name, table_name"
    assert rows(db, "SELECT privilege_type, table_name, column_name, grantee FROM information_schema.column_privileges "
                    + by_column) == (inherited if pg else granted)
    assert rows(db, "SELECT privilege_type, table_name, column_name, grantee FROM information_schema.role_column_grants "
                    + by_column) == inherited
    assert rows(db, "SELECT grantor, is_grantable FROM information_schema.role_table_grants LIMIT 1") == [[None, "NO"]]
    assert rows(db, "SELECT change_stream_schema, change_stream_name, privilege_type, grantee "
                    "FROM information_schema.change_stream_privileges") == [[schema, name("Everything"), "SELECT", "reader"]]
    function = "read_json_everything" if pg else "READ_Everything"
    assert rows(db, "SELECT specific_schema, specific_name, privilege_type, grantee "
                    "FROM information_schema.routine_privileges") == [["spanner" if pg else "", function, "EXECUTE", "reader"]]
    assert rows(db, "SELECT table_name, privilege_type FROM information_schema.role_table_grants "
                    "WHERE grantee = 'lead' ORDER BY privilege_type") == [[name("Singers"), "DELETE"], [name("Singers"), "INSERT"]]


# --- enforcement ---------------------------------------------------------------------------------------------

def as_role(instance, db, role: str):
    """The same database, its sessions created with ``role``."""
    return instance.database(db.database_id, database_role=role)


def seeded(make_database, dialect: str):
    db = make(make_database, dialect)
    table, cols = ("Singers", ("SingerId", "Name", "Secret")) if dialect == "google" else ("singers", ("singerid", "name", "secret"))
    with db.batch() as b:
        b.insert(table, cols, [(1, "Ann", "s1"), (2, "Bo", "s2")])
    return db


def denied(call) -> exceptions.PermissionDenied:
    with pytest.raises(exceptions.PermissionDenied) as info:
        call()
    return info.value


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_queries_need_select_on_the_columns_they_name(make_database, instance, dialect):
    db = seeded(make_database, dialect)
    reader = as_role(instance, db, "reader")
    pg = dialect == "postgresql"
    t, k, n, s = ("singers", "singerid", "name", "secret") if pg else ("Singers", "SingerId", "Name", "Secret")
    assert rows(reader, f"SELECT {k}, {n} FROM {t} ORDER BY {k}") == [[1, "Ann"], [2, "Bo"]]
    assert rows(reader, f"SELECT {n} FROM {t} WHERE {k} = 2") == [["Bo"]]
    for sql in (f"SELECT {s} FROM {t}", f"SELECT * FROM {t}", f"SELECT {n} FROM {t} WHERE {s} = 's1'"):
        err = denied(lambda sql=sql: rows(reader, sql))
        assert "Role reader does not have required privileges on table" in err.message and s in err.message, sql
    view = "names" if pg else "Names"
    assert rows(reader, f"SELECT {n} FROM {view} ORDER BY {n}") == [["Ann"], ["Bo"]]
    # lead is a member of reader, so it reads what reader reads; public is granted nothing
    assert rows(as_role(instance, db, "lead"), f"SELECT {n} FROM {t} ORDER BY {n}") == [["Ann"], ["Bo"]]
    err = denied(lambda: rows(as_role(instance, db, "public"), f"SELECT {n} FROM {t}"))
    assert "Role public" in err.message and "SELECT" in err.message


@emulator_lacks("fine-grained access control")
def test_reads_need_select_on_each_column_read(make_database, instance):
    db = seeded(make_database, "google")
    reader = as_role(instance, db, "reader")
    with reader.snapshot() as snap:
        assert sorted(snap.read("Singers", ("SingerId", "Name"), spanner.KeySet(all_=True))) == [[1, "Ann"], [2, "Bo"]]
    with reader.snapshot() as snap:
        err = denied(lambda: list(snap.read("Singers", ("SingerId", "Secret"), spanner.KeySet(all_=True))))
    assert "column Singers.Secret" in err.message and "SELECT" in err.message and "reader" in err.message


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_dml_and_mutations_need_insert_update_and_delete(make_database, instance, dialect):
    db = seeded(make_database, dialect)
    pg = dialect == "postgresql"
    t, cols = ("singers", ("singerid", "name", "secret")) if pg else ("Singers", ("SingerId", "Name", "Secret"))
    k, n = cols[0], cols[1]
    reader, lead = as_role(instance, db, "reader"), as_role(instance, db, "lead")
    reader.run_in_transaction(lambda tx: tx.execute_update(f"UPDATE {t} SET {n} = 'Cy' WHERE {k} = 1"))
    err = denied(lambda: reader.run_in_transaction(lambda tx: tx.execute_update(f"DELETE FROM {t} WHERE {k} = 1")))
    assert "DELETE" in err.message and "reader" in err.message
    err = denied(lambda: reader.run_in_transaction(
        lambda tx: tx.execute_update(f"INSERT INTO {t} ({k}, {n}) VALUES (5, 'x')")))
    assert "INSERT" in err.message
    # lead holds INSERT and DELETE itself and SELECT / UPDATE(name) through reader
    lead.run_in_transaction(lambda tx: tx.execute_update(f"INSERT INTO {t} ({k}, {n}) VALUES (5, 'x')"))
    lead.run_in_transaction(lambda tx: tx.execute_update(f"DELETE FROM {t} WHERE {k} = 5"))
    with lead.batch() as b:
        b.insert(t, (k, n), [(6, "y")])
    err = denied(lambda: _write(reader, lambda b: b.insert(t, (k, n), [(7, "z")])))
    assert "INSERT" in err.message
    _write(reader, lambda b: b.update(t, (k, n), [(6, "w")]))
    err = denied(lambda: _write(reader, lambda b: b.update(t, (k, cols[2]), [(6, "w")])))
    assert "UPDATE" in err.message and cols[2] in err.message
    err = denied(lambda: _write(lead, lambda b: b.insert_or_update(t, (k, cols[2]), [(6, "w")])))
    assert "UPDATE" in err.message
    _write(lead, lambda b: b.delete(t, spanner.KeySet(keys=[[6]])))
    with db.snapshot() as snap:
        assert sorted(snap.execute_sql(f"SELECT {k}, {n} FROM {t}")) == [[1, "Cy"], [2, "Bo"]]


def _write(db, fill) -> None:
    with db.batch() as b:
        fill(b)


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_change_stream_queries_need_select_on_the_stream_and_execute_on_its_function(make_database, instance, dialect):
    db = make(make_database, dialect)
    pg = dialect == "postgresql"
    sql = ("SELECT * FROM spanner.read_json_everything('2000-01-01T00:00:00Z', NULL, NULL, 1000, NULL)" if pg else
           "SELECT ChangeRecord FROM READ_Everything(start_timestamp => TIMESTAMP '2000-01-01T00:00:00Z', "
           "end_timestamp => NULL, partition_token => NULL, heartbeat_milliseconds => 1000)")
    public = as_role(instance, db, "public")
    err = denied(lambda: rows(public, sql))
    assert "change stream" in err.message and "SELECT" in err.message
    db.update_ddl(["GRANT SELECT ON CHANGE STREAM Everything TO ROLE public" if not pg else
                   "GRANT SELECT ON CHANGE STREAM everything TO public"]).result(60)
    err = denied(lambda: rows(public, sql))
    assert "EXECUTE" in err.message and ("read_json_everything" if pg else "READ_Everything") in err.message
    db.update_ddl(["GRANT EXECUTE ON TABLE FUNCTION READ_Everything TO ROLE public" if not pg else
                   "GRANT EXECUTE ON FUNCTION spanner.read_json_everything TO public"]).result(60)
    with pytest.raises(exceptions.GoogleAPICallError) as info:  # allowed now: refused only for its start, before the stream
        rows(public, sql)
    assert not isinstance(info.value, exceptions.PermissionDenied)


@emulator_lacks("fine-grained access control")
def test_a_session_with_a_role_the_database_lacks_is_refused(make_database, instance):
    db = make(make_database, "google")
    err = denied(lambda: rows(as_role(instance, db, "nobody"), "SELECT 1"))
    assert "nobody" in err.message and "CREATE ROLE" in err.message
    assert rows(db, "SELECT COUNT(*) FROM Singers") == [[0]]  # no role: the database's full access


@emulator_lacks("fine-grained access control")
def test_information_schema_is_open_and_spanner_sys_needs_its_reader_role(make_database, instance):
    db = make(make_database, "google")
    reader = as_role(instance, db, "reader")
    # open, and filtered: the role sees itself and public (test_role_schema has the rules)
    assert rows(reader, "SELECT role_name FROM INFORMATION_SCHEMA.ROLES ORDER BY role_name") == [["public"], ["reader"]]
    err = denied(lambda: rows(reader, "SELECT COUNT(*) FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE"))
    assert "SELECT" in err.message
    db.update_ddl(["GRANT ROLE spanner_sys_reader TO ROLE reader"]).result(60)
    rows(as_role(instance, db, "reader"), "SELECT COUNT(*) FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE")
    assert rows(reader, "SELECT COUNT(*) FROM INFORMATION_SCHEMA.ROLES") == [[3]]  # and now spanner_sys_reader


@emulator_lacks("ListDatabaseRoles")
def test_list_database_roles_names_the_system_roles_and_the_users(make_database):
    db = make(make_database, "google")
    assert [r.name.rsplit("/", 1)[-1] for r in db.list_database_roles()] == [
        "public", "spanner_info_reader", "spanner_sys_reader", "reader", "lead"]
    assert next(iter(db.list_database_roles())).name == f"{db.name}/databaseRoles/public"


@emulator_lacks("fine-grained access control")
def test_postgresql_grants_on_the_proto_bytes_read_function_and_refuses_usage_on_schemas(make_database):
    db = make(make_database, "postgresql")
    db.update_ddl(["GRANT EXECUTE ON FUNCTION spanner.read_proto_bytes_everything TO reader"]).result(60)
    err = ddl_error(db, "GRANT EXECUTE ON FUNCTION spanner.read_json_nothing TO reader")
    assert isinstance(err, exceptions.NotFound) and "read_json_nothing" in err.message
    err = ddl_error(db, "GRANT USAGE ON SCHEMA public TO reader")
    assert isinstance(err, exceptions.MethodNotImplemented) and "GRANT USAGE" in err.message


@emulator_lacks("fine-grained access control")
def test_a_batch_runs_up_to_the_statement_the_role_may_not_run(make_database, instance):
    db = seeded(make_database, "google")
    reader = as_role(instance, db, "reader")
    outcome = {}

    def work(tx):
        outcome["status"], outcome["counts"] = tx.batch_update([
            "UPDATE Singers SET Name = 'Cy' WHERE SingerId = 1", "DELETE FROM Singers WHERE SingerId = 2"])

    reader.run_in_transaction(work)  # the batch answers its error; the statements before it stand
    assert outcome["counts"] == [1] and outcome["status"].code == 7
    assert "DELETE" in outcome["status"].message
    assert rows(db, "SELECT SingerId, Name FROM Singers ORDER BY SingerId") == [[1, "Cy"], [2, "Bo"]]


#: Statements for reader, who holds SELECT(SingerId, Name) and UPDATE(Name) on Singers and SELECT on all of
#: Albums, whose Secret column shares its name with Singers'. Each column is checked on the table it resolves
#: to, as Spanner resolves names: (statement, the Singers column it is refused for, or None when allowed).
RESOLVED = [
    ("SELECT Name FROM Singers WHERE SingerId IN (SELECT SingerId FROM Albums WHERE Secret = 'x')", None),
    ("SELECT Name FROM Singers s WHERE EXISTS (SELECT 1 FROM Albums a WHERE a.SingerId = s.SingerId AND Secret = 'x')", None),
    ("SELECT Name AS Secret FROM Singers ORDER BY Secret", None),
    ("WITH s AS (SELECT SingerId, Name FROM Singers) SELECT * FROM s", None),
    ("SELECT Name, (SELECT COUNT(*) FROM (SELECT * FROM Albums) x) AS n FROM Singers", None),
    ("SELECT a.* FROM Albums a JOIN Singers s ON a.SingerId = s.SingerId", None),
    ("SELECT s.Name, a.Secret FROM Singers s JOIN Albums a ON a.SingerId = s.SingerId", None),
    ("UPDATE Singers SET Name = 'x' WHERE SingerId IN (SELECT SingerId FROM Albums WHERE Secret = 'y')", None),
    ("SELECT s.Secret FROM Singers s JOIN Albums a ON a.SingerId = s.SingerId", "Secret"),
    ("SELECT * FROM Singers s JOIN Albums a ON a.SingerId = s.SingerId", "Secret"),
    ("SELECT Name FROM Singers s WHERE EXISTS (SELECT 1 FROM Albums a WHERE a.SingerId = s.SingerId AND s.Secret = 'x')", "Secret"),
    ("WITH x AS (SELECT Secret FROM Singers) SELECT COUNT(*) AS n FROM x", "Secret"),
    ("SELECT Name FROM (SELECT Name, Secret FROM Singers) AS t", "Secret"),
    ("UPDATE Singers SET Name = Secret WHERE SingerId = 1", "Secret"),
    ("UPDATE Singers s SET Name = 'x' WHERE SingerId IN (SELECT a.SingerId FROM Albums a WHERE a.Secret = s.Secret)", "Secret"),
]


@emulator_lacks("fine-grained access control")
@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_column_is_checked_on_the_table_it_resolves_to(make_database, instance, dialect):
    db = seeded(make_database, dialect)
    pg = dialect == "postgresql"
    db.update_ddl([
        "CREATE TABLE albums (singerid bigint NOT NULL, albumid bigint NOT NULL, secret text, PRIMARY KEY (singerid, albumid))"
        if pg else "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Secret STRING(MAX)) "
                   "PRIMARY KEY (SingerId, AlbumId)",
        "GRANT SELECT ON TABLE albums TO reader" if pg else "GRANT SELECT ON TABLE Albums TO ROLE reader",
    ]).result(120)
    reader = as_role(instance, db, "reader")

    def run(sql: str) -> None:
        if sql.upper().startswith("UPDATE"):
            reader.run_in_transaction(lambda tx: tx.execute_update(sql))
        else:
            rows(reader, sql)

    for sql, refused_for in RESOLVED:
        sql = sql.lower() if pg else sql
        if refused_for is None:
            run(sql)
        else:
            err = denied(lambda sql=sql: run(sql))
            column = refused_for.lower() if pg else refused_for
            assert f"{'singers' if pg else 'Singers'}.{column}" in err.message or column in err.message, (sql, err.message)
            assert "reader" in err.message, sql
