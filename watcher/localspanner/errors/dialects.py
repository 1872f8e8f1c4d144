"""Errors of the database dialects: PostgreSQL databases, and one dialect's syntax sent to the other.

Example:
    >>> pg_syntax_in_google_sql("SELECT $1", "$1 parameters").message
    'Syntax error: $1 parameters is PostgreSQL syntax; this is a GoogleSQL database [in statement: SELECT $1]'
"""

from __future__ import annotations

from .base import Code, SpannerError, _clip, invalid_argument

__all__ = [
    "PG_EXPECTED_STATEMENT",
    "as_written",
    "google_sql_in_pg",
    "pg_create_database_syntax",
    "pg_ddl_unsupported",
    "pg_index_filter_not_in_key",
    "pg_index_partial_filter",
    "pg_name_in_other_case",
    "pg_syntax_error",
    "pg_syntax_in_google_sql",
    "pg_type_not_in_dialect",
    "pg_unknown_function",
    "pg_unknown_type",
    "unknown_database_dialect",
]


def unknown_database_dialect(number: int) -> SpannerError:
    return invalid_argument(f"Unknown database_dialect {number}: expected GOOGLE_STANDARD_SQL or POSTGRESQL.")


def pg_create_database_syntax(statement: str) -> SpannerError:
    return invalid_argument(f"A PostgreSQL database is created by CREATE DATABASE \"<database-id>\"; found: {_clip(statement)}")


def pg_unknown_type(text: str) -> SpannerError:
    return invalid_argument(f"Type {text!r} is not a type of PostgreSQL-dialect Spanner.")


def pg_type_not_in_dialect(text: str) -> SpannerError:
    return invalid_argument(f"Type {text} has no PostgreSQL spelling.")


def pg_ddl_unsupported(statement: str, words: tuple[str, ...]) -> SpannerError:
    """A PostgreSQL DDL form the local server lacks, named by the keywords that start it."""
    feature = " ".join(w for w in words if w) or "this statement"
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support {feature} in PostgreSQL DDL "
                                            f"(statement: {_clip(statement)})")


def pg_index_filter_not_in_key(statement: str, index: str, columns: list[str]) -> SpannerError:
    return invalid_argument(f"Index {index}: the WHERE clause may only filter NULLs of key columns; "
                            f"{', '.join(columns)} is not one (statement: {_clip(statement)})")


def pg_index_partial_filter(statement: str, index: str, columns: list[str]) -> SpannerError:
    listed = ", ".join(columns)
    return SpannerError(Code.UNIMPLEMENTED, f"Index {index}: the local Spanner server filters NULLs of every nullable key "
                                            f"column or none; the WHERE clause leaves out {listed} (statement: {_clip(statement)})")


def pg_name_in_other_case(sql: str, name: str, exact: str) -> SpannerError:
    return invalid_argument(f'column or table "{name}" does not exist; the schema has "{exact}" (names not in double '
                            f"quotes fold to lower case) [in statement: {_clip(sql)}]")


def pg_syntax_error(sql: str, detail: str) -> SpannerError:
    return invalid_argument(f"Syntax error: {detail} [in statement: {_clip(sql)}]")


def google_sql_in_pg(sql: str, what: str) -> SpannerError:
    """GoogleSQL-only syntax (back-quoted names, ``@name`` parameters) sent to a PostgreSQL database."""
    return pg_syntax_error(sql, f"{what} is GoogleSQL syntax; this is a PostgreSQL database")


def pg_syntax_in_google_sql(sql: str, what: str) -> SpannerError:
    """PostgreSQL-only syntax (``$1`` parameters, ``::`` casts, ``spanner.`` functions) sent to a GoogleSQL database."""
    return invalid_argument(f"Syntax error: {what} is PostgreSQL syntax; this is a GoogleSQL database [in statement: {_clip(sql)}]")


def pg_unknown_function(sql: str, name: str) -> SpannerError:
    return invalid_argument(f"function {name} does not exist [in statement: {_clip(sql)}]")


#: What a PostgreSQL query or DML request must be.
PG_EXPECTED_STATEMENT = "expected a query (SELECT, WITH) or an INSERT, UPDATE or DELETE statement"


def as_written(error: SpannerError, run: str, written: str) -> SpannerError:
    """``error``, raised for the GoogleSQL text ``run`` a PostgreSQL statement became, naming ``written`` instead.

    >>> as_written(invalid_argument("Unrecognized name: x [in statement: SELECT `x`]"), "SELECT `x`", "SELECT x").message
    'Unrecognized name: x [in statement: SELECT x]'
    """
    message = error.message.replace(_clip(run), _clip(written))
    return error if message == error.message else SpannerError(error.code, message, retry_delay=error.retry_delay)
