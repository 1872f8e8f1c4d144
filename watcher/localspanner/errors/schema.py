"""Errors of column types, schema changes (DDL, change streams) and schema names."""

from __future__ import annotations

from .base import Code, SchemaChangeStopped, SpannerError, _clip, failed_precondition, invalid_argument

# --- column types ----------------------------------------------------------------------------

def unexpected_in_type(token: str, text: str) -> SpannerError:
    return invalid_argument(f"Unexpected {token!r} in type {text!r}.")


def invalid_type(text: str) -> SpannerError:
    return invalid_argument(f"Invalid type {text!r}.")


def incomplete_type(text: str) -> SpannerError:
    return invalid_argument(f"Incomplete type {text!r}.")


def array_of_arrays(text: str) -> SpannerError:
    return invalid_argument(f"Arrays of arrays are not allowed: {text!r}.")


def unknown_type(name: str, text: str) -> SpannerError:
    return invalid_argument(f"Unknown type {name!r} in {text!r}.")


def invalid_type_length(size: str, text: str) -> SpannerError:
    return invalid_argument(f"Invalid length {size!r} in type {text!r}.")


def type_length_out_of_range(size: str, text: str, limit: int) -> SpannerError:
    return invalid_argument(f"Length {size} in type {text!r} must be between 1 and {limit}.")


def expected_in_type(symbol: str, text: str) -> SpannerError:
    return invalid_argument(f"Expected {symbol!r} in type {text!r}.")


# --- schema and DDL ------------------------------------------------------------------------

def ddl_syntax_error(statement: str, detail: str) -> SpannerError:
    return invalid_argument(f"Error parsing Spanner DDL statement: {_clip(statement)} : {detail}")


def create_database_syntax(statement: str) -> SpannerError:
    return ddl_syntax_error(statement, "expected CREATE DATABASE <database-id>")


def ddl_invalid(statement: str, detail: str) -> SpannerError:
    return failed_precondition(f"Schema change rejected: {detail} (statement: {_clip(statement)})")


def ddl_orphan_rows(statement: str, table: str, parent: str) -> SpannerError:
    return ddl_invalid(statement, f"rows of table {table} have no parent row in table {parent}")


def ddl_existing_nulls(statement: str, columns: str) -> SpannerError:
    return ddl_invalid(statement, f"existing rows have NULL values ({columns})")


def ddl_existing_duplicates(statement: str, columns: str) -> SpannerError:
    return ddl_invalid(statement, f"existing rows have duplicate values ({columns})")


def ddl_unsupported(statement: str, feature: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support {feature} (statement: {_clip(statement)})")


def ddl_statement_failed(error: SpannerError, statement: str) -> SpannerError:
    """The same error (code and message), also naming the DDL statement that caused it."""
    return SpannerError(error.code, f"{error.message} (statement: {_clip(statement)})", retry_delay=error.retry_delay)


# --- change stream DDL -----------------------------------------------------------------

def change_stream_not_found(statement: str, name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Change stream not found: {name} (statement: {_clip(statement)})")


def change_stream_unknown_table(statement: str, stream: str, table: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Change stream {stream} cannot track table {table}: table not found "
                        f"(statement: {_clip(statement)})")


def change_stream_unknown_column(statement: str, stream: str, table: str, column: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Change stream {stream} cannot track column {table}.{column}: column not found "
                        f"(statement: {_clip(statement)})")


def change_stream_key_column(statement: str, stream: str, table: str, column: str) -> SpannerError:
    return ddl_invalid(statement, f"Change stream {stream} cannot explicitly track key column {table}.{column}: "
                       "key columns are always tracked")


def change_stream_table_twice(statement: str, stream: str, table: str) -> SpannerError:
    return ddl_invalid(statement, f"Change stream {stream} names table {table} more than once")


def change_stream_column_twice(statement: str, stream: str, table: str, column: str) -> SpannerError:
    return ddl_invalid(statement, f"Change stream {stream} names column {table}.{column} more than once")


def change_stream_unknown_option(statement: str, stream: str, option: str) -> SpannerError:
    return invalid_argument(f"Invalid change stream option {option} for change stream {stream} (statement: {_clip(statement)})")


def change_stream_option_twice(statement: str, stream: str, option: str) -> SpannerError:
    return invalid_argument(f"Change stream option {option} is set twice for change stream {stream} "
                            f"(statement: {_clip(statement)})")


def change_stream_bad_option_value(statement: str, stream: str, option: str, value: str, expected: str) -> SpannerError:
    return invalid_argument(f"Invalid value {value} for option {option} of change stream {stream}: expected {expected} "
                            f"(statement: {_clip(statement)})")


def change_stream_retention_out_of_range(statement: str, stream: str, value: str, low: str, high: str) -> SpannerError:
    return invalid_argument(f"Invalid retention_period {value} for change stream {stream}: it must be between "
                            f"{low} and {high} (statement: {_clip(statement)})")


def change_stream_blocks_drop_table(statement: str, table: str, stream: str) -> SpannerError:
    return ddl_invalid(statement, f"Cannot drop table {table}: change stream {stream} tracks it explicitly; "
                       "alter or drop the change stream first")


def change_stream_blocks_drop_column(statement: str, table: str, column: str, stream: str) -> SpannerError:
    return ddl_invalid(statement, f"Cannot drop column {table}.{column}: change stream {stream} tracks it explicitly; "
                       "alter or drop the change stream first")

def schema_change_stopped(error: SpannerError, commit_nanos: list[int]) -> SchemaChangeStopped:
    """``error`` stopped a schema change after the statements with ``commit_nanos`` were applied.

    >>> schema_change_stopped(table_not_found("T"), [5, 6]).commit_nanos
    [5, 6]
    """
    return SchemaChangeStopped(error, commit_nanos)


def duplicate_name(kind: str, name: str) -> SpannerError:
    return failed_precondition(f"Duplicate name in schema: {name} (a {kind} of that name already exists).")


def table_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Table not found: {name}")


def query_table_not_found(name: str) -> SpannerError:
    """An unknown table named in SQL text: an analysis error (INVALID_ARGUMENT) on Spanner, unlike reads and mutations."""
    return invalid_argument(f"Table not found: {name}")


def index_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Index not found: {name}")


def column_not_found(table: str, column: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Column not found in table {table}: {column}")


def unknown_index_in_hint(table: str, index: str) -> SpannerError:
    return invalid_argument(f"The table {table} does not have a secondary index called {index} (used in FORCE_INDEX).")
