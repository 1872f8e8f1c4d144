"""The changelog job: staged batches in, the warehouse's Delta tables out.

Build it, then run it::

    from watcher.changelog import Changelog
    result = (Changelog(spark)
              .staging("/data/staging")              # where StagingSink writes
              .warehouse("/data/warehouse")          # runs/, changelog/, current_state/, watermarks/, _quarantine/
              .source("my-project", "my-instance", "my-database")   # the watched database the rows are of
              .soft_delete_column("Singers", "Deleted")
              .run())
    spark.sql("SELECT table_name, mod_type, keys FROM changelog ORDER BY commit_timestamp").show()

A run reads only the staged batches no run consumed (the ``runs`` table, :mod:`.tables.ledger`),
reads the current state of the keys they name only, appends their changes to ``changelog``,
MERGEs their keys' newest rows into ``current_state`` and writes ``watermarks`` last, each a
Delta commit made once as the run (:mod:`.run`, :mod:`.engines`). It is idempotent: a second run
over the same input writes nothing, a batch staged twice yields each change once, and a run
killed at any point is finished by the next. Bad batch files are moved to ``_quarantine`` with a
report, and the rest is processed.

From the command line: ``spanner-watcher changelog --staging DIR --warehouse DIR``, or on a
cluster ``spark-submit watcher/changelog/job.py --staging DIR --warehouse DIR`` (the job
runs only Spark SQL on executors; the driver needs this package, e.g. ``--py-files``).
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and not __package__:  # spark-submit watcher/changelog/job.py: import as a package
    import importlib
    import pathlib

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    sys.exit(importlib.import_module("watcher.changelog.job").main())

import datetime as dt
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError
from ..sqlnames import quote_identifier
from .input.batch_sources import RecordFrame, StagingFolder
from .run import ChangelogResult, Run
from .tables.compaction import DEFAULT_MIN_FILES, DEFAULT_TARGET_SIZE, CompactionPolicy
from .tables.source import DEFAULT_SOURCE, Source

#: The environment variable naming the default engine (see :meth:`Changelog.engine`).
ENGINE_VARIABLE = "SPANNER_WATCHER_ENGINE"

__all__ = ["Changelog", "ChangelogResult", "main"]


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Changelog:
    """Builder of one changelog run over a staging folder into a warehouse folder.

    Args:
        spark: the SparkSession to run on.
    """

    #: The engines :meth:`engine` takes.
    ENGINES = ("auto", "spark", "driver")

    def __init__(self, spark: Any) -> None:
        from .spark.session import DeferredSession

        if spark is None or not (isinstance(spark, DeferredSession) or hasattr(spark, "read")):
            raise ConfigurationError(f"spark must be a SparkSession, got {type(spark).__name__}")
        self._spark = spark
        self._staging: str | None = None
        self._warehouse: str | None = None
        self._soft_delete: dict[str, str] = {}
        self._clock: Callable[[], dt.datetime] = _utcnow
        self._views = True
        self._source = DEFAULT_SOURCE
        self._engine = _engine_name(os.environ.get(ENGINE_VARIABLE) or "auto")
        self._compaction = CompactionPolicy()

    def staging(self, path: str) -> Changelog:
        """The staging folder (``<path>/table=<T>/<batch>.jsonl``: :mod:`watcher.staging.contract`)."""
        self._staging = _path_arg("staging", path)
        return self

    def warehouse(self, path: str) -> Changelog:
        """The output folder (created when missing); a relative path is taken under the working folder
        (Delta's catalog reads a ``delta.`<folder>``` name as a path only when it is absolute)."""
        from ..storage_urls import parse

        text = _path_arg("warehouse", path)
        self._warehouse = parse(text).local or text
        return self

    def source(self, project: str, instance: str, database: str) -> Changelog:
        """The watched database the staged batches are of (its rows carry the names, so that several
        databases share a warehouse); by default the embedded default's (:data:`.tables.source.DEFAULT_SOURCE`)."""
        self._source = Source(project, instance, database)  # raises ConfigurationError naming an empty part
        return self

    def soft_delete_column(self, table: str, column: str) -> Changelog:
        """Rows of ``table`` whose ``column`` is set (and not false) are deletions."""
        for name, value in (("table", table), ("column", column)):
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"soft_delete_column: {name} must be a non-empty name, got {value!r}")
            quote_identifier(value)  # raises InvalidIdentifierError naming it
        self._soft_delete[table] = column
        return self

    def clock(self, now: Callable[[], dt.datetime]) -> Changelog:
        """The time source for reports and the runs' start times (tests drive it)."""
        self._clock = now
        return self

    def views(self, register: bool) -> Changelog:
        """Whether the run registers the warehouse's views in its session afterwards (the default).

        A streaming query's ``foreachBatch`` runs in a session of its own (Spark clones the
        user's), where views would only cost time: the streaming writer turns them off.
        """
        self._views = bool(register)
        return self

    def engine(self, name: str) -> Changelog:
        """Which engine computes the runs (:mod:`.engines`): ``"auto"`` (the default: the driver engine
        for a small run it can do exactly, else Spark's), ``"spark"`` (always Spark's) or ``"driver"``
        (the driver's, failing a run it cannot do). ``SPANNER_WATCHER_ENGINE`` sets the default.

        >>> Changelog.ENGINES
        ('auto', 'spark', 'driver')
        """
        self._engine = _engine_name(name)
        return self

    def compaction(self, min_files: int = DEFAULT_MIN_FILES, target_size: int = DEFAULT_TARGET_SIZE) -> Changelog:
        """After a run, compact a table once one of its partitions holds ``min_files`` files under
        ``target_size`` bytes (:mod:`.tables.compaction`; on by default, ``min_files=0`` turns it off).

        >>> CompactionPolicy().min_files, CompactionPolicy(min_files=0).active   # the default; what 0 asks for
        (256, False)
        """
        self._compaction = CompactionPolicy(min_files, target_size).check()
        return self

    def driver_runs(self, allowed: bool) -> Changelog:
        """``engine("auto")`` when ``allowed``, else ``engine("spark")`` (older callers' spelling)."""
        return self.engine("auto" if allowed else "spark")

    def run(self) -> ChangelogResult:
        """Process the new batches; returns what was done."""
        if self._staging is None:
            raise ConfigurationError("staging is not set: call .staging(path) before .run()")
        if self._warehouse is None:
            raise ConfigurationError("warehouse is not set: call .warehouse(path) before .run()")
        return Run(self._spark, StagingFolder(self._spark, self._staging), self._warehouse, dict(self._soft_delete),
                   self._clock, origin=self._source, views=self._views, engine=self._engine,
                   compact=self._compaction).execute()

    def run_records(self, records: Any, *, batch_counts: Mapping[tuple[str, str], int] | None = None,
                    batch_sizes: Mapping[tuple[str, str], int] | None = None,
                    identity: str | None = None) -> ChangelogResult:
        """Process staging records given as a DataFrame instead of a staging folder.

        ``records`` has the staging fields (:func:`.input.staging_reader.read_schema`), e.g. a micro-batch
        of the ``spanner_watcher`` streaming source (:mod:`watcher.changelog.streaming`). Its batches
        (table, batch_id) are consumed by the run like files, so running the same records again
        writes nothing; ``identity`` (a streaming micro-batch's query and batch id) is consumed too,
        so the same identity is never run twice. Cache ``records`` first: it is read more than once.
        ``batch_counts`` ((table, batch_id) -> records) with ``batch_sizes`` (-> bytes, of
        :data:`.input.batch_sources.RECORD_SIZE_SQL`), when the caller counted them anyway, spare a Spark job.
        """
        if self._warehouse is None:
            raise ConfigurationError("warehouse is not set: call .warehouse(path) before .run_records()")
        if records is None or not hasattr(records, "columns"):
            raise ConfigurationError(f"records must be a DataFrame, got {type(records).__name__}")
        if identity is not None and (not isinstance(identity, str) or not identity):
            raise ConfigurationError(f"identity must be a non-empty text, got {identity!r}")
        return Run(self._spark, RecordFrame(records, batch_counts, batch_sizes), self._warehouse, dict(self._soft_delete),
                   self._clock, origin=self._source, views=self._views, identity=identity,
                   engine=self._engine, compact=self._compaction).execute()


def _engine_name(name: str) -> str:
    if name not in Changelog.ENGINES:
        raise ConfigurationError(f"changelog engine must be one of {', '.join(Changelog.ENGINES)}, got {name!r} "
                                 f"(from .engine() or {ENGINE_VARIABLE})")
    return name


def _path_arg(name: str, path: Any) -> str:
    if not isinstance(path, str) and not hasattr(path, "__fspath__"):
        raise ConfigurationError(f"{name} must be a path, got {type(path).__name__}")
    text = str(path)
    if not text.strip():
        raise ConfigurationError(f"{name} must be a non-empty path")
    return text


def main(argv: list[str] | None = None) -> int:
    """``spark-submit watcher/changelog/job.py --staging DIR --warehouse DIR [--soft-delete T=COL ...] [--compact-files N]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="changelog job", description="Build the changelog from staged batches.")
    parser.add_argument("--staging", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--soft-delete", action="append", default=[], metavar="TABLE=COLUMN")
    parser.add_argument("--source", nargs=3, metavar=("PROJECT", "INSTANCE", "DATABASE"), default=None)
    parser.add_argument("--compact-files", type=int, default=DEFAULT_MIN_FILES, metavar="N",
                        help="compact a table once a partition holds N small files (0: never)")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("spanner-watcher changelog").getOrCreate()
    job = Changelog(spark).staging(args.staging).warehouse(args.warehouse).compaction(args.compact_files)
    if args.source:
        job.source(*args.source)
    for item in args.soft_delete:
        table, _, column = item.partition("=")
        job.soft_delete_column(table, column)
    result = job.run()
    print(json.dumps(result.summary(), indent=1, default=str))
    return 3 if result.quarantined else 0
