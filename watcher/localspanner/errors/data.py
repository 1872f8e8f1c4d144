"""Errors of written values, rows and constraints, and of SQL statements."""

from __future__ import annotations

from .base import Code, SpannerError, _clip, failed_precondition, internal, invalid_argument

# --- data ------------------------------------------------------------------------------------

def row_already_exists(table: str, key: object) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Row {key} in table {table} already exists")


def row_not_found(table: str, key: object) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Row {key} in table {table} is missing. Row cannot be updated.")


def parent_row_missing(table: str, parent: str, key: object) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Insert failed because parent row in table {parent} is missing for row {key} in table {table}.")


def child_rows_exist(table: str, child: str, key: object) -> SpannerError:
    return failed_precondition(
        f"Cannot delete row {key} of table {table}: child rows exist in {child}, which is interleaved with ON DELETE NO ACTION."
    )


def null_in_not_null_column(table: str, column: str) -> SpannerError:
    return failed_precondition(f"{table}.{column} must not be NULL in table {table}.")


def unique_index_violation(index: str, key: object) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Unique index violation on index {index} at index key {key}.")


def generated_column_written(table: str, column: str) -> SpannerError:
    return invalid_argument(f"Cannot write into generated column {table}.{column}.")


def key_column_missing(table: str, column: str) -> SpannerError:
    """A mutation must name every primary key column: INVALID_ARGUMENT, as on Spanner."""
    return invalid_argument(f"Mutation on table {table} is missing primary key column {column}.")


def wrong_key_arity(table: str, expected: int, got: int) -> SpannerError:
    return invalid_argument(f"Wrong number of key parts for table {table}: expected {expected}, got {got}.")


def duplicate_mutation_column(table: str, column: str) -> SpannerError:
    return invalid_argument(f"Column {column} appears more than once in a mutation on table {table}.")


def unknown_mutation_operation(op: str, table: str) -> SpannerError:
    return invalid_argument(f"Unknown mutation operation {op!r} on table {table}.")


def index_does_not_cover(index: str, table: str, column: str) -> SpannerError:
    return invalid_argument(f"Index {index} does not cover column {column} of table {table}; add it to STORING or read the base table.")


def read_failed(table: str, detail: str) -> SpannerError:
    return internal(f"read of {table} failed: {detail}")


def constraint_failure(table: str, detail: str) -> SpannerError:
    return internal(f"constraint failure on table {table}: {detail}")


def bad_value(table: str, column: str, type_name: str, value: object) -> SpannerError:
    return invalid_argument(f"Invalid value for column {column} in table {table}: expected {type_name}, got {_clip(repr(value))}.")


def mutation_bad_value(table: str, column: str, type_name: str, value: object) -> SpannerError:
    """A mutation's value that is not of its column's type: FAILED_PRECONDITION, as Spanner answers it
    (the official client's system test ``test_invalid_type`` expects exactly that for ``''`` into INT64);
    the same text in a DML statement is a type error of the statement (:func:`bad_value`)."""
    return failed_precondition(f"Invalid value for column {column} in table {table}: expected {type_name}, got {_clip(repr(value))}.")


def value_too_long(table: str, column: str, limit: int) -> SpannerError:
    return failed_precondition(f"New value exceeds the maximum size limit for column {table}.{column}: at most {limit} allowed.")


def bad_parameter(name: str, type_name: str, value: object) -> SpannerError:
    return invalid_argument(f"Invalid value for query parameter @{name}: expected {type_name}, got {_clip(repr(value))}.")


def mutation_column_count(table: str, columns: int, values: int) -> SpannerError:
    return invalid_argument(f"Mutation on table {table} has {columns} columns but a row with {values} values.")


# --- SQL --------------------------------------------------------------------------------------

def sql_syntax_error(sql: str, detail: str) -> SpannerError:
    return invalid_argument(f"Syntax error: {detail} [in statement: {_clip(sql)}]")


def sql_unsupported(sql: str, detail: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support {detail} [in statement: {_clip(sql)}]")


def sql_invalid(sql: str, detail: str) -> SpannerError:
    return invalid_argument(f"{detail} [in statement: {_clip(sql)}]")


def sql_runtime_error(sql: str, detail: str) -> SpannerError:
    return SpannerError(Code.OUT_OF_RANGE, f"{detail} [in statement: {_clip(sql)}]")


def untranslatable_statement(sql: str, exc: Exception) -> SpannerError:
    """A construct the translator did not expect: a named limitation, never a traceback."""
    return sql_unsupported(sql, f"this statement ({type(exc).__name__}: {exc})")


def int64_overflow(sql: str) -> SpannerError:
    return sql_runtime_error(sql, "int64 overflow")


def unreadable_value(sql: str, value: object, type_name: str, exc: Exception) -> SpannerError:
    return sql_runtime_error(sql, f"Cannot read value {value!r} as {type_name}: {exc}")


#: Why a read/write transaction whose DML statement was stopped at its deadline is ABORTED afterwards.
DML_STOPPED_AT_DEADLINE = ("a DML statement of the transaction was stopped at its deadline, which rolled back "
                           "everything the transaction wrote")


def statement_deadline_exceeded(sql: str) -> SpannerError:
    return SpannerError(Code.DEADLINE_EXCEEDED, f"Deadline exceeded: the statement was stopped at the request's "
                                                f"deadline [in statement: {_clip(sql)}]")


def sqlite_rejected(sql: str, detail: str) -> SpannerError:
    return internal(f"SQLite rejected the translated statement ({detail}) [in statement: {sql}]")


def null_filtered_index_unusable(sql: str, detail: str) -> SpannerError:
    return invalid_argument(
        f"The query cannot use the index forced by FORCE_INDEX ({detail}): it must filter out the NULLs of the "
        f"NULL_FILTERED index's key columns (e.g. WHERE col IS NOT NULL) [in statement: {_clip(sql)}]"
    )


def pending_commit_timestamp_read(sql: str) -> SpannerError:
    return failed_precondition(
        "A value written with PENDING_COMMIT_TIMESTAMP() cannot be read in the same transaction before it commits "
        f"[in statement: {_clip(sql)}]"
    )


def unbound_parameter(sql: str, name: str) -> SpannerError:
    return invalid_argument(f"No parameter found for binding: {name} [in statement: {_clip(sql)}]")


def query_is_not_dml(sql: str) -> SpannerError:
    return invalid_argument(f"Statement is not a DML statement (INSERT, UPDATE or DELETE): {_clip(sql)}")
