"""One execution of the changelog job: finish the run a crash left open, then do a run over the new batches.

:class:`.job.Changelog` builds it and :class:`Run` executes it, with the warehouse's ledger
(:mod:`.tables.ledger`) and an engine (:mod:`.engines`) alone:

1. the ledger's open run, if a crash left one, is finished: the engine prepares it from the
   batches its ``runs`` row names, and writes the tables that do not hold it yet, in order;
2. the batches no run consumed are listed, the ledger begins a run with them (its ``runs``
   commit), and the engine writes ``changelog``, ``current_state`` and ``watermarks``, each
   committed once as the run (:mod:`.engines.base`);
3. bad batches are set aside (:mod:`.input.staging_reader`: moved to ``_quarantine`` with a report),
   tables crowded with small files are compacted (:mod:`.tables.compaction`), and the views are
   registered (:mod:`.views`).

A reader of the Delta tables sees a run's changelog rows before its state and watermarks; the
``watermarks`` table says up to where both are complete. A small run is the driver engine's when it
can do it exactly (:mod:`.engines.driver.engine`), every other Spark's (:mod:`.engines.spark.engine`).

Example:
    >>> ChangelogResult(version=3).summary()["quarantined"]
    []
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChangelogError
from . import views
from .engines.base import Engine, Outcome, PreparedRun
from .engines.driver.engine import DriverEngine
from .engines.spark.engine import SparkEngine
from .input import Ineligible, staging_reader
from .input.batch_sources import BatchSource
from .input.staging_reader import Quarantined
from .io.files import open_fs
from .rules import completeness
from .spark.session import started as started_session
from .tables import compaction, layout, watermark_table
from .tables.convert import refuse_old_layout
from .tables.ledger import Ledger
from .tables.ledger import Run as LedgerRun
from .tables.source import Source


@dataclass
class ChangelogResult:
    """What a run did. ``version`` is the newest complete run the warehouse holds afterwards."""

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
    #: How updates' old values were computed: "jvm" (the package's JVM function, :mod:`.spark.jvm`),
    #: "sql" (its SQL path: no JDK to build the function, or turned off) or "python" (the driver
    #: engine's, :mod:`.engines.driver.engine`); the same values each way.
    old_values_by: str = ""
    #: The engine that did the run ("driver" or "spark"), and a note on the run (a crashed run it
    #: finished, why the driver engine declined it).
    engine: str = ""
    engine_note: str = ""
    #: When (by the job's clock) the last run's changelog part committed: its rows are visible from
    #: then on, before the state and watermarks commit. None when no run wrote the changelog here.
    changelog_visible_at: dt.datetime | None = None
    #: Table -> small files rewritten by the compaction after the run (:mod:`.tables.compaction`).
    compacted: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["quarantined"] = [q.__dict__ for q in self.quarantined]
        return out


class Run:
    """One execution of the job (see the module docstring for the steps).

    ``identity``: a name the run consumes besides its batches (a streaming micro-batch's), so that
    the same identity is never run twice.
    """

    def __init__(self, spark: Any, source: BatchSource, warehouse: str, soft_delete: dict[str, str],
                 clock: Callable[[], dt.datetime], *, origin: Source, views: bool = True,
                 identity: str | None = None, engine: str = "auto",
                 compact: compaction.CompactionPolicy = compaction.DEFAULT) -> None:
        self.spark, self.source, self.soft_delete, self.clock = spark, source, soft_delete, clock
        self.origin, self.with_views, self.identity, self.engine_choice = origin, views, identity, engine
        self.compaction = compact.check()
        self.warehouse = warehouse
        self.fs = open_fs(spark, warehouse)
        self.ledger = Ledger(warehouse)

    @contextlib.contextmanager
    def _phase(self, name: str) -> Any:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.result.phases[name] = round(self.result.phases.get(name, 0.0) + time.perf_counter() - started, 3)

    def execute(self) -> ChangelogResult:
        started = time.perf_counter()
        ledger = self.ledger
        self.result = result = ChangelogResult(version=0)
        with self._phase("list"):
            refuse_old_layout(self.warehouse)  # Delta tables over the old layout's folders would mix both
            ledger.create_tables()
            markers = completeness.read_markers(self.fs)  # before listing: a marker's batches are already staged
            left = ledger.open_run()
        engines = self._engines(markers)
        if left is not None:
            result.engine_note = f"finished run {left.version}, which an earlier attempt left open"
            self._do(engines, left, self._files_of(left))
        with self._phase("list"):
            consumed = ledger.consumed_batches()
            files = [] if self.identity in consumed else self.source.list_new(set(consumed))
        if files:
            names = [staging_reader.batch_name(f.uri) for f in files] + ([self.identity] if self.identity else [])
            self._do(engines, ledger.begin(names, now=self.clock()), files)
        if result.committed and self.compaction.active:
            with self._phase("compact"):  # after the watermarks: the run's rows are visible and complete
                result.compacted = compaction.compact(ledger, self.compaction)
        if self.with_views:
            with self._phase("views"):
                views.register_views(started_session(self.spark), self.warehouse)
        result.version = ledger.held_version("watermarks")
        result.watermarks = {r["table_name"]: watermark_table.text_of(r["watermark"], r["watermark_nanos"])
                             if r["watermark"] else None for r in watermark_table.read_rows(ledger, self.origin)}
        result.seconds = round(time.perf_counter() - started, 3)
        return result

    def _files_of(self, run: LedgerRun) -> list[Any]:
        """The batches of ``run`` as the source lists them; a batch it cannot find is an error."""
        wanted = set(run.batches) - {self.identity}
        found = [f for f in self.source.list_new(set()) if staging_reader.batch_name(f.uri) in wanted]
        missing = wanted - {staging_reader.batch_name(f.uri) for f in found}
        if missing:
            raise ChangelogError(f"warehouse {self.ledger.warehouse}: run {run.version} is not complete and "
                                 f"{len(missing)} of its batches are not in the input ({', '.join(sorted(missing)[:5])}): "
                                 "run the job again over the input it began with (the staging folder, or the same "
                                 "micro-batch) to finish it")
        return found

    def _engines(self, markers: dict[str, str]) -> list[Engine]:
        """The engines to try, in order: the driver's for a small run (unless Spark's is asked for), then Spark's."""
        common: dict[str, Any] = {"soft_delete": self.soft_delete, "origin": self.origin, "markers": markers}
        chosen: list[Engine] = []
        if self.engine_choice in ("auto", "driver"):
            chosen.append(DriverEngine(self.source, self.ledger, **common))
        if self.engine_choice in ("auto", "spark"):
            chosen.append(SparkEngine(self.spark, self.source, self.ledger, **common))
        return chosen

    def _prepare(self, engines: list[Engine], run: LedgerRun, files: list[Any]) -> PreparedRun:
        """The run prepared by the first engine that takes it (the driver's declines with a reason, :mod:`.engines.driver.engine`)."""
        for engine in engines[:-1]:
            try:
                prepared = engine.prepare(run, files)
            except Ineligible as why:
                self.result.engine_note = _joined(self.result.engine_note, f"{engine.name} engine declined: {why}")
                continue
            self.result.engine = engine.name
            return prepared
        try:
            prepared = engines[-1].prepare(run, files)
        except Ineligible as why:  # the driver's alone was asked for
            raise ChangelogError(f"warehouse {self.warehouse}: run {run.version}: the {engines[-1].name} engine "
                                 f"cannot do it: {why}; use engine auto or spark") from why
        self.result.engine = engines[-1].name
        return prepared

    def _do(self, engines: list[Engine], run: LedgerRun, files: list[Any]) -> None:
        """Write ``run``'s pending tables with the first engine that takes it (see :mod:`.engines.base`),
        then set its bad batches aside."""
        result = self.result
        result.engine = engines[-1].name
        if not files:  # nothing readable (an identity alone): the run holds no rows
            for table in run.pending():
                self.ledger.commit_empty(run, table)
            result.committed = True
            return
        with self._phase("classify"):
            prepared = self._prepare(engines, run, files)
        with prepared:
            for table in run.pending():
                with self._phase(f"write_{table}"):
                    prepared.write(table)
                if table == layout.CHANGELOG.name:
                    result.changelog_visible_at = self.clock()
        outcome = prepared.outcome
        self._summarize(outcome)
        result.quarantined += self.source.set_aside(self.fs, files, outcome.bad, self.clock())
        result.committed = True

    def _summarize(self, outcome: Outcome) -> None:
        result = self.result
        result.old_values_by = outcome.old_values_by
        result.batches_read += len(outcome.batches)
        result.records_read += sum(s.records for s in outcome.batches)
        for c in outcome.counts:
            if c.is_dup:
                result.duplicates_dropped += c.count
                continue
            _add(result, str(c.table_name), str(c.mod_type), c.count)
            if c.is_late:
                result.late_changes += c.count
        result.changes_written -= outcome.late_known
        result.duplicates_dropped += outcome.late_known
        result.replaced += outcome.replaced_late
        for (table, mod_type), n in outcome.replaced_duplicates.items():  # counted as duplicates by the tally
            result.replaced += n
            result.duplicates_dropped -= n
            _add(result, table, mod_type, n)


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


def _add(result: ChangelogResult, table: str, mod_type: str, n: int) -> None:
    result.changes_written += n
    result.tables[table] = result.tables.get(table, 0) + n
    result.mod_types[mod_type] = result.mod_types.get(mod_type, 0) + n
