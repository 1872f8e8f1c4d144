"""Transaction groups: the records of all tables sharing one commit timestamp.

Polling cannot see transaction ids, but a commit timestamp names one commit (or several
commits on disjoint data, which Spanner may give the same timestamp): the rows sharing
it form a group. ``transaction_group`` is 16 hex digits derived from the commit
timestamp (the same in every run), ``record_sequence`` numbers the group's records in
(table, key) order from 0, and ``number_of_records_in_group`` counts them. When a later
run brings more records of a group written before (its tables were polled later), the
new records continue the sequence after the existing ones and count the whole group;
records written earlier keep the count they were written with.

Example:
    >>> GROUP_SQL
    'substring(sha2(commit_timestamp, 256), 1, 16)'
"""

from __future__ import annotations

from typing import Any

GROUP_SQL = "substring(sha2(commit_timestamp, 256), 1, 16)"


def add_grouping(changes: Any, existing: Any | None = None) -> Any:
    """``changes`` with transaction_group, record_sequence and number_of_records_in_group.

    Args:
        changes: new changelog rows (commit_timestamp, table_name, keys).
        existing: committed changelog rows that may share their commit timestamps
            (commit_timestamp, record_sequence), or None.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_commit = Window.partitionBy("commit_timestamp")
    ordered = by_commit.orderBy("table_name", "keys")
    grouped = (changes
               .withColumn("transaction_group", F.expr(GROUP_SQL))
               .withColumn("_seq_in_run", F.row_number().over(ordered) - 1)
               .withColumn("_count_in_run", F.count(F.lit(1)).over(by_commit)))
    if existing is None:
        return (grouped.withColumn("record_sequence", F.col("_seq_in_run"))
                .withColumn("number_of_records_in_group", F.col("_count_in_run"))
                .drop("_seq_in_run", "_count_in_run"))
    before = (existing.groupBy("commit_timestamp")
              .agg((F.max("record_sequence") + 1).alias("_offset"), F.count(F.lit(1)).alias("_count_before")))
    return (grouped.join(F.broadcast(before), "commit_timestamp", "left")
            .withColumn("record_sequence", F.col("_seq_in_run") + F.coalesce("_offset", F.lit(0)))
            .withColumn("number_of_records_in_group", F.col("_count_in_run") + F.coalesce("_count_before", F.lit(0)))
            .drop("_seq_in_run", "_count_in_run", "_offset", "_count_before"))
