"""Backfill: an initial snapshot of a table at one read timestamp, so what follows classifies exactly.

Polling sees only rows that change after a watcher starts; a key that never changes again
would be missing from the current state, and a key first seen later could be an old row.
A backfill reads the whole table at one strong read timestamp R, in parallel by shard (or
by a hash of the key) as Spark partitions (see :mod:`.spanner_source` for how R is kept
on every kind of Spanner), and then, in this order:

1. stages every row as a ``backfill`` record (one batch per partition, in the StagingSink's
   layout) with the row's own commit timestamp, so the changelog job reads it like a poll;
2. writes the table's completeness marker with R (:mod:`..rules.completeness`): a key first seen
   in a change committed after R is then an INSERT;
3. sets the watchers' checkpoints (LAST_SEEN_COMMIT_TIMESTAMPS, one per shard value) to R,
   so the watchers continue exactly where the snapshot ends (a checkpoint already past R
   is left alone: moving it back would only re-deliver).

Run it before the watchers start (or while they are stopped): a running watcher would
overwrite the checkpoint with its own. A crash part way leaves no marker and no
checkpoint; running it again stages the rows again and the job drops the duplicates
(same table, key and commit timestamp). Rows whose commit-timestamp column is NULL (never
written with one, or taken out of the poll's index by pruning) are recorded at R.

A backfill of a table the changelog holds already (run again later, say) compares the rows
with the committed current state, as reconcile does (:mod:`..rules.unchanged` has the rule): a row
the state holds in this or a later version is not staged, nor one whose commit timestamp was
pruned to NULL while its values stayed as recorded, so pruning invents no change; a row
written again without a commit timestamp is staged. Run the changelog job first, so that
the state holds what the watchers staged.

Example::

    from watcher.changelog.snapshots.backfill import Backfill
    result = (Backfill(spark, database).table("Singers")
              .staging("/data/staging").warehouse("/data/warehouse")
              .shards("ShardId", range(-18, 19))            # partitions and checkpoint keys
              .checkpoints(SpannerCommitTimestampRepository(database), [list(range(-18, 19))])
              .run())
    result.read_timestamp, result.rows
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from watcher.capture.table_info import discover
from watcher.checkpoints import CommitTimestampRepository
from watcher.dialects import dialect_of
from watcher.errors import ConfigurationError
from watcher.model import Checkpoint, TableId
from watcher.request_settings import DEFAULT_SETTINGS, RequestSettings

from ..io import staging_writer
from ..io.files import open_fs
from ..rules import completeness, unchanged
from ..spark import cluster
from ..spark.connect import is_session
from ..tables import frames
from ..tables.convert import refuse_old_layout
from ..tables.source import DEFAULT_SOURCE, Source
from . import restage, spanner_source
from .spanner_source import READ_MODES, ReadPartition, ReadPlan, ReadPoint, SpannerLocation

#: Partitions for a table read without a shard column (by a hash of the first key column).
DEFAULT_HASH_PARTITIONS = 4
BACKFILL_WATCHER_ID = "spanner-watcher-backfill"


@dataclass
class SnapshotStats:
    """What a read at one timestamp did."""

    table: str
    read_timestamp: str = ""
    rows: int = 0
    partitions: int = 0
    batches: list[str] = field(default_factory=list)
    #: Partitions read at the exact timestamp (all of them, on every kind of Spanner).
    read_at_timestamp: int = 0
    #: Rows without a commit timestamp (pruned, or never written with one) that the state holds with
    #: the same values: not staged (:mod:`..rules.unchanged`).
    unchanged: int = 0
    seconds: float = 0.0


@dataclass
class BackfillResult(SnapshotStats):
    #: Rows staged: all rows read, less those the table's current state holds already (:mod:`..rules.unchanged`).
    staged: int = 0
    marker_written: bool = False
    checkpoints_set: list[Any] = field(default_factory=list)
    checkpoints_kept: list[Any] = field(default_factory=list)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class SnapshotJob:
    """The builder steps backfill and reconcile share: which table, how to split it, where to stage."""

    method = "backfill"

    def __init__(self, spark: Any, database: Any) -> None:
        if not is_session(spark):
            raise ConfigurationError(f"spark must be a SparkSession, got {type(spark).__name__}")
        if database is None or not hasattr(database, "database_id"):
            raise ConfigurationError(f"database must be a google.cloud.spanner Database, got {type(database).__name__}")
        self._spark = spark
        self._database = database
        self._table: str | None = None
        self._staging: str | None = None
        self._warehouse: str | None = None
        self._shard_column: str | None = None
        self._shard_values: list[Any] = []
        self._per_partition = 4
        self._hash_partitions = DEFAULT_HASH_PARTITIONS
        self._commit_timestamp_column: str | None = None
        self._clock: Callable[[], dt.datetime] = _utcnow
        self._request_settings = DEFAULT_SETTINGS
        self._source = DEFAULT_SOURCE

    def source(self, project: str, instance: str, database: str) -> Any:
        """The watched database's names the warehouse keeps its rows under (as the changelog job's
        ``source``); by default the embedded default's."""
        self._source = Source(project, instance, database)
        return self

    def table(self, name: str) -> Any:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"table must be a non-empty name, got {name!r}")
        self._table = name
        return self

    def staging(self, path: str) -> Any:
        self._staging = _path("staging", path)
        return self

    def warehouse(self, path: str) -> Any:
        self._warehouse = _path("warehouse", path)
        return self

    def shards(self, column: str, values: Iterable[Any], per_partition: int = 4) -> Any:
        """Split the read by shard values of ``column`` (``per_partition`` values per Spark partition)."""
        values = list(values)
        if not values or any(v is None for v in values):
            raise ConfigurationError(f"shards({column!r}): give at least one shard value, none of them NULL")
        if not isinstance(per_partition, int) or per_partition < 1:
            raise ConfigurationError(f"per_partition must be a positive integer, got {per_partition!r}")
        self._shard_column, self._shard_values, self._per_partition = column, values, per_partition
        return self

    def partitions(self, count: int) -> Any:
        """Without shards: split the read in ``count`` partitions by a hash of the first key column."""
        if not isinstance(count, int) or count < 1:
            raise ConfigurationError(f"partitions must be a positive integer, got {count!r}")
        self._hash_partitions = count
        return self

    def read_mode(self, mode: str) -> Any:
        """Kept for compatibility: every mode ('auto', 'timestamp', 'shared') reads at exactly R now."""
        if mode not in READ_MODES:
            raise ConfigurationError(f"read_mode must be one of {READ_MODES}, got {mode!r}")
        return self

    def commit_timestamp_column(self, column: str) -> Any:
        self._commit_timestamp_column = column
        return self

    def request_settings(self, settings: RequestSettings) -> Any:
        """The request tag and priority of the reads; with ``data_boost`` the table is read on Data Boost
        (partitioned queries with ``data_boost_enabled``)."""
        if not isinstance(settings, RequestSettings):
            raise ConfigurationError(f"request_settings needs a RequestSettings, got {type(settings).__name__}")
        self._request_settings = settings
        return self

    def clock(self, now: Callable[[], dt.datetime]) -> Any:
        self._clock = now
        return self

    # --- shared steps ---------------------------------------------------------------------------------

    def _require(self, *names: str) -> None:
        for name in names:
            if getattr(self, f"_{name}") is None:
                raise ConfigurationError(f"{name} is not set: call .{name}(...) before .run()")

    def _folder(self, name: str) -> str:
        """The ``staging`` or ``warehouse`` folder, which must be set."""
        self._require(name)
        return str(getattr(self, f"_{name}"))

    def _partitions(self, info: Any) -> list[ReadPartition]:
        if self._shard_column is not None:
            if self._shard_column not in info.column_types:
                raise ConfigurationError(f"shard column {self._shard_column} is not a column of {self._table}")
            return spanner_source.shard_partitions(self._shard_column, self._shard_values, self._per_partition,
                                                   dialect_of(self._database))
        first = info.key_columns[0] if info.key_columns else None
        if first is None:
            return spanner_source.single_partition()
        return spanner_source.hash_partitions(first, info.column_types[first], self._hash_partitions,
                                              dialect_of(self._database))

    def _read(self, stats: SnapshotStats, stage: Callable[[Any, ReadPoint, ReadPlan], int]) -> Any:
        """Discover the table, fix R, read it in parallel and hand the lines to ``stage`` (R still held);
        ``stage`` returns the number of rows it saw."""
        info = discover(self._database, TableId(self._table), self._commit_timestamp_column,  # type: ignore[arg-type]
                        request_settings=self._request_settings)
        parts = self._partitions(info)
        stats.partitions = len(parts)
        with ReadPoint(self._database, self._request_settings) as point:
            stats.read_timestamp = point.read_timestamp_text
            plan = ReadPlan(SpannerLocation.of(self._database), str(info.table), tuple(info.key_columns),
                            info.commit_timestamp_column, dict(info.column_types), stats.read_timestamp,
                            self.method, f"spanner-watcher-{self.method}",
                            spanner_source.batch_prefix(stats.read_timestamp, self.method), self._request_settings,
                            dialect_of(self._database).name)
            lines = spanner_source.snapshot_lines(self._spark, plan, parts)
            stats.rows = stage(lines, point, plan)
        stats.read_at_timestamp = len(parts)  # every partition read at exactly R, or the job failed
        return info


class Backfill(SnapshotJob):
    """Builder of one backfill of one table (see the module docstring).

    Args:
        spark: the SparkSession.
        database: the ``google.cloud.spanner`` Database to read (its location is handed to the tasks).
    """

    method = "backfill"

    def __init__(self, spark: Any, database: Any) -> None:
        super().__init__(spark, database)
        self._repo: CommitTimestampRepository | None = None
        self._checkpoint_shards: list[Any] = [None]

    def checkpoints(self, repository: CommitTimestampRepository, shard_values: Sequence[Any] = (None,)) -> Backfill:
        """Set these watchers' checkpoints to R: one per shard value, as each watcher stores it
        (None without a shard provider; the list of values for a FixedShardProvider of a list)."""
        if not isinstance(repository, CommitTimestampRepository):
            raise ConfigurationError(f"checkpoints needs a CommitTimestampRepository, got {type(repository).__name__}")
        if not list(shard_values):
            raise ConfigurationError("checkpoints: give at least one shard value (None for a watcher without shards)")
        self._repo, self._checkpoint_shards = repository, list(shard_values)
        return self

    def run(self) -> BackfillResult:
        self._require("table", "staging", "warehouse")
        refuse_old_layout(self._folder("warehouse"))  # its state is read from the Delta tables
        started = time.perf_counter()
        result = BackfillResult(self._table)  # type: ignore[arg-type]

        def stage(lines: Any, point: ReadPoint, plan: ReadPlan) -> int:
            return self._stage(lines, plan, result)

        info = self._read(result, stage)
        # Only now are the rows staged: the marker and the checkpoints may say "complete as of R".
        completeness.write_marker(open_fs(self._spark, self._folder("warehouse")), str(info.table), result.read_timestamp,
                                  "backfill", self._clock())
        result.marker_written = True
        if self._repo is not None:
            self._set_checkpoints(info.table, result)
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _stage(self, lines: Any, plan: ReadPlan, result: BackfillResult) -> int:
        """Stage the rows read at R the table's committed state lacks (all of them without a state); returns
        the rows read."""
        counted, rows = observe_rows(lines)
        state = frames.table_state(self._spark, self._folder("warehouse"), plan.table, self._source)
        if state is None:  # nothing to compare with: every row goes, as read (one batch a partition)
            result.batches = staging_writer.write_batches(self._spark, self._folder("staging"), plan.table, counted)
            result.staged = int(rows.get["rows"] or 0)
            return result.staged
        judged, verdicts = unchanged_counts(unchanged.judge(unchanged.snapshot_frame(counted), state,
                                                            plan.commit_timestamp_column))
        cluster.ship(self._spark)  # the restaging runs on the executors
        kept = restage.rows_to_restage(judged.where(unchanged.staged_sql()))
        result.batches = staging_writer.write_batches(self._spark, self._folder("staging"), plan.table,
                                                      restage.restage_lines(plan, kept))
        result.unchanged = int(verdicts.get["unchanged"] or 0)
        result.staged = sum(int(verdicts.get[v] or 0) for v in unchanged.STAGED)
        return int(rows.get["rows"] or 0)

    def _set_checkpoints(self, table: TableId, result: BackfillResult) -> None:
        from google.api_core.datetime_helpers import DatetimeWithNanoseconds

        assert self._repo is not None
        at = DatetimeWithNanoseconds.from_rfc3339(result.read_timestamp)
        self._repo.initialize()
        for shard in self._checkpoint_shards:
            stored = self._repo.get(table, shard)
            if stored is not None and stored.commit_timestamp > at:
                result.checkpoints_kept.append(shard)
                continue
            self._repo.set(table, Checkpoint(at), shard)
            result.checkpoints_set.append(shard)


def observe_rows(frame: Any) -> tuple[Any, Any]:
    """``frame`` counting its rows as an action evaluates it, and the Observation whose ``get["rows"]`` says how many.

    An Observation (not an accumulator) works on classic and Spark Connect sessions alike.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(f"spanner_watcher_rows_{uuid.uuid4().hex}")
    return frame.observe(observation, F.count(F.lit(1)).alias("rows")), observation


def unchanged_counts(judged: Any) -> tuple[Any, Any]:
    """``judged`` (:func:`..rules.unchanged.judge`) counting its rows by verdict as an action evaluates it, and the
    Observation whose ``get[verdict]`` says how many."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(f"spanner_watcher_verdicts_{uuid.uuid4().hex}")
    counts = [F.count_if(F.col(unchanged.VERDICT) == F.lit(v)).alias(v) for _, v in unchanged.RULES]
    return judged.observe(observation, *counts), observation


def _path(name: str, path: Any) -> str:
    if not isinstance(path, str) and not hasattr(path, "__fspath__"):
        raise ConfigurationError(f"{name} must be a path, got {type(path).__name__}")
    text = str(path)
    if not text.strip():
        raise ConfigurationError(f"{name} must be a non-empty path")
    return text
