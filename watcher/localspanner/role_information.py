"""The INFORMATION_SCHEMA views of fine-grained access control, computed from a catalog.

ROLES lists the system roles then the user's (IS_SYSTEM); ROLE_GRANTEES each membership;
TABLE_PRIVILEGES the grants on whole tables and views, COLUMN_PRIVILEGES those on columns,
CHANGE_STREAM_PRIVILEGES the SELECT grants on change streams and ROUTINE_PRIVILEGES the
EXECUTE grants on their read functions. The ROLE_..._GRANTS views show the same rows. These are
the rows a principal with database-level access sees; ``role_visibility`` keeps those a session's
database role sees. Rows are in stored form (``information_schema.py``).

Example:
    >>> from watcher.localspanner.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "CREATE ROLE r",
    ...                                       "GRANT SELECT ON TABLE T TO ROLE r", "GRANT INSERT(K) ON TABLE T TO ROLE r"])
    >>> list(table_privileges(cat)), list(column_privileges(cat))
    ([('SELECT', '', '', 'T', 'r')], [('INSERT', '', '', 'T', 'K', 'r')])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from . import roles
from .catalog import Catalog

_TABLE = "PRIVILEGE_TYPE STRING(MAX), TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX)"
_STREAM = ("CHANGE_STREAM_CATALOG STRING(MAX), CHANGE_STREAM_SCHEMA STRING(MAX), CHANGE_STREAM_NAME STRING(MAX), "
           "PRIVILEGE_TYPE STRING(MAX), GRANTEE STRING(MAX)")
_ROUTINE = ("SPECIFIC_CATALOG STRING(MAX), SPECIFIC_SCHEMA STRING(MAX), SPECIFIC_NAME STRING(MAX), "
            "PRIVILEGE_TYPE STRING(MAX), GRANTEE STRING(MAX)")

VIEW_COLUMNS = {
    "ROLES": "ROLE_NAME STRING(MAX), IS_SYSTEM BOOL",
    "ROLE_GRANTEES": "ROLE_NAME STRING(MAX), GRANTEE STRING(MAX)",
    "TABLE_PRIVILEGES": f"{_TABLE}, GRANTEE STRING(MAX)",
    "COLUMN_PRIVILEGES": f"{_TABLE}, COLUMN_NAME STRING(MAX), GRANTEE STRING(MAX)",
    "CHANGE_STREAM_PRIVILEGES": _STREAM,
    "ROUTINE_PRIVILEGES": _ROUTINE,
    "ROLE_TABLE_GRANTS": f"{_TABLE}, GRANTEE STRING(MAX)",
    "ROLE_COLUMN_GRANTS": f"{_TABLE}, COLUMN_NAME STRING(MAX), GRANTEE STRING(MAX)",
    "ROLE_CHANGE_STREAM_GRANTS": _STREAM,
    "ROLE_ROUTINE_GRANTS": _ROUTINE,
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
    for g in catalog.grants:
        if g.kind in (roles.TABLE, roles.VIEW) and g.column is None:
            yield (g.privilege, "", "", g.name, g.grantee)


def column_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in catalog.grants:
        if g.column is not None:
            yield (g.privilege, "", "", g.name, g.column, g.grantee)


def change_stream_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in catalog.grants:
        if g.kind == roles.CHANGE_STREAM:
            yield ("", "", g.name, g.privilege, g.grantee)


def routine_privileges(catalog: Catalog) -> Iterator[tuple]:
    for g in catalog.grants:
        if g.kind == roles.TABLE_FUNCTION:
            yield ("", "", g.name, g.privilege, g.grantee)


PRODUCERS: dict[str, Callable[[Catalog], Iterator[tuple]]] = {
    "ROLES": role_rows,
    "ROLE_GRANTEES": role_grantees,
    "TABLE_PRIVILEGES": table_privileges,
    "COLUMN_PRIVILEGES": column_privileges,
    "CHANGE_STREAM_PRIVILEGES": change_stream_privileges,
    "ROUTINE_PRIVILEGES": routine_privileges,
    "ROLE_TABLE_GRANTS": table_privileges,
    "ROLE_COLUMN_GRANTS": column_privileges,
    "ROLE_CHANGE_STREAM_GRANTS": change_stream_privileges,
    "ROLE_ROUTINE_GRANTS": routine_privileges,
}
assert PRODUCERS.keys() == VIEW_COLUMNS.keys()
