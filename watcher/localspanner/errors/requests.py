"""Errors of requests, resources (instances, databases, sessions, operations) and transactions."""

from __future__ import annotations

from .base import Code, SpannerError, _clip, failed_precondition, internal, invalid_argument

# --- generic -------------------------------------------------------------------------

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


def rpc_unimplemented(method: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support the RPC {method.lstrip('/')}.")


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
    return SpannerError(Code.NOT_FOUND, f"Instance config not found: {name}")


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


def exclusion_needs_read_write() -> SpannerError:
    return invalid_argument("exclude_txn_from_change_streams can only be set on read/write or partitioned DML "
                            "transactions, not on a read-only one.")


def too_many_mutations(count: int, limit: int) -> SpannerError:
    return invalid_argument(f"Too many mutations in one commit: {count} (at most {limit}; each column of each row "
                            "written counts, DML's too, and each deleted key or key range).")


def max_commit_delay_out_of_range(delay_nanos: int, limit_nanos: int) -> SpannerError:
    return invalid_argument(f"Invalid max_commit_delay {delay_nanos / 1e6:g} ms: it must be between 0 and "
                            f"{limit_nanos / 1e6:g} ms.")


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


def partitioned_dml_insert() -> SpannerError:
    """Partitioned DML runs UPDATE and DELETE only (INSERT OR UPDATE / OR IGNORE included), Spanner's wording."""
    return invalid_argument("INSERT is not supported for Partitioned DML")


def partitioned_dml_then_return() -> SpannerError:
    return invalid_argument("THEN RETURN is not supported for Partitioned DML")


def upsert_row_twice(table: str, key: list) -> SpannerError:
    """An INSERT OR UPDATE whose rows name one key twice (Spanner's wording, plus the table)."""
    return invalid_argument(f"Cannot affect a row second time for key: {key} (table {table})")


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


def database_option_invalid(option: str, value: object, expected: str) -> SpannerError:
    return invalid_argument(f"Invalid value {value!r} for database option {option}: expected {expected}.")


def database_option_unknown(statement: str, option: str) -> SpannerError:
    return invalid_argument(
        f"Error parsing Spanner DDL statement: {statement} : Option {option} is not supported for ALTER DATABASE "
        "(supported: default_leader, version_retention_period)"
    )


def instance_capacity_invalid(detail: str) -> SpannerError:
    return invalid_argument(f"Invalid instance capacity: {detail}.")


def instance_update_field_unknown(path: str) -> SpannerError:
    return invalid_argument(
        f"UpdateInstance cannot change field {path!r}: the field mask may name config, display_name, node_count, "
        "processing_units, labels, edition and default_backup_schedule_type."
    )


# --- details for the builders above (call sites pass numbers, not prose) ----------------
#: What ``database_option_invalid`` says a default_leader should be.
DEFAULT_LEADER_EXPECTED = "a region name such as 'us-central1'"
STRING_OPTION_EXPECTED = "a string literal or null"
INTEGER_OPTION_EXPECTED = "an integer literal or null"


def optimizer_version_expected(newest: int) -> str:
    return f"an integer from 1 to {newest} (or null: the newest version)"


def capacity_negative(node_count: int, processing_units: int) -> str:
    return f"node_count {node_count} and processing_units {processing_units} must not be negative"


def capacity_disagrees(node_count: int, processing_units: int, units_per_node: int) -> str:
    return (f"node_count {node_count} and processing_units {processing_units} disagree: a node is "
            f"{units_per_node} processing units")


def capacity_granularity(units: int, step_below_a_node: int, units_per_node: int) -> str:
    return (f"processing_units {units} must be a multiple of {step_below_a_node} below "
            f"{units_per_node}, or a multiple of {units_per_node}")
