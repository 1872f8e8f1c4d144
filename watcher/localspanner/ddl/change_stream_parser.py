"""Parsing of the change stream statements, on top of the DDL parser's token helpers.

``CREATE CHANGE STREAM name [FOR ALL | FOR T1, T2(c1, c2), T3()] [OPTIONS (...)]``,
``ALTER CHANGE STREAM name SET FOR ... | DROP FOR ALL | SET OPTIONS (...)`` and
``DROP CHANGE STREAM name``. Option names and values are taken as written (a quoted
string, ``true``/``false`` or ``null``); ``schema_updater`` checks them against
``change_stream_options`` so that errors can name the stream.

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> node = parse_ddl("CREATE CHANGE STREAM S FOR T(a), U() OPTIONS (exclude_insert = true)")
    >>> [(t.table, t.columns) for t in node.watch.tables], node.options
    ([('T', ('a',)), ('U', ())], (('exclude_insert', True),))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from .. import errors
from ..schema.catalog import TrackedTable
from . import nodes
from .lexer import IDENT, NUMBER, STRING, Token


class _Parser(Protocol):
    """The token helpers of ``parser._Parser`` these functions use."""

    @property
    def tok(self) -> Token: ...
    def advance(self) -> Token: ...
    def accept(self, *words: str) -> bool: ...
    def at_symbol(self, sym: str) -> bool: ...
    def expect_symbol(self, sym: str) -> Token: ...
    def name(self, what: str = ...) -> str: ...
    def fail(self, expected: str, tok: Token | None = ...) -> errors.SpannerError: ...
    def comma_list(self, item: Callable[[], Any], *, allow_empty: bool = ...) -> list: ...

_STRING_ESCAPES = {"\\\\": "\\", "\\'": "'", '\\"': '"', "\\n": "\n", "\\t": "\t"}


def create(p: _Parser) -> nodes.CreateChangeStream:
    """After ``CREATE CHANGE STREAM``."""
    name = p.name("change stream name")
    watch = watch_clause(p) if p.accept("FOR") else None
    options = options_clause(p) if p.accept("OPTIONS") else ()
    return nodes.CreateChangeStream(name, watch, options)


def alter(p: _Parser) -> nodes.Node:
    """After ``ALTER CHANGE STREAM``."""
    name = p.name("change stream name")
    if p.accept("SET", "FOR"):
        return nodes.AlterChangeStreamSetFor(name, watch_clause(p))
    if p.accept("DROP", "FOR", "ALL"):
        return nodes.AlterChangeStreamDropForAll(name)
    if p.accept("SET", "OPTIONS"):
        return nodes.AlterChangeStreamSetOptions(name, options_clause(p))
    raise p.fail("SET FOR, DROP FOR ALL or SET OPTIONS")


def drop(p: _Parser) -> nodes.DropChangeStream:
    """After ``DROP CHANGE STREAM``."""
    return nodes.DropChangeStream(p.name("change stream name"))


def watch_clause(p: _Parser) -> nodes.ChangeStreamFor:
    """After ``FOR``: ``ALL`` or a list of tables, each with an optional column list."""
    if p.accept("ALL"):
        return nodes.ChangeStreamFor(all=True)
    tables = [_tracked_table(p)]
    while p.at_symbol(","):
        p.advance()
        tables.append(_tracked_table(p))
    return nodes.ChangeStreamFor(tables=tuple(tables))


def _tracked_table(p: _Parser) -> TrackedTable:
    table = p.name("table name")
    if not p.at_symbol("("):
        return TrackedTable(table)
    columns = p.comma_list(lambda: p.name("column name"), allow_empty=True)
    return TrackedTable(table, tuple(columns))


def options_clause(p: _Parser) -> tuple[tuple[str, nodes.OptionValue], ...]:
    """``( name = 'text' | true | false | null, ... )`` as written."""
    return cast("tuple[tuple[str, nodes.OptionValue], ...]", _options(p, integers=False))


def database_options_clause(p: _Parser) -> tuple[tuple[str, nodes.OptionValue | int], ...]:
    """As :func:`options_clause`, and a bare non-negative integer too (ALTER DATABASE's optimizer_version)."""
    return _options(p, integers=True)


def _options(p: _Parser, *, integers: bool) -> tuple[tuple[str, nodes.OptionValue | int], ...]:

    def one() -> tuple[str, nodes.OptionValue | int]:
        name = p.name("option name")
        p.expect_symbol("=")
        tok = p.tok
        if integers and tok.kind == NUMBER and tok.text.isdigit():
            p.advance()
            return name, int(tok.text)
        if tok.kind == STRING and tok.text[:1] in "'\"" and not tok.text.startswith(tok.text[0] * 3):
            p.advance()
            return name, _unquote(tok.text[1:-1])
        if tok.kind == IDENT and tok.text.upper() in ("TRUE", "FALSE", "NULL"):
            p.advance()
            return name, {"TRUE": True, "FALSE": False, "NULL": None}[tok.text.upper()]
        raise p.fail("a string literal, true, false or null")

    return tuple(p.comma_list(one, allow_empty=False))


def _unquote(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        pair = body[i : i + 2]
        if pair in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[pair])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)
