"""Snapshot rows staged after a comparison with the current state: one new batch per Spark partition.

Backfill and reconcile read a table as staging lines, one batch per read partition. Once the
lines were joined with the state (:mod:`..rules.unchanged`), a read partition's rows are spread over
several Spark partitions, so the rows kept are staged again as new batches (step ``r`` of
:func:`watcher.staging.contract.task_batch_id`), each numbered from 0; reconcile's deletions
of keys gone from the table are built here too, from the state's keys and types.

Example:
    >>> KINDS
    ('row', 'delete')
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from watcher.staging import contract

from .spanner_source import LINE_COLUMNS, ReadPlan, arrow_batches, staging_record

#: What a row to restage is: a line read at R (``row``), or a key found gone (``delete``).
KINDS = ("row", "delete")
#: The columns :func:`restage_lines` takes, in order.
COLUMNS = ("kind", "value", "keys", "key_columns", "column_types")


def _restage(plan: ReadPlan, index: int, rows: Iterator[Any]) -> Iterator[tuple[str, str]]:
    """Runs in a Spark task: the partition's records as one batch (seq from 0)."""
    batch_id = contract.task_batch_id(plan.batch_prefix, index, "r")
    seq = 0
    for kind, line, keys, key_columns, column_types in rows:
        if kind == "row":
            record = json.loads(line)
            record["batch_id"], record["seq"] = batch_id, seq
        else:
            key = json.loads(keys)  # a JSON object in key order, typed-JSON values
            record = staging_record(plan, batch_id, seq, [key[c] for c in key_columns], key,
                                    commit_timestamp=plan.read_timestamp, mod_type="DELETE",
                                    key_columns=key_columns, types=json.loads(column_types))
        yield batch_id, contract.to_line(record)
        seq += 1


def rows_to_restage(frame: Any) -> Any:
    """Lines read at R (a ``value`` column) as rows of :func:`restage_lines` (kind ``row``)."""
    from pyspark.sql import functions as F

    return frame.select(F.lit("row").alias("kind"), "value", F.lit(None).cast("string").alias("keys"),
                        F.lit(None).cast("array<string>").alias("key_columns"),
                        F.lit(None).cast("string").alias("column_types"))


def restage_lines(plan: ReadPlan, frame: Any) -> Any:
    """``frame`` (:data:`COLUMNS`) as staging lines (batch_id, value), one batch per Spark partition
    (``mapInArrow``: classic and Spark Connect sessions alike)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        context = TaskContext.get()
        index = context.partitionId() if context is not None else 0
        rows = (tuple(r.values()) for batch in batches for r in batch.to_pylist())
        yield from arrow_batches(_restage(plan, index, rows), LINE_COLUMNS)

    return frame.select(*COLUMNS).mapInArrow(run, "batch_id STRING, value STRING")
