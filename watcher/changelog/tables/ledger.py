"""Exactly once across crashes: which run each warehouse table holds, and the run a crash left open.

A run commits to the four tables in :data:`.layout.COMMIT_ORDER`, each commit carrying Delta's
application transaction ``(app_id, run_version)`` (``txnAppId``/``txnVersion`` on Spark's writer,
``spark.databricks.delta.write.txnAppId``/``txnVersion`` for MERGE, ``CommitProperties`` in
delta-rs). The first commit, to ``runs``, records the staged batches the run consumes; the last,
to ``watermarks``, says the run is complete. A table's newest transaction version for the app id
is therefore the newest run it holds, which any Delta reader can see, and after a crash at any
point the ledger says what to do:

- the newest run in ``runs`` is complete (``watermarks`` holds it): begin the next one, with the
  staged batches no run consumed;
- it is not: finish it, with the batches its ``runs`` row names, writing only the tables that do
  not hold it yet (:meth:`Run.pending`). What a run writes to one table depends only on its batches
  and the tables before it in the order, so the rows are the ones the crashed attempt wrote or
  would have written, and no table receives a run twice.

One run at a time per warehouse: a second writer that begins the same run number is detected
(two ``runs`` rows of one number) and refused.

Example:
    >>> import tempfile
    >>> ledger = Ledger(tempfile.mkdtemp())
    >>> run = ledger.begin(["b1", "b2"])
    >>> run.version, run.pending()
    (1, ('changelog', 'current_state', 'watermarks'))
    >>> ledger.open_run() == run, sorted(ledger.consumed_batches())
    (True, ['b1', 'b2'])
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ChangelogError
from ...storage_urls import local_path
from . import layout
from .readers import arrow_table

#: The application id of the changelog job's commits (streaming writers use their own).
APP_ID = "spanner-watcher/changelog"


#: Tables on local disk kept open, brought up to date on each use: a streaming query's next run
#: then replays only the commits since its last, not the table's whole log. Keyed by the folder,
#: each kept with the version it was kept at and the identity of that version's commit file, so a
#: table deleted and made again, or put back from a copy, is opened afresh. A write through the kept
#: table moves it to the version it committed, which is still the same table.
_OPEN: dict[str, tuple[Any, int, tuple[int, int]]] = {}
#: The ``runs`` rows of each data file read (a Delta data file never changes): a run reads the new ones.
_RUN_FILES: dict[str, list[dict[str, Any]]] = {}
#: The run each kept table (by id, version and app id) holds: a run asks many times, and a table's
#: transactions change only with its version.
_HELD: dict[tuple[int, int, str], tuple[Any, int]] = {}
#: Entries of ``_HELD`` kept at most.
HELD_KEPT = 1_000
_CACHE_LOCK = threading.Lock()
#: Files of ``_RUN_FILES`` kept at most (a query of many micro-batches keeps the newest ones' rows).
RUN_FILES_KEPT = 100_000


def _commit_file(folder: str, version: int) -> tuple[int, int] | None:
    """(inode, change time) of a local table's commit file of ``version``; None when it has none.
    The change time, not the modification time: a copy keeps the one, never the other."""
    try:
        found = os.stat(os.path.join(folder, "_delta_log", f"{version:020d}.json"))
    except OSError:
        return None
    return found.st_ino, found.st_ctime_ns


@dataclass(frozen=True)
class Run:
    """A run: its number, the batches it consumes, and the tables that hold it already."""

    version: int
    batches: tuple[str, ...]
    done: frozenset[str]

    def pending(self) -> tuple[str, ...]:
        """The tables still to write, in commit order.

        >>> Run(3, ("b",), frozenset({"runs", "changelog"})).pending()
        ('current_state', 'watermarks')
        """
        return tuple(spec.name for spec in layout.COMMIT_ORDER if spec.name not in self.done)

    @property
    def complete(self) -> bool:
        return layout.WATERMARKS.name in self.done


class Ledger:
    """The run bookkeeping of one warehouse (a folder path or a URL delta-rs opens)."""

    def __init__(self, warehouse: str | os.PathLike[str], *, app_id: str = APP_ID,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self.warehouse = str(warehouse).rstrip("/")
        self.app_id = app_id
        self.storage_options = dict(storage_options or {})

    def uri(self, table: str) -> str:
        """The folder of ``table`` under the warehouse."""
        return f"{self.warehouse}/{table}"

    def create_tables(self) -> None:
        """Create the warehouse's tables that do not exist yet, empty, with their partitioning and properties."""
        from deltalake import DeltaTable

        for spec in layout.COMMIT_ORDER:
            if self._open(spec.name) is None:
                DeltaTable.create(self.uri(spec.name), spec.arrow_schema(), mode="ignore",
                                  partition_by=list(spec.partition_by) or None, configuration=dict(spec.properties) or None,
                                  storage_options=self.storage_options or None)

    def _open(self, table: str) -> Any | None:
        """``table`` at its newest version (None: no such table yet)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        folder = local_path(self.uri(table)) if not self.storage_options else None
        if folder is not None:
            with _CACHE_LOCK:
                kept = _OPEN.pop(folder, None)
                if kept is not None and _commit_file(folder, kept[1]) == kept[2]:
                    found = kept[0]
                    # Versions are consecutive: with no file of the next one the table is current
                    # (one stat, where bringing it up to date lists the whole log folder).
                    if os.path.exists(os.path.join(folder, "_delta_log", f"{found.version() + 1:020d}.json")):
                        found.update_incremental()
                    self._keep(folder, found)
                    return found
        try:
            found = DeltaTable(self.uri(table), storage_options=self.storage_options or None)
        except TableNotFoundError:
            return None
        if folder is not None:
            with _CACHE_LOCK:
                self._keep(folder, found)
        return found

    @staticmethod
    def _keep(folder: str, found: Any) -> None:
        """Keep ``found`` open for ``folder`` with its version's commit file (not kept when that is gone)."""
        version = found.version()
        ident = _commit_file(folder, version)
        if ident is not None:
            _OPEN[folder] = (found, version, ident)

    def table(self, name: str) -> Any:
        """Table ``name`` (a delta-rs ``DeltaTable``) at its newest version, to read or write through;
        on local disk kept open across runs and brought up to date here (see :data:`_OPEN`)."""
        found = self._open(name)
        if found is None:
            raise ChangelogError(f"warehouse {self.warehouse}: table {name} does not exist (create_tables() makes it)")
        return found

    def held_version(self, table: str) -> int:
        """The newest run ``table`` holds (0: none, or no such table yet)."""
        found = self._open(table)
        if found is None:
            return 0
        if self.storage_options or local_path(self.uri(table)) is None:  # opened afresh each time: nothing to keep
            return int(found.transaction_version(self.app_id) or 0)
        key = (id(found), found.version(), self.app_id)
        with _CACHE_LOCK:
            if key not in _HELD:
                if len(_HELD) >= HELD_KEPT:
                    _HELD.clear()
                # Kept with the table, so that its id is not reused while the entry lives.
                _HELD[key] = (found, int(found.transaction_version(self.app_id) or 0))
            return _HELD[key][1]

    def version_before(self, table: str, run: Run) -> int | None:
        """The Delta version of ``table`` right before ``run``'s commit to it (None: it does not hold the run),
        for a time-travel read of the table as the run found it. A binary search over the table's versions."""
        from deltalake import DeltaTable

        found = self._open(table)
        if found is None or int(found.transaction_version(self.app_id) or 0) < run.version:
            return None
        low, high = 0, found.version()
        while low < high:  # the first version holding the run
            middle = (low + high) // 2
            held = DeltaTable(self.uri(table), version=middle, storage_options=self.storage_options or None)
            if int(held.transaction_version(self.app_id) or 0) >= run.version:
                high = middle
            else:
                low = middle + 1
        return low - 1

    def _runs(self) -> list[dict[str, Any]]:
        found = self._open(layout.RUNS.name)
        if found is None:
            return []
        files = found.file_uris()
        paths = [local_path(uri) for uri in files]
        if self.storage_options or None in paths:
            return arrow_table(found, columns=["run_version", "batches"]).to_pylist()
        import pyarrow.parquet as pq

        rows: list[dict[str, Any]] = []
        for path in paths:
            assert path is not None
            with _CACHE_LOCK:
                held = _RUN_FILES.get(path)
            if held is None:
                held = pq.read_table(path, columns=["run_version", "batches"]).to_pylist()
                with _CACHE_LOCK:
                    if len(_RUN_FILES) >= RUN_FILES_KEPT:
                        _RUN_FILES.clear()
                    _RUN_FILES[path] = held
            rows += held
        return rows

    def run(self, version: int, rows: list[dict[str, Any]] | None = None) -> Run:
        """Run ``version`` as the tables hold it (``rows``: the ``runs`` table's rows, when already read)."""
        rows = self._runs() if rows is None else rows
        mine = [row for row in rows if row["run_version"] == version]
        if len(mine) > 1:
            raise ChangelogError(f"warehouse {self.warehouse}: run {version} was begun twice (two writers at once?); "
                                 "run one changelog job at a time per warehouse")
        batches = tuple(mine[0]["batches"] or ()) if mine else ()
        done = frozenset(spec.name for spec in layout.COMMIT_ORDER if self.held_version(spec.name) >= version)
        return Run(version, batches, done)

    def open_run(self) -> Run | None:
        """The newest run if a crash left it incomplete, else None."""
        rows = self._runs()
        newest = max((row["run_version"] for row in rows), default=0)
        if newest == 0:
            return None
        run = self.run(newest, rows)
        return None if run.complete else run

    def consumed_batches(self) -> frozenset[str]:
        """Every staged batch a run consumed or is consuming (an open run's batches included)."""
        return frozenset(batch for row in self._runs() for batch in row["batches"] or ())

    def begin(self, batches: Iterable[str], *, now: dt.datetime | None = None) -> Run:
        """Record the next run and the batches it consumes (its first commit); refuses while a run is open."""
        import pyarrow as pa
        from deltalake import CommitProperties, Transaction, write_deltalake

        if (left := self.open_run()) is not None:
            raise ChangelogError(f"warehouse {self.warehouse}: run {left.version} is not complete "
                                 f"(tables left: {', '.join(left.pending())}); finish it first")
        version = self.held_version(layout.RUNS.name) + 1
        row = {"run_version": version, "batches": sorted(set(batches)),
               "started_at": now or dt.datetime.now(dt.UTC)}
        write_deltalake(self._open(layout.RUNS.name) or self.uri(layout.RUNS.name), pa.Table.from_pylist([row], schema=layout.RUNS.arrow_schema()),
                        mode="append", storage_options=self.storage_options or None,
                        commit_properties=CommitProperties(app_transactions=[Transaction(self.app_id, version)]))
        return self.run(version)

    def writer_options(self, run: Run) -> dict[str, str]:
        """Options of Spark's Delta writer that commit a write as ``run`` (a repeat is skipped by Delta)."""
        return {"txnAppId": self.app_id, "txnVersion": str(run.version)}

    def sql_settings(self, run: Run) -> dict[str, str]:
        """Session settings under which a Spark MERGE, UPDATE or DELETE commits as ``run``."""
        return {"spark.databricks.delta.write.txnAppId": self.app_id,
                "spark.databricks.delta.write.txnVersion": str(run.version)}

    def commit_empty(self, run: Run, table: str) -> None:
        """Commit nothing to ``table`` as ``run`` (a part without rows: the table then holds the run all the same)."""
        import pyarrow as pa
        from deltalake import write_deltalake

        spec = {s.name: s for s in layout.COMMIT_ORDER}[table]
        write_deltalake(self._open(table) or self.uri(table), pa.Table.from_pylist([], schema=spec.arrow_schema()), mode="append",
                        commit_properties=self.commit_properties(run), storage_options=self.storage_options or None)

    def commit_properties(self, run: Run) -> Any:
        """delta-rs commit properties that commit a write as ``run`` (check :meth:`Run.pending` first)."""
        from deltalake import CommitProperties, Transaction

        return CommitProperties(app_transactions=[Transaction(self.app_id, run.version)])
