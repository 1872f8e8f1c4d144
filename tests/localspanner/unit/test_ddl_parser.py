"""The DDL parser: what it accepts besides the golden forms, and its error messages."""

from __future__ import annotations

import pytest

from watcher.localspanner.datamodel import types as T
from watcher.localspanner.ddl import nodes
from watcher.localspanner.ddl.lexer import quote_identifier, tokenize
from watcher.localspanner.ddl.parser import parse_ddl
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.schema.catalog import Column, KeyPart


def syntax_error(statement: str) -> str:
    with pytest.raises(SpannerError) as info:
        parse_ddl(statement)
    assert info.value.code == Code.INVALID_ARGUMENT, info.value
    assert info.value.message.startswith("Error parsing Spanner DDL statement: ")
    return info.value.message


def test_keywords_are_case_insensitive_and_names_keep_their_case() -> None:
    node = parse_ddl("cReAtE tAbLe MyT (Kk iNt64 NoT nUlL) pRiMaRy KeY (kK dEsC)")
    assert node == nodes.CreateTable("MyT", (Column("Kk", T.INT64, not_null=True),), (KeyPart("kK", True),))


def test_comments_of_all_three_kinds_are_ignored() -> None:
    node = parse_ddl("DROP -- line\n TABLE # hash\n /* block\n */ T")
    assert node == nodes.DropTable("T")


def test_back_quoted_identifiers_unescape() -> None:
    node = parse_ddl(r"DROP TABLE `a\`b\\c\x41\n`")
    assert node == nodes.DropTable("a`b\\cA\n")
    assert parse_ddl(f"DROP TABLE {quote_identifier(node.name)}") == node


def test_reserved_words_need_quotes_and_get_them() -> None:
    message = syntax_error("CREATE TABLE Order (K INT64) PRIMARY KEY (K)")
    assert "Expecting table name but found 'Order' at line 1, column 14" in message
    assert quote_identifier("order") == "`order`"
    assert quote_identifier("Orders") == "Orders"
    assert quote_identifier("1abc") == "`1abc`"


def test_expressions_keep_raw_text_with_nested_parens_and_strings() -> None:
    node = parse_ddl("ALTER TABLE T ADD COLUMN C STRING(MAX) DEFAULT ( CONCAT(')', \"(\", '''x)''', (r'\\)')) )")
    assert isinstance(node, nodes.AlterTableAddColumn)
    assert node.column.default == "CONCAT(')', \"(\", '''x)''', (r'\\)'))"


def test_generated_virtual_and_stored() -> None:
    node = parse_ddl("CREATE TABLE T (A INT64, B INT64 AS (A * 2), C INT64 AS (A + 1) STORED) PRIMARY KEY (A)")
    assert isinstance(node, nodes.CreateTable)
    assert [(c.generated, c.stored) for c in node.columns] == [(None, False), ("A * 2", False), ("A + 1", True)]


def test_array_and_all_scalar_types() -> None:
    node = parse_ddl(
        "CREATE TABLE T (a INT64, b FLOAT64, c BOOL, d DATE, e TIMESTAMP, f NUMERIC, g JSON, h STRING(10), "
        "i BYTES(MAX), j ARRAY<INT64>, k ARRAY<STRING(MAX)>, l ARRAY < BYTES ( 5 ) >) PRIMARY KEY ()"
    )
    assert isinstance(node, nodes.CreateTable)
    assert [str(c.type) for c in node.columns] == [
        "INT64", "FLOAT64", "BOOL", "DATE", "TIMESTAMP", "NUMERIC", "JSON", "STRING(10)", "BYTES(MAX)",
        "ARRAY<INT64>", "ARRAY<STRING(MAX)>", "ARRAY<BYTES(5)>",
    ]
    assert node.primary_key == ()


def test_alter_column_type_remembers_whether_options_were_given() -> None:
    without = parse_ddl("ALTER TABLE T ALTER COLUMN C TIMESTAMP NOT NULL")
    with_null = parse_ddl("ALTER TABLE T ALTER COLUMN C TIMESTAMP OPTIONS (allow_commit_timestamp = null)")
    assert isinstance(without, nodes.AlterColumnType) and isinstance(with_null, nodes.AlterColumnType)
    assert without.allow_commit_timestamp is None and without.not_null
    assert with_null.allow_commit_timestamp is False


def test_trailing_semicolon_is_tolerated_but_not_two_statements() -> None:
    assert parse_ddl("DROP TABLE T;") == nodes.DropTable("T")
    assert "Expecting end of statement but found 'DROP' at line 1, column 15" in syntax_error("DROP TABLE T; DROP TABLE U")


@pytest.mark.parametrize(
    ("statement", "detail"),
    [
        ("CREATE TABLE T (a INT64 NOT NULL,) PRIMARY KEY (a FOO)", "Expecting ')' but found 'FOO' at line 1, column 51"),
        ("CREATE TABLE T (a INT64) PRIMARY KEY (a", "Expecting ')' but found end of statement at line 1, column 40"),
        ("CREATE TABLE T (\n  a INT64\n  b INT64) PRIMARY KEY (a)", "Expecting ',' or ')' but found 'b' at line 3, column 3"),
        ("CREATE TABLE T (a STRING) PRIMARY KEY (a)", "Expecting '(' but found ')' at line 1, column 25"),
        ("CREATE TABLE T (a STRING()) PRIMARY KEY (a)", "Expecting a length or MAX but found ')' at line 1, column 26"),
        ("CREATE TABLE T (a INT64)", "Expecting keyword PRIMARY but found end of statement"),
        ("CREATE TABLE T (a INT64) PRIMARY KEY (a), INTERLEAVE IN PARENT", "Expecting parent table name but found end"),
        ("CREATE TABLE T (a INT64) PRIMARY KEY (a), INTERLEAVE IN PARENT P ON DELETE RESTRICT",
         "Expecting CASCADE or NO ACTION but found 'RESTRICT'"),
        ("CREATE TABLE T (a INT64 DEFAULT 5) PRIMARY KEY (a)", "Expecting '(' but found '5'"),
        ("CREATE TABLE T (a INT64 DEFAULT (1 + (2) PRIMARY KEY (a)", "Expecting ')' but found end of statement"),
        ("CREATE TABLE T (a INT64 AS () STORED) PRIMARY KEY (a)", "Expecting an expression but found ')'"),
        ("CREATE TABLE T (a TIMESTAMP OPTIONS (allow_commit_timestamp = yes)) PRIMARY KEY (a)",
         "Expecting true or false or null but found 'yes'"),
        ("CREATE TABLE T (a TIMESTAMP OPTIONS (colour = 1)) PRIMARY KEY (a)", "Option colour is not supported"),
        ("CREATE TABLE T (a INT65) PRIMARY KEY (a)", "Unknown type 'INT65'"),
        ("CREATE TABLE T (a STRING(0)) PRIMARY KEY (a)", "must be between 1 and"),
        ("CREATE TABLE T (a ARRAY<ARRAY<INT64>>) PRIMARY KEY (a)", "Arrays of arrays are not allowed"),
        ("CREATE TABLE T (a INT64) PRIMARY KEY (a), INTERLEAVE IN PARENT P, ORDER", "Expecting ROW DELETION POLICY"),
        ("CREATE TABLE T (a INT64 PRIMARY KEY) PRIMARY KEY (a)",
         "A table can have only one PRIMARY KEY; another one starts at line 1, column 38"),
        ("CREATE TABLE T (a INT64 PRIMARY KEY, b INT64 PRIMARY KEY)", "another one starts at line 1, column 38"),
        ("ALTER TABLE T ADD COLUMN a INT64 PRIMARY KEY", "Expecting end of statement but found 'PRIMARY'"),
        ("CREATE INDEX I ON T", "Expecting '(' but found end of statement"),
        ("CREATE INDEX I ON T ()", "Expecting column name but found ')'"),
        ("CREATE UNIQUE TABLE T", "Expecting keyword INDEX but found 'TABLE'"),
        ("CREATE INDEX I ON T (a) STORING", "Expecting '(' but found end of statement"),
        ("CREATE INDEX I ON T (a), INTERLEAVE T", "Expecting keyword IN but found 'T'"),
        ("ALTER TABLE T ALTER COLUMN c SET OPTIONS ()", "Expecting option allow_commit_timestamp but found end"),
        ("ALTER TABLE T FROB c", "Expecting ADD, DROP or ALTER but found 'FROB'"),
        ("ALTER INDEX I", "Expecting keyword TABLE but found 'INDEX'"),
        ("DROP VIEWS V", "Expecting TABLE or INDEX but found 'VIEWS'"),
        ("SELECT 1", "Expecting CREATE, ALTER or DROP but found 'SELECT'"),
        ("", "Expecting a DDL statement but found end of statement at line 1, column 1"),
        ("DROP TABLE `unterminated", "Unterminated quoted identifier at line 1, column 12"),
        ("DROP TABLE ``", "Empty quoted identifier"),
        ("DROP TABLE `a\\qb`", "Illegal escape sequence '\\q' at line 1, column 14"),
        ("CREATE TABLE T (a STRING(MAX) DEFAULT ('x)) PRIMARY KEY (a)", "Unterminated string literal"),
        ("DROP /* never closed TABLE T", "Unterminated comment at line 1, column 6"),
    ],
)
def test_syntax_errors_say_what_was_expected_and_where(statement: str, detail: str) -> None:
    assert detail in syntax_error(statement)


@pytest.mark.parametrize(
    ("statement", "feature"),
    [
        ("CREATE SCHEMA S", "CREATE SCHEMA"),
        ("CREATE MODEL M INPUT (x INT64) OUTPUT (y INT64) REMOTE", "CREATE MODEL"),
        ("CREATE TABLE T (a INT64, SYNONYM (U)) PRIMARY KEY (a)", "SYNONYM"),
        ("ALTER TABLE T ADD SYNONYM U", "ALTER TABLE ADD SYNONYM"),
        ("ALTER TABLE T SET ON DELETE CASCADE", "ALTER TABLE SET"),
        ("ALTER TABLE T ALTER COLUMN c INT64 AS (a) STORED", "changing a generated column"),
        ("DROP DATABASE d", "DROP DATABASE"),
    ],
)
def test_unsupported_ddl_is_unimplemented_and_says_what(statement: str, feature: str) -> None:
    with pytest.raises(SpannerError) as info:
        parse_ddl(statement)
    assert info.value.code == Code.UNIMPLEMENTED
    assert feature in info.value.message


def test_create_database_name() -> None:
    assert parse_ddl("CREATE DATABASE `my-db`") == nodes.CreateDatabase("my-db")
    assert parse_ddl("create database mydb") == nodes.CreateDatabase("mydb")


def test_token_positions_count_lines_and_columns() -> None:
    toks = tokenize("a\n  bb 'x(y'")
    assert [(t.kind, t.line, t.column) for t in toks] == [("ident", 1, 1), ("ident", 2, 3), ("string", 2, 6), ("eof", 2, 11)]
