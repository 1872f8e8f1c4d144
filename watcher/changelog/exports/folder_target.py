"""An incremental export into a folder: one folder per increment, then the progress file; each row once.

The folder of a ``bigquery`` or ``datastream`` export::

    <out>/_export_progress.json          what the folder holds (:mod:`.progress`; format version 1)
    <out>/increment=000001/_increment.json
    <out>/increment=000001/source_project=P/source_instance=I/source_database=D/table_name=T/part-*.txt
    <out>/increment=000002/...            the runs after increment 1's, up to the newest at its export
    <out>/_pending/                       an increment being written (names starting with _ are hidden
                                          from Spark's, BigQuery's and most readers)

An export takes the changelog's runs after the last one recorded (:mod:`.rows`), so a change that
reaches the changelog in a later run is exported once, in a later increment, however old its
commit timestamp; an export with no new run writes nothing. Its steps, in order (:meth:`FolderExport.run`):

1. :meth:`~FolderExport.plan`: read the progress, finish what a crashed export left, pin the
   changelog's newest Delta version and take the runs after the recorded one (None: none);
2. :meth:`~FolderExport.write`: Spark writes the increment's lines into ``_pending/increment=N``
   (replacing a crashed attempt's), then its ``_increment.json``;
3. :meth:`~FolderExport.publish`: ``_pending/increment=N`` becomes ``increment=N`` (one rename on a
   local disk or HDFS);
4. :meth:`~FolderExport.record`: the progress file, rewritten whole (temp file, rename), names it.

A crash before 3 leaves nothing a reader sees (the next export writes the increment again); a crash
between 3 and 4 leaves a complete ``increment=N`` that the next export records as it is (when its
``_increment.json`` and all its files are there; a partial copy on an object store is written again).
So every row is in exactly one increment folder. What can repeat is a consumer's own load of a
folder: BigQuery's upserts are idempotent by ``_CHANGE_SEQUENCE_NUMBER``, Datastream events
de-duplicate by ``uuid`` (the change id) with ``source_metadata.database``. One export at a time per folder.

Example:
    >>> FolderExport.pending_folder(Increment(2, 3, 5, 9))
    '_pending/increment=000002'
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any

from ...errors import WatcherError
from ..io.files import FileStore, open_fs
from ..io.fs import NO_CHECKSUMS
from . import errors
from .delta_columns import SOURCE_COLUMNS
from .progress import FORMAT_VERSION, Increment, Progress, read_versioned
from .rows import Snapshot, increment, snapshot
from .selection import Selection

PROGRESS_FILE = "_export_progress.json"
INCREMENT_FILE = "_increment.json"
PENDING = "_pending"
#: The folder formats: module, and the options its ``lines`` takes.
FORMATS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bigquery": ("watcher.changelog.exports.bigquery", ()),
    "datastream": ("watcher.changelog.exports.datastream", ("stream_name",)),
}
#: Folder levels between an increment's folder and its files: the source columns, then the table.
_DEPTH = len(SOURCE_COLUMNS) + 1


@dataclass(frozen=True)
class Plan:
    """One export's work: the progress before it, the pinned snapshot, and the increment to write
    (None when the new runs hold no selected row: then only the progress moves)."""

    progress: Progress
    snapshot: Snapshot
    increment: Increment | None


@dataclass(frozen=True)
class Outcome:
    """What an export did: the progress after it, the increment it wrote (None: none), and whether
    it recorded one a crashed export had published."""

    progress: Progress
    written: Increment | None
    adopted: Increment | None = None


class FolderExport:
    """The export of a warehouse's changelog (``selection`` of it) into the folder ``out`` in ``format_name``."""

    def __init__(self, spark: Any, warehouse: str, out: str, format_name: str, selection: Selection | None = None, *,
                 options: dict[str, Any] | None = None, storage_options: dict[str, str] | None = None) -> None:
        if format_name not in FORMATS:
            raise errors.bad_option("format", format_name, f"one of {', '.join(sorted(FORMATS))}")
        module, allowed = FORMATS[format_name]
        options = {k: v for k, v in (options or {}).items() if v is not None}
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise errors.bad_option(unknown[0], options[unknown[0]], f"an option of another format ({format_name} "
                                    f"takes {', '.join(allowed) or 'none'})")
        self.spark, self.warehouse, self.out = spark, str(warehouse).rstrip("/"), str(out).rstrip("/")
        self.format, self.selection = format_name, selection or Selection()
        self._module, self._options, self._storage = importlib.import_module(module), options, storage_options
        self._fs: FileStore = open_fs(spark, self.out)

    @staticmethod
    def pending_folder(inc: Increment) -> str:
        return f"{PENDING}/{inc.folder}"

    def _where(self) -> str:
        return f"{self.out}/{PROGRESS_FILE}"

    def progress(self, snap: Snapshot) -> Progress:
        """The recorded progress (a fresh one when the folder holds none), checked against this export."""
        if not self._fs.exists(PROGRESS_FILE):
            foreign = [n for n in self._fs.list_names("") if not n.startswith((PENDING, "increment=", "."))]
            if foreign:
                raise errors.not_an_export_folder(self.out, foreign)
            return Progress.start(self.format, self.selection, snap.table_id)
        recorded = Progress.from_json(self._fs.read_text(PROGRESS_FILE), self._where())
        recorded.check(self.out, self.format, self.selection, snap.table_id)
        return recorded

    def _adopt(self, progress: Progress) -> tuple[Progress, Increment | None]:
        """Record the increment a crashed export published but did not record, or remove it if partial."""
        folder = f"increment={progress.next_number:06d}"
        if not self._fs.exists(folder):
            return progress, None
        try:
            data = read_versioned(self._fs.read_text(f"{folder}/{INCREMENT_FILE}"), f"{self.out}/{folder}")
            inc = Increment.from_dict(data["increment"])
            made = Progress(str(data["format"]), Selection.from_dict(data["selection"]), str(data["changelog_table_id"]))
            complete = inc.number == progress.next_number and len(self._files(folder)) == data["files"]
        except (KeyError, TypeError, ValueError, OSError, WatcherError):  # a description not (fully) there
            complete = False
        if complete:  # the crashed export's own, or refused as another target's would be
            made.check(f"{self.out}/{folder}", self.format, self.selection, progress.table_id)
        if not complete:
            self._fs.delete(folder)
            return progress, None
        adopted = progress.recorded(inc, inc.last_run, inc.delta_version)
        self._fs.write_text(PROGRESS_FILE, adopted.to_json(), overwrite=True)
        return adopted, inc

    def _files(self, folder: str) -> list[Any]:
        return self._fs.glob(f"{folder}/{'/'.join(['*'] * _DEPTH)}/part-*")

    def plan(self) -> Plan | None:
        """Step 1: the increment this export writes (None: no run is newer than the recorded one)."""
        return self._plan()[0]

    def _plan(self) -> tuple[Plan | None, Progress, Increment | None]:
        snap = snapshot(self.warehouse, storage_options=self._storage).check_tables(self.selection)
        progress, adopted = self._adopt(self.progress(snap))
        self._fs.delete(PENDING)
        if snap.newest_run <= progress.last_run:
            return None, progress, adopted
        rows = increment(self.spark, snap, progress.last_run, self.selection)
        counts = {r["table_name"]: int(r["count"]) for r in rows.groupBy("table_name").count().collect()}
        inc = Increment(progress.next_number, progress.last_run + 1, snap.newest_run, snap.delta_version, counts)
        return Plan(progress, snap, inc if counts else None), progress, adopted

    def write(self, plan: Plan) -> None:
        """Step 2: the increment's lines and description into its pending folder."""
        if plan.increment is None:
            return
        inc, pending = plan.increment, self.pending_folder(plan.increment)
        rows = increment(self.spark, plan.snapshot, plan.progress.last_run, self.selection)
        lines = self._module.lines(rows, **self._options)
        partitions = [*(column for _, column in SOURCE_COLUMNS), self._module.FOLDER]
        lines.write.options(**NO_CHECKSUMS).mode("overwrite").partitionBy(*partitions).text(self._fs.uri(pending))
        description = {"format_version": FORMAT_VERSION, "format": self.format, "selection": self.selection.as_dict(),
                       "changelog_table_id": plan.progress.table_id, "increment": inc.as_dict(),
                       "files": len(self._files(pending))}
        self._fs.write_text(f"{pending}/{INCREMENT_FILE}", json.dumps(description, indent=1), overwrite=True)

    def publish(self, plan: Plan) -> None:
        """Step 3: the pending folder in its place, where readers see it."""
        if plan.increment is not None:
            self._fs.move(self._fs.uri(self.pending_folder(plan.increment)), plan.increment.folder)
            self._fs.delete(PENDING)

    def record(self, plan: Plan) -> Progress:
        """Step 4: the progress names the increment and its last run."""
        after = plan.progress.recorded(plan.increment, plan.snapshot.newest_run, plan.snapshot.delta_version)
        self._fs.write_text(PROGRESS_FILE, after.to_json(), overwrite=True)
        return after

    def run(self) -> Outcome:
        """The four steps: export the runs the folder does not hold yet."""
        plan, progress, adopted = self._plan()
        if plan is None:
            return Outcome(progress, None, adopted)
        self.write(plan)
        self.publish(plan)
        return Outcome(self.record(plan), plan.increment, adopted)
