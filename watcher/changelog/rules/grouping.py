"""Transaction groups: the records of one transaction, or of one commit timestamp where the transaction is unknown.

Polled rows carry no transaction id, so their group is the rows sharing a commit timestamp,
which may be several transactions: Spanner may give transactions on disjoint data the same
commit timestamp (the embedded server does the same with ``shared_commit_timestamps``).
Change-stream rows carry Spanner's ``server_transaction_id``: their group is exactly their
transaction. The rule, as data (:data:`GROUP_KEYS`, first match wins):

=============================  ===========================  ===================================
row                            group                        order inside the group
=============================  ===========================  ===================================
has a server_transaction_id    the transaction              the stream's record_sequence, then
                               (16 hex digits of its hash)  the mod's index (then table, key)
otherwise                      the commit timestamp         table, key, version sequence
                               (16 hex digits of its hash)
=============================  ===========================  ===================================

The name ``transaction_group`` is the same in every run. ``record_sequence``
numbers a group's records from 0, and ``number_of_records_in_group`` counts them; change-stream
rows also keep the stream's own ``number_of_records_in_transaction`` (which counts data change
records, each holding one or more mods, over all partitions and tables, watched or not). When a
later run brings more records of a group written before (its tables were polled later, or a
partition was read later), the new records continue the sequence after the existing ones and
count the whole group; records written earlier keep the count they were written with.

A table watched by polling and a change stream at once: a row version both staged is one
change (the stream's, :mod:`.dedup`), so it sits in its transaction's group; a polled row the
stream has not brought sits in its commit timestamp's group.

The groups' names are data (:class:`.hashed_text.HashedText`), rendered to the job's SQL and to
the Python of :mod:`..engines.driver` (:func:`commit_group`).

Example:
    >>> GROUP_SQL
    'substring(sha2(commit_timestamp, 256), 1, 16)'
    >>> transaction_group_sql().startswith("CASE WHEN server_transaction_id IS NOT NULL")
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import sql_steps
from .hashed_text import HashedText
from .placement import COLUMN as PLACEMENT_COLUMN

#: The group of a polled row: its commit timestamp's.
COMMIT_GROUP = HashedText(("commit_timestamp",), "", 16)
GROUP_SQL = COMMIT_GROUP.sql()
#: The group of a change-stream row: its transaction's (a prefix keeps it apart from any commit
#: timestamp's).
TRANSACTION_GROUP = HashedText(("server_transaction_id",), "", 16, prefix="transaction:")
#: :data:`TRANSACTION_GROUP` in SQL; ``{transaction}`` is where the row holds its server_transaction_id.
TRANSACTION_GROUP_SQL = TRANSACTION_GROUP.sql({"server_transaction_id": "{transaction}"})
#: (condition, group) in SQL over a changelog row, first match wins (``{transaction}`` as above).
GROUP_KEYS: tuple[tuple[str, str], ...] = (
    ("{transaction} IS NOT NULL", TRANSACTION_GROUP_SQL),
    ("TRUE", GROUP_SQL),
)
#: A change-stream row's place in its transaction (null for other rows, which sort first by table and key).
STREAM_ORDER_SQL = ("CASE WHEN server_transaction_id IS NOT NULL THEN "
                    "concat(lpad(_stream_record_sequence, 24, '0'), ':', lpad(cast(_mod_index AS string), 12, '0')) END")


#: What the groups are joined back on: the column the wide rows are partitioned by (the per-key
#: window's, :mod:`.placement`), and the change_id, which names one change of one table and key.
_JOIN = (PLACEMENT_COLUMN, "change_id")
#: The numbers of a change alone in its group (no other change of the run shares it, no earlier run
#: wrote rows of it): the only rows whose numbers need not be joined back.
ALONE = {"record_sequence": "CAST(0 AS BIGINT)", "number_of_records_in_group": "CAST(1 AS BIGINT)"}
_NOT_ALONE_SQL = "record_sequence <> 0 OR number_of_records_in_group <> 1"


def commit_group(commit_timestamp: str) -> str:
    """A polled row's ``transaction_group`` (:data:`COMMIT_GROUP`), as :data:`GROUP_SQL` computes it.

    >>> commit_group("2024-05-01T00:00:00.000000000Z")
    'c2a5cbdba306f030'
    """
    group = COMMIT_GROUP.python((commit_timestamp,))
    if group is None:
        raise ValueError("a polled row without a commit timestamp has no transaction group")
    return group


def transaction_group_sql(transaction: str = "server_transaction_id") -> str:
    """SQL: a row's ``transaction_group`` (:data:`GROUP_KEYS` as one CASE expression), its
    change-stream transaction id in the column ``transaction``.

    >>> transaction_group_sql("_stream.server_transaction_id")[:51]
    'CASE WHEN _stream.server_transaction_id IS NOT NULL'
    """
    return "CASE " + " ".join(f"WHEN {cond.format(transaction=transaction)} THEN {group.format(transaction=transaction)}"
                              for cond, group in GROUP_KEYS) + " END"


@contextmanager
def add_grouping(changes: Any, existing: Any | None = None) -> Iterator[Any]:
    """``changes`` with record_sequence and number_of_records_in_group (they carry transaction_group),
    for the duration of the ``with`` block (it holds the numbers of shared groups in Spark's cache).

    The groups are numbered on a slim frame (the group and the order inside it), and only the
    numbers of changes that share their group (or continue one an earlier run wrote) are joined
    back; a change alone in its group gets :data:`ALONE`. Joining copies every wide row, so a run
    whose changes are each alone (every polled change a transaction of one row of the watched
    tables, say) writes its rows without a join; one with shared groups joins only those numbers.
    Finding out is one job over the slim frame (its shuffle by group), which also caches the
    shared numbers for the join.

    The join is on (placement, change_id) and by hash, so that the wide rows need not be
    shuffled by group, nor shuffled and sorted again: when ``changes`` are still partitioned by
    the placement column (the job's per-key window) and
    ``spark.sql.requireAllClusterKeysForCoPartition`` is false, only the slim numbers move.

    Args:
        changes: new changelog rows (the per-key window's placement column :data:`.placement.COLUMN`,
            change_id, transaction_group, table_name, keys, version_seq and
            the stream's order columns ``_stream_record_sequence``, ``_mod_index``), one per change_id.
        existing: committed changelog rows that may share their groups (transaction_group,
            record_sequence), or None.
    """
    from pyspark import StorageLevel

    shared = group_numbers(changes, existing).where(_NOT_ALONE_SQL).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if shared.count() == 0:  # the one job: it also fills the cache the join reads
            yield sql_steps.with_columns(changes, ALONE)
        else:
            joined = changes.join(shared.hint("shuffle_hash"), list(_JOIN), "left")
            yield sql_steps.with_columns(joined, {name: f"coalesce({name}, {value})" for name, value in ALONE.items()})
    finally:
        shared.unpersist()


def group_numbers(changes: Any, existing: Any | None = None) -> Any:
    """The slim numbers of ``changes`` (see :func:`add_grouping`): placement, change_id,
    record_sequence and number_of_records_in_group."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_group = Window.partitionBy("transaction_group")
    # Versions of one key at one commit timestamp (history tables) in their order.
    order = (F.expr(STREAM_ORDER_SQL), "table_name", "keys", "version_seq")
    # The count over the whole group shares the numbering's order (a frame of all rows), so that
    # Spark computes both in one Window operator over the one sort (two orders: two operators).
    ordered = by_group.orderBy(*order)
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    in_run = ((F.row_number().over(ordered) - 1).cast("bigint"), F.count(F.lit(1)).over(whole))
    slim = (*_JOIN, "transaction_group")
    if existing is None:
        return changes.select(*_JOIN, in_run[0].alias("record_sequence"), in_run[1].alias("number_of_records_in_group"))
    before = (existing.groupBy("transaction_group")
              .agg((F.max("record_sequence") + 1).alias("_offset"), F.count(F.lit(1)).alias("_count_before")))
    return (changes.select(*slim, in_run[0].alias("_seq_in_run"), in_run[1].alias("_count_in_run"))
            .join(F.broadcast(before), "transaction_group", "left")
            .select(*_JOIN,
                    (F.col("_seq_in_run") + F.coalesce("_offset", F.lit(0))).alias("record_sequence"),
                    (F.col("_count_in_run") + F.coalesce("_count_before", F.lit(0)))
                    .alias("number_of_records_in_group")))
