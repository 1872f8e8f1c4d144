"""The incremental export into a Spanner table, its progress kept in the same database.

Next to the changelog table (:mod:`.spanner_table`) the target database holds one progress row
per (changelog table, selection)::

    CREATE TABLE SpannerWatcherExportProgress (
      ChangelogTable STRING(MAX) NOT NULL,     -- the table the rows go to
      Selection STRING(MAX) NOT NULL,          -- the selection's JSON (source, tables, since)
      ChangelogTableId STRING(MAX) NOT NULL,   -- the warehouse changelog's Delta table id
      LastRun INT64 NOT NULL, DeltaVersion INT64 NOT NULL, Increments INT64 NOT NULL, RowsExported INT64 NOT NULL,
      UpdatedAt TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
    ) PRIMARY KEY (ChangelogTable, Selection)

An export writes the rows of the runs after ``LastRun`` (:mod:`.rows`) from the Spark tasks, in
many commits, then moves the progress row in one transaction that first checks it still says
what the export started from. A crash in between leaves the progress where it was: the next
export writes the same rows again, and since a row's primary key is its change's identity, they
replace themselves (only ExportedAt moves). So the table holds each change once; a reader that
follows ExportedAt may see a rewritten row twice and de-duplicates by ChangeId (with the Source columns).

A PostgreSQL target gets it in PostgreSQL's spellings, names double-quoted as given (as the changelog table).

Example:
    >>> progress_table_ddl().splitlines()[-1]
    ') PRIMARY KEY (`ChangelogTable`, `Selection`)'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...dialects import GOOGLE_SQL, Dialect, dialect_of
from . import errors
from .progress import Increment, Progress
from .rows import Snapshot, increment, snapshot
from .selection import Selection
from .spanner_table import DEFAULT_TABLE, ensure, ensure_table, table_ddl, write_to_database

PROGRESS_TABLE = "SpannerWatcherExportProgress"
FORMAT = "spanner"
PROGRESS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("ChangelogTable", "STRING(MAX) NOT NULL"),
    ("Selection", "STRING(MAX) NOT NULL"),
    ("ChangelogTableId", "STRING(MAX) NOT NULL"),
    ("LastRun", "INT64 NOT NULL"),
    ("DeltaVersion", "INT64 NOT NULL"),
    ("Increments", "INT64 NOT NULL"),
    ("RowsExported", "INT64 NOT NULL"),
    ("UpdatedAt", "TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)"),
)
_PROGRESS_KEY = ("ChangelogTable", "Selection")


def progress_table_ddl(table: str = PROGRESS_TABLE, dialect: Dialect = GOOGLE_SQL) -> str:
    """The CREATE TABLE statement of the progress table in ``dialect``."""
    return table_ddl(dialect, table, PROGRESS_COLUMNS, _PROGRESS_KEY, "progress table")


def _progress_sql(dialect: Dialect, select: str, table: str, selection: str) -> Any:
    """SELECT ``select`` (column names) of the progress row of (``table``, ``selection``), bound for ``dialect``."""
    from google.cloud.spanner_v1 import param_types

    q = dialect.quote
    sql = (f"SELECT {', '.join(q(c) for c in select.split(', '))} FROM {q(PROGRESS_TABLE)} "
           f"WHERE {q('ChangelogTable')} = @t AND {q('Selection')} = @s")
    return dialect.bind(sql, {"t": table, "s": selection}, {"t": param_types.STRING, "s": param_types.STRING})


def selection_key(selection: Selection) -> str:
    """The selection as the progress row's key.

    >>> selection_key(Selection(database="d"))
    '{"database": "d", "instance": null, "project": null, "since": null, "tables": []}'
    """
    return json.dumps(selection.as_dict(), sort_keys=True)


@dataclass(frozen=True)
class SpannerPlan:
    progress: Progress
    snapshot: Snapshot
    rows: Any


@dataclass(frozen=True)
class SpannerOutcome:
    """The progress after the export and the rows it wrote (0 when nothing was new)."""

    progress: Progress
    written: int
    increment: Increment | None


class SpannerExport:
    """The export of a warehouse's changelog (``selection`` of it) into ``table`` of a Spanner database."""

    def __init__(self, spark: Any, warehouse: str, database: Any, table: str = DEFAULT_TABLE,
                 selection: Selection | None = None, *, storage_options: dict[str, str] | None = None,
                 batch_rows: int | None = None) -> None:
        self.spark, self.warehouse, self.database, self.table = spark, str(warehouse).rstrip("/"), database, table
        self.selection, self._storage = selection or Selection(), storage_options
        self._batch = {"batch_rows": batch_rows} if batch_rows is not None else {}
        self._where = f"{PROGRESS_TABLE} ({self.table}) in {database.name}"

    def progress(self, snap: Snapshot) -> Progress:
        """The progress the target database records for this table and selection (fresh when none)."""
        statement = _progress_sql(dialect_of(self.database), "ChangelogTableId, LastRun, DeltaVersion, Increments, "
                                  "RowsExported", self.table, selection_key(self.selection))
        with self.database.snapshot() as snap_read:
            found = list(snap_read.execute_sql(statement.sql, params=statement.params, param_types=statement.types))
        if not found:
            return Progress.start(FORMAT, self.selection, snap.table_id)
        table_id, last_run, delta_version, count, rows = found[0]
        done = tuple(Increment(n + 1, 0, 0, -1) for n in range(int(count)))  # only their number is kept here
        recorded = Progress(FORMAT, self.selection, table_id, int(last_run), int(delta_version), done)
        recorded.check(self._where, FORMAT, self.selection, snap.table_id)
        return recorded

    def plan(self) -> SpannerPlan | None:
        """The rows to write (None: no run is newer than the recorded one); creates the tables when missing."""
        snap = snapshot(self.warehouse, storage_options=self._storage).check_tables(self.selection)
        ensure_table(self.database, self.table)
        ensure(self.database, PROGRESS_TABLE, lambda dialect: progress_table_ddl(dialect=dialect),
               [name for name, _ in PROGRESS_COLUMNS], "progress")
        progress = self.progress(snap)
        if snap.newest_run <= progress.last_run:
            return None
        return SpannerPlan(progress, snap, increment(self.spark, snap, progress.last_run, self.selection))

    def write(self, plan: SpannerPlan) -> int:
        """The increment's rows into the changelog table (any number of commits); returns how many."""
        return write_to_database(plan.rows, self.database, self.table, **self._batch)

    def record(self, plan: SpannerPlan, written: int) -> SpannerOutcome:
        """Move the progress row, in one transaction that checks it still holds what the plan read."""
        from google.cloud import spanner

        before = plan.progress
        inc = Increment(before.next_number, before.last_run + 1, plan.snapshot.newest_run,
                        plan.snapshot.delta_version, {"*": written}) if written else None
        after = before.recorded(inc, plan.snapshot.newest_run, plan.snapshot.delta_version)

        statement = _progress_sql(dialect_of(self.database), "LastRun, RowsExported", self.table,
                                  selection_key(self.selection))

        def move(transaction: Any) -> None:
            rows = list(transaction.execute_sql(statement.sql, params=statement.params, param_types=statement.types))
            last, total = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
            if last != before.last_run:
                raise errors.bad_state(self._where, f"another export moved it to run {last} meanwhile")
            transaction.insert_or_update(PROGRESS_TABLE, [name for name, _ in PROGRESS_COLUMNS], [[
                self.table, selection_key(self.selection), after.table_id, after.last_run, after.delta_version,
                len(after.increments), total + written, spanner.COMMIT_TIMESTAMP]])

        self.database.run_in_transaction(move)
        return SpannerOutcome(after, written, inc)

    def run(self) -> SpannerOutcome:
        """Plan, write, record: export the runs the target does not hold yet."""
        plan = self.plan()
        if plan is None:
            return SpannerOutcome(self.progress(snapshot(self.warehouse, storage_options=self._storage)), 0, None)
        return self.record(plan, self.write(plan))
