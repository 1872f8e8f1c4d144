"""Reconcile: find the hard deletes polling cannot see, and make the current state complete.

A watcher polls rows; a row deleted outright leaves nothing to poll. Reconcile reads the
table at one strong read timestamp R (in parallel, exactly as :mod:`.backfill` does) and
compares it with the committed current state of the changelog (Spark joins):

* a key live in the state, whose latest change committed at or before R, but absent from
  the table at R was hard-deleted: a ``DELETE`` record is staged with mod_type DELETE,
  ``read_method`` reconcile and commit timestamp R (the time of detection: the real
  deletion time is unknown, only that it happened before R);
* a row present at R that the state lacks, or holds in an older version, is staged too
  (``read_method`` reconcile, its own commit timestamp), so the state holds every key
  at R; the watchers also deliver changes after the state's, and the job drops the
  duplicates (same table, key and commit timestamp).

The staged batches go through the normal changelog job, which appends the DELETEs and
drops the keys from the current state. Afterwards the table's state is complete as of R,
so when no completeness marker exists yet, one is written (method reconcile); an earlier
marker stays (a table complete from an earlier time is complete from a later one too).

Run the changelog job before a reconcile (the comparison uses the committed state) and
after it (to apply it); reconciling twice without a job run in between stages the same
deletion twice, with two detection times.

Example::

    from watcher.changelog.reconcile import Reconcile
    result = Reconcile(spark, database).table("Singers").staging("s/").warehouse("w/").run()
    result.deletes, result.restaged
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..staging import contract
from . import cluster, completeness, current_state, manifest, records, staging_writer
from .backfill import SnapshotJob, SnapshotStats
from .files import FileStore, open_fs
from .spanner_source import LINE_COLUMNS, ReadPlan, ReadPoint, arrow_batches, staging_record
from .typed_json import keys_json_sql


@dataclass
class ReconcileResult(SnapshotStats):
    #: Keys found hard-deleted (DELETE records staged).
    deletes: int = 0
    #: Rows present at R that the state lacked or held in an older version (staged again).
    restaged: int = 0
    #: The committed changelog version the table was compared with.
    compared_with_version: int = 0
    marker_written: bool = False


def _restage(plan: ReadPlan, index: int, rows: Iterator[Any]) -> Iterator[tuple[str, str]]:
    """Runs in a Spark task: the partition's reconcile records as one batch (seq from 0)."""
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


def restage_lines(plan: ReadPlan, frame: Any) -> Any:
    """``frame`` (kind, value, keys, key_columns, column_types) as staging lines (batch_id, value), one
    batch per Spark partition (``mapInArrow``: classic and Spark Connect sessions alike)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        context = TaskContext.get()
        index = context.partitionId() if context is not None else 0
        rows = (tuple(r.values()) for batch in batches for r in batch.to_pylist())
        yield from arrow_batches(_restage(plan, index, rows), LINE_COLUMNS)

    return frame.mapInArrow(run, "batch_id STRING, value STRING")


class Reconcile(SnapshotJob):
    """Builder of one reconciliation of one table (see the module docstring).

    Args:
        spark: the SparkSession.
        database: the ``google.cloud.spanner`` Database to read.
    """

    method = "reconcile"

    def run(self) -> ReconcileResult:
        self._require("table", "staging", "warehouse")
        started = time.perf_counter()
        result = ReconcileResult(self._table)  # type: ignore[arg-type]
        fs = open_fs(self._spark, self._folder("warehouse"))
        base = manifest.load(fs)
        result.compared_with_version = base.version

        def stage(lines: Any, point: ReadPoint, plan: ReadPlan) -> int:
            result.batches, rows = self._stage(lines, plan, base, fs, result)
            return rows

        info = self._read(result, stage)
        if str(info.table) not in completeness.read_markers(fs):
            completeness.write_marker(fs, str(info.table), result.read_timestamp, "reconcile", self._clock())
            result.marker_written = True
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _stage(self, lines: Any, plan: ReadPlan, base: manifest.Manifest, fs: FileStore,
               result: ReconcileResult) -> tuple[list[str], int]:
        """Stage the deletes and the rows the state lacks; returns the staged batches and the rows read at R."""
        from pyspark import StorageLevel
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        staged = F.from_json("value", records.schema(records.STAGING_FIELDS))
        snapshot = (lines.select(staged.alias("r"), "value")
                    .select(F.expr(keys_json_sql("r.key_columns", "from_json(r.keys, 'array<string>')", "r.types"))
                            .alias("keys"), F.col("r.commit_timestamp").alias("commit_timestamp"), "value")
                    .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            rows = snapshot.count()  # read the table now, while R is held (both joins below reuse it)
            state = current_state.load(self._spark, fs, base, [plan.table])
            r = plan.read_timestamp
            deletes = (state.where(F.col("commit_timestamp") <= F.lit(r)).where("NOT is_deleted")
                       .join(snapshot.select("keys"), "keys", "left_anti")
                       .select(F.lit("delete").alias("kind"), F.lit(None).cast("string").alias("value"), "keys",
                               "key_columns", "column_types"))
            behind = (snapshot.join(state.select("keys", F.col("commit_timestamp").alias("_state_ts")), "keys", "left")
                      .where("_state_ts IS NULL OR _state_ts < commit_timestamp")
                      .select(F.lit("row").alias("kind"), "value", F.lit(None).cast("string").alias("keys"),
                              F.lit(None).cast("array<string>").alias("key_columns"),
                              F.lit(None).cast("string").alias("column_types")))
            cluster.ship(self._spark)  # _restage runs on the executors
            out = behind.unionByName(deletes)
            counts = Observation(f"spanner_watcher_reconcile_{uuid.uuid4().hex}")
            out = out.observe(counts, F.count_if(F.col("kind") == "delete").alias("deletes"),
                              F.count_if(F.col("kind") == "row").alias("restaged"))
            batches = staging_writer.write_batches(self._spark, self._folder("staging"), plan.table,
                                                   restage_lines(plan, out))
        finally:
            snapshot.unpersist()
        result.deletes, result.restaged = int(counts.get["deletes"] or 0), int(counts.get["restaged"] or 0)
        return batches, rows
