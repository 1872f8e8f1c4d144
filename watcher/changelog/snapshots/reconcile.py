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
  duplicates (same table, key and commit timestamp);
* a row whose commit-timestamp column is NULL (taken out of the poll's index by pruning,
  or never written with one) is read as committed at R and staged only when its values
  differ from the state's (:mod:`..rules.unchanged` has the rule, shared with backfill): pruning
  changes no data, so it records nothing, while a write that left the column NULL is
  recorded at R.

The staged batches go through the normal changelog job, which appends the DELETEs and
drops the keys from the current state. Afterwards the table's state is complete as of R,
so when no completeness marker exists yet, one is written (method reconcile); an earlier
marker stays (a table complete from an earlier time is complete from a later one too).

Run the changelog job before a reconcile (the comparison uses the committed state) and
after it (to apply it); reconciling twice without a job run in between stages the same
deletion twice, with two detection times.

Example::

    from watcher.changelog.snapshots.reconcile import Reconcile
    result = Reconcile(spark, database).table("Singers").staging("s/").warehouse("w/").run()
    result.deletes, result.restaged
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..io import staging_writer
from ..io.files import open_fs
from ..rules import completeness, unchanged
from ..spark import cluster
from ..tables import frames
from ..tables.ledger import Ledger
from .backfill import SnapshotJob, SnapshotStats, unchanged_counts
from .restage import restage_lines, rows_to_restage
from .spanner_source import ReadPlan, ReadPoint


@dataclass
class ReconcileResult(SnapshotStats):
    #: Keys found hard-deleted (DELETE records staged).
    deletes: int = 0
    #: Rows present at R that the state lacked or held in an older version, or without a commit timestamp
    #: and with other values than the state's (staged again; see :mod:`..rules.unchanged`).
    restaged: int = 0
    #: The committed changelog version the table was compared with.
    compared_with_version: int = 0
    marker_written: bool = False


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
        result.compared_with_version = Ledger(self._folder("warehouse")).held_version("watermarks")

        def stage(lines: Any, point: ReadPoint, plan: ReadPlan) -> int:
            result.batches, rows = self._stage(lines, plan, result)
            return rows

        info = self._read(result, stage)
        if str(info.table) not in completeness.read_markers(fs):
            completeness.write_marker(fs, str(info.table), result.read_timestamp, "reconcile", self._clock())
            result.marker_written = True
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _stage(self, lines: Any, plan: ReadPlan, result: ReconcileResult) -> tuple[list[str], int]:
        """Stage the deletes and the rows the state lacks; returns the staged batches and the rows read at R."""
        from pyspark import StorageLevel
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        snapshot = unchanged.snapshot_frame(lines).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            rows = snapshot.count()  # read the table now, while R is held (both joins below reuse it)
            state = frames.table_state(self._spark, self._folder("warehouse"), plan.table, self._source)
            if state is None:
                state = frames.empty_state(self._spark)
            r = plan.read_timestamp
            deletes = (state.where(F.col("commit_timestamp") <= F.lit(r)).where("NOT is_deleted")
                       .join(snapshot.select("keys"), "keys", "left_anti")
                       .select(F.lit("delete").alias("kind"), F.lit(None).cast("string").alias("value"), "keys",
                               "key_columns", "column_types"))
            seen, verdicts = unchanged_counts(unchanged.judge(snapshot, state, plan.commit_timestamp_column))
            behind = rows_to_restage(seen.where(unchanged.staged_sql()))
            cluster.ship(self._spark)  # the restaging runs on the executors
            out = behind.unionByName(deletes)
            counts = Observation(f"spanner_watcher_reconcile_{uuid.uuid4().hex}")
            out = out.observe(counts, F.count_if(F.col("kind") == "delete").alias("deletes"),
                              F.count_if(F.col("kind") == "row").alias("restaged"))
            batches = staging_writer.write_batches(self._spark, self._folder("staging"), plan.table,
                                                   restage_lines(plan, out))
        finally:
            snapshot.unpersist()
        result.unchanged = int(verdicts.get["unchanged"] or 0)
        result.deletes, result.restaged = int(counts.get["deletes"] or 0), int(counts.get["restaged"] or 0)
        return batches, rows
