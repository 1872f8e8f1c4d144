"""The wording of DDL parse errors: call sites in ``ddl/`` pass tokens and positions, not prose.

Builders return a whole :class:`SpannerError`; ``feature_*`` functions and the
``DDL_*`` constants return the feature text that ``ddl_unsupported`` wraps.

Example:
    >>> ddl_expecting("CREATE TABLE", "a name", "end of input", 1, 13).message
    'Error parsing Spanner DDL statement: CREATE TABLE : Expecting a name but found end of input at line 1, column 13'
    >>> feature_alter_table("DROP", "ROW")
    'ALTER TABLE DROP ROW'
"""

from __future__ import annotations

from .base import SpannerError
from .schema import ddl_syntax_error

#: Features of the DDL the local server does not implement (text for ``ddl_unsupported``).
DDL_ALTER_GENERATED_COLUMN = "changing a generated column with ALTER COLUMN"


def ddl_expecting(statement: str, expected: str, found: str, line: int, column: int) -> SpannerError:
    """The parser wanted ``expected`` at a position and found something else."""
    return ddl_syntax_error(statement, f"Expecting {expected} but found {found} at line {line}, column {column}")


def ddl_syntax_at(statement: str, detail: str, line: int, column: int) -> SpannerError:
    """A lexer error (``detail`` is one of the lexer's fixed phrases) at a position."""
    return ddl_syntax_error(statement, f"{detail} at line {line}, column {column}")


def ddl_second_primary_key(statement: str, line: int, column: int) -> SpannerError:
    return ddl_syntax_error(statement, f"A table can have only one PRIMARY KEY; another one starts at line {line}, column {column}")


def ddl_bad_type_at(statement: str, detail: str, line: int, column: int) -> SpannerError:
    """A column type that did not parse; ``detail`` is the type parser's own message."""
    return ddl_syntax_error(statement, f"{detail} (at line {line}, column {column})")


def ddl_option_not_supported(statement: str, option: str, line: int, column: int) -> SpannerError:
    return ddl_syntax_error(statement, f"Option {option} is not supported (at line {line}, column {column})")


def feature_create(kind: str) -> str:
    return f"CREATE {kind}"


def feature_in_create_table(clause: str) -> str:
    return f"{clause} in CREATE TABLE"


def feature_alter_table(*words: str) -> str:
    """``words`` are the clause after ALTER TABLE <name>, e.g. ``("ADD", "ROW")`` or ``("SET",)``."""
    return " ".join(("ALTER TABLE", *words))


def feature_drop(kind: str) -> str:
    return f"DROP {kind}"


#: What the DDL lexer found wrong (``ddl_syntax_at`` adds the position).
LEX_UNTERMINATED_COMMENT = "Unterminated comment"
LEX_UNTERMINATED_QUOTED_IDENTIFIER = "Unterminated quoted identifier"
LEX_EMPTY_QUOTED_IDENTIFIER = "Empty quoted identifier"
LEX_UNTERMINATED_STRING = "Unterminated string literal"


def lex_illegal_escape(code: str) -> str:
    return f"Illegal escape sequence '\\{code}'"
