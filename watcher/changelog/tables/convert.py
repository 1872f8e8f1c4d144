"""Conversion of a warehouse of the changelog's Parquet layout into its Delta tables, once.

The changelog job used to write Parquet folders with a commit log of its own (:mod:`.old_layout`
says what it held). It now writes Delta tables (:mod:`.layout`) and refuses a warehouse of the old
layout with one line naming the conversion, ``spanner-watcher changelog --convert --warehouse DIR``
(:func:`refuse_old_layout`; every command that opens a warehouse calls it). :func:`convert`:

1. reads the old layout as its views showed it (committed runs only, without the rows a change
   stream's row replaced, each key's newest state row over the layers; :mod:`.old_layout`);
2. writes it through the ledger (:mod:`.ledger`) into Delta tables under ``<warehouse>/_converting/``
   as one run, numbered as the old warehouse's newest committed run ``N``: ``runs`` gets a row per
   committed old run with the staged batches it consumed (so the job never processes them again),
   and every row keeps the ``run_version`` it had; each table's commit carries the run's
   application transaction, so a conversion stopped at any point and started again commits each
   table once;
3. only after the run's last commit (``watermarks``), moves the old layout's folders into
   ``<warehouse>/_old_layout/`` and the Delta tables into place (``<warehouse>/changelog`` ...). Each
   move is a rename, done only when still needed, so a conversion stopped between them finishes
   them when started again. Moves are renames on local and HDFS folders; on object stores (S3, GCS),
   which cannot rename a folder, a move copies every file and then deletes the original, and a
   conversion stopped during one makes the copy again when started again.

Nothing is deleted: ``_old_layout/`` keeps the Parquet folders, the manifests and the processed
log until the user removes it (``keep_old=False`` removes it after the move). The completeness
markers (``_state/complete``) and ``_quarantine/`` stay where they are: the Delta layout uses them
as before. Attempts of runs that never committed are not converted (their rows were invisible).

Conversion works without Spark (pyarrow and delta-rs) and holds one table's current state in
memory at a time; changelog rows are streamed file by file.

Example:
    >>> import tempfile
    >>> detect_old_layout(tempfile.mkdtemp())
    False
    >>> str(OldLayoutError("/data/wh", "_state/manifest"))  # doctest: +ELLIPSIS
    'warehouse /data/wh holds ... convert it once with `spanner-watcher changelog --convert --warehouse /data/wh`, ...'
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ChangelogError, ConfigurationError, StorageURLError
from . import layout, old_layout
from .ledger import Ledger, Run

#: Where the Delta tables are written before they are moved into place.
CONVERTING_DIR = "_converting"
#: Where the old layout's folders go once the Delta tables hold their rows.
OLD_LAYOUT_DIR = "_old_layout"
#: The command that converts, as every refusal names it.
CONVERT_COMMAND = "spanner-watcher changelog --convert --warehouse"
#: The Delta log folder that makes a folder a Delta table.
DELTA_LOG = "_delta_log"
#: pyarrow filesystems (by type name) that rename a folder at once; on others a move copies, then deletes.
RENAMES = frozenset({"local", "hdfs"})


class OldLayoutError(ConfigurationError):
    """The warehouse holds the old layout (or a conversion that was stopped): convert it first."""

    def __init__(self, warehouse: str, found: str) -> None:
        super().__init__(f"warehouse {warehouse} holds the changelog in its Parquet layout of older spanner-watcher "
                         f"versions ({found}): convert it once with `{CONVERT_COMMAND} {warehouse}`, then run again")
        self.warehouse, self.found = warehouse, found


@dataclass
class Conversion:
    """What :func:`convert` did. ``converted`` is False when there was nothing to convert."""

    warehouse: str
    converted: bool = False
    run_version: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    #: Where the old layout's folders are now (None: removed, or nothing was moved).
    old_layout: str | None = None
    steps: list[str] = field(default_factory=list)


class _Folder:
    """The warehouse folder on its pyarrow filesystem."""

    def __init__(self, warehouse: str) -> None:
        from ...storage_urls import open_filesystem

        self.fs, self.root, url = open_filesystem(warehouse)
        self.text = url.local if url.local is not None else url.text.rstrip("/")

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def exists(self, name: str) -> bool:
        import pyarrow.fs as pafs

        return self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound

    def is_delta(self, name: str) -> bool:
        return self.exists(f"{name}/{DELTA_LOG}")

    def move(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``; where the store has no renames of folders (S3, GCS), copy every
        file, then delete ``source``: started again after a stop, the copy is made again, whole."""
        renames = self.fs.type_name in RENAMES
        if self.exists(target) and renames:
            raise ChangelogError(f"cannot move {self.path(source)} to {self.path(target)}: the target exists already; "
                                 f"move or remove {self.path(target)} by hand, then convert again")
        self.fs.create_dir(self.path(target).rsplit("/", 1)[0], recursive=True)
        if renames:
            self.fs.move(self.path(source), self.path(target))
            return
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.path(source), recursive=True)
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                copy = self.path(target) + info.path[len(self.path(source)):]
                self.fs.create_dir(copy.rsplit("/", 1)[0], recursive=True)
                self.fs.copy_file(info.path, copy)
        self.fs.delete_dir(self.path(source))


def _old_parts(folder: _Folder) -> list[str]:
    """What of the old layout the warehouse holds (folders not yet moved aside, a stopped conversion)."""
    found = [name for name in old_layout.FOLDERS if folder.exists(name) and not folder.is_delta(name)]
    return found + ([CONVERTING_DIR] if folder.exists(CONVERTING_DIR) else [])


def detect_old_layout(warehouse: str) -> bool:
    """Whether ``warehouse`` holds the old layout, or a conversion that has not finished. A warehouse on
    a filesystem pyarrow cannot open on this machine (one only Spark's JVM reaches) is not looked at.

    >>> import tempfile, pathlib
    >>> old = pathlib.Path(tempfile.mkdtemp()); (old / "_state" / "manifest").mkdir(parents=True)
    >>> detect_old_layout(str(old))
    True
    """
    try:
        folder = _Folder(warehouse)
    except StorageURLError:
        return False
    return bool(_old_parts(folder))


def refuse_old_layout(warehouse: str) -> None:
    """Raise :class:`OldLayoutError` when ``warehouse`` must be converted before a command may open it.

    >>> import tempfile, pathlib
    >>> old = pathlib.Path(tempfile.mkdtemp()); (old / "changelog" / "table_name=T").mkdir(parents=True)
    >>> refuse_old_layout(str(old))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    watcher.changelog.tables.convert.OldLayoutError: warehouse ... (changelog): convert it once with `spanner-watcher changelog --convert --warehouse ...`, then run again
    """
    try:
        folder = _Folder(warehouse)
    except StorageURLError:
        return  # see detect_old_layout
    found = _old_parts(folder)
    if found:
        raise OldLayoutError(folder.text, ", ".join(found))


def delta_row(spec: layout.TableSpec, row: Mapping[str, Any], source: tuple[str, str, str]) -> dict[str, Any]:
    """An old changelog or state row as ``spec``'s Delta table holds it (exact timestamps split in two).

    >>> row = delta_row(layout.CHANGELOG, {"commit_timestamp": "2024-05-01T10:00:05.000000007Z",
    ...                                    "commit_date": "2024-05-01", "run_version": 3}, ("p", "i", "d"))
    >>> row["source_database"], row["commit_nanos"], str(row["commit_date"]), row["run_version"]
    ('d', 7, '2024-05-01', 3)
    """
    when, nanos = old_layout.split_timestamp(row.get("commit_timestamp"))
    out: dict[str, Any] = {}
    for name, _, _ in spec.fields:
        value = row.get(name)
        if name in ("source_project", "source_instance", "source_database"):
            value = source[("source_project", "source_instance", "source_database").index(name)]
        elif name == "commit_timestamp":
            value = when
        elif name == "commit_nanos":
            value = nanos
        elif name == "commit_date" and value is not None:
            value = dt.date.fromisoformat(str(value))
        elif name == "run_version" and value is not None:
            value = int(value)
        out[name] = value
    return out


def _watermark_rows(old: old_layout.OldWarehouse, committed: old_layout.Manifest, source: tuple[str, str, str]
                    ) -> list[dict[str, Any]]:
    rows = []
    for mark in old.watermarks(committed):
        when, nanos = old_layout.split_timestamp(mark["watermark"])
        row = {"source_project": source[0], "source_instance": source[1], "source_database": source[2],
               "table_name": mark["table_name"], "watermark": when, "watermark_nanos": nanos,
               "loops": len(mark["loops"]), "loop_watermarks": json.dumps(mark["loops"], sort_keys=True),
               "complete_from": mark["complete_from"], "run_version": committed.version}
        rows.append({name: row.get(name) for name, _, _ in layout.WATERMARKS.fields})
    return rows


def _run_rows(old: old_layout.OldWarehouse, committed: old_layout.Manifest, now: dt.datetime) -> list[dict[str, Any]]:
    """A ``runs`` row per committed old run that consumed batches, and one for the newest run in any case."""
    consumed = old.consumed(committed)
    when = old.committed_at()
    rows = []
    for version in sorted(set(consumed) | {committed.version}):
        text = when.get(version)
        started = dt.datetime.fromisoformat(text) if text else now
        rows.append({"run_version": version, "batches": consumed.get(version, []), "started_at": started})
    return rows


def _write(ledger: Ledger, run: Run, spec: layout.TableSpec, batches: Iterator[list[dict[str, Any]]]) -> int:
    """Append the rows to ``spec``'s table in one commit carrying ``run`` (a repeat is not made: see pending)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = spec.arrow_schema()
    count = [0]

    def record_batches() -> Iterator[Any]:
        for rows in batches:
            count[0] += len(rows)
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    reader = pa.RecordBatchReader.from_batches(schema, record_batches())
    write_deltalake(ledger.uri(spec.name), reader, mode="append", commit_properties=ledger.commit_properties(run),
                    storage_options=ledger.storage_options or None)
    return count[0]


def _changelog_batches(old: old_layout.OldWarehouse, committed: old_layout.Manifest, source: tuple[str, str, str],
                       size: int = 10_000) -> Iterator[list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    for row in old.changelog(committed):
        rows.append(delta_row(layout.CHANGELOG, row, source))
        if len(rows) >= size:
            yield rows
            rows = []
    yield rows


def _write_tables(folder: _Folder, source: tuple[str, str, str], now: dt.datetime,
                  storage_options: Mapping[str, str] | None, progress: Callable[[str], None]) -> Conversion:
    """Step 2: the old layout's rows into the Delta tables under ``_converting/``, as one run."""
    old = old_layout.OldWarehouse(folder.fs, folder.root)
    committed = old.manifest()
    result = Conversion(folder.text, converted=True, run_version=committed.version)
    if committed.version == 0:
        return result  # no run ever committed: nothing to carry over
    ledger = Ledger(f"{folder.text}/{CONVERTING_DIR}", storage_options=storage_options)
    ledger.create_tables()
    done = ledger.run(committed.version)
    if layout.RUNS.name not in done.done:
        run = Run(committed.version, (), frozenset())
        result.rows["runs"] = _write(ledger, run, layout.RUNS, iter([_run_rows(old, committed, now)]))
        progress(layout.RUNS.name)
    run = ledger.run(committed.version)
    writers: dict[str, Callable[[], Iterator[list[dict[str, Any]]]]] = {
        layout.CHANGELOG.name: lambda: _changelog_batches(old, committed, source),
        layout.CURRENT_STATE.name: lambda: iter([[delta_row(layout.CURRENT_STATE, r, source) for r in old.state(committed)]]),
        layout.WATERMARKS.name: lambda: iter([_watermark_rows(old, committed, source)]),
    }
    specs = {spec.name: spec for spec in layout.COMMIT_ORDER}
    for name in run.pending():
        result.rows[name] = _write(ledger, run, specs[name], writers[name]())
        progress(name)
    if not ledger.run(committed.version).complete:
        raise ChangelogError(f"conversion of {folder.text}: run {committed.version} is not complete after its commits")
    return result


def convert(warehouse: str, *, source: tuple[str, str, str], keep_old: bool = True, now: dt.datetime | None = None,
            storage_options: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None) -> Conversion:
    """Convert ``warehouse`` from the old layout into the Delta tables (see the module docstring).

    ``source``: the (project, instance, database) the old rows are of (the old layout did not say).
    ``keep_old``: keep the old folders in ``<warehouse>/_old_layout`` (the default) or remove them
    once the Delta tables are in place (also those a conversion before kept). ``now``: the ``started_at`` of a run whose manifest lacks a
    time. ``progress`` is called with the name of each step done (``runs`` ... ``watermarks``,
    ``moved <folder>``, ``placed <table>``). Converting a warehouse without the old layout does nothing.

    >>> import tempfile
    >>> convert(tempfile.mkdtemp(), source=("p", "i", "d")).converted
    False
    """
    folder = _Folder(warehouse)
    report = progress or (lambda step: None)
    if not _old_parts(folder):
        if not keep_old and folder.exists(OLD_LAYOUT_DIR):  # converted before: what was kept goes now
            folder.fs.delete_dir(folder.path(OLD_LAYOUT_DIR))
            report(f"removed {OLD_LAYOUT_DIR}")
        return Conversion(folder.text)
    if folder.exists(old_layout.MANIFEST_DIR):  # the manifests move aside first: then step 2 is done
        result = _write_tables(folder, source, now or dt.datetime.now(dt.UTC), storage_options, report)
    else:
        result = Conversion(folder.text, converted=True)
    for name in old_layout.FOLDERS:  # step 3: the old layout aside, the Delta tables into place
        if folder.exists(name) and not folder.is_delta(name):
            folder.move(name, f"{OLD_LAYOUT_DIR}/{name}")
            report(f"moved {name}")
            result.steps.append(f"moved {name}")
    for spec in layout.COMMIT_ORDER:
        if folder.exists(f"{CONVERTING_DIR}/{spec.name}") and not folder.exists(spec.name):
            folder.move(f"{CONVERTING_DIR}/{spec.name}", spec.name)
            report(f"placed {spec.name}")
            result.steps.append(f"placed {spec.name}")
    if folder.exists(CONVERTING_DIR):
        folder.fs.delete_dir(folder.path(CONVERTING_DIR))
    if folder.exists(OLD_LAYOUT_DIR):
        if keep_old:
            result.old_layout = folder.path(OLD_LAYOUT_DIR)
        else:
            folder.fs.delete_dir(folder.path(OLD_LAYOUT_DIR))
            report(f"removed {OLD_LAYOUT_DIR}")
    return result
