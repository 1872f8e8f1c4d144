"""Transaction groups: the records of all tables sharing one commit timestamp.

A group is the rows sharing a commit timestamp, which may be several transactions:
Spanner may give transactions on disjoint data the same commit timestamp, and polling
sees no transaction id to tell them apart (the embedded server does the same with
``shared_commit_timestamps``). A real transaction id (``server_transaction_id``) comes
only with change streams. The name ``transaction_group`` follows the seeds. ``transaction_group`` is 16 hex digits derived from the commit
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

    The groups are computed on a slim frame (commit timestamp, table, key) and joined back on
    (table, key, commit timestamp), so that the wide rows need not be shuffled by commit
    timestamp: when ``changes`` are still partitioned by key (the job's per-key window) and
    ``spark.sql.requireAllClusterKeysForCoPartition`` is false, only the slim frame moves.

    Args:
        changes: new changelog rows (commit_timestamp, table_name, keys), one per (table, keys,
            commit_timestamp).
        existing: committed changelog rows that may share their commit timestamps
            (commit_timestamp, record_sequence), or None.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_commit = Window.partitionBy("commit_timestamp")
    # Versions of one key at one commit timestamp (history tables) in their order; the change_id
    # tells them apart when the groups are joined back.
    in_run = (F.row_number().over(by_commit.orderBy("table_name", "keys", "version_seq")) - 1,
              F.count(F.lit(1)).over(by_commit))
    slim = ("change_id", "commit_timestamp", F.expr(GROUP_SQL).alias("transaction_group"))
    if existing is None:
        groups = changes.select(*slim, in_run[0].alias("record_sequence"), in_run[1].alias("number_of_records_in_group"))
    else:
        before = (existing.groupBy("commit_timestamp")
                  .agg((F.max("record_sequence") + 1).alias("_offset"), F.count(F.lit(1)).alias("_count_before")))
        groups = (changes.select(*slim, in_run[0].alias("_seq_in_run"), in_run[1].alias("_count_in_run"))
                  .join(F.broadcast(before), "commit_timestamp", "left")
                  .select("change_id", "transaction_group",
                          (F.col("_seq_in_run") + F.coalesce("_offset", F.lit(0))).alias("record_sequence"),
                          (F.col("_count_in_run") + F.coalesce("_count_before", F.lit(0)))
                          .alias("number_of_records_in_group")))
    return changes.join(groups.drop("commit_timestamp"), ["change_id"])
