"""Canonical text of the role statements, and a catalog's roles as the statements that recreate them.

GetDatabaseDdl lists ``CREATE ROLE`` per role in creation order, then one GRANT per privilege,
object and role (a column-level grant lists its columns), then the memberships. The same
shapes print in PostgreSQL form (grantees without ``ROLE``, ``GRANT a TO b``, views ``ON
TABLE``, a read function ``ON FUNCTION spanner.read_json_s``).

Example:
    >>> from watcher.localspanner.schema.roles import Grant, Membership
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> cat = Catalog(roles=("r", "lead"), grants=(Grant("SELECT", "TABLE", "T", "r", "A"),
    ...       Grant("SELECT", "TABLE", "T", "r", "B")), memberships=(Membership("r", "lead"),))
    >>> print(*role_statements(cat), sep="\\n")
    CREATE ROLE r
    CREATE ROLE lead
    GRANT SELECT(A, B) ON TABLE T TO ROLE r
    GRANT ROLE r TO ROLE lead
"""

from __future__ import annotations

from collections.abc import Callable

from ..dialects.dialects import pg_identifier
from ..schema import roles
from ..schema.catalog import Catalog
from . import nodes
from .lexer import quote_identifier


def role_statements(catalog: Catalog, *, pg: bool = False) -> list[str]:
    """The CREATE ROLE, GRANT and GRANT ROLE statements of ``catalog``'s roles."""
    out = [f"CREATE ROLE {_q(pg)(r)}" for r in catalog.roles]
    grouped: dict[tuple[str, str, str, str, bool], list[str]] = {}
    for g in catalog.grants:
        grouped.setdefault((g.privilege, g.kind, g.name, g.grantee, g.column is not None), []).extend(
            [g.column] if g.column is not None else [])
    for (privilege, kind, name, grantee, _), columns in grouped.items():
        spec = nodes.PrivilegeSpec(privilege, tuple(columns) if columns else None)
        out.append(print_grant(nodes.GrantPrivileges((spec,), kind, (name,), (grantee,)), pg=pg))
    out.extend(print_grant_role(nodes.GrantRole((m.role,), (m.grantee,)), pg=pg) for m in catalog.memberships)
    return out


def print_grant(node: nodes.GrantPrivileges, *, pg: bool = False) -> str:
    """``GRANT | REVOKE privileges ON kind names TO | FROM ROLE roles``.

    >>> print_grant(nodes.GrantPrivileges((nodes.PrivilegeSpec("DELETE"),), "TABLE", ("T",), ("r",), revoke=True))
    'REVOKE DELETE ON TABLE T FROM ROLE r'
    """
    q = _q(pg)
    privileges = ", ".join(p.privilege + (f"({', '.join(q(c) for c in p.columns)})" if p.columns else "")
                           for p in node.privileges)
    kind = node.kind
    names = [q(n) for n in node.names]
    if pg and kind == roles.VIEW:
        kind = roles.TABLE
    if pg and kind == roles.TABLE_FUNCTION:
        kind, names = "FUNCTION", [f"spanner.{n}" for n in names]
    head = "REVOKE" if node.revoke else "GRANT"
    to = ("FROM" if node.revoke else "TO") + ("" if pg else " ROLE")
    return f"{head} {privileges} ON {kind} {', '.join(names)} {to} {', '.join(q(r) for r in node.roles)}"


def print_grant_role(node: nodes.GrantRole, *, pg: bool = False) -> str:
    """``GRANT ROLE a TO ROLE b`` (PostgreSQL: ``GRANT a TO b``).

    >>> print_grant_role(nodes.GrantRole(("a",), ("b",)), pg=True)
    'GRANT a TO b'
    """
    q = _q(pg)
    word = "" if pg else "ROLE "
    head, to = ("REVOKE", "FROM") if node.revoke else ("GRANT", "TO")
    return f"{head} {word}{', '.join(q(r) for r in node.roles)} {to} {word}{', '.join(q(r) for r in node.grantees)}"


def _q(pg: bool) -> Callable[[str], str]:
    return pg_identifier if pg else quote_identifier
