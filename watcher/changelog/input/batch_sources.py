"""Where a changelog run's staged records come from: a staging folder, or a DataFrame of records.

A *batch source* lists the batches a run has not processed yet, reads their records (the staging
fields of :func:`.staging_reader.read_schema` plus ``batch``, the batch's name, and ``_bad``), and
sets bad batches aside. The job (:mod:`..run`) does the rest the same way for both, so a
micro-batch of the streaming source is de-duplicated, classified, grouped, consumed by a run
and committed exactly like staged files.

Example:
    >>> batch_name_sql("t", "b")
    "concat('table=', regexp_replace(t, '[^A-Za-z0-9_]', '_'), '/', b, '.jsonl')"
"""

from __future__ import annotations

import datetime as dt
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from watcher.errors import ChangelogError
from watcher.staging.contract import BATCH_SUFFIX, TABLE_FOLDER_PREFIX, staged_name

from ..io.arrow_fs import read_with_pyarrow
from ..io.files import FileEntry, FileStore, open_fs
from . import staging_reader
from .frame_rows import COLUMNS, frame_rows
from .staged import StagedRow, read_files
from .staging_reader import Quarantined

#: How the driver engine reads a run's batches as change rows (raising ``driver.Ineligible`` on
#: records it cannot hold as Spark would).
RowReader = Callable[[list[FileEntry]], list[StagedRow]]

#: Bytes a record of a DataFrame source is counted as, where its input is weighed
#: and its sizes are not known.
RECORD_BYTES = 512
#: SQL of a record's size as a staged line's: its JSON texts and ~200 bytes of the other fields.
RECORD_SIZE_SQL = ("coalesce(octet_length(`values`), 0) + coalesce(octet_length(`types`), 0) + "
                   "coalesce(octet_length(`keys`), 0) + 200")


def batch_name_sql(table: str, batch_id: str) -> str:
    """SQL giving a record's batch name (:func:`watcher.staging.contract.staged_name`) from two columns."""
    return (f"concat('{TABLE_FOLDER_PREFIX}', regexp_replace({table}, '[^A-Za-z0-9_]', '_'), '/', {batch_id}, "
            f"'{BATCH_SUFFIX}')")


class BatchSource(ABC):
    """The input of one changelog run. Used by one run at a time, from the driver."""

    @abstractmethod
    def list_new(self, processed: set[str]) -> list[FileEntry]:
        """The batches not in ``processed`` (batch names), with their sizes in bytes."""

    @abstractmethod
    def read(self, spark: Any, batches: list[FileEntry]) -> Any:
        """The records of ``batches``: the staging fields, ``batch`` and ``_bad``."""

    @abstractmethod
    def set_aside(self, warehouse: FileStore, batches: list[FileEntry], bad: dict[str, str],
                  now: dt.datetime) -> list[Quarantined]:
        """Deal with the ``bad`` batches (name -> reason) of a finished run."""

    def driver_rows(self) -> RowReader | None:
        """How the driver engine (:mod:`..engines.driver.engine`) reads the batches as change rows; None: Spark alone reads them."""
        return None


class StagingFolder(BatchSource):
    """Batch files under a staging folder (what watchers, backfill and reconcile stage)."""

    def __init__(self, spark: Any, staging: str) -> None:
        self.fs = open_fs(spark, staging)

    def list_new(self, processed: set[str]) -> list[FileEntry]:
        return staging_reader.list_new_batches(self.fs, processed)

    def read(self, spark: Any, batches: list[FileEntry]) -> Any:
        return staging_reader.read_batches(spark, batches, local=self.fs.is_local)

    def set_aside(self, warehouse: FileStore, batches: list[FileEntry], bad: dict[str, str],
                  now: dt.datetime) -> list[Quarantined]:
        return staging_reader.quarantine(self.fs, warehouse, batches, bad, now)

    def driver_rows(self) -> RowReader | None:
        files = read_with_pyarrow(self.fs)
        return None if files is None else functools.partial(read_files, files)


class RecordFrame(BatchSource):
    """Staging records already in a DataFrame (the streaming source's micro-batch), keep it cached.

    ``counts`` ((table, batch_id) -> records) and ``sizes`` ((table, batch_id) -> bytes, of
    :data:`RECORD_SIZE_SQL`), when the caller has them, spare the run a Spark job (without sizes, a
    record counts as :data:`RECORD_BYTES`).

    Its batches are named as files would be (``table=<T>/<batch_id>.jsonl``), so the ledger's
    consumed batches make a micro-batch that Spark runs again after a failure a no-op.
    """

    def __init__(self, frame: Any, counts: Mapping[tuple[str, str], int] | None = None,
                 sizes: Mapping[tuple[str, str], int] | None = None) -> None:
        from pyspark.sql import functions as F

        self.frame = frame.withColumn("batch", F.expr(batch_name_sql("table", "batch_id")))
        self.counts = None if counts is None else dict(counts)
        self.sizes = dict(sizes or {})

    def list_new(self, processed: set[str]) -> list[FileEntry]:
        from pyspark.sql import functions as F

        counts = self.counts
        if counts is None:  # not given: one Spark job counts them
            counts, self.sizes = {}, {}
            for row in self.frame.groupBy("table", "batch_id").agg(
                    F.count(F.lit(1)).alias("n"), F.sum(F.expr(RECORD_SIZE_SQL)).alias("bytes")).collect():
                counts[(row["table"], row["batch_id"])] = row["n"]
                self.sizes[(row["table"], row["batch_id"])] = row["bytes"]
        return [FileEntry(name, self.sizes.get(key, count * RECORD_BYTES), 0) for key, count in counts.items()
                if (name := staged_name(*key)) not in processed]

    def read(self, spark: Any, batches: list[FileEntry]) -> Any:
        from pyspark.sql import functions as F

        return self._of(batches).withColumn("_bad", F.lit(False))

    def driver_rows(self) -> RowReader | None:
        # The frame is cached (the caller's part): bringing a small run's records to the driver is
        # one short job, where Spark's run of them is several.
        def read(batches: list[FileEntry]) -> list[StagedRow]:
            frame = self._of(batches)
            return frame_rows(frame.select(*[c for c in COLUMNS if c in frame.columns]).toArrow())

        return read

    def _of(self, batches: list[FileEntry]) -> Any:
        from pyspark.sql import functions as F

        wanted = {b.uri for b in batches}
        if self.counts is not None and wanted >= {staged_name(*key) for key in self.counts}:
            return self.frame  # all of it (a micro-batch's run): no filter of a literal per batch to build
        return self.frame.where(F.col("batch").isin(sorted(wanted)))

    def set_aside(self, warehouse: FileStore, batches: list[FileEntry], bad: dict[str, str],
                  now: dt.datetime) -> list[Quarantined]:
        if bad:  # nothing to move: the records exist only in this frame
            reasons = "; ".join(f"{name}: {reason}" for name, reason in sorted(bad.items())[:5])
            raise ChangelogError(f"{len(bad)} batch(es) of the input frame are not valid staging records ({reasons})")
        return []
