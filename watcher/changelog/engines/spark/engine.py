"""The Spark engine: a run's rows by the job's pipeline, written to the Delta tables committed as the run.

:meth:`SparkEngine.prepare` builds the per-key window of the run's batches against the current
state of the keys they name (:mod:`.pipeline`: de-duplication, classification, old values,
partial rows, change ids), keeps it in Spark's cache, and checks the batches with one
aggregation over it (:mod:`.tally`); a bad batch's rows are left out by building the window
again without them. The tables' parts (:class:`SparkRun`):

- ``changelog``: the new, non-duplicate changes with their transaction groups (:mod:`...rules.grouping`,
  continuing groups earlier runs wrote), appended with ``txnAppId``/``txnVersion``. A late change
  whose version the changelog holds already is dropped; a change stream's row of a version an
  earlier run wrote from a poll *replaces* that row (:mod:`...rules.supersede`): then the part is a MERGE
  on the change id instead, which updates the polled row to the stream's and inserts the others.
- ``current_state``: each touched key's newest row, when it is new, MERGEd on (source, table,
  keys) under the run's session settings; appended with ``txnAppId``/``txnVersion`` instead when
  the table holds no row of the run's tables yet (a first run: every row is an insert). A deleted
  key keeps its row with ``is_deleted`` set (a tombstone: a later, late change of the key must
  still see the delete); the views hide it.
- ``watermarks``: :mod:`...tables.watermark_table` (delta-rs, on the driver).

A part whose write left no commit (nothing to merge) gets an empty commit as the run, so that
every table holds every run (:meth:`...tables.ledger.Ledger.held_version`).

Example:
    >>> partitions_sql({("T", "2024-05-01")})
    "(table_name = 'T' AND commit_date = DATE'2024-05-01')"
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from typing import Any

from ...input import staging_reader
from ...input.batch_sources import BatchSource
from ...rules import records, supersede
from ...rules.grouping import add_grouping
from ...spark.jvm import registry as jvm
from ...spark.session import started, temporary_conf
from ...tables import frames, layout, watermark_table
from ...tables.ledger import Ledger, Run
from ...tables.source import COLUMNS as SOURCE_COLUMNS
from ...tables.source import Source, sql_text
from ..base import Engine, Outcome, PreparedRun, all_newer, hold
from . import kept, pipeline
from .tally import tally

#: Settings for the run's own plans: the window in Spark's cache is kept uncompressed (its wide
#: text columns cost more to compress than the memory saved), the groups join back to the rows
#: through their partitioning (grouping.add_grouping), and the batches are read as the staging
#: reader asks.
RUN_SETTINGS = {"spark.sql.inMemoryColumnarStorage.compressed": "false",
                "spark.sql.requireAllClusterKeysForCoPartition": "false", **staging_reader.READ_SETTINGS}


def partitions_sql(parts: Iterable[tuple[str, str]], prefix: str = "") -> str:
    """SQL: the changelog rows of the (table, commit date) partitions ``parts`` (columns prefixed with ``prefix``)."""
    return " OR ".join(f"({prefix}table_name = {sql_text(t)} AND {prefix}commit_date = DATE'{d}')"
                       for t, d in sorted(parts)) or "FALSE"


class SparkEngine(Engine):
    """Runs on a Spark session over a batch source, into the ledger's warehouse, as rows of ``origin``."""

    name = "spark"

    def __init__(self, spark: Any, source: BatchSource, ledger: Ledger, *, soft_delete: dict[str, str],
                 origin: Source, markers: dict[str, str]) -> None:
        self._spark, self.source, self.ledger = spark, source, ledger
        self.soft_delete, self.origin, self.markers = soft_delete, origin, markers

    @property
    def spark(self) -> Any:
        """The session (started now, when it was deferred: :class:`...spark.session.DeferredSession`)."""
        return started(self._spark)

    def prepare(self, run: Run, batches: list[Any]) -> SparkRun:
        return SparkRun(self, run, batches)


class SparkRun(PreparedRun):
    """One run's kept window and the writes of its parts (see the module docstring)."""

    def __init__(self, engine: SparkEngine, run: Run, files: list[Any]) -> None:
        self.engine, self.run, self.spark = engine, run, engine.spark
        self.outcome = Outcome()
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(temporary_conf(self.spark, RUN_SETTINGS))
        self.rows: Any = None
        try:
            self._classify(files)
        except BaseException:
            self.close()
            raise

    # -- the window ---------------------------------------------------------------------------
    def _classify(self, files: list[Any]) -> None:
        """The window over ``files``, checked; built again without the bad batches that had rows."""
        self._window(files)
        stats, bad = staging_reader.check_batches(self.tally.batches, files)
        bad_rows = any(not reason.startswith(staging_reader.EMPTY_REASON) for reason in bad.values())
        if bad_rows:  # also when every batch was bad: the window is then over no batch
            kept.release(self.rows)
            self._window([f for f in files if staging_reader.batch_name(f.uri) not in bad])
            stats, _ = staging_reader.check_batches(self.tally.batches,
                                                    [f for f in files if staging_reader.batch_name(f.uri) not in bad])
        self.outcome.batches, self.outcome.bad, self.outcome.counts = stats, bad, self.tally.counts

    def _window(self, files: list[Any]) -> None:
        changes = pipeline.normalize(self.engine.source.read(self.spark, files), self.engine.soft_delete)
        function = jvm.old_values_function(self.spark)
        self.outcome.old_values_by = "jvm" if function else "sql"
        rows = pipeline.per_key_window(changes, self._state(changes), markers=self.engine.markers,
                                       old_values_function=function)
        self.rows = kept.cache(rows)
        self.tally = tally(self.rows)

    def _state(self, changes: Any) -> Any | None:
        """The state rows of the keys the new changes name, as the table held them before the run (by time
        travel when a crashed attempt merged the run already; None: no state yet)."""
        ledger, name = self.engine.ledger, layout.CURRENT_STATE.name
        before = ledger.version_before(name, self.run)
        if before is None and ledger.held_version(name) == 0:
            return None
        state = frames.read(self.spark, ledger.warehouse, name, source=self.engine.origin,
                            version=before).drop(*SOURCE_COLUMNS)
        keys = changes.where("NOT _bad").select("table_name", "keys").distinct()
        return state.join(keys, ["table_name", "keys"], "left_semi")

    @property
    def touched(self) -> list[str]:
        """The tables the run's good batches hold."""
        return sorted({s.table for s in self.outcome.batches if s.table})

    # -- the parts ----------------------------------------------------------------------------
    def write(self, table: str) -> None:
        {layout.CHANGELOG.name: self._write_changelog, layout.CURRENT_STATE.name: self._write_state,
         layout.WATERMARKS.name: self._write_watermarks}[table]()
        hold(self.engine.ledger, self.run, table)

    def _earlier(self, where: str) -> Any:
        """Changelog rows of the source that earlier runs wrote, of the partitions ``where`` names."""
        frame = frames.delta_frame(self.spark, self.engine.ledger.warehouse, layout.CHANGELOG.name,
                                   source=self.engine.origin)
        return frame.where(f"({where}) AND run_version < {self.run.version}")

    def _write_changelog(self) -> None:
        counts, version = self.outcome.counts, self.run.version
        new = pipeline.changelog_rows(self.rows, version)
        late = {(c.table_name, c.commit_date) for c in counts if c.is_late and not c.is_dup and c.table_name and c.commit_date}
        replace = {(c.table_name, c.commit_date) for c in counts if c.replaces and c.table_name and c.commit_date}
        merge = False
        if (late or replace) and self.engine.ledger.held_version(layout.CHANGELOG.name) > 0:
            known = frames.from_delta(self._earlier(partitions_sql(late | replace)), records.CHANGELOG_FIELDS)
            candidates = pipeline.changelog_rows(self.rows, version, where="_replaces") if replace else None
            resolved = supersede.resolve(new, candidates, known.select("change_id", "table_name", "run_version",
                                                                       "server_transaction_id"))
            new, self.outcome.late_known = resolved.rows, resolved.late_known
            self.outcome.replaced_late, self.outcome.replaced_duplicates = resolved.late_replacing, resolved.from_duplicates
            merge = bool(resolved.late_replacing or resolved.from_duplicates)
        dates = sorted({c.commit_date for c in counts if not c.is_dup and c.commit_date})
        with add_grouping(new.drop("_is_late"), self._existing_groups(dates, new)) as grouped:
            out = frames.to_delta(records.conform(grouped, records.CHANGELOG_FIELDS), layout.CHANGELOG, self.engine.origin)
            if merge:
                same = " AND ".join(f"t.{c} = s.{c}" for c in SOURCE_COLUMNS)
                self._merge(layout.CHANGELOG, out,
                            f"{supersede.REPLACES_SQL} AND {same} AND ({partitions_sql(late | replace, 't.')})")
            else:
                (out.write.format("delta").mode("append").options(**self.engine.ledger.writer_options(self.run))
                 .save(self.engine.ledger.uri(layout.CHANGELOG.name)))

    def _existing_groups(self, dates: list[str], new: Any) -> Any | None:
        """The committed rows of earlier runs that may share the new rows' transaction groups (None: none can:
        also when every new row is newer than every committed one, as a streaming micro-batch's after the one before)."""
        if not dates or self.engine.ledger.held_version(layout.CHANGELOG.name) == 0 or all_newer(self.engine.ledger, [b.get("min_commit") for b in self.tally.batches.values()]):
            return None
        where = f"commit_date IN ({', '.join(f'DATE{sql_text(d)}' for d in dates)})"
        existing = self._earlier(where).select("transaction_group", "record_sequence")
        return existing.join(new.select("transaction_group").distinct(), "transaction_group", "left_semi")

    def _write_state(self) -> None:
        touched = self.touched
        if not touched:
            return
        state = pipeline.state_rows(self.rows, self.run.version, tables=touched, delta_tables=touched)
        out = frames.to_delta(records.conform(state, records.STATE_FIELDS), layout.CURRENT_STATE, self.engine.origin)
        ledger = self.engine.ledger
        if not frames.state_tables(ledger.warehouse, ledger.storage_options) & set(touched):
            # No state of these tables yet (a first run): every row is an insert, which an append
            # writes without joining the table; its change data feed shows the inserts a MERGE's would.
            (out.write.format("delta").mode("append").options(**ledger.writer_options(self.run))
             .save(ledger.uri(layout.CURRENT_STATE.name)))
            return
        keys = " AND ".join(f"t.{c} = s.{c}" for c in (*SOURCE_COLUMNS, "table_name", "keys"))
        among = ", ".join(sql_text(t) for t in touched)
        self._merge(layout.CURRENT_STATE, out, f"{keys} AND t.table_name IN ({among})")

    def _merge(self, spec: layout.TableSpec, rows: Any, on: str) -> None:
        """MERGE ``rows`` into ``spec``'s table on ``on`` (matched: updated to the new row; else inserted), as the run."""
        view = f"spanner_watcher_run_{uuid.uuid4().hex}"
        names = [f"`{name}`" for name, _, _ in spec.fields]
        rows.createOrReplaceTempView(view)
        try:
            with temporary_conf(self.spark, self.engine.ledger.sql_settings(self.run)):
                self.spark.sql(
                    f"MERGE INTO delta.`{self.engine.ledger.uri(spec.name)}` t USING {view} s ON {on} "
                    f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{n} = s.{n}' for n in names)} "
                    f"WHEN NOT MATCHED THEN INSERT ({', '.join(names)}) VALUES ({', '.join(f's.{n}' for n in names)})")
        finally:
            self.spark.catalog.dropTempView(view)

    def _write_watermarks(self) -> None:
        watermark_table.write_run(self.engine.ledger, self.run, self.engine.origin, self.outcome.batches,
                                  self.engine.markers)

    def close(self) -> None:
        kept.release(self.rows)
        self.rows = None
        self._stack.close()
