"""INFORMATION_SCHEMA as a database role sees it, through the official client in both dialects: only the
tables, columns, indexes, views, change streams, roles and privileges the role (with the roles it is a
member of, and ``public``) may see; every row for a session without a role and for members of
``spanner_info_reader``."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud.spanner_admin_database_v1 import DatabaseDialect

from tests.conftest import emulator_lacks

GOOGLE_DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Secret STRING(MAX)) PRIMARY KEY (SingerId)",
    "CREATE INDEX SingersByName ON Singers (Name)",
    "CREATE INDEX SingersBySecret ON Singers (Secret)",
    "CREATE TABLE Albums (AlbumId INT64 NOT NULL, Title STRING(MAX)) PRIMARY KEY (AlbumId)",
    "CREATE VIEW Names SQL SECURITY INVOKER AS SELECT Singers.SingerId, Singers.Name FROM Singers",
    "CREATE CHANGE STREAM SingerChanges FOR Singers",
    "CREATE CHANGE STREAM AlbumChanges FOR Albums",
    "CREATE ROLE reader", "CREATE ROLE lead", "CREATE ROLE nobody", "CREATE ROLE auditor",
    "GRANT SELECT(SingerId, Name) ON TABLE Singers TO ROLE reader",
    "GRANT SELECT ON CHANGE STREAM SingerChanges TO ROLE reader",
    "GRANT ROLE reader TO ROLE lead",
    "GRANT SELECT ON VIEW Names TO ROLE lead",
    "GRANT UPDATE(Secret) ON TABLE Singers TO ROLE lead",
    "GRANT ROLE spanner_info_reader TO ROLE auditor",
]
PG_DDL = [
    "CREATE TABLE singers (singerid bigint NOT NULL, name text, secret text, PRIMARY KEY (singerid))",
    "CREATE INDEX singersbyname ON singers (name)",
    "CREATE INDEX singersbysecret ON singers (secret)",
    "CREATE TABLE albums (albumid bigint NOT NULL, title text, PRIMARY KEY (albumid))",
    "CREATE VIEW names SQL SECURITY INVOKER AS SELECT singers.singerid, singers.name FROM singers",
    "CREATE CHANGE STREAM singerchanges FOR singers",
    "CREATE CHANGE STREAM albumchanges FOR albums",
    "CREATE ROLE reader", "CREATE ROLE lead", "CREATE ROLE nobody", "CREATE ROLE auditor",
    "GRANT SELECT(singerid, name) ON TABLE singers TO reader",
    "GRANT SELECT ON CHANGE STREAM singerchanges TO reader",
    "GRANT reader TO lead",
    "GRANT SELECT ON TABLE names TO lead",
    "GRANT UPDATE(secret) ON TABLE singers TO lead",
    "GRANT spanner_info_reader TO auditor",
]
DIALECTS = ["google", "postgresql"]


class Schema:
    """A database of ``dialect`` with the objects and roles above, queried as one role or another."""

    def __init__(self, make_database, instance, dialect: str) -> None:
        self.pg = dialect == "postgresql"
        if self.pg:
            self.db = make_database(database_dialect=DatabaseDialect.POSTGRESQL)
            self.db.update_ddl(PG_DDL).result(120)
        else:
            self.db = make_database(GOOGLE_DDL)
        self.instance = instance
        self.schema = "public" if self.pg else ""

    def name(self, n: str) -> str:
        return n.lower() if self.pg else n

    def names(self, *ns: str) -> list[list[str]]:
        return [[self.name(n)] for n in ns]

    def rows(self, role: str | None, sql: str) -> list[list]:
        db = self.instance.database(self.db.database_id, database_role=role) if role else self.db
        with db.snapshot() as snap:
            return [list(r) for r in snap.execute_sql(sql.replace("$schema", f"'{self.schema}'"))]

    def fields(self, view: str) -> list[str]:
        with self.db.snapshot() as snap:
            result = snap.execute_sql(f"SELECT * FROM information_schema.{view}")
            list(result)
            return [f.name for f in result.fields]

    def tables(self, role: str | None) -> list[list]:
        return self.rows(role, "SELECT table_name FROM information_schema.tables WHERE table_schema = $schema "
                               "ORDER BY table_name")

    def columns(self, role: str | None) -> list[list]:
        return self.rows(role, "SELECT table_name, column_name FROM information_schema.columns "
                               "WHERE table_schema = $schema ORDER BY table_name, column_name")


@pytest.fixture(params=DIALECTS)
def schema(request, make_database, instance) -> Schema:
    return Schema(make_database, instance, request.param)


@pytest.fixture
def pg_schema(make_database, instance) -> Schema:
    return Schema(make_database, instance, "postgresql")


@emulator_lacks("fine-grained access control")
def test_a_role_sees_the_table_it_may_read_and_only_its_granted_columns(schema):
    n = schema.name
    assert schema.tables("reader") == schema.names("Singers")
    assert schema.columns("reader") == [[n("Singers"), n("Name")], [n("Singers"), n("SingerId")]]
    assert schema.rows("reader", "SELECT table_name FROM information_schema.views") == []
    assert schema.tables("nobody") == [] and schema.columns("nobody") == []


@emulator_lacks("fine-grained access control")
def test_without_a_role_or_as_a_member_of_spanner_info_reader_every_row_shows(schema):
    every = schema.names("Albums", "Names", "Singers")
    assert schema.tables(None) == every and schema.tables("auditor") == every
    assert schema.columns("auditor") == schema.columns(None)
    assert len(schema.columns(None)) == 2 + 2 + 3
    assert schema.rows("auditor", "SELECT COUNT(*) FROM information_schema.roles") == [[7]]


@emulator_lacks("fine-grained access control")
def test_inherited_roles_count(schema):
    n = schema.name
    assert schema.tables("lead") == schema.names("Names", "Singers")  # reader's table, its own view
    assert schema.rows("lead", "SELECT table_name FROM information_schema.views") == schema.names("Names")
    assert [n("Secret")] in [[c] for _, c in schema.columns("lead")]  # its own UPDATE(Secret)
    assert [n("Names"), n("Name")] in schema.columns("lead")  # a view's columns with SELECT on the view


@emulator_lacks("fine-grained access control")
def test_what_public_is_granted_every_role_sees(schema):
    grant = "GRANT SELECT ON TABLE albums TO public" if schema.pg else "GRANT SELECT ON TABLE Albums TO ROLE public"
    schema.db.update_ddl([grant]).result(60)
    assert schema.tables("nobody") == schema.names("Albums")
    assert schema.tables("reader") == schema.names("Albums", "Singers")
    assert [c for t, c in schema.columns("nobody")] == [schema.name("AlbumId"), schema.name("Title")]


@emulator_lacks("fine-grained access control")
def test_a_role_sees_the_change_streams_it_may_read(schema):
    n = schema.name
    streams = "SELECT change_stream_name FROM information_schema.change_streams ORDER BY change_stream_name"
    assert schema.rows("reader", streams) == schema.names("SingerChanges")
    assert schema.rows(None, streams) == schema.names("AlbumChanges", "SingerChanges")
    assert schema.rows("reader", "SELECT change_stream_name, table_name FROM information_schema.change_stream_tables") == [
        [n("SingerChanges"), n("Singers")]]
    assert schema.rows("nobody", streams) == []
    schema.db.update_ddl([f"GRANT SELECT ON CHANGE STREAM {n('AlbumChanges')} TO {'' if schema.pg else 'ROLE '}nobody"]
                         ).result(60)
    assert schema.rows("nobody", streams) == schema.names("AlbumChanges")


@emulator_lacks("fine-grained access control")
def test_the_role_views_show_the_roles_memberships_and_grants_of_the_role(schema):
    n = schema.name
    roles = "SELECT role_name FROM information_schema.roles ORDER BY role_name"
    assert schema.rows("reader", roles) == [["public"], ["reader"]]
    assert schema.rows("lead", roles) == [["lead"], ["public"], ["reader"]]
    grantees = "SELECT role_name, grantee FROM information_schema.role_grantees ORDER BY role_name, grantee"
    assert schema.rows("lead", grantees) == [["reader", "lead"]]
    assert schema.rows("reader", grantees) == []
    column_grants = ("SELECT table_name, column_name, privilege_type, grantee FROM information_schema.role_column_grants "
                     "ORDER BY column_name, privilege_type, grantee DESC")
    assert schema.rows("reader", column_grants) == [
        [n("Singers"), n("Name"), "SELECT", "reader"], [n("Singers"), n("SingerId"), "SELECT", "reader"]]
    assert schema.rows("lead", column_grants) == [  # with the SELECT the view's columns inherit
        [n("Singers"), n("Name"), "SELECT", "reader"], [n("Names"), n("Name"), "SELECT", "lead"],
        [n("Singers"), n("Secret"), "UPDATE", "lead"], [n("Singers"), n("SingerId"), "SELECT", "reader"],
        [n("Names"), n("SingerId"), "SELECT", "lead"]]
    stream_grants = "SELECT change_stream_name, grantee FROM information_schema.change_stream_privileges"
    assert schema.rows("lead", stream_grants) == [[n("SingerChanges"), "reader"]]
    assert schema.rows("nobody", stream_grants) == []


_GOOGLE_PRIVILEGE_COLUMNS = {
    "table_privileges": ["TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "PRIVILEGE_TYPE", "GRANTEE"],
    "column_privileges": ["TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "PRIVILEGE_TYPE", "GRANTEE"],
}
_PG_PRIVILEGE_COLUMNS = {
    "table_privileges": ["grantor", "grantee", "table_catalog", "table_schema", "table_name", "privilege_type",
                         "is_grantable", "with_hierarchy"],
    "column_privileges": ["grantor", "grantee", "table_catalog", "table_schema", "table_name", "column_name",
                          "privilege_type", "is_grantable"],
    "enabled_roles": ["role_name"],
    "applicable_roles": ["grantee", "role_name", "is_grantable"],
}


@emulator_lacks("fine-grained access control")
def test_the_privilege_views_have_each_dialects_columns(schema):
    expected = _PG_PRIVILEGE_COLUMNS if schema.pg else _GOOGLE_PRIVILEGE_COLUMNS
    assert {view: schema.fields(view) for view in expected} == expected
    if not schema.pg:  # PostgreSQL's role views are not GoogleSQL's
        with pytest.raises(exceptions.InvalidArgument, match="(?i)enabled_roles"):
            schema.fields("enabled_roles")


@emulator_lacks("fine-grained access control")
def test_postgresql_privilege_views_show_grantee_grantor_and_grant_option(pg_schema):
    schema = pg_schema
    sql = ("SELECT grantor, grantee, table_schema, table_name, privilege_type, is_grantable, with_hierarchy "
           "FROM information_schema.table_privileges")
    assert schema.rows(None, sql) == [[None, "lead", "public", "names", "SELECT", "NO", None]]
    assert schema.rows("reader", sql) == []
    columns = ("SELECT grantee, table_name, column_name, privilege_type, is_grantable "
               "FROM information_schema.column_privileges ORDER BY grantee, column_name")
    assert schema.rows("lead", columns) == [  # the view's columns inherit the SELECT on it
        ["lead", "names", "name", "SELECT", "NO"], ["lead", "singers", "secret", "UPDATE", "NO"],
        ["lead", "names", "singerid", "SELECT", "NO"],
        ["reader", "singers", "name", "SELECT", "NO"], ["reader", "singers", "singerid", "SELECT", "NO"]]


@emulator_lacks("fine-grained access control")
def test_postgresql_enabled_and_applicable_roles_show_the_roles_of_the_role(pg_schema):
    schema = pg_schema
    enabled = "SELECT role_name FROM information_schema.enabled_roles ORDER BY role_name"
    assert schema.rows("lead", enabled) == [["lead"], ["public"], ["reader"]]
    assert schema.rows("nobody", enabled) == [["nobody"], ["public"]]
    assert len(schema.rows(None, enabled)) == len(schema.rows("auditor", enabled)) == 7
    applicable = "SELECT grantee, role_name, is_grantable FROM information_schema.applicable_roles ORDER BY grantee"
    assert schema.rows("lead", applicable) == [["lead", "reader", "NO"]]
    assert schema.rows("nobody", applicable) == []
    assert schema.rows(None, applicable) == [["auditor", "spanner_info_reader", "NO"], ["lead", "reader", "NO"]]


_ROUTINE_COLUMNS = {
    "routines": ["SPECIFIC_CATALOG", "SPECIFIC_SCHEMA", "SPECIFIC_NAME", "ROUTINE_CATALOG", "ROUTINE_SCHEMA",
                 "ROUTINE_NAME", "ROUTINE_TYPE", "DATA_TYPE", "ROUTINE_BODY", "ROUTINE_DEFINITION", "SECURITY_TYPE",
                 "SPANNER_TYPE"],
    "routine_options": ["SPECIFIC_CATALOG", "SPECIFIC_SCHEMA", "SPECIFIC_NAME", "OPTION_NAME", "OPTION_TYPE",
                        "OPTION_VALUE"],
    "parameters": ["SPECIFIC_CATALOG", "SPECIFIC_SCHEMA", "SPECIFIC_NAME", "ORDINAL_POSITION", "PARAMETER_NAME",
                   "DATA_TYPE", "PARAMETER_DEFAULT", "SPANNER_TYPE"],
}


@emulator_lacks("fine-grained access control")
def test_routines_and_parameters_list_the_read_functions_a_role_may_execute(schema):
    names = {view: [c.lower() if schema.pg else c for c in columns] for view, columns in _ROUTINE_COLUMNS.items()}
    assert {view: schema.fields(view) for view in names} == names
    routines = ("SELECT specific_schema, routine_name, routine_type, routine_body, security_type "
                "FROM information_schema.routines ORDER BY routine_name")
    if schema.pg:
        function, grant = "read_json_singerchanges", "GRANT EXECUTE ON FUNCTION spanner.read_json_singerchanges TO reader"
        every = ["read_json_albumchanges", function, "read_proto_bytes_albumchanges", "read_proto_bytes_singerchanges"]
    else:
        function, grant = "READ_SingerChanges", "GRANT EXECUTE ON TABLE FUNCTION READ_SingerChanges TO ROLE reader"
        every = ["READ_AlbumChanges", function]
    fn_schema = "spanner" if schema.pg else ""
    assert schema.rows(None, routines) == [[fn_schema, n, "FUNCTION", "EXTERNAL", "INVOKER"] for n in every]
    params = ("SELECT specific_name, ordinal_position, parameter_name, spanner_type FROM information_schema.parameters "
              "ORDER BY specific_name, ordinal_position")
    timestamp, text, bigint, options = (("timestamp with time zone", "character varying", "bigint", "character varying[]")
                                        if schema.pg else ("TIMESTAMP", "STRING(MAX)", "INT64", "ARRAY<STRING(MAX)>"))
    assert [r for r in schema.rows(None, params) if r[0] == function] == [
        [function, 1, "start_timestamp", timestamp], [function, 2, "end_timestamp", timestamp],
        [function, 3, "partition_token", text], [function, 4, "heartbeat_milliseconds", bigint],
        [function, 5, "read_options", options]]
    assert schema.rows("reader", routines) == [] and schema.rows("reader", params) == []
    assert schema.rows(None, "SELECT COUNT(*) FROM information_schema.routine_options") == [[0]]
    schema.db.update_ddl([grant]).result(60)
    assert schema.rows("reader", routines) == [[fn_schema, function, "FUNCTION", "EXTERNAL", "INVOKER"]]
    assert [r[0] for r in schema.rows("lead", params)] == [function] * 5  # through its membership in reader
    assert schema.rows("nobody", routines) == []


@emulator_lacks("fine-grained access control")
def test_column_privileges_follow_each_dialects_rule(schema):
    """GoogleSQL shows the privileges on the columns the role sees; PostgreSQL those granted to its roles."""
    schema.db.update_ddl(["GRANT SELECT(name) ON TABLE singers TO nobody" if schema.pg else
                          "GRANT SELECT(Name) ON TABLE Singers TO ROLE nobody"]).result(60)
    privileges = ("SELECT column_name, grantee FROM information_schema.column_privileges "
                  "ORDER BY column_name, grantee")
    name = schema.name("Name")
    if schema.pg:
        assert schema.rows("nobody", privileges) == [[name, "nobody"]]
    else:  # every grant on the Name column, reader's too
        assert schema.rows("nobody", privileges) == [[name, "nobody"], [name, "reader"]]


@emulator_lacks("fine-grained access control")
def test_googlesql_indexes_show_when_the_role_holds_a_privilege_on_every_column(schema):
    n = schema.name
    indexes = (f"SELECT index_name FROM information_schema.indexes WHERE table_name = '{n('Singers')}' "
               "ORDER BY index_name")
    every = [["PRIMARY_KEY"], [n("SingersByName")], [n("SingersBySecret")]]
    if schema.pg:  # PostgreSQL's indexes, index_columns and key_column_usage are not filtered
        assert schema.rows("reader", indexes) == every
        assert schema.rows("nobody", "SELECT COUNT(*) FROM information_schema.key_column_usage") == [[2]]
        return
    assert schema.rows("reader", indexes) == every[:2]
    assert schema.rows("lead", indexes) == every
    assert schema.rows("reader", "SELECT DISTINCT index_name FROM information_schema.index_columns "
                                 "WHERE table_name = 'Singers' ORDER BY index_name") == every[:2]
    assert schema.rows("nobody", "SELECT COUNT(*) FROM information_schema.key_column_usage") == [[0]]
    assert schema.rows("reader", "SELECT COUNT(*) FROM information_schema.key_column_usage") == [[1]]


@emulator_lacks("fine-grained access control")
def test_postgresql_shows_the_constraints_of_the_tables_a_role_may_write(schema):
    constraints = "SELECT DISTINCT table_name FROM information_schema.table_constraints ORDER BY table_name"
    if not schema.pg:  # GoogleSQL does not filter constraints
        assert schema.rows("nobody", constraints) == schema.rows(None, constraints) == schema.names("Albums", "Singers")
        return
    assert schema.rows("reader", constraints) == []  # SELECT is not enough
    assert schema.rows("lead", constraints) == schema.names("singers")  # UPDATE(secret) is


@emulator_lacks("fine-grained access control")
def test_googlesql_sequences_show_to_no_role_for_none_is_granted_usage(schema):
    schema.db.update_ddl(["CREATE SEQUENCE ids BIT_REVERSED_POSITIVE" if schema.pg else
                          "CREATE SEQUENCE Ids OPTIONS (sequence_kind = 'bit_reversed_positive')"]).result(60)
    sequences = "SELECT COUNT(*) FROM information_schema.sequences"
    assert schema.rows(None, sequences) == schema.rows("auditor", sequences) == [[1]]
    assert schema.rows("lead", sequences) == [[1 if schema.pg else 0]]  # PostgreSQL does not filter them


@emulator_lacks("fine-grained access control")
def test_dml_reads_information_schema_as_its_role_sees_it(schema):
    n = schema.name
    schema.db.update_ddl([f"GRANT INSERT ON TABLE {n('Albums')} TO {'' if schema.pg else 'ROLE '}nobody"]).result(60)
    writer = schema.instance.database(schema.db.database_id, database_role="nobody")
    insert = (f"INSERT INTO {n('Albums')} ({n('AlbumId')}, {n('Title')}) SELECT COUNT(*), 'tables' "
              f"FROM information_schema.tables WHERE table_schema = '{schema.schema}'")
    writer.run_in_transaction(lambda tx: tx.execute_update(insert))
    writer.run_in_transaction(lambda tx: tx.batch_update([insert.replace("COUNT(*)", "COUNT(*) + 10")]))
    assert schema.rows(None, f"SELECT {n('AlbumId')} FROM {n('Albums')} ORDER BY 1") == [[1], [11]]  # Albums alone
