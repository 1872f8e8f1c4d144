"""Every error the local Spanner server can show a client, built in one place.

The backend raises :class:`SpannerError`; the gRPC edge turns it into a status once
(``frontend/status.py``). Nothing else in the server chooses status codes or writes
client-visible messages: add a named function here instead.

Example:
    >>> err = table_not_found("Singers")
    >>> err.code.name, err.message
    ('NOT_FOUND', 'Table not found: Singers')
"""

from __future__ import annotations

import enum


class Code(enum.IntEnum):
    """Canonical status codes (same numbers as google.rpc.Code), free of any gRPC import."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14


class SpannerError(Exception):
    """An error with a status code and a message a user can act on.

    ``retry_delay`` (seconds) is sent as RetryInfo so that the client retries
    ABORTED transactions promptly instead of backing off for seconds.
    """

    def __init__(self, code: Code, message: str, *, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_delay = retry_delay

    def __repr__(self) -> str:
        return f"SpannerError({self.code.name}, {self.message!r})"


class SchemaChangeStopped(SpannerError):
    """A schema change that failed after some of its statements were applied.

    Spanner applies the statements of one UpdateDatabaseDdl request in order; when one
    fails, the ones before it stay applied and the operation ends with the error, its
    metadata listing the commit timestamps of the completed statements only.
    """

    def __init__(self, error: SpannerError, commit_nanos: list[int]) -> None:
        super().__init__(error.code, error.message, retry_delay=error.retry_delay)
        self.commit_nanos = list(commit_nanos)


# --- generic -------------------------------------------------------------------------

def invalid_argument(message: str) -> SpannerError:
    return SpannerError(Code.INVALID_ARGUMENT, message)


def failed_precondition(message: str) -> SpannerError:
    return SpannerError(Code.FAILED_PRECONDITION, message)


def unimplemented(feature: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support {feature}.")


def internal(message: str) -> SpannerError:
    return SpannerError(Code.INTERNAL, f"Internal error in the local Spanner server: {message}")


def malformed_request(detail: str) -> SpannerError:
    return invalid_argument(f"Invalid request: {detail}")


def unsupported_type(type_name: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support the type {type_name}.")


def session_count_too_small() -> SpannerError:
    return malformed_request("session_count must be at least 1")


def batch_dml_without_statements() -> SpannerError:
    return malformed_request("ExecuteBatchDml needs at least one statement")


def batch_dml_without_transaction() -> SpannerError:
    return malformed_request("ExecuteBatchDml needs a transaction selector")


def commit_without_transaction() -> SpannerError:
    return malformed_request("Commit needs a transaction_id or a single_use_transaction")


def unsupported_value(kind: str | None) -> SpannerError:
    detail = "a value with no kind set" if kind is None else f"{kind} (send STRUCT values as lists)"
    return malformed_request(f"unsupported value: {detail}")


def unsupported_mutation_kind(kind: str | None) -> SpannerError:
    return malformed_request(f"unsupported mutation kind {kind or '(none)'}")


def invalid_resume_token(method: str) -> SpannerError:
    return invalid_argument(f"Invalid resume token in {method} request: it was not issued by this server.")


def unexpected_server_error(method: str) -> SpannerError:
    return internal(f"unexpected failure in {method}; see the server log for details")


def injected_fault(code: Code, method: str) -> SpannerError:
    delay = 0.01 if code == Code.ABORTED else None
    return SpannerError(code, f"Injected fault for {method} (local Spanner fault injection).", retry_delay=delay)


# --- resources: instances, databases, sessions -----------------------------------------

def bad_resource_name(kind: str, name: str, expected: str) -> SpannerError:
    return invalid_argument(f"Invalid {kind} name {name!r}: expected {expected}.")


def instance_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Instance not found: {name}")


def instance_already_exists(name: str) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Instance already exists: {name}")


def instance_config_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Instance config not found: {name} (the local server offers emulator-config)")


def database_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Database not found: {name}")


def database_already_exists(name: str) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Database already exists: {name}")


def invalid_database_id(database_id: str) -> SpannerError:
    return invalid_argument(
        f"Invalid database id {database_id!r}: it must be 2-30 characters, start with a lowercase letter, "
        "and contain only lowercase letters, digits, '_' and '-'."
    )


def session_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Session not found: {name}")


def operation_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Operation not found: {name}")


def operation_filter_unsupported(term: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server filters operations only by name:<text> and "
                                            f"metadata.@type:<type> (joined with AND), not by: {_clip(term)}")


# --- transactions -------------------------------------------------------------------------

def transaction_not_found(txn_id: bytes) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Transaction not found: {txn_id.hex() or '(empty id)'}; it may have ended or expired.")


def single_use_must_be_read_only() -> SpannerError:
    return invalid_argument("Single-use transactions can only be read-only; begin a read/write transaction for DML.")


def too_many_mutations(count: int, limit: int) -> SpannerError:
    return invalid_argument(f"Too many mutations in one commit: {count} (at most {limit}).")


def transaction_aborted(reason: str) -> SpannerError:
    return SpannerError(Code.ABORTED, f"Transaction was aborted: {reason}. Retry the transaction.", retry_delay=0.01)


def transaction_already_committed(txn_id: bytes) -> SpannerError:
    return failed_precondition(f"Transaction {txn_id.hex()} has already been committed or rolled back.")


def read_only_transaction_write() -> SpannerError:
    return failed_precondition("Cannot write in a read-only transaction: use a read/write transaction.")


def dml_needs_read_write() -> SpannerError:
    return invalid_argument("DML statements must run in a read/write or partitioned DML transaction, not a read-only or single-use read transaction.")


def partitioned_dml_not_allowed(what: str) -> SpannerError:
    return invalid_argument(f"{what} is not allowed in a partitioned DML transaction.")


def read_timestamp_too_old(read_ts: str) -> SpannerError:
    """A read before the database's version_retention_period (Spanner's wording)."""
    return failed_precondition(f"Read-only transaction timestamp {read_ts} has exceeded the maximum timestamp staleness")


def version_retention_out_of_range(value: str) -> SpannerError:
    return invalid_argument(
        f"Invalid version_retention_period: {value}. The value must be between 1 hour and 7 days, "
        "written as a number followed by s, m, h or d (for example '2h' or '7d')."
    )


def alter_database_invalid(statement: str, detail: str) -> SpannerError:
    return invalid_argument(f"Error parsing Spanner DDL statement: {statement} : {detail}")


def alter_database_wrong_name(name: str, database: str) -> SpannerError:
    return invalid_argument(f"ALTER DATABASE names {name}, but the statement was sent to database {database}.")


def partition_token_invalid() -> SpannerError:
    return invalid_argument("Invalid partition token: it was not issued by this server for this transaction.")


def partition_needs_read_only_transaction(method: str) -> SpannerError:
    return invalid_argument(f"{method} requires a read-only transaction (begun, or referenced by id), not a single-use or read/write one.")


def read_timestamp_too_far_in_future(read_ts: str) -> SpannerError:
    return invalid_argument(f"Read timestamp {read_ts} is too far in the future (more than one hour).")


def commit_timestamp_in_future(table: str, column: str, value: str) -> SpannerError:
    return failed_precondition(
        f"Cannot write a commit timestamp in the future: {table}.{column} = {value}. "
        "Use spanner.commit_timestamp() or PENDING_COMMIT_TIMESTAMP(), or a time in the past."
    )


def pending_commit_timestamp_not_allowed(table: str, column: str) -> SpannerError:
    return failed_precondition(
        f"Column {table}.{column} does not have allow_commit_timestamp=true, so it cannot take "
        "the commit timestamp (spanner.commit_timestamp() / PENDING_COMMIT_TIMESTAMP())."
    )


def pending_commit_timestamp_misused() -> SpannerError:
    return invalid_argument(
        "PENDING_COMMIT_TIMESTAMP() may only be used as a value in INSERT or UPDATE of a column with allow_commit_timestamp=true."
    )


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
    return failed_precondition(f"Mutation on table {table} is missing primary key column {column}.")


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


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
