"""Parsing of the proto bundle statements, on top of the DDL parser's token helpers.

``CREATE PROTO BUNDLE (fqn, ...)``, ``ALTER PROTO BUNDLE INSERT (...) UPDATE (...) DELETE (...)``
(each clause optional, in that order) and ``DROP PROTO BUNDLE``. A type is named by its full
name, dotted (``examples.music.SingerInfo``) or back-quoted; a trailing comma in the list is
allowed, as Spanner allows it.

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> parse_ddl("CREATE PROTO BUNDLE (a.b.Info, `a.b.Genre`,)")
    CreateProtoBundle(types=('a.b.Info', 'a.b.Genre'))
    >>> parse_ddl("ALTER PROTO BUNDLE INSERT (a.C) DELETE (a.b.Genre)")
    AlterProtoBundle(insert=('a.C',), update=(), delete=('a.b.Genre',))
"""

from __future__ import annotations

from typing import Protocol

from .. import errors
from . import nodes
from .lexer import IDENT, QUOTED, Token

#: The clauses of ALTER PROTO BUNDLE, in the order Spanner takes them.
ALTER_CLAUSES = ("INSERT", "UPDATE", "DELETE")


class _Parser(Protocol):
    """The token helpers of ``parser._Parser`` these functions use."""

    @property
    def tok(self) -> Token: ...
    def advance(self) -> Token: ...
    def accept(self, *words: str) -> bool: ...
    def at_symbol(self, sym: str) -> bool: ...
    def expect_symbol(self, sym: str) -> Token: ...
    def fail(self, expected: str, tok: Token | None = ...) -> errors.SpannerError: ...


def create(p: _Parser) -> nodes.CreateProtoBundle:
    """After ``CREATE PROTO BUNDLE``."""
    return nodes.CreateProtoBundle(type_list(p))


def alter(p: _Parser) -> nodes.AlterProtoBundle:
    """After ``ALTER PROTO BUNDLE``: at least one clause."""
    clauses: dict[str, tuple[str, ...]] = {}
    for word in ALTER_CLAUSES:
        if p.accept(word):
            clauses[word.lower()] = type_list(p)
    if not clauses:
        raise p.fail("INSERT, UPDATE or DELETE")
    return nodes.AlterProtoBundle(**clauses)


def drop(p: _Parser) -> nodes.DropProtoBundle:
    """After ``DROP PROTO BUNDLE``."""
    return nodes.DropProtoBundle()


def type_list(p: _Parser) -> tuple[str, ...]:
    """``( fqn, fqn, )``: the trailing comma is optional."""
    p.expect_symbol("(")
    names: list[str] = []
    while not p.at_symbol(")"):
        names.append(type_name(p))
        if not p.at_symbol(","):
            break
        p.advance()
    p.expect_symbol(")")
    return tuple(names)


def type_name(p: _Parser) -> str:
    """A dotted name (``a.b.C``) or one back-quoted name (```a.b.C```)."""
    tok = p.tok
    if tok.kind == QUOTED:
        p.advance()
        return tok.value
    if tok.kind != IDENT:
        raise p.fail("a proto type name")
    parts = [p.advance().text]
    while p.at_symbol("."):
        p.advance()
        if p.tok.kind not in (IDENT, QUOTED):
            raise p.fail("a proto type name")
        parts.append(p.advance().value)
    return ".".join(parts)
