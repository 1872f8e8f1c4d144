"""The streaming changelog writer: a ``foreachBatch`` function that runs the changelog job per micro-batch.

Each micro-batch's records go through :meth:`watcher.changelog.Changelog.run_records`: the same
de-duplication, classification, old values, transaction groups, current state and watermarks
as a run over staged files, each micro-batch a run of the warehouse's ledger whose consumed
names are its records' batches and its identity (the query's id and the batch id). Spark runs
a micro-batch again after a failure with the same rows (the source reads at the end offset's
read timestamp); the ledger then finishes the run the failure left open, or skips it when it
is complete (Delta's idempotent writes), so the changelog holds every change once.

The warehouse's views are not registered in the query's own session (Spark clones the user's
for a streaming query, so nobody would see them there); readers register them in theirs
(:func:`watcher.changelog.register_views`).

**Freshness** is the time from a change's commit to its row being visible in the ``changelog``
view: its run's changelog part committed (the state and watermarks commit after it). The writer
measures it for every row it commits and reports it in :meth:`ChangelogWriter.stats` and, merged
into the query's own progress, in :meth:`ChangelogWriter.progress` (the Python Data Source API has
no custom source metrics).

Example:
    >>> percentiles([5, 1, 3, 2, 4], (0.5, 1.0))
    {'p50': 3, 'p100': 5}
    >>> percentiles([], (0.99,))
    {'p99': None}
"""

from __future__ import annotations

import collections
import datetime as dt
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..input.batch_sources import RECORD_SIZE_SQL
from ..job import Changelog
from ..tables.compaction import DEFAULT_MIN_FILES, CompactionPolicy

#: The freshness percentiles reported.
PERCENTILES = (0.5, 0.95, 0.99, 1.0)
#: How many of the latest rows' freshness values :meth:`ChangelogWriter.stats` keeps.
KEEP_ROWS = 200_000
#: How many per-micro-batch reports it keeps.
KEEP_BATCHES = 1_000


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def percentiles(values: Sequence[float], points: Sequence[float] = PERCENTILES) -> dict[str, Any]:
    """Nearest-rank percentiles of ``values`` (None when empty), keyed ``p50``, ``p99``..."""
    ordered = sorted(values)
    out: dict[str, Any] = {}
    for p in points:
        key = f"p{p * 100:g}"
        out[key] = ordered[min(len(ordered) - 1, max(0, int(-(-p * len(ordered) // 1)) - 1))] if ordered else None
    return out


@dataclass(frozen=True)
class BatchReport:
    """What one micro-batch did. Freshness in seconds (commit -> visible in the changelog view)."""

    batch_id: int
    records: int
    changes_written: int
    duplicates_dropped: int
    run_version: int
    visible_at: str
    seconds: float
    freshness: Mapping[str, Any]
    watermarks: Mapping[str, str | None]
    phases: Mapping[str, float] = field(default_factory=dict)  # the source's read and the changelog run's, seconds
    #: What did the changelog run: "driver" (a small micro-batch, brought to the driver) or "spark".
    engine: str = "spark"
    engine_note: str = ""  # why a micro-batch Spark did was not done on the driver


class ChangelogWriter:
    """``foreachBatch`` function writing micro-batches into a warehouse's changelog.

    Args:
        warehouse: the warehouse folder or URL (as :meth:`Changelog.warehouse`).
        soft_delete: table -> column whose set value marks a deleted row.
        clock: time source of the freshness measure (tests drive it).
        compact_files: compact a table after a micro-batch once one of its partitions holds this many
            small files (:meth:`Changelog.compaction`; 0: never). A micro-batch adds files to every
            table it writes, so a long query would otherwise leave its readers thousands of them.
        compact_apart: accepted for older callers (ignored).

    Example::

        writer = changelog_writer("/data/warehouse")
        query = (spark.readStream.format("spanner_watcher").option("database", db).option("table", "Singers").load()
                 .writeStream.foreachBatch(writer).option("checkpointLocation", "/data/checkpoint").start())
        writer.stats()["freshness"]["p99"]
    """

    def __init__(self, warehouse: str, *, soft_delete: Mapping[str, str] | None = None,
                 clock: Callable[[], dt.datetime] = _utcnow, compact_files: int = DEFAULT_MIN_FILES,
                 compact_apart: bool = True) -> None:
        self.warehouse = warehouse
        self.compaction = CompactionPolicy(compact_files).check()
        self.soft_delete = dict(soft_delete or {})
        self.clock = clock
        self._lock = threading.Lock()
        self._lags: collections.deque[tuple[float, float]] = collections.deque(maxlen=KEEP_ROWS)  # (commit, lag)
        self._batches: collections.deque[BatchReport] = collections.deque(maxlen=KEEP_BATCHES)
        self._totals = {"batches": 0, "records": 0, "changes_written": 0, "duplicates_dropped": 0, "compactions": 0}

    def __call__(self, frame: Any, batch_id: int) -> None:
        """Run the changelog job over one micro-batch (Spark calls it; a replay writes nothing twice)."""
        from pyspark import StorageLevel

        started = time.perf_counter()
        spark = frame.sparkSession
        job = (Changelog(spark).warehouse(self.warehouse).clock(self.clock).views(False)
               .compaction(self.compaction.min_files, self.compaction.target_size))
        for table, column in self.soft_delete.items():
            job.soft_delete_column(table, column)
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # One Spark job reads the micro-batch (filling the cache) and brings back what the run's
            # listing and the freshness measure need, instead of a count job and a collect of its own each.
            counts, sizes, micros = self._seen(frame)
            read = round(time.perf_counter() - started, 3)  # the source's read (the micro-batch's first job)
            query = _query_id(spark)
            result = job.run_records(frame, batch_counts=counts, batch_sizes=sizes,
                                     identity=f"micro-batch:{query}:{batch_id}" if query else None)
            visible = result.changelog_visible_at or self.clock()
            rows = self._lags_of(micros, visible) if result.changes_written else []
        finally:
            frame.unpersist()
        report = BatchReport(batch_id, result.records_read, result.changes_written, result.duplicates_dropped,
                             result.version, visible.isoformat(), round(time.perf_counter() - started, 3),
                             percentiles([lag for _, lag in rows]), dict(result.watermarks), {"read": read, **result.phases},
                             result.engine, result.engine_note)
        with self._lock:
            self._lags.extend(rows)
            self._batches.append(report)
            self._totals["batches"] += 1
            for name in ("records", "changes_written", "duplicates_dropped"):
                self._totals[name] += getattr(report, name)
            self._totals["compactions"] += len(result.compacted)

    @staticmethod
    def _seen(frame: Any) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int], list[int | None]]:
        """The records and their bytes per (table, batch_id) of ``frame``, and each record's commit
        timestamp in epoch microseconds; brought back as Arrow (no Python row objects)."""
        seen = frame.selectExpr("table", "batch_id", "unix_micros(cast(commit_timestamp AS timestamp)) AS us",
                                f"{RECORD_SIZE_SQL} AS bytes").toArrow()
        grouped = seen.group_by(["table", "batch_id"]).aggregate([([], "count_all"), ("bytes", "sum")])
        keys = list(zip(grouped.column("table").to_pylist(), grouped.column("batch_id").to_pylist(), strict=True))
        return (dict(zip(keys, grouped.column("count_all").to_pylist(), strict=True)),
                dict(zip(keys, grouped.column("bytes_sum").to_pylist(), strict=True)), seen.column("us").to_pylist())

    @staticmethod
    def _lags_of(micros: list[int | None], visible: dt.datetime) -> list[tuple[float, float]]:
        """(commit, seconds from the commit to ``visible``) of each record, in epoch seconds
        (microsecond precision is plenty here)."""
        now = visible.timestamp()
        return [(us / 1e6, round(now - us / 1e6, 6)) for us in micros if us is not None]

    def stats(self) -> dict[str, Any]:
        """Totals, freshness percentiles (seconds) over the latest rows, and the last micro-batch."""
        with self._lock:
            last = self._batches[-1].__dict__ if self._batches else None
            return {**self._totals, "freshness": percentiles([lag for _, lag in self._lags]),
                    "freshness_rows": len(self._lags),
                    "last_batch": dict(last) if last else None}

    def close(self, timeout: float | None = None) -> None:
        """Nothing to wait for (kept for callers that close the writer after stopping the query)."""

    def batches(self) -> list[BatchReport]:
        """The kept per-micro-batch reports, oldest first."""
        with self._lock:
            return list(self._batches)

    def freshness_values(self, committed_since: float | None = None, committed_before: float | None = None) -> list[float]:
        """The kept per-row freshness values (seconds), of the rows committed at or after
        ``committed_since`` and before ``committed_before`` (epoch seconds) when given."""
        with self._lock:
            return [lag for commit, lag in self._lags if (committed_since is None or commit >= committed_since)
                    and (committed_before is None or commit < committed_before)]

    def progress(self, query: Any) -> dict[str, Any] | None:
        """``query.lastProgress`` with this writer's ``freshness`` (None before the first progress)."""
        last = query.lastProgress
        if last is None:
            return None
        return {**dict(last), "freshness": self.stats()["freshness"]}


def _query_id(spark: Any) -> str | None:
    """The streaming query's id (kept in its checkpoint, so the same across restarts) as Spark tells
    the micro-batch's thread; None where it cannot be read (a Connect session)."""
    try:
        return spark.sparkContext.getLocalProperty("sql.streaming.queryId") or None
    except Exception:  # noqa: BLE001 - no SparkContext (Spark Connect): the batches' names alone are consumed
        return None


def changelog_writer(warehouse: str, **kwargs: Any) -> ChangelogWriter:
    """A :class:`ChangelogWriter` for ``writeStream.foreachBatch(...)``."""
    return ChangelogWriter(warehouse, **kwargs)
