"""The committed changelog an export reads: one Delta snapshot, the runs after a target's, in the view's columns.

The changelog is a Delta table, append-only, every row carrying the ``run_version`` of the job
run that wrote it, and each run commits to it once (:mod:`..tables.ledger`). Runs commit one
after another, so the run number orders the commits: an export takes the rows of the runs after
the last one its target holds, up to the newest run of one pinned snapshot (a Delta version),
and its target records that run. A row arriving in a later run is in a later increment whatever
its commit timestamp, and every row is in exactly one increment. (A change-stream record replacing
a change an earlier run wrote from a poll updates that row to the replacing run's number: the
change is exported again in that run's increment, under the same change_id; keep the later.) Files of one run carry that run
number alone, so Delta's file statistics skip the files of runs exported before, and compaction,
which rewrites files but not rows, changes nothing.

:func:`snapshot` reads the table's version, identity and newest run from the Delta log (with
delta-rs, no Spark job); :func:`increment` gives the increment's rows as the changelog view shows
them (:data:`..rules.records.CHANGELOG_FIELDS`: the exact commit timestamp as text with nine digits,
``column_types`` a map), with the source columns in front: what the export formats take.

Example:
    >>> _VIEW_SQL["commit_ts"]
    'commit_timestamp'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..rules import records
from ..tables import layout
from ..tables.readers import arrow_table
from . import errors
from .delta_columns import EXACT_COMMIT_SQL, SOURCE_COLUMNS
from .selection import Selection

#: The view's columns that the Delta table types otherwise, as SQL over the Delta columns.
_VIEW_SQL = {"commit_timestamp": EXACT_COMMIT_SQL, "commit_ts": "commit_timestamp",
             "commit_date": "CAST(commit_date AS STRING)",
             "column_types": "from_json(column_types, 'map<string,string>')"}


@dataclass(frozen=True)
class Snapshot:
    """One Delta version of a warehouse's changelog: its table's identity and the newest run it holds."""

    warehouse: str
    delta_version: int
    table_id: str
    newest_run: int
    tables: tuple[str, ...]

    @property
    def uri(self) -> str:
        return f"{self.warehouse}/{layout.CHANGELOG.name}"

    def check_tables(self, selection: Selection) -> Snapshot:
        """This snapshot, when it holds every table ``selection`` names (else a ConfigurationError naming them).

        >>> Snapshot("w", 1, "id", 1, ("Singers",)).check_tables(Selection(tables=("Albums",)))
        Traceback (most recent call last):
        ...
        watcher.errors.ConfigurationError: --table Albums: not in the changelog (tables: Singers)
        """
        unknown = sorted(set(selection.tables) - set(self.tables))
        if unknown:
            raise errors.unknown_tables(unknown, self.tables)
        return self


def snapshot(warehouse: str, *, storage_options: dict[str, str] | None = None) -> Snapshot:
    """The changelog of ``warehouse`` as its newest Delta version holds it."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    warehouse = str(warehouse).rstrip("/")
    try:
        table = DeltaTable(f"{warehouse}/{layout.CHANGELOG.name}", storage_options=storage_options)
    except TableNotFoundError:
        raise errors.no_changelog(warehouse) from None
    files = pa.table(table.get_add_actions(flatten=True))
    runs = files.column("max.run_version").to_pylist() if "max.run_version" in files.column_names else [None]
    if files.num_rows and None in runs:  # a writer that kept no statistics: the rows say it
        rows = arrow_table(table, columns=["run_version"]).column("run_version").to_pylist()
        runs = [r for r in rows if r is not None]
    names = files.column("partition.table_name").to_pylist() if "partition.table_name" in files.column_names else []
    return Snapshot(warehouse, table.version(), str(table.metadata().id), int(max(runs, default=0) or 0),
                    tuple(sorted({n for n in names if n is not None})))


def delta_rows(spark: Any, snap: Snapshot, after_run: int, selection: Selection) -> Any:
    """The Delta rows of the runs after ``after_run`` up to the snapshot's newest, of ``selection``."""
    if not isinstance(after_run, int) or after_run < 0:
        raise errors.bad_option("after_run", after_run, "a run number >= 0")
    frame = spark.read.format("delta").option("versionAsOf", snap.delta_version).load(snap.uri)
    return frame.where(f"run_version > {after_run} AND run_version <= {snap.newest_run} AND ({selection.where_sql()})")


def as_view(frame: Any) -> Any:
    """Delta changelog rows in the changelog view's columns, the source columns first.

    >>> as_view  # doctest: +ELLIPSIS
    <function as_view at ...>
    """
    columns = [f"`{column}`" for _, column in SOURCE_COLUMNS]
    view = [f"{_VIEW_SQL.get(name) or f'CAST(`{name}` AS {kind})'} AS `{name}`" for name, kind, _ in records.CHANGELOG_FIELDS]
    return frame.selectExpr(*columns, *view)


def increment(spark: Any, snap: Snapshot, after_run: int, selection: Selection) -> Any:
    """The rows an export of ``selection`` takes after ``after_run``, as the formats take them."""
    return as_view(delta_rows(spark, snap, after_run, selection))
