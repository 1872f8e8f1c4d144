"""One run of the changelog job: list new batches, classify them, write, commit.

:class:`.job.Changelog` builds a run and :class:`Run` executes it. A small run the driver engine
can do exactly is done there, without Spark (:mod:`.driver`); otherwise the per-key window over the
new batches and the state of their tables is built and kept once (:mod:`.pipeline`), one
aggregation over it checks the batches and counts the outcomes (:mod:`.tally`), the changelog
and the state are written side by side, and the manifest commits them atomically
(:mod:`.manifest`), with the processed-batches log, the watermarks and any state merges the
compactor finished (:mod:`.compaction`). Nothing a run writes is visible before its commit.

Example:
    >>> ChangelogResult(version=3).summary()["quarantined"]
    []
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..staging import contract
from . import (
    changelog_files,
    compaction,
    completeness,
    current_state,
    driver,
    kept,
    manifest,
    pipeline,
    placement,
    processed_log,
    staging_reader,
    supersede,
    views,
    watermarks,
)
from .arrow_fs import read_with_pyarrow
from .batch_sources import RECORD_BYTES, BatchSource
from .connect import default_parallelism
from .driver import engine as driver_engine
from .driver.collector import collector_paused
from .files import open_fs
from .grouping import add_grouping
from .jvm import registry as jvm
from .session import side_by_side, temporary_conf
from .staging_reader import Quarantined
from .tally import OutcomeCount, Tally, tally


@dataclass
class ChangelogResult:
    """What a run did. ``version`` is the committed version the warehouse is at afterwards."""

    version: int
    committed: bool = False
    batches_read: int = 0
    records_read: int = 0
    changes_written: int = 0
    duplicates_dropped: int = 0
    late_changes: int = 0
    #: Polled changelog rows of earlier runs replaced by a change stream's row of the same version.
    replaced: int = 0
    mod_types: dict[str, int] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)
    watermarks: dict[str, str | None] = field(default_factory=dict)
    quarantined: list[Quarantined] = field(default_factory=list)
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    #: How updates' old values were computed: "jvm" (the package's JVM function, :mod:`.jvm`),
    #: "sql" (its SQL path: no JDK to build the function, or turned off) or "driver" (the driver
    #: engine); the same values either way.
    old_values_by: str = ""
    #: What did the run: "spark", or "driver" (a small run done without Spark, :mod:`.driver`); the
    #: same rows either way. ``engine_note``: why a run Spark did was not done on the driver.
    engine: str = ""
    engine_note: str = ""

    def summary(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["quarantined"] = [q.__dict__ for q in self.quarantined]
        return out


#: The manifest's per-table newest commit timestamp written to the changelog (a table entry
#: without it, written before it was kept, makes every run read the groups it may continue).
MAX_COMMIT = "max_commit"


def _newest_commit(stats: list[Any], table: str) -> str | None:
    return max((s.max_commit for s in stats if s.table == table and s.max_commit), default=None)


def _touched(stats: list[Any]) -> list[str]:
    """The tables a run's batches hold (their state is written, their manifest entries updated)."""
    return sorted({s.table for s in stats if s.table})


def _groups_are_new(base: manifest.Manifest, window: _Window) -> bool:
    """Whether every new row is newer than every row of the committed changelog: then no group of
    the run has rows written before (a group's rows share one commit timestamp), and the run need not
    read the changelog to continue their numbering. A streaming micro-batch after the one before is so.

    >>> from types import SimpleNamespace as N
    >>> window = N(stats=[N(batch="b")], tally=N(batches={"b": {"min_commit": "2024-01-01T00:00:02.000000000Z"}}))
    >>> _groups_are_new(manifest.Manifest(3, tables={"T": {"max_commit": "2024-01-01T00:00:01.000000000Z"}}), window)
    True
    >>> _groups_are_new(manifest.Manifest(3, tables={"T": {"max_commit": "2024-01-01T00:00:02.000000000Z"}}), window)
    False
    >>> _groups_are_new(manifest.Manifest(3, tables={"T": {}}), window)  # not known: read them
    False
    """
    if base.version == 0:
        return True
    if not base.tables or any(not info.get(MAX_COMMIT) for info in base.tables.values()):
        return False
    firsts = [window.tally.batches.get(s.batch, {}).get("min_commit") for s in window.stats]
    known = [str(first) for first in firsts if first is not None]
    if not known or len(known) < len(firsts):
        return False
    return min(known) > max(str(info[MAX_COMMIT]) for info in base.tables.values())


@dataclass(frozen=True)
class _Window:
    """The kept per-key window of a run's batches, and what one pass over it found."""

    rows: Any
    tally: Tally
    stats: list[Any]
    bad: dict[str, str]
    bad_rows: bool  # a bad batch had rows in the window
    state_tables: set[str]
    delta_tables: set[str]  # tables whose state the run writes as a delta (current_state)
    small: bool  # tables kept whole (see SMALL_RUN_BYTES)
    filled: bool  # partial rows filled (see PARTIAL_ROWS)


#: A run with at most this much staged input, and at most SMALL_RUN_STATE_ROWS state rows
#: to read, is small: each table's rows stay whole in one task (:mod:`.placement`), so that each
#: output folder gets one file, and the folders are written in parallel. A larger run's big
#: tables are spread by key over as many tasks as their share of the input needs.
SMALL_RUN_BYTES = 64 * 1024 * 1024
SMALL_RUN_STATE_ROWS = 1_000_000
#: A table's manifest entry says so once a run has seen partial rows of it (history tables' or
#: change streams' NEW_VALUES rows, :mod:`.partial_rows`). Filling partial rows adds window columns
#: that copy each key's latest whole row onto every row, so a run fills them only when one of its
#: tables is so marked; a run that finds partial rows it did not fill builds its window again
#: (once per table: then the table is marked).
PARTIAL_ROWS = manifest.PARTIAL_ROWS
#: Settings for the run's own plans: a window in Spark's cache (:func:`.kept.cache`) is kept
#: uncompressed (compressing its wide text columns cost more than the memory saved), the groups
#: join back to the rows through their partitioning by the placement column
#: (grouping.add_grouping), and the batches are read as the staging reader asks.
_RUN_SETTINGS = {"spark.sql.inMemoryColumnarStorage.compressed": "false",
                 "spark.sql.requireAllClusterKeysForCoPartition": "false", **staging_reader.READ_SETTINGS}


#: The engine note of a run that built its window again after a kept block was lost (:mod:`.kept`).
_LOST_NOTE = ("a block of the kept window was lost with its executor: the window was built again in Spark's "
              "cache and written under a new version")


class Run:
    """One execution of the job (see the module docstring for the steps)."""

    def __init__(self, spark: Any, source: BatchSource, warehouse: str, soft_delete: dict[str, str],
                 clock: Callable[[], dt.datetime], *, views: bool = True, compactor: compaction.Compactor | None = None,
                 driver_runs: bool = True) -> None:
        self.spark = spark
        self.driver_runs = driver_runs
        self.with_views = views
        self.compactor = compactor
        self.source = source
        self.fs = open_fs(spark, warehouse)
        self.soft_delete = soft_delete
        self.clock = clock

    @contextlib.contextmanager
    def _phase(self, name: str) -> Any:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.result.phases[name] = round(self.result.phases.get(name, 0.0) + time.perf_counter() - started, 3)

    def execute(self) -> ChangelogResult:
        started = time.perf_counter()
        base = manifest.load(self.fs)
        self.result = result = ChangelogResult(version=base.version)
        with self._phase("list"):
            markers = completeness.read_markers(self.fs)  # before listing: a marker's batches are already staged
            files = self.source.list_new(self._processed(base))
        if files:
            self._process(base, markers, files, result)
        if self.with_views:
            with self._phase("views"):
                views.register_views(self.spark, self.fs.root)
        result.watermarks = {t: info.get("watermark") for t, info in manifest.load(self.fs).tables.items()}
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _processed(self, base: manifest.Manifest) -> set[str]:
        return processed_log.load(self.fs, base)

    def _process(self, base: manifest.Manifest, markers: dict[str, str], files: list[Any],
                 result: ChangelogResult) -> None:
        with collector_paused():  # the driver run's objects are freed before the collector is back
            done = self._on_driver(base, markers, files, result)
        if done:
            return
        result.engine = "spark"
        folders = {contract.split_batch_name(f.uri)[0] for f in files}
        tables = {t for t in base.tables if contract.table_folder(t) in folders}  # the state the run needs
        small = self._small(base, files, tables)
        fill = any(base.tables[t].get(PARTIAL_ROWS) for t in tables)
        with temporary_conf(self.spark, {**_RUN_SETTINGS, **(self._small_run_settings(len(folders)) if small else {})}):
            with self._phase("classify"):
                window = self._classified(base, markers, files, tables, small=small, fill=fill, keep=kept.keep)
            try:
                if window.stats:
                    try:
                        self._write(base, window, result)
                    except Exception as exc:
                        if not kept.lost(exc):
                            raise
                        # A kept block went with its executor. Nothing is committed: the same window
                        # again, in Spark's cache this time (a lost block is computed again), and
                        # the writes anew under a new version (the first is left as an aborted one).
                        kept.release(window.rows)  # (released again by the finally below if the rebuild fails: harmless)
                        result.engine_note = " ".join(filter(None, (result.engine_note, _LOST_NOTE)))
                        with self._phase("classify"):
                            window = self._classified(base, markers, files, tables, small=small, fill=fill,
                                                      keep=kept.cache)
                        self._write(base, window, result)
            finally:
                kept.release(window.rows)
        result.quarantined = self.source.set_aside(self.fs, files, window.bad, self.clock())

    def _classified(self, base: manifest.Manifest, markers: dict[str, str], files: list[Any], tables: set[str], *,
                    small: bool, fill: bool, keep: Callable[[Any], Any]) -> _Window:
        """The window over ``files`` (kept with ``keep``, :mod:`.kept`), checked.

        One parse: the batches are checked on the window's output, which is kept anyway. Only when
        a bad batch had rows (or a batch held a table its folder does not name) is the window built
        again without them, so that they cannot change what the good batches mean.
        """
        window = self._window(base, markers, files, tables, small=small, fill=fill, keep=keep)
        with_state = {t for t in window.tally.tables if base.tables.get(t, {}).get("state_version")}
        unfilled = bool(window.tally.partial_tables) and not window.filled
        if window.stats and (window.bad_rows or not with_state <= window.state_tables or unfilled):
            kept.release(window.rows)
            good = [f for f in files if contract.batch_name(f.uri) not in window.bad]
            rebuilt = self._window(base, markers, good, window.tally.tables, small=small,
                                   fill=window.filled or unfilled, keep=keep)
            window = dataclasses.replace(rebuilt, bad=window.bad)
        return window

    def _on_driver(self, base: manifest.Manifest, markers: dict[str, str], files: list[Any],
                   result: ChangelogResult) -> bool:
        """Do the run with the driver engine (:mod:`.driver`) if it can do it exactly; False: Spark must."""
        if not self.driver_runs or os.environ.get(driver.SWITCH, "").lower() in ("off", "0", "false", "no"):
            return False
        read_rows, warehouse = self.source.driver_rows(), read_with_pyarrow(self.fs)
        if read_rows is None or warehouse is None:
            result.engine_note = "the job reaches the staging folder or the warehouse through Hadoop's filesystem"
            return False
        try:
            with self._phase("classify"):
                prepared = driver_engine.prepare(files, read_rows, warehouse, base, markers, self.soft_delete,
                                                 compacted_apart=self._compacted_apart())
                window = _Window(None, prepared.tally, prepared.stats, {}, False, prepared.delta_tables,
                                 prepared.delta_tables, True, False)
                if not _groups_are_new(base, window):
                    raise driver.Ineligible("transaction groups an earlier run wrote rows of")
        except driver.Ineligible as exc:
            result.engine_note = str(exc)
            return False
        except OSError as exc:  # nothing is written yet: Spark reads the same files its own way
            result.engine_note = f"the driver could not read the run's files ({exc})"
            return False
        result.engine, result.old_values_by = "driver", "driver"
        version, aborted = manifest.claim_version(self.fs, base)
        result.batches_read, result.records_read = len(prepared.stats), sum(s.records for s in prepared.stats)
        with self._phase("write_changelog"):
            prepared.write(warehouse, version)
        with self._phase("commit"):
            self._log_processed(prepared.stats, version)
            self._commit(base, version, aborted, _touched(prepared.stats), prepared.stats, window)
        self._summarize(prepared.tally.counts, 0, result)
        result.version, result.committed = version, True
        return True

    def _compacted_apart(self) -> bool:
        """Whether a compactor merges the state's layers outside this run (:func:`.current_state.rewrite_whole`)."""
        return self.compactor is not None and self.compactor.active()

    def _small_run_settings(self, tables: int) -> dict[str, str]:
        """A small run's few small stages are planned once, with a shuffle partition per core (at
        most one per table, as each table stays whole): adaptive execution would plan again
        between stages, at a cost the work does not repay."""
        partitions = max(1, min(default_parallelism(self.spark), tables))
        return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions)}

    @staticmethod
    def _small(base: manifest.Manifest, files: list[Any], tables: set[str]) -> bool:
        """Whether the run is small (see :data:`SMALL_RUN_BYTES`); ``tables`` are those it may touch."""
        state_rows = sum(current_state.size(base.tables[t]) for t in tables)
        return sum(f.length for f in files) <= SMALL_RUN_BYTES and state_rows <= SMALL_RUN_STATE_ROWS

    def _window(self, base: manifest.Manifest, markers: dict[str, str], files: list[Any],
                tables: set[str], *, small: bool, fill: bool, keep: Callable[[Any], Any]) -> _Window:
        """The per-key window over ``files`` and the state of ``tables`` (kept with ``keep``), with its tally."""
        staged = self.source.read(self.spark, files)
        changes = pipeline.normalize(staged, self.soft_delete)
        state_tables = {t for t in tables if base.tables.get(t, {}).get("state_version")}
        input_bytes = sum(f.length for f in files)
        apart = self._compacted_apart()
        delta_tables = {t for t in state_tables
                        if not current_state.rewrite_whole(base.tables[t], input_bytes, compacted_apart=apart)}
        prune = {t for t in delta_tables if current_state.size(base.tables[t]) <= current_state.SHUFFLE_FILTER_ROWS}
        state = self._state(base, changes, state_tables, delta_tables, delta_tables - prune) if state_tables else None
        function = jvm.old_values_function(self.spark)
        self.result.old_values_by = "jvm" if function else "sql"
        shuffled_state = state_tables - (delta_tables - prune)  # the others' state is cut to the new keys first
        placed = self._placement(base, files, shuffled_state, small=small)
        rows = pipeline.per_key_window(changes, state, markers=markers, prune=prune, placement_sql=placed.sql(),
                                       fill_partial=fill, old_values_function=function)
        rows = keep(rows)
        counted = tally(rows)
        stats, bad = staging_reader.check_batches(counted.batches, files)
        bad_rows = any(not reason.startswith(staging_reader.EMPTY_REASON) for reason in bad.values())
        return _Window(rows, counted, stats, bad, bad_rows, state_tables, delta_tables, small, fill)

    def _placement(self, base: manifest.Manifest, files: list[Any], state_tables: set[str], *,
                   small: bool) -> placement.Placement:
        """Where the window's rows go, by each table's staged bytes and the state rows it shuffles
        (a small run's tables stay whole: one file per folder)."""
        weights = placement.staged_bytes(files, base.tables)
        for table in state_tables:
            weights[table] = weights.get(table, 0) + current_state.size(base.tables[table]) * RECORD_BYTES
        return placement.plan(weights, placement.shuffle_partitions(self.spark), split=not small)

    def _state(self, base: manifest.Manifest, changes: Any, tables: set[str], delta: set[str], by_key: set[str]) -> Any:
        """The state rows of ``tables`` for the window (of the ``delta`` tables only what a delta run
        needs); of the ``by_key`` tables (large states), only the keys the new changes name (those
        few keys are sent to every task of the scan)."""
        from pyspark.sql import functions as F

        layered = current_state.load_layers(self.spark, self.fs, base, sorted(tables), slim=delta)
        if not by_key:
            return layered
        in_delta = F.col("table_name").isin(sorted(by_key))
        keys = changes.where(~F.col("_bad") & in_delta).select("table_name", "keys").distinct()
        touched = layered.where(in_delta).join(F.broadcast(keys), ["table_name", "keys"], "left_semi")
        return layered.where(~in_delta).unionByName(touched)

    def _write(self, base: manifest.Manifest, window: _Window, result: ChangelogResult) -> None:
        version, aborted = manifest.claim_version(self.fs, base)
        rows, stats, counts = window.rows, window.stats, window.tally.counts
        touched = _touched(stats)
        result.batches_read, result.records_read = len(stats), sum(s.records for s in stats)
        new = pipeline.changelog_rows(rows, version)
        late_parts = {(c.table_name, c.commit_date) for c in counts
                      if c.is_late and not c.is_dup and c.table_name and c.commit_date}
        replace_parts = {(c.table_name, c.commit_date) for c in counts if c.replaces and c.table_name and c.commit_date}
        late_known, superseded, resolved = 0, None, None
        if late_parts or replace_parts:
            known = views.read_changelog(self.spark, self.fs, base, self._partitions(sorted(late_parts | replace_parts)))
            candidates = pipeline.changelog_rows(rows, version, where="_replaces") if replace_parts else None
            resolved = supersede.resolve(new, candidates, known.select("change_id", "table_name", "run_version",
                                                                       "server_transaction_id"), version)
            new, late_known, superseded = resolved.rows, resolved.late_known, resolved.superseded
        dates = sorted({c.commit_date for c in counts if not c.is_dup and c.commit_date})
        existing = None if _groups_are_new(base, window) else self._existing_groups(base, dates, new)

        def write_changelog() -> None:
            # The groups' numbering is a job of its own (add_grouping): here, beside the state's write.
            with self._phase("write_changelog"), add_grouping(new.drop("_is_late"), existing) as grouped:
                out = pipeline.records.conform(grouped, pipeline.records.CHANGELOG_FIELDS)
                changelog_files.append(out, self.fs.uri(views.CHANGELOG_DIR))
                if superseded is not None:
                    supersede.write(superseded, self.fs)

        def write_state() -> None:
            with self._phase("write_state"):
                state = pipeline.state_rows(rows, version, tables=touched, delta_tables=window.delta_tables)
                current_state.write(state, self.fs, version, tables=touched, deltas=window.delta_tables & set(touched),
                                    one_file=window.small)

        # Both read the kept window and write files no reader sees before the commit: side by side,
        # a small run's two one-task writes use two cores instead of one after the other.
        side_by_side(self.spark, write_changelog, write_state)
        with self._phase("commit"):
            self._log_processed(stats, version)
            self._commit(base, version, aborted, touched, stats, window)
        self._summarize(counts, late_known, result)
        if resolved is not None:  # a stream row that replaces a polled one was counted as a duplicate
            result.replaced = resolved.late_replacing
            for (table, mod_type), n in resolved.from_duplicates.items():
                result.replaced += n
                result.duplicates_dropped -= n
                result.changes_written += n
                result.tables[table] = result.tables.get(table, 0) + n
                result.mod_types[mod_type] = result.mod_types.get(mod_type, 0) + n
        result.version, result.committed = version, True

    def _partitions(self, parts: list[tuple[str, str]]) -> list[str]:
        dirs: list[str] = []
        for table, date in parts:
            dirs += self.fs.glob_dirs(f"{views.CHANGELOG_DIR}/table_name={table}/commit_date={date}")
        return dirs

    def _existing_groups(self, base: manifest.Manifest, dates: list[str], new: Any) -> Any | None:
        if base.version == 0:
            return None
        dirs: list[str] = []
        for date in dates:
            dirs += self.fs.glob_dirs(f"{views.CHANGELOG_DIR}/table_name=*/commit_date={date}")
        if not dirs:
            return None
        existing = views.read_changelog(self.spark, self.fs, base, dirs).select("transaction_group", "record_sequence")
        return existing.join(new.select("transaction_group").distinct(), "transaction_group", "left_semi")

    def _log_processed(self, stats: list[Any], version: int) -> None:
        processed_log.append(self.fs, version, [(s.batch, s.table, s.records) for s in stats])

    def _commit(self, base: manifest.Manifest, version: int, aborted: list[int], touched: list[str],
                stats: list[Any], window: _Window) -> None:
        tables = {t: dict(info) for t, info in base.tables.items()}
        adopted = self._adopt_merged(tables, {t for t in touched if t not in window.delta_tables})
        aborted = [v for v in aborted if v not in adopted]  # a merged base is committed here, not abandoned
        new_loops = watermarks.loops_from_batches(stats)
        for table in touched:
            whole = table not in window.delta_tables
            rows = (window.tally.state_rows if whole else window.tally.new_state_rows).get(table, 0)
            info = tables[table] = current_state.after_run(tables.get(table, {}), version, whole=whole, rows=rows)
            info["loops"] = watermarks.merge_loops(info.get("loops", {}), new_loops.get(table, {}))
            info["watermark"] = watermarks.table_watermark(info["loops"])
            info[MAX_COMMIT] = max(t for t in (info.get(MAX_COMMIT), _newest_commit(stats, table), "") if t is not None)
            if table in window.tally.partial_tables:
                info[PARTIAL_ROWS] = True
        new = manifest.Manifest(version, aborted=aborted, tables=tables)
        manifest.commit(self.fs, base, new, self.clock())
        current_state.prune(self.fs, new, base, keep=self.compactor.keep() if self.compactor else ())
        processed_log.merge(self.fs, new)
        if self.compactor is not None:
            self.compactor.after_commit(self.spark, self.fs, new)

    def _adopt_merged(self, tables: dict[str, dict[str, Any]], rewritten: set[str]) -> set[int]:
        """Put the compactor's finished merges into ``tables`` (the manifest entries this run commits),
        except for the tables this run rewrites whole; returns the versions adopted."""
        if self.compactor is None:
            return set()
        adopted: set[int] = set()
        merges = self.compactor.take_merged()
        for merged in merges:
            entry = compaction.adopt(tables[merged.table], merged) if (
                merged.table in tables and merged.table not in rewritten) else None
            if entry is not None:
                tables[merged.table] = entry
                adopted.add(merged.version)
        self.compactor.count(adopted=len(adopted), dropped=len(merges) - len(adopted))
        return adopted

    @staticmethod
    def _summarize(counts: list[OutcomeCount], late_known: int, result: ChangelogResult) -> None:
        for c in counts:
            if c.is_dup:
                result.duplicates_dropped += c.count
                continue
            result.changes_written += c.count
            table, mod_type = str(c.table_name), str(c.mod_type)
            result.tables[table] = result.tables.get(table, 0) + c.count
            result.mod_types[mod_type] = result.mod_types.get(mod_type, 0) + c.count
            if c.is_late:
                result.late_changes += c.count
        result.changes_written -= late_known
        result.duplicates_dropped += late_known
