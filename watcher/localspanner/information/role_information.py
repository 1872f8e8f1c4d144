"""The INFORMATION_SCHEMA views of fine-grained access control, computed from a catalog.

ROLES lists the system roles then the user's (IS_SYSTEM); ROLE_GRANTEES each membership;
TABLE_PRIVILEGES the grants on whole tables and views, COLUMN_PRIVILEGES those on columns,
CHANGE_STREAM_PRIVILEGES the SELECT grants on change streams and ROUTINE_PRIVILEGES the
EXECUTE grants on their read functions. The ROLE_..._GRANTS views show the same grants with
GRANTOR (NULL) and IS_GRANTABLE ('NO'); ROLE_COLUMN_GRANTS, and a PostgreSQL database's
COLUMN_PRIVILEGES, also hold the SELECT, INSERT and UPDATE each column inherits from a grant on its
whole table or view. Columns are in the order of Spanner's GoogleSQL views; a PostgreSQL database has
PostgreSQL's columns instead (:data:`PG_VIEW_COLUMNS`): TABLE_PRIVILEGES and COLUMN_PRIVILEGES begin with
GRANTOR and GRANTEE and end with IS_GRANTABLE, and ENABLED_ROLES and APPLICABLE_ROLES list the roles and
memberships as PostgreSQL does. These are the rows a
principal with database-level access sees; ``role_visibility`` keeps those a session's database
role sees. Rows are in stored form (``information_schema.py``).

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "CREATE ROLE r",
    ...                                       "GRANT SELECT ON TABLE T TO ROLE r", "GRANT INSERT(K) ON TABLE T TO ROLE r"])
    >>> list(table_privileges(cat)), list(column_privileges(cat))
    ([('', '', 'T', 'SELECT', 'r')], [('', '', 'T', 'K', 'INSERT', 'r')])
    >>> list(role_column_grants(cat))
    [(None, 'r', '', '', 'T', 'K', 'INSERT', 'NO'), (None, 'r', '', '', 'T', 'K', 'SELECT', 'NO')]
    >>> list(pg_table_privileges(cat))
    [(None, 'r', '', '', 'T', 'SELECT', 'NO', None)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..schema import roles
from ..schema.catalog import Catalog
from ..schema.roles import Grant

_TABLE = "TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX)"
_STREAM = ("CHANGE_STREAM_CATALOG STRING(MAX), CHANGE_STREAM_SCHEMA STRING(MAX), CHANGE_STREAM_NAME STRING(MAX), "
           "PRIVILEGE_TYPE STRING(MAX), GRANTEE STRING(MAX)")
_ROUTINE = "SPECIFIC_CATALOG STRING(MAX), SPECIFIC_SCHEMA STRING(MAX), SPECIFIC_NAME STRING(MAX)"
_GRANTED = "GRANTOR STRING(MAX), GRANTEE STRING(MAX)"
_TYPE = "PRIVILEGE_TYPE STRING(MAX)"
_NOT_GRANTABLE = "NO"

VIEW_COLUMNS = {
    "ROLES": "ROLE_NAME STRING(MAX), IS_SYSTEM BOOL",
    "ROLE_GRANTEES": "ROLE_NAME STRING(MAX), GRANTEE STRING(MAX)",
    "TABLE_PRIVILEGES": f"{_TABLE}, {_TYPE}, GRANTEE STRING(MAX)",
    "COLUMN_PRIVILEGES": f"{_TABLE}, COLUMN_NAME STRING(MAX), {_TYPE}, GRANTEE STRING(MAX)",
    "CHANGE_STREAM_PRIVILEGES": _STREAM,
    "ROUTINE_PRIVILEGES": f"{_ROUTINE}, {_TYPE}, GRANTEE STRING(MAX)",
    "ROLE_TABLE_GRANTS": f"{_GRANTED}, {_TABLE}, {_TYPE}, IS_GRANTABLE STRING(MAX)",
    "ROLE_COLUMN_GRANTS": f"{_GRANTED}, {_TABLE}, COLUMN_NAME STRING(MAX), {_TYPE}, IS_GRANTABLE STRING(MAX)",
    "ROLE_CHANGE_STREAM_GRANTS": _STREAM,
    "ROLE_ROUTINE_GRANTS": f"{_GRANTED}, {_ROUTINE}, {_TYPE}, IS_GRANTABLE STRING(MAX)",
}


#: A PostgreSQL database's privilege and role views, as PostgreSQL's information_schema has them
#: (https://cloud.google.com/spanner/docs/information-schema-pg); the other views keep :data:`VIEW_COLUMNS`.
PG_VIEW_COLUMNS = {
    "TABLE_PRIVILEGES": f"{_GRANTED}, {_TABLE}, {_TYPE}, IS_GRANTABLE STRING(MAX), WITH_HIERARCHY STRING(MAX)",
    "COLUMN_PRIVILEGES": f"{_GRANTED}, {_TABLE}, COLUMN_NAME STRING(MAX), {_TYPE}, IS_GRANTABLE STRING(MAX)",
    "ENABLED_ROLES": "ROLE_NAME STRING(MAX)",
    "APPLICABLE_ROLES": "GRANTEE STRING(MAX), ROLE_NAME STRING(MAX), IS_GRANTABLE STRING(MAX)",
}


def role_rows(catalog: Catalog) -> Iterator[tuple]:
    """ROLES: the system roles, then the user's.

    >>> list(role_rows(Catalog(roles=("r",))))[-1]
    ('r', 0)
    """
    for name in roles.SYSTEM_ROLES:
        yield (name, 1)
    for name in catalog.roles:
        yield (name, 0)


def role_grantees(catalog: Catalog) -> Iterator[tuple]:
    for m in catalog.memberships:
        yield (m.role, m.grantee)


def table_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in _table_grants(catalog):
        yield ("", "", g.name, g.privilege, g.grantee)


def column_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in _column_grants(catalog, inherited=False):
        yield ("", "", g.name, g.column, g.privilege, g.grantee)


def change_stream_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in catalog.grants:
        if g.kind == roles.CHANGE_STREAM:
            yield ("", "", g.name, g.privilege, g.grantee)


def routine_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in _routine_grants(catalog):
        yield ("", "", g.name, g.privilege, g.grantee)


def role_table_grants(catalog: Catalog) -> Iterator[tuple]:
    for g in _table_grants(catalog):
        yield (None, g.grantee, "", "", g.name, g.privilege, _NOT_GRANTABLE)


def role_column_grants(catalog: Catalog) -> Iterator[tuple]:
    for g in _column_grants(catalog, inherited=True):
        yield (None, g.grantee, "", "", g.name, g.column, g.privilege, _NOT_GRANTABLE)


def role_routine_grants(catalog: Catalog) -> Iterator[tuple]:
    for g in _routine_grants(catalog):
        yield (None, g.grantee, "", "", g.name, g.privilege, _NOT_GRANTABLE)


def pg_table_privileges(catalog: Catalog) -> Iterator[tuple]:
    """PostgreSQL's TABLE_PRIVILEGES: GRANTOR unknown (NULL), no grant option, no hierarchy (NULL)."""
    for g in _table_grants(catalog):
        yield (None, g.grantee, "", "", g.name, g.privilege, _NOT_GRANTABLE, None)


def pg_column_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in _column_grants(catalog, inherited=True):
        yield (None, g.grantee, "", "", g.name, g.column, g.privilege, _NOT_GRANTABLE)


def enabled_roles(catalog: Catalog) -> Iterator[tuple]:
    """ENABLED_ROLES: every role (a session with a role sees those it holds, ``role_visibility``).

    >>> list(enabled_roles(Catalog(roles=("r",))))[-1]
    ('r',)
    """
    for name, _ in role_rows(catalog):
        yield (name,)


def applicable_roles(catalog: Catalog) -> Iterator[tuple]:
    """APPLICABLE_ROLES: each membership as (grantee, role), without admin option."""
    for m in catalog.memberships:
        yield (m.grantee, m.role, _NOT_GRANTABLE)


def _table_grants(catalog: Catalog) -> Iterator[Grant]:
    return (g for g in catalog.grants if g.kind in (roles.TABLE, roles.VIEW) and g.column is None)


def _routine_grants(catalog: Catalog) -> Iterator[Grant]:
    return (g for g in catalog.grants if g.kind == roles.TABLE_FUNCTION)


def _column_grants(catalog: Catalog, *, inherited: bool) -> list[Grant]:
    """The column grants; ``inherited`` adds, per column, the SELECT, INSERT and UPDATE granted on its whole
    table or view (once, when a column grant already says the same)."""
    out = [g for g in catalog.grants if g.column is not None]
    if not inherited:
        return out
    seen = {(g.privilege, g.name.lower(), (g.column or "").lower(), g.grantee.lower()) for g in out}
    for g in _table_grants(catalog):
        if g.privilege not in roles.COLUMN_PRIVILEGES:
            continue
        for column in _column_names(catalog, g.name):
            key = (g.privilege, g.name.lower(), column.lower(), g.grantee.lower())
            if key not in seen:
                seen.add(key)
                out.append(Grant(g.privilege, g.kind, g.name, g.grantee, column))
    return out


def _column_names(catalog: Catalog, name: str) -> list[str]:
    table, view = catalog.table(name), catalog.view(name)
    if table is not None:
        return [c.name for c in table.columns]
    return [c.name for c in view.columns] if view is not None else []


PRODUCERS: dict[str, Callable[[Catalog], Iterator[tuple]]] = {
    "ROLES": role_rows,
    "ROLE_GRANTEES": role_grantees,
    "TABLE_PRIVILEGES": table_privileges,
    "COLUMN_PRIVILEGES": column_privileges,
    "CHANGE_STREAM_PRIVILEGES": change_stream_privileges,
    "ROUTINE_PRIVILEGES": routine_privileges,
    "ROLE_TABLE_GRANTS": role_table_grants,
    "ROLE_COLUMN_GRANTS": role_column_grants,
    "ROLE_CHANGE_STREAM_GRANTS": change_stream_privileges,
    "ROLE_ROUTINE_GRANTS": role_routine_grants,
}
assert PRODUCERS.keys() == VIEW_COLUMNS.keys()

PG_PRODUCERS: dict[str, Callable[[Catalog], Iterator[tuple]]] = {
    "TABLE_PRIVILEGES": pg_table_privileges,
    "COLUMN_PRIVILEGES": pg_column_privileges,
    "ENABLED_ROLES": enabled_roles,
    "APPLICABLE_ROLES": applicable_roles,
}
assert PG_PRODUCERS.keys() == PG_VIEW_COLUMNS.keys()
