"""PostgreSQL-dialect Spanner DDL parsed into the same typed nodes as GoogleSQL DDL (``nodes.py``).

The GoogleSQL parser's statement structure and token helpers are reused; this module
supplies PostgreSQL's lexing (double-quoted names keep their case, unquoted ones fold to
lower case, ``'...'`` strings with ``''``) and the clauses that differ, listed here:

======================================  =============================================
PostgreSQL                              node
======================================  =============================================
``bigint``, ``varchar(n)``, ``text``,   the column's type (``dialects.TYPES``);
``bigint[]`` ...                        ``spanner.commit_timestamp`` is a TIMESTAMP that
                                        allows commit timestamps
``PRIMARY KEY (a, b)`` in the list      ``CreateTable.primary_key``
``GENERATED ALWAYS AS (e) STORED``      a stored generated column
``DEFAULT e``                           ``Column.default``
``INTERLEAVE IN PARENT p ON DELETE``    ``CreateTable.parent`` / ``on_delete_cascade``
``CREATE INDEX ... INCLUDE (x)``        ``CreateIndex.storing``
``... WHERE c IS NOT NULL [AND ...]``   ``CreateIndex.null_filtered``
``INTERLEAVE IN p`` (index)             ``CreateIndex.interleave_in``
``CREATE CHANGE STREAM ... WITH (...)`` the stream's options
``TTL INTERVAL '7 days' ON c``          ``CreateTable.row_deletion_policy``
``CREATE SEQUENCE s BIT_REVERSED_POSITIVE ``CreateSequence`` (clause form); ``nextval('s')``
[SKIP RANGE a b] [START COUNTER WITH n]`` in expressions is GET_NEXT_SEQUENCE_VALUE
``ALTER DATABASE d SET spanner.o = 'v'`` ``AlterDatabase`` (``RESET spanner.o``: back to the default)
``ALTER COLUMN c TYPE t``, ``SET | DROP  ``AlterColumnType`` (the column's other parts
NOT NULL``                              kept), ``SET | DROP DEFAULT``
======================================  =============================================

Expressions (DEFAULT, generated columns, CHECK) become GoogleSQL text
(``postgresql.expression_to_google_sql``), so the rest of the server has one path.

Example:
    >>> node = parse_pg_ddl('CREATE TABLE Singers (SingerId bigint NOT NULL, "Name" varchar(20), '
    ...                     'ts spanner.commit_timestamp, PRIMARY KEY (SingerId))')
    >>> [(c.name, str(c.type), c.allow_commit_timestamp) for c in node.columns], node.primary_key[0].column
    ([('singerid', 'INT64', False), ('Name', 'STRING(20)', False), ('ts', 'TIMESTAMP', True)], 'singerid')
"""

from __future__ import annotations

import re

from .. import errors
from ..dialects import dialects
from ..dialects.postgresql import expression_to_google_sql, to_google_sql
from ..schema import database_options
from ..schema.catalog import BIT_REVERSED_POSITIVE, Catalog, Column, KeyPart, RowDeletionPolicy
from . import change_stream_parser, constraint_parser, nodes, role_parser, sequence_options, sequence_parser
from .lexer import EOF, IDENT, NUMBER, QUOTED, STRING, SYMBOL, Token
from .parser import _Parser

#: Type names of more than one word: the first word and the words that must follow it.
_MULTI_WORD_TYPES = {"double": ("precision",), "character": ("varying",), "timestamp": ("with", "time", "zone")}
#: Words that end a DEFAULT expression written without parentheses.
_COLUMN_CLAUSES = ("NOT", "NULL", "PRIMARY", "GENERATED", "CHECK", "REFERENCES", "CONSTRAINT", "HIDDEN")
#: ``TTL INTERVAL '<n> <unit>' ON column``: the units Spanner's PostgreSQL interface takes, as days.
_TTL_UNITS = {"day": 1, "days": 1}
_TTL_INTERVAL = re.compile(r"\s*(\d+)\s*([a-z]+)\s*\Z")
_UNSUPPORTED_CREATE = ("SCHEMA", "FUNCTION", "MODEL", "SEARCH", "PROTO", "PLACEMENT", "LOCALITY")
_TOKEN = re.compile(r"""
    (?P<space>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<string>'(?:[^']|'')*')
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<symbol>::|.)
""", re.VERBOSE | re.DOTALL)


def tokenize_pg(statement: str) -> list[Token]:
    """PostgreSQL tokens in the GoogleSQL lexer's :class:`Token` form (IDENT values folded to lower case).

    >>> [(t.kind, t.value) for t in tokenize_pg('Create "My Table" x')][:3]
    [('ident', 'create'), ('quoted', 'My Table'), ('ident', 'x')]
    """
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(statement):
        m = _TOKEN.match(statement, pos)
        assert m is not None  # the last alternative takes any character
        kind, text = m.lastgroup, m.group()
        if text.startswith(("'", '"')) and (len(text) < 2 or text[-1] != text[0]):
            detail = errors.LEX_UNTERMINATED_STRING if text[0] == "'" else errors.LEX_UNTERMINATED_QUOTED_IDENTIFIER
            raise errors.ddl_syntax_at(statement, detail, line, pos - line_start + 1)
        if kind != "space":
            value = text[1:-1].replace('""', '"') if kind == "quoted" else text.lower() if kind == "word" else text
            token_kind = {"quoted": QUOTED, "string": STRING, "word": IDENT, "number": NUMBER}.get(kind or "", SYMBOL)
            tokens.append(Token(token_kind, text, value, pos, m.end(), line, pos - line_start + 1))
        newlines = text.count("\n")
        if newlines:
            line += newlines
            line_start = pos + text.rindex("\n") + 1
        pos = m.end()
    tokens.append(Token(EOF, "", "", len(statement), len(statement), line, len(statement) - line_start + 1))
    return tokens


def parse_pg_ddl(statement: str, catalog: Catalog | None = None) -> nodes.Node:
    """Parse one PostgreSQL-dialect DDL statement into its node.

    ``catalog`` (the schema it will apply to) lets a NULL-filtered index's WHERE clause be
    checked against its table's nullable key columns.

    >>> parse_pg_ddl("CREATE INDEX idx ON singers (shardid, ts) INCLUDE (name) WHERE shardid IS NOT NULL").null_filtered
    True

    Raises:
        SpannerError: INVALID_ARGUMENT saying what was expected and where; UNIMPLEMENTED
            for PostgreSQL DDL the local server does not support.
    """
    return _PgParser(statement, catalog).statement()


class _PgParser(_Parser):
    def __init__(self, statement: str, catalog: Catalog | None) -> None:
        self.text = statement
        self.tokens = tokenize_pg(statement)
        self.pos = 0
        self.catalog = catalog

    def unsupported(self, *words: str) -> errors.SpannerError:
        """UNIMPLEMENTED for the statement form that starts with ``words`` (``CREATE``, ``ROLE``)."""
        return errors.pg_ddl_unsupported(self.text, words)

    def name(self, what: str = "identifier") -> str:
        tok = self.tok
        if tok.kind == QUOTED or (tok.kind == IDENT and tok.value not in dialects.PG_RESERVED):
            self.advance()
            return tok.value
        raise self.fail(what)

    # --- statements ----------------------------------------------------------------------

    def grant(self, *, revoke: bool) -> nodes.Node:
        """After ``GRANT`` or ``REVOKE``, PostgreSQL's way."""
        return role_parser.pg_grant(self, revoke=revoke)

    def create(self) -> nodes.Node:
        if self.accept("DATABASE"):
            return nodes.CreateDatabase(self.name("database name"))
        if self.accept("ROLE"):
            return role_parser.create(self)
        if self.accept("TABLE"):
            return self.create_table()
        if self.accept("CHANGE", "STREAM"):
            name = self.name("change stream name")
            watch = change_stream_parser.watch_clause(self) if self.accept("FOR") else None
            options = change_stream_parser.options_clause(self) if self.accept("WITH") else ()
            return nodes.CreateChangeStream(name, watch, options)
        if self.accept("OR", "REPLACE"):
            self.expect("VIEW")
            return self.create_view(or_replace=True)
        if self.accept("VIEW"):
            return self.create_view(or_replace=False)
        if self.accept("SEQUENCE"):
            return self.create_sequence()
        unique = self.accept("UNIQUE")
        if self.accept("INDEX"):
            return self.create_index(unique, False)
        if not unique and self.at(*_UNSUPPORTED_CREATE):
            raise self.unsupported("CREATE", self.tok.text.upper())
        raise self.fail("TABLE, INDEX, VIEW or CHANGE STREAM" if not unique else "keyword INDEX")

    def create_sequence(self) -> nodes.CreateSequence:
        """``[IF NOT EXISTS] name [BIT_REVERSED_POSITIVE] [SKIP RANGE a b] [START COUNTER [WITH] n]``."""
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.name("sequence name")
        options: list[tuple[str, sequence_options.OptionValue]] = []
        if self.accept(BIT_REVERSED_POSITIVE.upper()):
            options.append(("sequence_kind", BIT_REVERSED_POSITIVE))
        if self.accept("SKIP", "RANGE"):
            low = sequence_parser.integer(self)
            if self.at_symbol(","):
                self.advance()
            options += [("skip_range_min", low), ("skip_range_max", sequence_parser.integer(self))]
        if self.accept("START", "COUNTER"):
            self.accept("WITH")
            options.append(("start_with_counter", sequence_parser.integer(self)))
        return nodes.CreateSequence(sequence_options.build(name, options, clauses=True, default_kind=True), if_not_exists)

    def create_view(self, *, or_replace: bool) -> nodes.CreateView:
        node = super().create_view(or_replace=or_replace)
        return nodes.CreateView(node.name, to_google_sql(node.definition), node.security, node.or_replace)

    def create_table(self) -> nodes.CreateTable:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.name("table name")
        columns: list[Column] = []
        constraints: list = []
        key: list[KeyPart] | None = None
        self.expect_symbol("(")
        while not self.at_symbol(")"):
            start = self.tok
            if self.at("CONSTRAINT") and self.tokens[self.pos + 2].is_word("PRIMARY"):
                self.advance()
                self.name("constraint name")  # the primary key's constraint name is not kept
            if self.accept("PRIMARY", "KEY"):
                key = self.only_key(key, self.comma_list(self.key_part, allow_empty=True), start)
            elif self.at(*constraint_parser.STARTS):
                constraints.append(constraint_parser.element(self))
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
        if key is None:
            raise self.fail("a PRIMARY KEY in the column list")
        parent, cascade = None, False
        if self.accept("INTERLEAVE", "IN", "PARENT"):
            parent = self.name("parent table name")
            if self.accept("ON", "DELETE"):
                if self.accept("CASCADE"):
                    cascade = True
                elif not self.accept("NO", "ACTION"):
                    raise self.fail("CASCADE or NO ACTION")
        policy = self.ttl() if self.accept("TTL") else None
        checks = tuple(c for c in constraints if isinstance(c, nodes.CheckConstraint))
        fks = tuple(c for c in constraints if isinstance(c, nodes.ForeignKey))
        return nodes.CreateTable(name, tuple(columns), tuple(key), parent, cascade, if_not_exists, checks, fks, policy)

    def ttl(self) -> RowDeletionPolicy:
        """After TTL: ``INTERVAL '<n> days' ON column``."""
        self.expect("INTERVAL")
        tok = self.tok
        m = _TTL_INTERVAL.match(tok.value[1:-1].lower()) if tok.kind == STRING else None
        if m is None or m.group(2) not in _TTL_UNITS:
            raise self.fail("an interval such as '7 days'")
        self.advance()
        self.expect("ON")
        return RowDeletionPolicy(self.name("column name"), int(m.group(1)) * _TTL_UNITS[m.group(2)])

    def create_index(self, unique: bool, null_filtered: bool) -> nodes.CreateIndex:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.name("index name")
        self.expect("ON")
        table = self.name("table name")
        key = self.comma_list(self.key_part)
        storing: list[str] = []
        if self.accept("INCLUDE"):
            storing = self.comma_list(lambda: self.name("column name"))
        interleave = None
        if self.accept("INTERLEAVE", "IN"):
            interleave = self.name("table name")
        filtered: list[str] = []
        if self.accept("WHERE"):
            filtered.append(self.not_null_term())
            while self.accept("AND"):
                filtered.append(self.not_null_term())
            self.check_filter(name, table, key, filtered)
        return nodes.CreateIndex(name, table, tuple(key), tuple(storing), unique, bool(filtered), interleave, if_not_exists)

    def not_null_term(self) -> str:
        column = self.name("column name")
        self.expect("IS", "NOT", "NULL")
        return column

    def check_filter(self, index: str, table_name: str, key: list[KeyPart], filtered: list[str]) -> None:
        """A WHERE clause must name key columns, and every nullable one (the server filters all or none)."""
        keys = {p.column.lower() for p in key}
        stray = [c for c in filtered if c.lower() not in keys]
        if stray:
            raise errors.pg_index_filter_not_in_key(self.text, index, stray)
        table = self.catalog.table(table_name) if self.catalog is not None else None
        if table is None:
            return  # the schema updater reports the missing table
        named = {c.lower() for c in filtered}
        left_out = [p.column for p in key if p.column.lower() not in named
                    and (col := table.column(p.column)) is not None and not col.not_null]
        if left_out:
            raise errors.pg_index_partial_filter(self.text, index, left_out)

    def key_part(self) -> KeyPart:
        part = super().key_part()
        if self.accept("NULLS"):
            if not (self.accept("FIRST") or self.accept("LAST")):
                raise self.fail("FIRST or LAST")
        return part

    def alter(self) -> nodes.Node:
        if self.accept("CHANGE", "STREAM"):
            name = self.name("change stream name")
            if self.accept("SET", "FOR"):
                return nodes.AlterChangeStreamSetFor(name, change_stream_parser.watch_clause(self))
            if self.accept("DROP", "FOR", "ALL"):
                return nodes.AlterChangeStreamDropForAll(name)
            if self.accept("SET"):
                return nodes.AlterChangeStreamSetOptions(name, change_stream_parser.options_clause(self))
            raise self.fail("SET FOR, DROP FOR ALL or SET (...)")
        if self.accept("DATABASE"):
            return self.alter_database()
        self.expect("TABLE")
        table = self.name("table name")
        if self.accept("ADD"):
            if self.at(*constraint_parser.STARTS):
                return constraint_parser.alter_add(self, table)
            self.accept("COLUMN")
            if_not_exists = self.accept("IF", "NOT", "EXISTS")
            return nodes.AlterTableAddColumn(table, self.column_definition()[0], if_not_exists)
        if self.accept("DROP"):
            if self.accept("CONSTRAINT"):
                return constraint_parser.alter_drop(self, table)
            self.accept("COLUMN")
            return nodes.AlterTableDropColumn(table, self.name("column name"))
        if self.accept("ALTER"):
            self.accept("COLUMN")
            column = self.name("column name")
            if self.accept("SET", "DEFAULT"):
                return nodes.AlterColumnSetDefault(table, column, self.default_expression())
            if self.accept("DROP", "DEFAULT"):
                return nodes.AlterColumnSetDefault(table, column, None)
            return self.alter_column_definition(table, column)
        raise self.fail("ADD, DROP or ALTER")

    def alter_database(self) -> nodes.AlterDatabase:
        """After ALTER DATABASE: ``name SET spanner.option = 'value'`` (or ``TO``) or ``name RESET spanner.option``."""
        name = self.name("database name")
        reset = self.accept("RESET")
        if not reset:
            self.expect("SET")
        start = self.tok
        if not self.accept("SPANNER") or not self.at_symbol("."):
            raise self.fail("spanner.<option>", start)
        self.advance()
        option_tok = self.advance()
        option = option_tok.value
        if option not in database_options.OPTIONS:
            raise errors.database_option_unknown(self.text, option_tok.text)
        if reset:
            return nodes.AlterDatabase(name, ((option, None),))
        if not self.accept("TO"):
            self.expect_symbol("=")
        value_tok = self.tok
        if value_tok.kind != STRING:
            raise self.fail("a string literal")
        self.advance()
        return nodes.AlterDatabase(name, ((option, value_tok.text[1:-1].replace("''", "'")),))

    def alter_column_definition(self, table: str, column: str) -> nodes.AlterColumnType:
        """``TYPE t``, ``SET NOT NULL`` or ``DROP NOT NULL``: the column redefined with its other parts kept."""
        existing = self.catalog.table(table) if self.catalog is not None else None
        found = existing.column(column) if existing is not None else None
        if found is None:
            raise errors.column_not_found(table, column)
        col_type, not_null, allow = found.type, found.not_null, None
        if self.accept("TYPE"):  # to or from spanner.commit_timestamp sets or clears the option
            col_type, allow = self.pg_column_type()
        elif self.accept("SET", "NOT", "NULL"):
            not_null = True
        elif self.accept("DROP", "NOT", "NULL"):
            not_null = False
        else:
            raise self.fail("TYPE, SET NOT NULL, DROP NOT NULL, SET DEFAULT or DROP DEFAULT")
        return nodes.AlterColumnType(table, found.name, col_type, not_null, found.default, allow)

    # --- pieces ----------------------------------------------------------------------------

    def column_definition(self, name: str | None = None, inline_key: bool = False) -> tuple[Column, bool, bool]:
        name = name if name is not None else self.name("column name")
        col_type, commit_timestamp = self.pg_column_type()
        not_null = is_key = stored = False
        default = generated = None
        while True:
            if self.accept("NOT", "NULL"):
                not_null = True
            elif self.accept("NULL"):
                not_null = False
            elif self.accept("DEFAULT"):
                default = self.default_expression()
            elif self.accept("GENERATED", "ALWAYS", "AS"):
                generated = self.expression()
                if not self.accept("STORED"):
                    raise self.fail("keyword STORED")
                stored = True
            elif inline_key and self.accept("PRIMARY", "KEY"):
                is_key = True
            else:
                break
        return Column(name, col_type, not_null, default, generated, stored, commit_timestamp), False, is_key

    def pg_column_type(self) -> tuple[dialects.SpannerType, bool]:
        """The type's tokens (``double precision``, ``varchar(10)``, ``bigint[]``) through ``dialects.pg_type``;
        also whether it is ``spanner.commit_timestamp``."""
        first = self.tok
        if first.kind != IDENT:
            raise self.fail("a column type")
        self.advance()
        if first.value == "spanner" and self.at_symbol("."):
            self.advance()
            second = self.advance()
            if f"spanner.{second.value}" != dialects.COMMIT_TIMESTAMP_TYPE:
                raise errors.ddl_bad_type_at(self.text, errors.pg_unknown_type(f"spanner.{second.text}").message,
                                             first.line, first.column)
            return dialects.pg_type("timestamptz"), True
        for word in _MULTI_WORD_TYPES.get(first.value, ()):
            if not self.tok.is_word(word.upper()):
                break
            self.advance()
        if self.at_symbol("("):
            self.advance()
            if self.tok.kind != NUMBER:
                raise self.fail("a length")
            self.advance()
            self.expect_symbol(")")
        if self.at_symbol("["):
            self.advance()
            self.expect_symbol("]")
        text = self.text[first.start : self.tokens[self.pos - 1].end]
        try:
            return dialects.pg_type(text), False
        except errors.SpannerError as exc:
            raise errors.ddl_bad_type_at(self.text, exc.message, first.line, first.column) from None

    def expression(self) -> str:
        """A parenthesized PostgreSQL expression as GoogleSQL text."""
        return expression_to_google_sql(super().expression(), self.text)

    def default_expression(self) -> str:
        """``DEFAULT (e)`` or ``DEFAULT e`` (up to the next clause, ``,`` or ``)`` of the table)."""
        if self.at_symbol("("):
            return self.expression()
        start, depth = self.tok, 0
        if start.kind == EOF or start.kind == SYMBOL and start.text in ",)":
            raise self.fail("an expression")
        self.advance()  # the first token is the expression's, even NULL or NOT
        while self.tok.kind != EOF:
            tok = self.tok
            if depth == 0 and (tok.kind == SYMBOL and tok.text in ",)"
                               or tok.kind == IDENT and tok.text.upper() in _COLUMN_CLAUSES and tok.text.upper() != "NULL"):
                break
            if tok.kind == SYMBOL and tok.text in "()":
                depth += 1 if tok.text == "(" else -1
            self.advance()
        text = self.text[start.start : self.tokens[self.pos - 1].end]
        return expression_to_google_sql(text, self.text)
