"""The changelog job's DataFrames: staged records -> per-key window -> changelog and state rows.

All of it is Spark SQL (no Python UDFs), so executors need no Python package and the
job scales like a plain Spark read and write. The steps, each from its own module:

1. ``normalize``: staged records become change rows with a JSON-object ``keys`` and a
   deterministic ``change_id`` (dedup);
2. ``per_key_window``: new rows and the current state of their tables, ordered by
   commit timestamp per key, give each new row its previous row: duplicates are flagged
   (dedup), the mod_type is chosen (classify) and old values computed (old_values);
3. ``changelog_rows`` / ``state_rows``: the outputs (grouping adds transaction groups).

Example:
    >>> CHANGE_COLUMNS[:3]
    ('table_name', 'key_columns', 'keys')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import classify, dedup, records
from .old_values import old_values_sql
from .typed_json import json_object_sql, keys_json_sql

#: Columns shared by new change rows and state rows before the window.
CHANGE_COLUMNS = ("table_name", "key_columns", "keys", "vals", "column_types", "commit_timestamp", "commit_ts",
                  "read_timestamp", "shard", "watcher_id", "read_method", "in_mod_type", "batch_id", "seq",
                  "change_id", "is_deleted", "state_mod_type", "state_new_values", "state_run_version", "_src")


def normalize(staged: Any) -> Any:
    """Staged records (the STAGING_FIELDS) as new change rows (CHANGE_COLUMNS, ``_src = 1``)."""
    from pyspark.sql import functions as F

    rows = (staged
            .withColumn("_keys_arr", F.from_json("keys", "array<string>"))
            .select(F.col("table").alias("table_name"), "key_columns",
                    F.expr(keys_json_sql("key_columns", "_keys_arr", "types")).alias("keys"),
                    F.col("values").alias("vals"), F.col("types").alias("column_types"), "commit_timestamp",
                    F.expr("cast(commit_timestamp AS timestamp)").alias("commit_ts"), "read_timestamp", "shard",
                    "watcher_id", F.coalesce("read_method", F.lit("cdc")).alias("read_method"),
                    F.upper("mod_type").alias("in_mod_type"), "batch_id", "seq"))
    return (rows.withColumn("change_id", F.expr(dedup.change_id_sql()))
            .withColumn("is_deleted", F.lit(None).cast("boolean"))
            .withColumn("state_mod_type", F.lit(None).cast("string"))
            .withColumn("state_new_values", F.lit(None).cast("string"))
            .withColumn("state_run_version", F.lit(None).cast("int"))
            .withColumn("_src", F.lit(1))
            .select(*CHANGE_COLUMNS))


def state_as_changes(state: Any) -> Any:
    """Current-state rows in the CHANGE_COLUMNS layout (``_src = 0``)."""
    from pyspark.sql import functions as F

    none = {name: F.lit(None).cast(kind) for name, kind in
            (("read_timestamp", "string"), ("shard", "string"), ("watcher_id", "string"), ("read_method", "string"),
             ("in_mod_type", "string"), ("batch_id", "string"), ("seq", "bigint"))}
    return state.select(
        "table_name", "key_columns", "keys", "vals", "column_types", "commit_timestamp", "commit_ts",
        *[col.alias(name) for name, col in none.items()], "change_id", "is_deleted",
        F.col("mod_type").alias("state_mod_type"), F.col("new_values").alias("state_new_values"),
        F.col("run_version").alias("state_run_version"), F.lit(0).alias("_src")).select(*CHANGE_COLUMNS)


def key_window() -> Any:
    from pyspark.sql import Window

    return Window.partitionBy("table_name", "keys").orderBy("commit_timestamp", "_src", "batch_id", "seq")


#: Window helper columns that the outputs do not need (dropped before the rows are cached).
_SCRATCH = ("_soft_deleted", "_prev_ts", "_prev_deleted", "_prev_vals", "_state_ts", "_complete_ts", "in_mod_type")


def per_key_window(changes: Any, state: Any | None, *, markers: Mapping[str, str],
                   soft_delete_columns: Mapping[str, str]) -> Any:
    """New changes and the state before them, with each new row's previous row, mod_type and old values.

    ``state`` is None when the touched tables have no state yet (then no change can be late).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = key_window()
    whole_key = Window.partitionBy("table_name", "keys")
    rows = changes if state is None else changes.unionByName(state_as_changes(state))
    state_ts = (F.lit(None).cast("string") if state is None
                else F.max(F.when(F.col("_src") == 0, F.col("commit_timestamp"))).over(whole_key))
    rows = (rows
            .withColumn("_row_deleted", F.expr(classify.row_deleted_sql(soft_delete_columns)))
            .withColumn("_soft_deleted", F.expr(classify.soft_deleted_sql(soft_delete_columns)))
            .withColumn("_prev_ts", F.lag("commit_timestamp").over(w))
            .withColumn("_prev_deleted", F.lag("_row_deleted").over(w))
            .withColumn("_prev_vals", F.lag("vals").over(w))
            .withColumn("_state_ts", state_ts))
    rows = (rows
            .withColumn("_is_dup", F.expr(dedup.duplicate_sql("_prev_ts")))
            .withColumn("_is_late", F.expr("_src = 1 AND _state_ts IS NOT NULL AND commit_timestamp < _state_ts"))
            .withColumn("_complete_ts", F.expr(classify.complete_ts_sql(markers)))
            .withColumn("mod_type", F.expr(f"CASE WHEN _src = 0 THEN state_mod_type ELSE {classify.mod_type_sql()} END"))
            .withColumn("old_values", F.expr(f"CASE WHEN _src = 1 THEN {old_values_sql()} END"))
            .withColumn("commit_date", F.substring("commit_timestamp", 1, 10)))
    return rows.drop(*_SCRATCH)


def changelog_rows(window_rows: Any, run_version: int) -> Any:
    """The new, non-duplicate changes as changelog rows (without the grouping columns)."""
    from pyspark.sql import functions as F

    return (window_rows.where("_src = 1 AND NOT _is_dup")
            .withColumn("new_values", F.expr(json_object_sql("vals", "column_types")))
            .withColumn("value_capture_type", F.lit(records.VALUE_CAPTURE_TYPE))
            .withColumn("run_version", F.lit(run_version))
            .select("change_id", "table_name", "keys", "key_columns", "mod_type", "new_values", "old_values",
                    "value_capture_type", "column_types", "commit_timestamp", "commit_ts", "commit_date",
                    "read_timestamp", "read_method", "shard", "watcher_id", "batch_id", "run_version", "_is_late"))


def state_rows(window_rows: Any, run_version: int) -> Any:
    """The latest row per key of the touched tables (STATE_FIELDS)."""
    from pyspark.sql import functions as F

    kept = window_rows.where("NOT _is_dup").withColumn("_next_ts", F.lead("commit_timestamp").over(key_window()))
    new = F.col("_src") == 1
    return (kept.where("_next_ts IS NULL")
            .select("table_name", "keys", "key_columns", "vals", "column_types",
                    F.when(new, F.expr(json_object_sql("vals", "column_types"))).otherwise(F.col("state_new_values"))
                    .alias("new_values"),
                    "commit_timestamp", "commit_ts", F.col("_row_deleted").alias("is_deleted"), "mod_type", "change_id",
                    F.when(new, F.lit(run_version)).otherwise(F.col("state_run_version")).alias("run_version"))
            .select(*records.names(records.STATE_FIELDS)))
