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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..staging import contract
from . import cluster, completeness, current_state, manifest, records, staging_writer
from .backfill import SnapshotJob, SnapshotStats
from .fs import HadoopFS
from .spanner_source import ReadPlan, ReadPoint, staging_record
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


def _restage(plan: ReadPlan, index: int, rows: Iterator[Any], counters: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Runs in a Spark task: the partition's reconcile records as one batch (seq from 0)."""
    batch_id = contract.task_batch_id(plan.batch_prefix, index, "r")
    seq = deletes = 0
    for kind, line, keys, key_columns, column_types in rows:
        if kind == "row":
            record = json.loads(line)
            record["batch_id"], record["seq"] = batch_id, seq
        else:
            key = json.loads(keys)  # a JSON object in key order, typed-JSON values
            record = staging_record(plan, batch_id, seq, [key[c] for c in key_columns], key,
                                    commit_timestamp=plan.read_timestamp, mod_type="DELETE",
                                    key_columns=key_columns, types=json.loads(column_types))
            deletes += 1
        yield batch_id, contract.to_line(record)
        seq += 1
    counters["deletes"].add(deletes)
    counters["restaged"].add(seq - deletes)


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
        fs = HadoopFS(self._spark, self._folder("warehouse"))
        base = manifest.load(fs)
        result.compared_with_version = base.version

        def stage(lines: Any, point: ReadPoint, plan: ReadPlan) -> None:
            result.batches = self._stage(lines, plan, base, fs, result)

        info = self._read(result, stage)
        if str(info.table) not in completeness.read_markers(fs):
            completeness.write_marker(fs, str(info.table), result.read_timestamp, "reconcile", self._clock())
            result.marker_written = True
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _stage(self, lines: Any, plan: ReadPlan, base: manifest.Manifest, fs: HadoopFS,
               result: ReconcileResult) -> list[str]:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        staged = F.from_json("value", records.schema(records.STAGING_FIELDS))
        snapshot = (lines.select(staged.alias("r"), "value")
                    .select(F.expr(keys_json_sql("r.key_columns", "from_json(r.keys, 'array<string>')", "r.types"))
                            .alias("keys"), F.col("r.commit_timestamp").alias("commit_timestamp"), "value")
                    .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            snapshot.count()  # read the table now, while R is held (both joins below reuse it)
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
            sc = self._spark.sparkContext
            cluster.ship(self._spark)  # _restage runs on the executors
            counters = {name: sc.accumulator(0) for name in ("deletes", "restaged")}
            out = behind.unionByName(deletes).rdd.mapPartitionsWithIndex(
                lambda index, rows: _restage(plan, index, rows, counters))
            batches = staging_writer.write_batches(self._spark, self._folder("staging"), plan.table,
                                                   self._spark.createDataFrame(out, "batch_id STRING, value STRING"))
        finally:
            snapshot.unpersist()
        result.deletes, result.restaged = counters["deletes"].value, counters["restaged"].value
        return batches
