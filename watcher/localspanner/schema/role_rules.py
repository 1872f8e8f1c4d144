"""Roles in the schema: CREATE / DROP ROLE, GRANT and REVOKE, checked as Spanner checks them.

A role's name follows the schema's naming rule; ``public`` and the ``spanner_`` names are
the system roles'. A role that holds privileges, has members or is a member cannot be
dropped. Privileges go to user roles and ``public``; the objects, their columns and the
roles named must exist. A PostgreSQL ``GRANT ... ON TABLE v`` naming a view grants on the
view. When a table, view or change stream is dropped its grants go with it.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)", "CREATE ROLE r",
    ...     "GRANT SELECT(V), INSERT ON TABLE T TO ROLE r", "REVOKE INSERT ON TABLE T FROM ROLE r",
    ... ])
    >>> cat.roles, [(g.privilege, g.name, g.column) for g in cat.grants]
    (('r',), [('SELECT', 'T', 'V')])
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from .. import errors
from ..ddl import nodes
from ..dialects import dialects
from . import roles
from .catalog import Catalog
from .roles import Grant, Membership


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str

    def check_name(self, kind: str, name: str) -> None: ...
    def wrap(self, error: errors.SpannerError) -> errors.SpannerError: ...


def _role(ctx: _Context, name: str) -> str:
    found = ctx.catalog.role(name)
    if found is None:
        raise ctx.wrap(errors.role_not_found(name))
    return found


def create(ctx: _Context, node: nodes.CreateRole) -> Catalog:
    ctx.check_name("role", node.name)
    if roles.is_system_role(node.name) or node.name.lower().startswith("spanner_"):
        raise ctx.wrap(errors.system_role_reserved(node.name))
    if ctx.catalog.role(node.name) is not None:
        raise ctx.wrap(errors.role_exists(node.name))
    return _replace(ctx.catalog, roles=(*ctx.catalog.roles, node.name))


def drop(ctx: _Context, node: nodes.DropRole) -> Catalog:
    name = _role(ctx, node.name)
    if roles.is_system_role(name):
        raise ctx.wrap(errors.system_role_reserved(name))
    low = name.lower()
    uses = []
    if any(g.grantee.lower() == low for g in ctx.catalog.grants):
        uses.append("it has privileges")
    if any(m.role.lower() == low for m in ctx.catalog.memberships):
        uses.append("it has members")
    if any(m.grantee.lower() == low for m in ctx.catalog.memberships):
        uses.append("it is a member of other roles")
    if uses:
        raise ctx.wrap(errors.role_in_use(name, ", ".join(uses)))
    return _replace(ctx.catalog, roles=tuple(r for r in ctx.catalog.roles if r.lower() != low))


def grant_privileges(ctx: _Context, node: nodes.GrantPrivileges) -> Catalog:
    grantees = [_role(ctx, r) for r in node.roles]
    for r in grantees:
        if roles.is_system_role(r) and r.lower() != roles.PUBLIC:
            raise ctx.wrap(errors.system_role_privileges(r))
    wanted: list[Grant] = []
    for name in node.names:
        kind, declared, columns = _object(ctx, node.kind, name)
        for spec in node.privileges:
            if spec.privilege not in roles.PRIVILEGES_OF[kind]:
                raise ctx.wrap(errors.privilege_not_applicable(spec.privilege, kind, declared))
            if spec.columns is not None and spec.privilege not in roles.COLUMN_PRIVILEGES:
                raise ctx.wrap(errors.privilege_columns_not_allowed(spec.privilege))
            targets = [None] if spec.columns is None else [_column(ctx, declared, columns, c) for c in spec.columns]
            wanted.extend(Grant(spec.privilege, kind, declared, r, c) for r in grantees for c in targets)
    if node.revoke:
        gone = {_key(g) for g in wanted}
        return _replace(ctx.catalog, grants=tuple(g for g in ctx.catalog.grants if _key(g) not in gone))
    have = {_key(g) for g in ctx.catalog.grants}
    new = [g for g in dict.fromkeys(wanted) if _key(g) not in have]
    return _replace(ctx.catalog, grants=(*ctx.catalog.grants, *new))


def grant_role(ctx: _Context, node: nodes.GrantRole) -> Catalog:
    granted = [_role(ctx, r) for r in node.roles]
    grantees = [_role(ctx, r) for r in node.grantees]
    memberships = list(ctx.catalog.memberships)
    for grantee in grantees:
        for role in granted:
            key = (role.lower(), grantee.lower())
            present = [m for m in memberships if (m.role.lower(), m.grantee.lower()) == key]
            if node.revoke:
                memberships = [m for m in memberships if m not in present]
                continue
            if roles.is_system_role(grantee):
                raise ctx.wrap(errors.system_role_privileges(grantee))
            if role.lower() in roles.members_of(memberships, grantee):  # grantee is role, or already within it
                raise ctx.wrap(errors.role_membership_cycle(role, grantee))
            if not present:
                memberships.append(Membership(role, grantee))
    return _replace(ctx.catalog, memberships=tuple(memberships))


def prune(catalog: Catalog) -> Catalog:
    """``catalog`` without the grants on objects and columns it no longer has (dropped with them).

    >>> from watcher.localspanner.schema.roles import Grant
    >>> len(prune(Catalog(roles=("r",), grants=(Grant("SELECT", "TABLE", "Gone", "r"),))).grants)
    0
    """
    kept = tuple(g for g in catalog.grants if _still_there(catalog, g))
    return catalog if len(kept) == len(catalog.grants) else dataclasses.replace(catalog, grants=kept)


def read_function(stream: str, dialect: str) -> str:
    """The name of a change stream's read function, which EXECUTE is granted on.

    >>> read_function("S", "GOOGLE_STANDARD_SQL"), read_function("s", "POSTGRESQL")
    ('READ_S', 'read_json_s')
    """
    return f"read_json_{stream}" if dialect == dialects.POSTGRESQL else f"READ_{stream}"


def _object(ctx: _Context, kind: str, name: str) -> tuple[str, str, tuple[str, ...]]:
    """(kind, declared name, column names) of the object a GRANT names."""
    cat = ctx.catalog
    if kind == roles.TABLE:
        table = cat.table(name)
        if table is not None:
            return kind, table.name, tuple(c.name for c in table.columns)
        view = cat.view(name)
        if view is not None and cat.dialect == dialects.POSTGRESQL:  # PostgreSQL grants on views ON TABLE
            return roles.VIEW, view.name, tuple(c.name for c in view.columns)
        raise ctx.wrap(errors.table_not_found(name))
    if kind == roles.VIEW:
        view = cat.view(name)
        if view is None:
            raise ctx.wrap(errors.view_not_found(name))
        return kind, view.name, tuple(c.name for c in view.columns)
    if kind == roles.CHANGE_STREAM:
        stream = cat.change_stream(name)
        if stream is None:
            raise ctx.wrap(errors.change_stream_not_found(ctx.statement, name))
        return kind, stream.name, ()
    found = _stream_of_function(cat, name)
    if found is None:
        raise ctx.wrap(errors.change_stream_function_not_found(name))
    return kind, found[1], ()


def read_functions(stream: str, dialect: str) -> tuple[str, ...]:
    """Every read function of a change stream: PostgreSQL's JSON one and its ``read_proto_bytes_`` one.

    >>> read_functions("s", "POSTGRESQL")
    ('read_json_s', 'read_proto_bytes_s')
    """
    if dialect == dialects.POSTGRESQL:
        return read_function(stream, dialect), f"read_proto_bytes_{stream}"
    return (read_function(stream, dialect),)


def _stream_of_function(catalog: Catalog, function: str) -> tuple[str, str] | None:
    """(stream, the function's name as the schema spells it) of a read function."""
    low = function.lower()
    for s in catalog.change_streams:
        found = next((f for f in read_functions(s.name, catalog.dialect) if f.lower() == low), None)
        if found is not None:
            return s.name, found
    return None


def _column(ctx: _Context, table: str, columns: tuple[str, ...], name: str) -> str:
    found = next((c for c in columns if c.lower() == name.lower()), None)
    if found is None:
        raise ctx.wrap(errors.column_not_found(table, name))
    return found


def _key(g: Grant) -> tuple[str, str, str, str, str | None]:
    return g.privilege, g.kind, g.name.lower(), g.grantee.lower(), g.column.lower() if g.column else None


def _still_there(catalog: Catalog, g: Grant) -> bool:
    if g.kind == roles.TABLE:
        table = catalog.table(g.name)
        return table is not None and (g.column is None or table.column(g.column) is not None)
    if g.kind == roles.VIEW:
        view = catalog.view(g.name)
        return view is not None and (g.column is None or view.column(g.column) is not None)
    if g.kind == roles.CHANGE_STREAM:
        return catalog.change_stream(g.name) is not None
    return _stream_of_function(catalog, g.name) is not None


def _replace(catalog: Catalog, **changes: object) -> Catalog:
    return dataclasses.replace(catalog, version=catalog.version + 1, **changes)  # type: ignore[arg-type]
