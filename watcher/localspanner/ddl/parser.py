"""A recursive-descent parser for the Spanner GoogleSQL DDL the local server supports.

One statement in, one node (``nodes.py``) out. Keywords are case-insensitive, names
keep their case. Expressions of ``DEFAULT (...)`` and ``AS (...)`` are not parsed: the
text between the balanced parentheses is kept as written (comments included) and
translated later by the SQL layer.

Generated columns: ``AS (expr) STORED`` and the virtual ``AS (expr)`` are both
accepted (``Column.stored`` tells them apart); storage may compute virtual columns on
write, which reads the same. A single trailing ``;`` is tolerated. The primary key may
also be written Spanner's newer ways, ``Id INT64 PRIMARY KEY`` on a column or
``PRIMARY KEY (a, b)`` inside the column list; the node is the same either way.

Example:
    >>> node = parse_ddl("CREATE NULL_FILTERED INDEX Idx ON Singers (ShardId, LastUpdated DESC)")
    >>> node.null_filtered, [(p.column, p.descending) for p in node.key]
    (True, [('ShardId', False), ('LastUpdated', True)])
"""

from __future__ import annotations

from collections.abc import Callable

from .. import errors
from ..datamodel import types
from ..schema import database_options
from ..schema.catalog import Column, KeyPart
from . import (
    change_stream_parser,
    constraint_parser,
    nodes,
    proto_bundle_parser,
    role_parser,
    row_deletion_parser,
    search_index_parser,
    sequence_parser,
)
from .lexer import EOF, IDENT, NUMBER, QUOTED, RESERVED_WORDS, SYMBOL, Token, tokenize

# Column OPTIONS the server understands, and the values each may take.
_OPTION_VALUES: dict[str, dict[str, bool | None]] = {
    "allow_commit_timestamp": {"TRUE": True, "FALSE": False, "NULL": None},
}

# DDL the local server does not implement, by the keywords that start it.
_UNSUPPORTED_CREATE = ("VECTOR", "MODEL", "SCHEMA",
                       "PLACEMENT", "LOCALITY", "FUNCTION")
_UNSUPPORTED_TABLE_ELEMENTS = ("SYNONYM",)


def parse_ddl(statement: str) -> nodes.Node:
    """Parse one DDL statement into its node.

    >>> parse_ddl("drop table if exists `Order`")
    DropTable(name='Order', if_exists=True)

    Raises:
        SpannerError: INVALID_ARGUMENT (``errors.ddl_syntax_error``) saying what was
            expected and where; UNIMPLEMENTED for DDL the local server does not support.
    """
    return _Parser(statement).statement()


class _Parser:
    def __init__(self, statement: str) -> None:
        self.text = statement
        self.tokens = tokenize(statement)
        self.pos = 0

    # --- token helpers -----------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != EOF:
            self.pos += 1
        return tok

    def fail(self, expected: str, tok: Token | None = None) -> errors.SpannerError:
        tok = tok or self.tok
        return errors.ddl_expecting(self.text, expected, tok.describe(), tok.line, tok.column)

    def at(self, *words: str) -> bool:
        return any(self.tok.is_word(w) for w in words)

    def accept(self, *words: str) -> bool:
        """Consume the keywords ``words`` in sequence if they all come next."""
        toks = self.tokens[self.pos : self.pos + len(words)]
        if len(toks) == len(words) and all(t.is_word(w) for t, w in zip(toks, words, strict=True)):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        for word in words:
            if not self.tok.is_word(word):
                raise self.fail(f"keyword {word}")
            self.advance()

    def at_symbol(self, sym: str) -> bool:
        return self.tok.kind == SYMBOL and self.tok.text == sym

    def expect_symbol(self, sym: str) -> Token:
        if not self.at_symbol(sym):
            raise self.fail(f"'{sym}'")
        return self.advance()

    def name(self, what: str = "identifier") -> str:
        tok = self.tok
        if tok.kind == QUOTED or (tok.kind == IDENT and tok.text.upper() not in RESERVED_WORDS):
            self.advance()
            return tok.value
        raise self.fail(what)

    def comma_list(self, item: Callable[[], object], *, allow_empty: bool = False) -> list:
        """Items inside parentheses, separated by commas: ``( a, b )``."""
        self.expect_symbol("(")
        out = []
        if not (allow_empty and self.at_symbol(")")):
            out.append(item())
            while self.at_symbol(","):
                self.advance()
                out.append(item())
        self.expect_symbol(")")
        return out

    def unsupported(self, what: str) -> errors.SpannerError:
        return errors.ddl_unsupported(self.text, what)

    # --- statements --------------------------------------------------------------------

    def statement(self) -> nodes.Node:
        if self.tok.kind == EOF:
            raise self.fail("a DDL statement")
        dispatch = {"CREATE": self.create, "ALTER": self.alter, "DROP": self.drop,
                    "GRANT": lambda: self.grant(revoke=False), "REVOKE": lambda: self.grant(revoke=True)}
        word = self.tok.text.upper() if self.tok.kind == IDENT else ""
        if word not in dispatch:
            raise self.fail("CREATE, ALTER or DROP")
        self.advance()
        node = dispatch[word]()
        if self.at_symbol(";"):
            self.advance()
        if self.tok.kind != EOF:
            raise self.fail("end of statement")
        return node

    def grant(self, *, revoke: bool) -> nodes.Node:
        """After ``GRANT`` or ``REVOKE``."""
        return role_parser.grant(self, revoke=revoke)

    def create(self) -> nodes.Node:
        if self.accept("DATABASE"):
            return nodes.CreateDatabase(self.name("database name"))
        if self.accept("TABLE"):
            return self.create_table()
        if self.accept("CHANGE", "STREAM"):
            return change_stream_parser.create(self)
        if self.accept("SEARCH", "INDEX"):
            return search_index_parser.create(self)
        if self.accept("SEQUENCE"):
            return sequence_parser.create(self)
        if self.accept("PROTO", "BUNDLE"):
            return proto_bundle_parser.create(self)
        if self.accept("ROLE"):
            return role_parser.create(self)
        if self.accept("OR", "REPLACE"):
            self.expect("VIEW")
            return self.create_view(or_replace=True)
        if self.accept("VIEW"):
            return self.create_view(or_replace=False)
        unique = self.accept("UNIQUE")
        null_filtered = self.accept("NULL_FILTERED")
        if self.accept("INDEX"):
            return self.create_index(unique, null_filtered)
        if not (unique or null_filtered) and self.at(*_UNSUPPORTED_CREATE):
            raise self.unsupported(errors.feature_create(self.tok.text.upper()))
        raise self.fail("DATABASE, TABLE, INDEX or VIEW" if not (unique or null_filtered) else "keyword INDEX")

    def create_view(self, *, or_replace: bool) -> nodes.CreateView:
        """``VIEW name SQL SECURITY INVOKER|DEFINER AS query``: the query is kept as text."""
        name = self.name("view name")
        security = None
        if self.accept("SQL", "SECURITY"):
            if not self.at(*nodes.VIEW_SECURITY):
                raise self.fail("INVOKER or DEFINER")
            security = self.advance().text.upper()
        if not self.at("AS"):
            raise self.fail("SQL SECURITY" if security is None else "keyword AS")
        if security is None:  # Spanner has no default security mode
            raise errors.view_missing_security(self.text, name)
        as_tok = self.advance()
        end = len(self.tokens) - 1  # EOF
        if end > self.pos and self.tokens[end - 1].kind == SYMBOL and self.tokens[end - 1].text == ";":
            end -= 1
        if end <= self.pos:
            raise self.fail("a query")
        definition = self.text[as_tok.end : self.tokens[end - 1].end].strip()
        self.pos = end
        return nodes.CreateView(name, definition, security, or_replace)

    def create_table(self) -> nodes.CreateTable:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.name("table name")
        columns: list[Column] = []
        constraints: list = []
        key: list[KeyPart] | None = None
        self.expect_symbol("(")
        while not self.at_symbol(")"):
            if self.at(*_UNSUPPORTED_TABLE_ELEMENTS):
                raise self.unsupported(errors.feature_in_create_table(self.tok.text.upper()))
            start = self.tok
            if self.at(*constraint_parser.STARTS):
                constraints.append(constraint_parser.element(self))
            elif self.accept("PRIMARY", "KEY"):
                key = self.only_key(key, self.comma_list(self.key_part, allow_empty=True), start)
            else:
                column, _, inline_key = self.column_definition(inline_key=True)
                columns.append(column)
                if inline_key:
                    key = self.only_key(key, [KeyPart(column.name)], start)
            if self.at_symbol(","):
                self.advance()
            elif not self.at_symbol(")"):
                raise self.fail("',' or ')'")
        self.advance()
        start = self.tok
        if key is None or self.at("PRIMARY"):
            self.expect("PRIMARY", "KEY")
            key = self.only_key(key, self.comma_list(self.key_part, allow_empty=True), start)
        parent, cascade, policy = None, False, None
        if self.at_symbol(","):
            self.advance()
            if self.at("ROW"):
                policy = row_deletion_parser.clause(self)
            else:
                self.expect("INTERLEAVE", "IN", "PARENT")
                parent = self.name("parent table name")
                if self.accept("ON", "DELETE"):
                    if self.accept("CASCADE"):
                        cascade = True
                    elif not self.accept("NO", "ACTION"):
                        raise self.fail("CASCADE or NO ACTION")
                if self.at_symbol(","):
                    self.advance()
                    policy = row_deletion_parser.clause(self)
        checks = tuple(c for c in constraints if isinstance(c, nodes.CheckConstraint))
        fks = tuple(c for c in constraints if isinstance(c, nodes.ForeignKey))
        return nodes.CreateTable(name, tuple(columns), tuple(key), parent, cascade, if_not_exists, checks, fks, policy)

    def only_key(self, key: list[KeyPart] | None, new: list[KeyPart], where: Token) -> list[KeyPart]:
        """The primary key may be given once: inline on a column, in the column list, or after it."""
        if key is not None:
            raise errors.ddl_second_primary_key(self.text, where.line, where.column)
        return new

    def create_index(self, unique: bool, null_filtered: bool) -> nodes.CreateIndex:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.name("index name")
        self.expect("ON")
        table = self.name("table name")
        key = self.comma_list(self.key_part)
        storing: list[str] = []
        if self.accept("STORING"):
            storing = self.comma_list(lambda: self.name("column name"))
        interleave = None
        if self.at_symbol(","):
            self.advance()
            self.expect("INTERLEAVE", "IN")
            interleave = self.name("table name")
        return nodes.CreateIndex(name, table, tuple(key), tuple(storing), unique, null_filtered, interleave, if_not_exists)

    def alter(self) -> nodes.Node:
        if self.accept("CHANGE", "STREAM"):
            return change_stream_parser.alter(self)
        if self.accept("PROTO", "BUNDLE"):
            return proto_bundle_parser.alter(self)
        if self.accept("DATABASE"):
            return self.alter_database()
        if self.accept("SEQUENCE"):
            return sequence_parser.alter(self)
        self.expect("TABLE")
        table = self.name("table name")
        if self.accept("ADD"):
            if self.at(*constraint_parser.STARTS):
                return constraint_parser.alter_add(self, table)
            if self.at("ROW"):
                return row_deletion_parser.alter(self, table, "ADD")
            if self.at("SYNONYM"):
                raise self.unsupported(errors.feature_alter_table("ADD", self.tok.text.upper()))
            self.accept("COLUMN")
            if_not_exists = self.accept("IF", "NOT", "EXISTS")
            return nodes.AlterTableAddColumn(table, self.column_definition()[0], if_not_exists)
        if self.accept("DROP"):
            if self.accept("CONSTRAINT"):
                return constraint_parser.alter_drop(self, table)
            if self.at("ROW"):
                return row_deletion_parser.alter(self, table, "DROP")
            if not self.accept("COLUMN") and self.at("SYNONYM"):
                raise self.unsupported(errors.feature_alter_table("DROP", self.tok.text.upper()))
            return nodes.AlterTableDropColumn(table, self.name("column name"))
        if self.accept("ALTER"):
            self.accept("COLUMN")
            return self.alter_column(table, self.name("column name"))
        if self.accept("REPLACE"):
            if self.at("ROW"):
                return row_deletion_parser.alter(self, table, "REPLACE")
            raise self.unsupported(errors.feature_alter_table("REPLACE"))
        if self.at("SET", "RENAME"):
            raise self.unsupported(errors.feature_alter_table(self.tok.text.upper()))
        raise self.fail("ADD, DROP or ALTER")

    def alter_database(self) -> nodes.AlterDatabase:
        """``DATABASE name SET OPTIONS (...)``; a database id may hold '-' (``my-db``) unquoted."""
        name = self.name("database name")
        while self.at_symbol("-") and self.tok.start == self.tokens[self.pos - 1].end:
            self.advance()
            part = self.advance()
            if part.kind not in (IDENT, NUMBER) or part.start != self.tokens[self.pos - 2].end:
                raise self.fail("database name", part)
            name += "-" + part.text
        self.expect("SET", "OPTIONS")
        start = self.pos
        options = change_stream_parser.database_options_clause(self)
        for (option, value), tok in zip(options, [t for t in self.tokens[start:self.pos] if t.kind in (IDENT, QUOTED)],
                                        strict=False):
            if option.lower() not in database_options.OPTIONS:
                raise errors.database_option_unknown(self.text, option)
            if isinstance(value, bool):
                raise self.fail("a string literal or null", tok)
            if isinstance(value, str) and option.lower() in database_options.INTEGER_OPTIONS:
                raise errors.database_option_invalid(option.lower(), value, errors.INTEGER_OPTION_EXPECTED)
        return nodes.AlterDatabase(name, tuple((o.lower(), v) for o, v in options))  # type: ignore[misc]

    def alter_column(self, table: str, column: str) -> nodes.Node:
        if self.accept("SET", "OPTIONS"):
            options = self.options()
            if "allow_commit_timestamp" not in options:
                raise self.fail("option allow_commit_timestamp")
            return nodes.AlterColumnSetOptions(table, column, options["allow_commit_timestamp"])
        if self.accept("SET", "DEFAULT"):
            return nodes.AlterColumnSetDefault(table, column, self.expression())
        if self.accept("DROP", "DEFAULT"):
            return nodes.AlterColumnSetDefault(table, column, None)
        col, has_options, _ = self.column_definition(name=column)
        if col.identity is not None:
            raise errors.cannot_alter_to_identity(table, column)
        if col.is_generated:
            raise self.unsupported(errors.DDL_ALTER_GENERATED_COLUMN)
        allow = col.allow_commit_timestamp if has_options else None
        return nodes.AlterColumnType(table, column, col.type, col.not_null, col.default, allow)

    def drop(self) -> nodes.Node:
        if self.accept("TABLE"):
            if_exists = self.accept("IF", "EXISTS")
            return nodes.DropTable(self.name("table name"), if_exists)
        if self.accept("INDEX"):
            if_exists = self.accept("IF", "EXISTS")
            return nodes.DropIndex(self.name("index name"), if_exists)
        if self.accept("CHANGE", "STREAM"):
            return change_stream_parser.drop(self)
        if self.accept("VIEW"):
            return nodes.DropView(self.name("view name"))
        if self.accept("SEARCH", "INDEX"):
            return search_index_parser.drop(self)
        if self.accept("SEQUENCE"):
            return sequence_parser.drop(self)
        if self.accept("PROTO", "BUNDLE"):
            return proto_bundle_parser.drop(self)
        if self.accept("ROLE"):
            return role_parser.drop(self)
        if self.at(*_UNSUPPORTED_CREATE, "DATABASE"):
            raise self.unsupported(errors.feature_drop(self.tok.text.upper()))
        raise self.fail("TABLE or INDEX")

    # --- pieces ------------------------------------------------------------------------

    def column_definition(self, name: str | None = None, inline_key: bool = False) -> tuple[Column, bool, bool]:
        """A column definition, whether it had an OPTIONS clause, and whether it said PRIMARY KEY.

        ``PRIMARY KEY`` on a column is only allowed (``inline_key``) in CREATE TABLE.
        """
        name = name if name is not None else self.name("column name")
        col_type = self.column_type()
        not_null = self.accept("NOT", "NULL")
        default = generated = identity = None
        stored = False
        if self.accept("DEFAULT"):
            default = self.expression()
        elif self.accept("AS"):
            generated = self.expression()
            stored = self.accept("STORED")
        elif self.accept("GENERATED"):
            identity = sequence_parser.identity(self)  # named (and given its DEFAULT) when applied
        hidden = self.accept("HIDDEN")
        is_key = inline_key and self.accept("PRIMARY", "KEY")
        has_options = self.accept("OPTIONS")
        options = self.options() if has_options else {}
        allow = bool(options.get("allow_commit_timestamp"))
        column = Column(name, col_type, not_null, default, generated, stored, allow, hidden=hidden, identity=identity)
        return column, has_options, is_key

    def column_type(self) -> types.SpannerType:
        """Find the extent of a type (balanced ``<>`` and ``()``) and let types.parse_type read it."""
        first = self.tok
        if first.kind not in (IDENT, QUOTED):  # QUOTED: a back-quoted proto type name
            raise self.fail("a column type")
        self.advance()
        while self.at_symbol(".") and first.kind == IDENT:  # a proto type: examples.music.SingerInfo
            self.advance()
            self.advance()
        depth = 0
        if self.at_symbol("<"):
            while True:
                tok = self.advance()
                if tok.kind == EOF:
                    raise self.fail("'>'")
                depth += {"<": 1, ">": -1}.get(tok.text, 0) if tok.kind == SYMBOL else 0
                if depth == 0:
                    break
        base = first.text.upper()
        if base in ("STRING", "BYTES"):
            self.expect_symbol("(")
            if self.tok.kind == EOF or self.at_symbol(")"):
                raise self.fail("a length or MAX")
            self.advance()
            self.expect_symbol(")")
        last = self.tokens[self.pos - 1]
        text = self.text[first.start : last.end]
        try:
            return types.parse_type(text)
        except errors.SpannerError as exc:
            raise errors.ddl_bad_type_at(self.text, exc.message, first.line, first.column) from None

    def key_part(self) -> KeyPart:
        column = self.name("column name")
        if self.accept("DESC"):
            return KeyPart(column, True)
        self.accept("ASC")
        return KeyPart(column)

    def options(self) -> dict[str, bool | None]:
        """``( name = value, ... )`` for the options in ``_OPTION_VALUES``."""

        def one() -> tuple[str, bool | None]:
            tok = self.tok
            name = self.name("option name").lower()
            if name not in _OPTION_VALUES:
                raise errors.ddl_option_not_supported(self.text, tok.text, tok.line, tok.column)
            self.expect_symbol("=")
            value_tok = self.tok
            value_map = _OPTION_VALUES[name]
            if value_tok.kind != IDENT or value_tok.text.upper() not in value_map:
                raise self.fail(" or ".join(value_map).lower())
            self.advance()
            return name, value_map[value_tok.text.upper()]

        return dict(self.comma_list(one, allow_empty=True))

    def expression(self) -> str:
        """The raw text between balanced parentheses, e.g. ``(a + (b))`` -> ``a + (b)``."""
        open_tok = self.expect_symbol("(")
        depth = 1
        while depth:
            tok = self.advance()
            if tok.kind == EOF:
                raise self.fail("')'", tok)
            if tok.kind == SYMBOL and tok.text in "()":
                depth += 1 if tok.text == "(" else -1
        close_tok = self.tokens[self.pos - 1]
        text = self.text[open_tok.end : close_tok.start].strip()
        if not text:
            raise self.fail("an expression", close_tok)
        return text

