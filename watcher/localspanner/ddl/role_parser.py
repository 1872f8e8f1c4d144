"""Parsing of the fine-grained access control statements, on top of the DDL parsers' token helpers.

GoogleSQL: ``CREATE ROLE r``, ``DROP ROLE r``, ``GRANT SELECT, INSERT(a, b) ON TABLE t1, t2 TO
ROLE r1, r2``, ``GRANT SELECT ON VIEW v ...``, ``GRANT SELECT ON CHANGE STREAM s ...``, ``GRANT
EXECUTE ON TABLE FUNCTION READ_s ...``, ``GRANT ROLE a TO ROLE b``, and each GRANT as ``REVOKE
... FROM ROLE ...``. PostgreSQL writes the grantees without ``ROLE`` (``GRANT SELECT ON TABLE t
TO r``), a membership as ``GRANT a TO b`` and a change stream's read function as ``ON FUNCTION
spanner.read_json_s``.

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> parse_ddl("GRANT SELECT(Name), DELETE ON TABLE Singers TO ROLE analyst")
    GrantPrivileges(privileges=(PrivilegeSpec(privilege='SELECT', columns=('Name',)), \
PrivilegeSpec(privilege='DELETE', columns=None)), kind='TABLE', names=('Singers',), roles=('analyst',), revoke=False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .. import errors
from ..schema import roles
from . import nodes
from .lexer import Token

_PRIVILEGE_WORDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "EXECUTE")


class _Parser(Protocol):
    """The token helpers of ``parser._Parser`` these functions use."""

    text: str

    @property
    def tok(self) -> Token: ...
    def advance(self) -> Token: ...
    def accept(self, *words: str) -> bool: ...
    def at(self, *words: str) -> bool: ...
    def at_symbol(self, sym: str) -> bool: ...
    def expect(self, *words: str) -> None: ...
    def name(self, what: str = ...) -> str: ...
    def fail(self, expected: str, tok: Token | None = ...) -> errors.SpannerError: ...
    def comma_list(self, item: Callable[[], Any], *, allow_empty: bool = ...) -> list: ...


def create(p: _Parser) -> nodes.CreateRole:
    """After ``CREATE ROLE``.

    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> parse_ddl("CREATE ROLE `Order`")
    CreateRole(name='Order')
    """
    return nodes.CreateRole(p.name("role name"))


def drop(p: _Parser) -> nodes.DropRole:
    """After ``DROP ROLE``.

    >>> from watcher.localspanner.ddl.pg_parser import parse_pg_ddl
    >>> parse_pg_ddl('DROP ROLE "Analyst"')
    DropRole(name='Analyst')
    """
    return nodes.DropRole(p.name("role name"))


def grant(p: _Parser, *, revoke: bool) -> nodes.GrantPrivileges | nodes.GrantRole:
    """After ``GRANT`` or ``REVOKE`` (GoogleSQL)."""
    if p.accept("ROLE"):
        granted = _names(p, "role name")
        p.expect("FROM" if revoke else "TO", "ROLE")
        return nodes.GrantRole(granted, _names(p, "role name"), revoke)
    privileges = _privileges(p)
    p.expect("ON")
    kind = _kind(p)
    names = _names(p, f"{kind.lower()} name")
    p.expect("FROM" if revoke else "TO", "ROLE")
    return nodes.GrantPrivileges(privileges, kind, names, _names(p, "role name"), revoke)


def pg_grant(p: _Parser, *, revoke: bool) -> nodes.GrantPrivileges | nodes.GrantRole:
    """After ``GRANT`` or ``REVOKE`` (PostgreSQL).

    >>> from watcher.localspanner.ddl.pg_parser import parse_pg_ddl
    >>> parse_pg_ddl("GRANT EXECUTE ON FUNCTION spanner.read_json_s TO r").names
    ('read_json_s',)
    """
    if not p.at(*_PRIVILEGE_WORDS, "USAGE", "ALL"):
        granted = _names(p, "role name")
        p.expect("FROM" if revoke else "TO")
        return nodes.GrantRole(granted, _names(p, "role name"), revoke)
    if p.at("USAGE", "ALL"):  # USAGE is on named schemas, which the local server lacks
        raise errors.pg_ddl_unsupported(p.text, ("REVOKE" if revoke else "GRANT", p.tok.text.upper()))
    privileges = _privileges(p)
    p.expect("ON")
    if p.accept("FUNCTION"):
        kind = roles.TABLE_FUNCTION
        names = _names(p, "function name", schema="spanner")
    else:
        kind = _kind(p, pg=True)
        names = _names(p, f"{kind.lower()} name")
    p.expect("FROM" if revoke else "TO")
    return nodes.GrantPrivileges(privileges, kind, names, _names(p, "role name"), revoke)


def _privileges(p: _Parser) -> tuple[nodes.PrivilegeSpec, ...]:
    out = [_privilege(p)]
    while p.at_symbol(","):
        p.advance()
        out.append(_privilege(p))
    return tuple(out)


def _privilege(p: _Parser) -> nodes.PrivilegeSpec:
    if not p.at(*_PRIVILEGE_WORDS):
        raise p.fail("SELECT, INSERT, UPDATE, DELETE or EXECUTE")
    word = p.advance().text.upper()
    columns = tuple(p.comma_list(lambda: p.name("column name"))) if p.at_symbol("(") else None
    return nodes.PrivilegeSpec(word, columns)


def _kind(p: _Parser, *, pg: bool = False) -> str:
    if not pg and p.accept("TABLE", "FUNCTION"):
        return roles.TABLE_FUNCTION
    if p.accept("TABLE"):
        return roles.TABLE
    if p.accept("CHANGE", "STREAM"):
        return roles.CHANGE_STREAM
    if not pg and p.accept("VIEW"):
        return roles.VIEW
    raise p.fail("TABLE, CHANGE STREAM or FUNCTION" if pg else "TABLE, VIEW, CHANGE STREAM or TABLE FUNCTION")


def _names(p: _Parser, what: str, *, schema: str | None = None) -> tuple[str, ...]:
    """``a, b, c``: names separated by commas; ``schema.`` before a name is dropped when it is ``schema``."""
    out = [_name(p, what, schema)]
    while p.at_symbol(","):
        p.advance()
        out.append(_name(p, what, schema))
    return tuple(out)


def _name(p: _Parser, what: str, schema: str | None) -> str:
    name = p.name(what)
    if schema is not None and name.lower() == schema and p.at_symbol("."):
        p.advance()
        name = p.name(what)
    return name
