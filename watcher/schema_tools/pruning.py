"""Index pruning: keep the poll's NULL_FILTERED index small while the table grows.

A NULL_FILTERED index on (shard, commit timestamp) holds only rows whose shard and commit
timestamp are both set. Rows nobody has changed for a while can be taken out of it with
partitioned DML, without deleting them:

* timestamp mode: ``UPDATE t SET <commit timestamp> = NULL WHERE <commit timestamp> < @cutoff``;
* processed mode (the table has a Processed column and a shard column computed as
  ``CASE WHEN Processed THEN NULL ELSE ... END``): ``SET Processed = TRUE`` instead, which
  keeps the commit timestamp (writers that update such rows must set Processed back to false).

The cutoff never passes what the watchers have delivered: it is the oldest checkpoint of the
table (over all its shards) or now, whichever is earlier, minus the retention. A table
without any checkpoint is not pruned. Rows a watcher has not yet seen are newer than its
checkpoint, so pruning never hides a change from it. A watcher that has never stored a
checkpoint is invisible to the store, so add a new watcher (or shard set) before pruning
runs again, or start it from its first checkpoint rather than from the beginning of time.

Pruning changes no data a reader of the changelog cares about, and records nothing: backfill
and reconcile take a pruned row for unchanged (its timestamp NULL, its other values as the
current state holds them; or, in processed mode, its commit timestamp the state's), by the
rule of :mod:`watcher.changelog.rules.unchanged`.

:func:`prune_index` does one run for a given ``now``; :class:`IndexPruningJob` runs it on an
APScheduler 3 scheduler. Both write their statements in the database's dialect;
:func:`prune_statement` takes ``dialect=`` (:mod:`watcher.dialects.pruning` holds what differs).

Example:
    >>> prune_statement(PruneSpec("Singers", dt.timedelta(days=1)))
    'UPDATE `Singers` SET `LastUpdated` = NULL WHERE `LastUpdated` < @cutoff'
    >>> ts = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    >>> prune_cutoff(now=ts, oldest_checkpoint=ts - dt.timedelta(hours=5), retention=dt.timedelta(hours=1))
    datetime.datetime(2024, 4, 30, 18, 0, tzinfo=datetime.timezone.utc)
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..checkpoints.base import CommitTimestampRepository
from ..dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of  # noqa: F401 (POSTGRESQL: the doctests)
from ..dialects.pruning import column_query, timestamp_literal
from ..dialects.types import column_type
from ..errors import ConfigurationError, SchemaError
from ..model import TableId, as_nanos_timestamp, rfc3339_nanos
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import validate_identifier
from .ddl import DEFAULT_COMMIT_TIMESTAMP_COLUMN

log = logging.getLogger(__name__)

CUTOFF_PARAM = "cutoff"
DEFAULT_INTERVAL = dt.timedelta(hours=1)


@dataclass(frozen=True)
class PruneSpec:
    """What to prune in one table: rows unchanged for ``retention`` (and already delivered)."""

    table: str | TableId
    retention: dt.timedelta
    commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN
    processed_column: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.table, str):
            object.__setattr__(self, "table", TableId(validate_identifier(self.table, "table")))
        validate_identifier(self.table_id.table, "table")
        validate_identifier(self.commit_timestamp_column, "commit-timestamp column")
        if self.processed_column is not None:
            validate_identifier(self.processed_column, "processed column")
        if not isinstance(self.retention, dt.timedelta) or self.retention < dt.timedelta(0):
            raise ConfigurationError(f"retention must be a timedelta of zero or more, got {self.retention!r}")

    @property
    def table_id(self) -> TableId:
        assert isinstance(self.table, TableId)
        return self.table


def prune_statement(spec: PruneSpec, cutoff: dt.datetime | None = None, *, dialect: Dialect = GOOGLE_SQL) -> str:
    """The partitioned DML of one run in ``dialect``; the cutoff is a TIMESTAMP parameter (``@cutoff``, in
    PostgreSQL ``$1``), or ``cutoff`` as a literal.

    Both forms are idempotent, as partitioned DML requires.

    >>> prune_statement(PruneSpec("Singers", dt.timedelta(0), processed_column="Processed"))
    'UPDATE `Singers` SET `Processed` = TRUE WHERE `LastUpdated` < @cutoff AND (`Processed` IS NULL OR NOT `Processed`)'
    >>> prune_statement(PruneSpec("Singers", dt.timedelta(0)), dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc))
    "UPDATE `Singers` SET `LastUpdated` = NULL WHERE `LastUpdated` < TIMESTAMP '2024-05-01T00:00:00.000000000Z'"
    >>> prune_statement(PruneSpec("Singers", dt.timedelta(0)), dialect=POSTGRESQL)
    'UPDATE "Singers" SET "LastUpdated" = NULL WHERE "LastUpdated" < $1'
    """
    bound = f"@{CUTOFF_PARAM}" if cutoff is None else timestamp_literal(dialect, rfc3339_nanos(_aware(cutoff)))
    return dialect.bind(_update(spec, bound, dialect), {CUTOFF_PARAM: None}, {}).sql


def _update(spec: PruneSpec, bound: str, dialect: Dialect) -> str:
    """The UPDATE with ``bound`` (``@cutoff`` or a literal) as the cutoff, before its parameters are bound."""
    table = dialect.table(spec.table_id)
    ts = dialect.quote(spec.commit_timestamp_column, "column")
    if spec.processed_column is None:
        return f"UPDATE {table} SET {ts} = NULL WHERE {ts} < {bound}"
    flag = dialect.quote(spec.processed_column, "column")
    return f"UPDATE {table} SET {flag} = TRUE WHERE {ts} < {bound} AND ({flag} IS NULL OR NOT {flag})"


def prune_cutoff(now: dt.datetime, oldest_checkpoint: dt.datetime | None, retention: dt.timedelta) -> dt.datetime | None:
    """Rows with a commit timestamp strictly before this may be pruned; None: prune nothing.

    >>> prune_cutoff(dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc), None, dt.timedelta(0)) is None
    True
    """
    if oldest_checkpoint is None:
        return None
    return min(_aware(now), _aware(oldest_checkpoint)) - retention


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class PruneResult:
    """One table's outcome: the cutoff used and the rows changed (a lower bound), or why it was skipped."""

    table: TableId
    cutoff: dt.datetime | None
    rows: int = 0
    skipped: str | None = None
    seconds: float = 0.0


def check_schema(database: Any, spec: PruneSpec, request_settings: RequestSettings | None = None) -> None:
    """Fail early, with the table and column named, when ``spec`` cannot work on ``database`` (either dialect)."""
    options = settings_or_default(request_settings).request_options(with_priority=False)
    dialect = dialect_of(database)

    def column(name: str) -> tuple[str, str, int] | None:
        query = column_query(dialect, spec.table_id, name)
        with database.snapshot() as snap:
            rows = list(snap.execute_sql(query.sql, params=query.params, param_types=query.types, request_options=options))
        if not rows:
            return None
        spanner_type, nullable, commit_timestamps = rows[0]
        return column_type(dialect, spanner_type), nullable, int(commit_timestamps)

    where = f"table {spec.table_id}"
    ts = column(spec.commit_timestamp_column)
    if ts is None:
        raise SchemaError(f"{where} has no column {spec.commit_timestamp_column} (or the table does not exist)")
    if not ts[2]:
        raise SchemaError(f"column {spec.commit_timestamp_column} of {where} is not a commit-timestamp column "
                          "(allow_commit_timestamp=true)")
    if spec.processed_column is None:
        if ts[1] != "YES":
            raise SchemaError(f"column {spec.commit_timestamp_column} of {where} is NOT NULL, so pruning cannot set it "
                              "to NULL; add a Processed column and prune with processed_column= instead")
        return
    flag = column(spec.processed_column)
    if flag is None or flag[0] != "BOOL":
        raise SchemaError(f"{where} has no BOOL column {spec.processed_column} to mark rows processed")


def prune_index(database: Any, spec: PruneSpec, checkpoints: CommitTimestampRepository, now: dt.datetime, *,
                request_settings: RequestSettings | None = None) -> PruneResult:
    """One pruning run for ``spec`` at time ``now`` (partitioned DML in the database's dialect carrying the request
    tag; no-op without a checkpoint)."""
    from google.cloud.spanner_v1 import param_types

    oldest = checkpoints.oldest(spec.table_id)
    cutoff = prune_cutoff(now, oldest, spec.retention)
    if cutoff is None:
        reason = f"no checkpoint for table {spec.table_id}: no change is known to be delivered, so nothing is pruned"
        log.info("%s", reason)
        return PruneResult(spec.table_id, None, skipped=reason)
    started = time.monotonic()
    dialect = dialect_of(database)
    statement = dialect.bind(_update(spec, f"@{CUTOFF_PARAM}", dialect), {CUTOFF_PARAM: as_nanos_timestamp(cutoff)},
                             {CUTOFF_PARAM: param_types.TIMESTAMP})
    rows = database.execute_partitioned_dml(statement.sql, params=statement.params, param_types=statement.types,
                                            request_options=settings_or_default(request_settings).request_options(
                                                with_priority=False))
    seconds = time.monotonic() - started
    log.info("pruned %s rows of %s older than %s in %.2f s", rows, spec.table_id, cutoff.isoformat(), seconds)
    return PruneResult(spec.table_id, cutoff, int(rows or 0), None, seconds)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class IndexPruningJob:
    """Prunes the indexes of ``specs`` on a schedule (a thin wrapper around :func:`prune_index`).

    The clock is injectable; the schema of every table is checked once, on the first run.
    A failing table is logged and does not stop the others.

    Example::

        from apscheduler.schedulers.background import BackgroundScheduler
        scheduler = BackgroundScheduler(timezone="UTC")
        job = IndexPruningJob(database, [PruneSpec("Singers", dt.timedelta(days=1))], repository)
        job.schedule(scheduler, interval=dt.timedelta(hours=1))
        scheduler.start()
    """

    def __init__(self, database: Any, specs: Sequence[PruneSpec], checkpoints: CommitTimestampRepository, *,
                 clock: Callable[[], dt.datetime] = _utcnow, request_settings: RequestSettings | None = None) -> None:
        if not specs:
            raise ConfigurationError("IndexPruningJob needs at least one PruneSpec")
        self.database = database
        self.specs = tuple(specs)
        self.checkpoints = checkpoints
        self.clock = clock
        self.request_settings = request_settings
        self._checked = False
        self.last_results: list[PruneResult] = []

    def run(self) -> list[PruneResult]:
        """Prune every table once, now; returns the results (also kept in ``last_results``)."""
        if not self._checked:
            for spec in self.specs:
                check_schema(self.database, spec, self.request_settings)
            self._checked = True
        now = self.clock()
        results = []
        for spec in self.specs:
            try:
                results.append(prune_index(self.database, spec, self.checkpoints, now, request_settings=self.request_settings))
            except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
                log.exception("pruning the index of %s failed", spec.table_id)
                results.append(PruneResult(spec.table_id, None, skipped=f"failed: {exc}"))
        self.last_results = results
        return results

    def schedule(self, scheduler: Any, *, interval: dt.timedelta = DEFAULT_INTERVAL, job_id: str = "spanner-watcher-index-pruning",
                 **trigger_options: Any) -> Any:
        """Add :meth:`run` to an APScheduler 3 ``scheduler`` every ``interval``; returns the Job.

        One run at a time (``max_instances=1``); runs missed while the scheduler was busy
        collapse into one (``coalesce``).
        """
        from apscheduler.triggers.interval import IntervalTrigger

        if interval <= dt.timedelta(0):
            raise ConfigurationError(f"interval must be positive, got {interval}")
        trigger = IntervalTrigger(seconds=interval.total_seconds(), **trigger_options)
        return scheduler.add_job(self.run, trigger, id=job_id, name="spanner-watcher index pruning",
                                 max_instances=1, coalesce=True, replace_existing=True)
