"""The processed-batches log: which staged batch files earlier runs turned into changelog rows.

One small JSON-lines file per run, ``<warehouse>/_state/processed/<version>.jsonl`` (a line
per batch: its name, table, record count and the run's version), read and written from the
driver through the Hadoop FileSystem API like the manifests: no Spark job, so an incremental
run does not pay one to learn what it may skip. Entries of runs the manifest does not list
as committed are ignored (the next run processes those batches again). Once there are more
than :data:`MERGE_AFTER` run files, a run merges the committed ones into one
``upto-<version>.jsonl`` file, so that reading the log stays a few calls however many runs
there were.

Example:
    >>> entry_line("table=T/a.jsonl", "T", 3, 7)
    '{"batch": "table=T/a.jsonl", "table_name": "T", "records": 3, "run_version": 7}'
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .files import FileStore
from .manifest import Manifest

PROCESSED_DIR = "_state/processed"
#: Run files the log may hold before a run merges them.
MERGE_AFTER = 16
_MERGED_PREFIX = "upto-"
_SUFFIX = ".jsonl"


def entry_line(batch: str, table: str | None, records: int, version: int) -> str:
    return json.dumps({"batch": batch, "table_name": table, "records": records, "run_version": version})


def _run_files(fs: FileStore) -> tuple[dict[int, str], dict[int, str]]:
    """(run version -> run file, merged-up-to version -> merged file)."""
    runs: dict[int, str] = {}
    merged: dict[int, str] = {}
    for name in fs.list_names(PROCESSED_DIR):
        if not name.endswith(_SUFFIX):
            continue
        stem = name[: -len(_SUFFIX)]
        if stem.isdigit():
            runs[int(stem)] = name
        elif stem.startswith(_MERGED_PREFIX) and stem[len(_MERGED_PREFIX):].isdigit():
            merged[int(stem[len(_MERGED_PREFIX):])] = name
    return runs, merged


def _entries(fs: FileStore, name: str, committed: Manifest) -> Iterable[dict[str, Any]]:
    for line in fs.read_text(f"{PROCESSED_DIR}/{name}").splitlines():
        if line.strip():
            entry = json.loads(line)
            if committed.visible(int(entry["run_version"])):
                yield entry


def load(fs: FileStore, committed: Manifest) -> set[str]:
    """The names of the batches committed runs processed."""
    if committed.version == 0:
        return set()
    runs, merged = _run_files(fs)
    names = [merged[v] for v in sorted(merged)] + [runs[v] for v in sorted(runs) if committed.visible(v)]
    return {entry["batch"] for name in names for entry in _entries(fs, name, committed)}


def append(fs: FileStore, version: int, batches: Iterable[tuple[str, str | None, int]]) -> None:
    """Record the run's batches (name, table, records) before its manifest commits."""
    lines = [entry_line(batch, table, records, version) for batch, table, records in batches]
    fs.write_text(f"{PROCESSED_DIR}/{version:012d}{_SUFFIX}", "\n".join(lines) + "\n", overwrite=True)


def merge(fs: FileStore, committed: Manifest) -> bool:
    """After a commit: merge the committed run files into one when there are many; True if it did.

    The merged file is written before any file it replaces is deleted, so a crash in between
    leaves entries twice, never none.
    """
    runs, merged = _run_files(fs)
    if len(runs) <= MERGE_AFTER:
        return False
    done = [v for v in sorted(runs) if committed.visible(v) or v < committed.version]
    if not done:
        return False
    names = [merged[v] for v in sorted(merged)] + [runs[v] for v in done if committed.visible(v)]
    lines = [json.dumps(entry) for name in names for entry in _entries(fs, name, committed)]
    upto = max(done)
    fs.write_text(f"{PROCESSED_DIR}/{_MERGED_PREFIX}{upto:012d}{_SUFFIX}", "\n".join(lines) + "\n", overwrite=True)
    for v in done:
        fs.delete(f"{PROCESSED_DIR}/{runs[v]}", recursive=False)
    for v, name in merged.items():
        if v < upto:
            fs.delete(f"{PROCESSED_DIR}/{name}", recursive=False)
    return True
