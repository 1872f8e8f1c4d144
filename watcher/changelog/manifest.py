"""The warehouse's commit log: which job runs are committed, and what they left behind.

A run claims a version number first (``_state/attempts/<N>``, created exclusively), writes
its rows tagged ``run_version = N``, and commits by writing ``_state/manifest/<N>.json``
atomically. Readers take the newest manifest: rows of versions it does not list as
committed (a run that died before its commit) are invisible, so a crash at any point
leaves the warehouse as it was, and the next run redoes the work. One run at a time per
warehouse: a run that finds a newer manifest at commit time fails instead of committing.

Manifest (format version 1)::

    {"v": 1, "version": 7, "committed_at": "...", "aborted": [5],
     "tables": {"Singers": {"state_version": 4, "state_rows": 1000, "state_deltas": [6, 7], "delta_rows": [5, 9],
                            "loops": {"3": "2024-...Z"}, "watermark": "2024-...Z", "max_commit": "2024-...Z",
                            "partial_rows": true}}}

``state_version`` and ``state_deltas`` name the runs holding the table's current state (its
base and delta layers, :mod:`.current_state`). ``max_commit`` is the newest commit timestamp of
the table's changelog rows (a run whose rows are all newer has no group to continue, :mod:`.run`);
manifests written before it was kept lack it. ``partial_rows`` (true, or absent) says that a run has seen
partial rows of the table, so later runs fill them from the start (:data:`PARTIAL_ROWS`).

Example:
    >>> m = Manifest.empty()
    >>> m.version, m.visible(0), m.visible(1)
    (0, False, False)
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChangelogError
from .files import FileStore

MANIFEST_FORMAT = 1
MANIFEST_DIR = "_state/manifest"
ATTEMPTS_DIR = "_state/attempts"
#: A table entry's flag: a run has seen partial rows of the table (:data:`.run.PARTIAL_ROWS` says what it does).
PARTIAL_ROWS = "partial_rows"
_WIDTH = 12


def _name(version: int) -> str:
    return f"{version:0{_WIDTH}d}"


@dataclass
class Manifest:
    """The committed state of a warehouse (see the module docstring)."""

    version: int
    committed_at: str = ""
    aborted: list[int] = field(default_factory=list)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    @staticmethod
    def empty() -> Manifest:
        return Manifest(0)

    def visible(self, run_version: int) -> bool:
        """Whether rows written by ``run_version`` are committed."""
        return 0 < run_version <= self.version and run_version not in self.aborted

    def visible_sql(self, column: str = "run_version") -> str:
        """A SQL predicate keeping only committed rows."""
        predicate = f"{column} <= {self.version}"
        if self.aborted:
            predicate += f" AND {column} NOT IN ({', '.join(str(v) for v in sorted(self.aborted))})"
        return predicate

    def to_text(self) -> str:
        return json.dumps({"v": MANIFEST_FORMAT, "version": self.version, "committed_at": self.committed_at,
                           "aborted": sorted(self.aborted), "tables": self.tables}, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_text(text: str, where: str) -> Manifest:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ChangelogError(f"manifest {where} is not valid JSON: {exc}") from None
        if doc.get("v", 1) > MANIFEST_FORMAT:
            raise ChangelogError(f"manifest {where} was written by a newer spanner-watcher (format {doc['v']})")
        return Manifest(int(doc["version"]), doc.get("committed_at", ""), list(doc.get("aborted", [])),
                        dict(doc.get("tables", {})))


def load(fs: FileStore) -> Manifest:
    """The newest committed manifest (an empty one for a new warehouse)."""
    names = [n for n in fs.list_names(MANIFEST_DIR) if n.endswith(".json") and n[:-5].isdigit()]
    if not names:
        return Manifest.empty()
    newest = max(names, key=lambda n: int(n[:-5]))
    return Manifest.from_text(fs.read_text(f"{MANIFEST_DIR}/{newest}"), fs.uri(f"{MANIFEST_DIR}/{newest}"))


def claim_version(fs: FileStore, base: Manifest) -> tuple[int, list[int]]:
    """A fresh run version, and the versions of runs that started but never committed."""
    attempts = [int(n) for n in fs.list_names(ATTEMPTS_DIR) if n.isdigit()]
    version = max([base.version, *attempts]) + 1
    while not fs.create_exclusive(f"{ATTEMPTS_DIR}/{_name(version)}"):
        version += 1
    aborted = sorted(set(base.aborted) | {a for a in attempts if a > base.version})
    return version, aborted


def commit(fs: FileStore, base: Manifest, new: Manifest, now: dt.datetime) -> None:
    """Write ``new`` as the committed manifest, unless another run committed since ``base``."""
    current = load(fs)
    if current.version != base.version:
        raise ChangelogError(f"another changelog run committed version {current.version} to {fs.root} while this "
                             f"run (version {new.version}) was working; run the job again (one run at a time)")
    new.committed_at = now.isoformat()
    if not fs.write_text(f"{MANIFEST_DIR}/{_name(new.version)}.json", new.to_text()):
        raise ChangelogError(f"manifest version {new.version} already exists in {fs.root}")
