"""Datastream-style JSON events (the shape of Google Datastream's): generic metadata, source metadata, payload.

One event per change::

    {"stream_name": "spanner-watcher", "read_method": "spanner-cdc", "object": "Singers",
     "schema_key": "9f2c...", "uuid": "4b369679-74e9-509e-e408-b226da0629a2",
     "read_timestamp": "...Z", "source_timestamp": "2024-05-01T10:00:00.000000010Z",
     "sort_keys": ["2024-05-01T10:00:00.000000010Z", 0],
     "source_metadata": {"table": "Singers", "change_type": "UPDATE", "is_deleted": false,
                         "primary_keys": ["SingerId"], "tx_id": "0b6556b0442cd6c3", ...},
     "payload": {"SingerId": "1", "Name": "a2", ...}}

``uuid`` comes from the change_id, so a re-export yields the same ids (consumers
de-duplicate by it); ``source_timestamp`` keeps all nine fractional digits; ``sort_keys``
(commit timestamp, record_sequence) orders the events of a key; ``schema_key`` is a hash
of the column types; the payload is the full row in typed JSON. ``change_type`` may be
``UPSERT`` (see the README's "Changelog semantics"). Rows of a warehouse with source columns name
their database in ``source_metadata.database`` (``projects/P/instances/I/databases/D``); the uuid
is the change's alone, so events of two databases are told apart by (database, uuid).

Events of change-stream rows: ``read_method`` is ``spanner-change_stream``, ``change_type`` the
stream's mod_type, ``tx_id`` Spanner's ``server_transaction_id`` (polled rows: the transaction
group of their commit timestamp), and ``source_metadata`` also holds the transaction's
``number_of_records_in_transaction``, ``number_of_partitions_in_transaction``,
``transaction_tag`` and ``is_system_transaction`` (null fields are left out, so polled rows'
events are as before). Datastream events carry the new row only, so old values stay in the
changelog.

Example:
    >>> UUID_SQL.startswith("concat_ws('-'")
    True
"""

from __future__ import annotations

from typing import Any

from ..io.fs import NO_CHECKSUMS
from . import errors
from .delta_columns import source_columns

DEFAULT_STREAM = "spanner-watcher"
#: The folder of each table's files in an export (``object=<table>``).
FOLDER = "object"
#: source_metadata's ``database`` (rows with source columns): the watched database's resource name.
DATABASE_SQL = "concat('projects/', source_project, '/instances/', source_instance, '/databases/', source_database)"
#: The change stream's transaction figures, in source_metadata after the common fields (absent,
#: as null fields are, from the events of polled rows).
STREAM_METADATA = ("number_of_records_in_transaction", "number_of_partitions_in_transaction", "transaction_tag",
                   "is_system_transaction")
READ_METHOD_PREFIX = "spanner-"
_PAYLOAD = "@@spanner-watcher-payload@@"
_SORT_KEYS = "@@spanner-watcher-sort-keys@@"

UUID_SQL = ("concat_ws('-', substring(change_id, 1, 8), substring(change_id, 9, 4), substring(change_id, 13, 4), "
            "substring(change_id, 17, 4), substring(change_id, 21, 12))")
SCHEMA_KEY_SQL = "substring(sha2(to_json(array_sort(map_entries(column_types))), 256), 1, 16)"


def datastream_events(changelog: Any, stream_name: str = DEFAULT_STREAM) -> Any:
    """Changelog rows (the changelog view's columns) as events: table_name, uuid, event (JSON text),
    after the source columns when the rows have them (then ``source_metadata`` names the ``database``)."""
    from pyspark.sql import functions as F

    if not isinstance(stream_name, str) or not stream_name:
        raise errors.bad_option("stream_name", stream_name, "a non-empty string")
    sources = source_columns(changelog)
    meta = F.struct(
        F.lit(stream_name).alias("stream_name"),
        F.concat(F.lit(READ_METHOD_PREFIX), F.col("read_method")).alias("read_method"),
        F.col("table_name").alias("object"),
        F.expr(SCHEMA_KEY_SQL).alias("schema_key"),
        F.expr(UUID_SQL).alias("uuid"),
        F.col("read_timestamp"),
        F.col("commit_timestamp").alias("source_timestamp"),
        F.lit(_SORT_KEYS).alias("sort_keys"),
        F.struct(F.col("table_name").alias("table"),
                 *([F.expr(DATABASE_SQL).alias("database")] if sources else []), F.col("mod_type").alias("change_type"),
                 (F.col("mod_type") == "DELETE").alias("is_deleted"), F.col("key_columns").alias("primary_keys"),
                 F.coalesce("server_transaction_id", "transaction_group").alias("tx_id"), F.col("record_sequence"),
                 F.col("shard"), F.col("watcher_id"), F.col("change_id"),
                 *[F.col(name) for name in STREAM_METADATA]).alias("source_metadata"),
        F.lit(_PAYLOAD).alias("payload"))
    sort_keys = F.concat(F.lit("["), F.to_json(F.array("commit_timestamp")).substr(F.lit(2), F.length(
        F.to_json(F.array("commit_timestamp"))) - 2), F.lit(","), F.col("record_sequence").cast("string"), F.lit("]"))
    event = F.to_json(meta)
    event = F.replace(event, F.lit(f'"{_SORT_KEYS}"'), sort_keys)
    event = F.replace(event, F.lit(f'"{_PAYLOAD}"'), F.col("new_values"))
    return changelog.select(*sources, "table_name", F.expr(UUID_SQL).alias("uuid"), event.alias("event"))


def lines(changelog: Any, stream_name: str = DEFAULT_STREAM) -> Any:
    """The events as the folder export writes them: the source columns, :data:`FOLDER` and the line (``value``)."""
    return datastream_events(changelog, stream_name).selectExpr(*source_columns(changelog),
                                                                f"table_name AS {FOLDER}", "event AS value")


def write(changelog: Any, path: str, stream_name: str = DEFAULT_STREAM) -> None:
    """Write all the events as JSON lines, one folder per table (``object=<T>/part-*.txt``), replacing ``path``
    (the incremental export into a folder is :mod:`.folder_target`'s)."""
    (datastream_events(changelog, stream_name).withColumnRenamed("table_name", "object")
     .select("object", "event").write.options(**NO_CHECKSUMS).mode("overwrite").partitionBy("object").text(path))
