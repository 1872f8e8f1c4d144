"""Database roles of fine-grained access control as catalog data: roles, privileges, memberships.

A :class:`Grant` is one privilege on one object (one column, for column-level grants) to
one role; a :class:`Membership` makes ``grantee`` a member of ``role``, so it has every
privilege ``role`` has. The system roles exist in every database: ``public`` (every role
inherits what it is granted), ``spanner_info_reader`` and ``spanner_sys_reader``.

Example:
    >>> m = (Membership("reader", "analyst"), Membership("analyst", "lead"))
    >>> sorted(effective_roles(m, "lead"))
    ['analyst', 'lead', 'public', 'reader']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

PUBLIC = "public"
INFO_READER = "spanner_info_reader"
SYS_READER = "spanner_sys_reader"
#: The roles every database has, which cannot be created, dropped or given new privileges (but ``public``).
SYSTEM_ROLES = (PUBLIC, INFO_READER, SYS_READER)

SELECT, INSERT, UPDATE, DELETE, EXECUTE = "SELECT", "INSERT", "UPDATE", "DELETE", "EXECUTE"
TABLE, VIEW, CHANGE_STREAM, TABLE_FUNCTION = "TABLE", "VIEW", "CHANGE STREAM", "TABLE FUNCTION"
#: The privileges each kind of object takes, and those that may name columns.
PRIVILEGES_OF = {TABLE: (SELECT, INSERT, UPDATE, DELETE), VIEW: (SELECT,), CHANGE_STREAM: (SELECT,),
                 TABLE_FUNCTION: (EXECUTE,)}
COLUMN_PRIVILEGES = (SELECT, INSERT, UPDATE)


@dataclass(frozen=True)
class Grant:
    """``privilege`` on the object ``kind`` ``name`` (a column of it when ``column`` is set) to the role ``grantee``."""

    privilege: str
    kind: str
    name: str
    grantee: str
    column: str | None = None


@dataclass(frozen=True)
class Membership:
    """``GRANT ROLE role TO ROLE grantee``: ``grantee`` has what ``role`` has."""

    role: str
    grantee: str


def is_system_role(name: str) -> bool:
    """True for the built-in roles (names compare without case).

    >>> is_system_role("PUBLIC"), is_system_role("analyst")
    (True, False)
    """
    return name.lower() in SYSTEM_ROLES


def effective_roles(memberships: Iterable[Membership], role: str) -> frozenset[str]:
    """``role``, the roles it is a member of (directly or through others) and ``public``, lower-cased."""
    return reachable(role, ((m.grantee, m.role) for m in memberships), known=(PUBLIC,))


def members_of(memberships: Iterable[Membership], role: str) -> frozenset[str]:
    """``role`` and every role that is, directly or through others, a member of it (lower-cased)."""
    return reachable(role, ((m.role, m.grantee) for m in memberships))


def reachable(start: str, edges: Iterable[tuple[str, str]], known: Iterable[str] = ()) -> frozenset[str]:
    """``start`` and every name reached from it along ``edges`` (from, to), case-folded; names in ``known``
    are counted as reached and not followed.

    >>> sorted(reachable("A", [("a", "b"), ("B", "c"), ("x", "y")]))
    ['a', 'b', 'c']
    """
    pairs = [(a.lower(), b.lower()) for a, b in edges]
    found = {start.lower(), *known}
    todo = [start.lower()]
    while todo:
        current = todo.pop()
        for a, b in pairs:
            if a == current and b not in found:
                found.add(b)
                todo.append(b)
    return frozenset(found)


def holds(grants: Iterable[Grant], roles: frozenset[str], privilege: str, kind: str, name: str,
          column: str | None = None) -> bool:
    """True when one of ``roles`` has ``privilege`` on the object, or on ``column`` of it.

    A grant on the whole object covers every column; a column grant covers only its column.

    >>> g = (Grant("SELECT", "TABLE", "T", "r", "A"),)
    >>> holds(g, frozenset({"r"}), "SELECT", "TABLE", "t", "a"), holds(g, frozenset({"r"}), "SELECT", "TABLE", "T")
    (True, False)
    """
    low, col = name.lower(), column.lower() if column is not None else None
    for g in grants:
        if (g.privilege == privilege and g.kind == kind and g.name.lower() == low and g.grantee.lower() in roles
                and (g.column is None or (col is not None and g.column.lower() == col))):
            return True
    return False
