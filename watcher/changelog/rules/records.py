"""The changelog's record layouts, as data: staged input, changelog rows, current state.

Each layout is a tuple of ``(name, Spark SQL type, meaning)``; the Spark schemas, the
README's field list and the tests all come from these tables, so they cannot drift.

Example:
    >>> [name for name, _, _ in CHANGELOG_FIELDS][:3]
    ['change_id', 'table_name', 'keys']
    >>> schema_ddl(STAGING_FIELDS).startswith("v INT, batch_id STRING")
    True
"""

from __future__ import annotations

from typing import Any

from watcher.staging import contract

Field = tuple[str, str, str]

#: How Spark reads each kind of staging field (:data:`watcher.staging.contract.KINDS`). ``keys``
#: and ``shard`` stay raw JSON text (Spark keeps non-string JSON as its text); an object of
#: typed-JSON values becomes a map of texts (strings unquoted, numbers, booleans, arrays as JSON).
STAGING_SPARK_TYPES: dict[str, str] = {
    "int32": "INT",
    "int64": "BIGINT",
    "string": "STRING",
    "timestamp": "STRING",
    "string[]": "ARRAY<STRING>",
    "typed[]": "STRING",
    "json": "STRING",
    "typed{}": "MAP<STRING, STRING>",
    "string{}": "MAP<STRING, STRING>",
    "bool": "BOOLEAN",
}

#: A staged record, derived from the staging contract's fields (names, order, meanings).
STAGING_FIELDS: tuple[Field, ...] = tuple((f.name, STAGING_SPARK_TYPES[f.kind], f.meaning) for f in contract.FIELDS)
#: What the changelog job reads: a staged record with the fields of formats 2 to 4 (null in older records).
STAGING_READ_FIELDS: tuple[Field, ...] = STAGING_FIELDS + tuple(
    (f.name, STAGING_SPARK_TYPES[f.kind], f.meaning)
    for f in contract.VERSION_FIELDS + contract.STREAM_FIELDS + contract.WATERMARK_FIELDS)

#: One changelog row (one change). Names follow Spanner change-stream records.
CHANGELOG_FIELDS: tuple[Field, ...] = (
    ("change_id", "STRING", "32 hex digits of SHA-256(table, keys, commit timestamp[, version sequence of history "
                            "tables]): deterministic, for de-duplication"),
    ("table_name", "STRING", "table (partition column)"),
    ("keys", "STRING", "primary key as a JSON object, in key order, typed JSON values"),
    ("key_columns", "ARRAY<STRING>", "primary key columns in key order"),
    ("mod_type", "STRING", "INSERT, UPDATE, DELETE, or UPSERT when the key may have existed unseen"),
    ("new_values", "STRING", "the full row after the change (JSON object, typed JSON values); a hard DELETE: the key"),
    ("old_values", "STRING", "UPDATE: previous values of the changed columns (of those in both rows); DELETE: the "
     "previous row; else {}. Change streams: as the stream gave them (a DELETE: its non-key columns), null "
     "where the stream's value_capture_type carries none (NEW_ROW, NEW_VALUES)"),
    ("value_capture_type", "STRING", "what old_values hold: OLD_AND_NEW_VALUES for polled, history and snapshot "
     "rows (computed from the key's previous row); a change stream's own type for its rows"),
    ("column_types", "STRING", "column -> Spanner type of this record's values as its read said (STRING, "
     "ARRAY<INT64>; older staging: SPANNER_TYPE such as STRING(MAX)), a JSON object (the changelog view shows it as a map)"),
    ("commit_timestamp", "STRING", "exact commit timestamp, RFC 3339 with nine fractional digits (sorts as text)"),
    ("commit_ts", "TIMESTAMP", "the commit timestamp as a Spark timestamp (microseconds)"),
    ("commit_date", "STRING", "UTC date of the commit, YYYY-MM-DD (partition column)"),
    ("transaction_group", "STRING", "16 hex digits identifying the group: for polled rows the commit timestamp "
                                     "(rows of all tables sharing it, which may be several transactions); for "
                                     "change-stream rows the transaction (server_transaction_id)"),
    ("record_sequence", "BIGINT", "order of the record within its transaction group, from 0 (change streams: "
                                  "in the stream's record_sequence and mod order)"),
    ("number_of_records_in_group", "BIGINT", "records in the group when it was written"),
    ("read_timestamp", "STRING", "when the row was polled (RFC 3339)"),
    ("read_method", "STRING", "cdc, change_stream, backfill or reconcile"),
    ("shard", "STRING", "shard value of the poll loop"),
    ("watcher_id", "STRING", "the watcher that staged the change"),
    ("batch_id", "STRING", "the staging batch it came from"),
    ("run_version", "INT", "the job run that wrote it"),
    ("server_transaction_id", "STRING", "change streams: Spanner's id of the transaction (null for other rows)"),
    ("number_of_records_in_transaction", "BIGINT", "change streams: data change records the transaction wrote "
                                                   "(a record holds one or more mods)"),
    ("number_of_partitions_in_transaction", "BIGINT", "change streams: partitions holding the transaction's records"),
    ("transaction_tag", "STRING", "change streams: the transaction's tag (\"\" when none)"),
    ("is_system_transaction", "BOOLEAN", "change streams: Spanner itself ran the transaction (e.g. TTL)"),
)

#: The current state: the latest row per key (deleted keys kept, flagged).
STATE_FIELDS: tuple[Field, ...] = (
    ("table_name", "STRING", "table (partition column)"),
    ("keys", "STRING", "primary key as a JSON object"),
    ("key_columns", "ARRAY<STRING>", "primary key columns"),
    ("column_types", "STRING", "column -> Spanner type of new_values as last read, a JSON object (the "
     "current_state view shows it as a map)"),
    ("new_values", "STRING", "the row as a JSON object, as last read: a column added or dropped later shows "
     "once the key changes again"),
    ("commit_timestamp", "STRING", "commit timestamp of the latest change"),
    ("commit_ts", "TIMESTAMP", "the same as a Spark timestamp"),
    ("is_deleted", "BOOLEAN", "the latest change deleted the row"),
    ("mod_type", "STRING", "mod_type of the latest change"),
    ("change_id", "STRING", "change_id of the latest change"),
    ("run_version", "INT", "the job run that wrote it"),
    ("version_seq", "BIGINT", "version sequence of the latest change at its commit timestamp (history tables; "
     "else null)"),
)

#: The changelog fields that only change-stream rows fill (their transaction, as the stream gave it).
STREAM_CHANGELOG_COLUMNS = ("server_transaction_id", "number_of_records_in_transaction",
                            "number_of_partitions_in_transaction", "transaction_tag", "is_system_transaction")

#: Partition columns of the changelog table, outermost first.
CHANGELOG_PARTITIONS = ("table_name", "commit_date")
VALUE_CAPTURE_TYPE = "OLD_AND_NEW_VALUES"


def schema_ddl(fields: tuple[Field, ...]) -> str:
    """The fields as a Spark DDL schema string."""
    return ", ".join(f"{name} {kind}" for name, kind, _ in fields)


def schema(fields: tuple[Field, ...]) -> Any:
    """The fields as a Spark ``StructType``."""
    from pyspark.sql.types import StructType

    return StructType.fromDDL(schema_ddl(fields))


def conform(frame: Any, fields: tuple[Field, ...]) -> Any:
    """``frame``'s columns of ``fields``, in layout order, cast to the layout's types.

    Every run writes the same Parquet types (an expression's own type, such as row_number's
    INT for a BIGINT field, would otherwise change with the plan), so the warehouse reads
    without a schema.
    """
    # SQL text: one call into the JVM per column (a Column expression costs several, :mod:`.sql_steps`).
    return frame.selectExpr(*[f"CAST(`{name}` AS {kind}) AS `{name}`" for name, kind, _ in fields])


def names(fields: tuple[Field, ...]) -> list[str]:
    return [name for name, _, _ in fields]
