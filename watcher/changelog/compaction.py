"""Merging a table's current-state layers apart from the runs, so that no run has to.

A run that finds many deltas for a table (:data:`.current_state.MAX_DELTAS`, or as many rows as
its base) merges the layers into a new base itself: it reads and writes the table's whole state,
so that run costs as much as the table holds, not as much as it changed. In a streaming query,
every few micro-batches is then one that takes several times as long as the others (the tail of
the freshness), and the longer the table, the longer it takes. A :class:`Compactor` merges the
layers on a thread of its own while the runs go on, and hands the merged base to the next run,
which commits it with its own changes.

The protocol keeps "one run at a time per warehouse" (:mod:`.manifest`): the compactor never
commits.

1. After a run committed manifest M, the compactor claims a run version c (as a run does, before
   any later run claims its own) for a table that is due, and on its thread writes the table's
   newest row per key over its layers in M as the base of c (:func:`.current_state.merge_layers`).
2. The first run that commits after the merge finished adopts it: in that run's manifest the
   table's base is c in place of the layers c merged, when those are still the table's oldest
   (:func:`.current_state.adopt`); a run that rewrote the table meanwhile drops it. The deltas
   written after M stay, and order after c (their versions are higher), as they did after the
   layers c merged, so the newest row of every key is the same before and after.
3. Until adopted or dropped, c's folder is kept from pruning (:meth:`Compactor.keep`). If the
   process dies first, c is one more run that never committed: later runs list it as aborted and
   prune its folder. A merge that fails is reported (:meth:`Compactor.stats`); after
   :data:`MAX_FAILURES` failures in a row the compactor stops, and runs merge layers themselves
   again (:meth:`Compactor.active`).

Example:
    >>> due_tables({"A": {"state_version": 3, "state_rows": 10, "state_deltas": [4], "delta_rows": [200_000]},
    ...             "B": {"state_version": 3, "state_rows": 10, "state_deltas": [4], "delta_rows": [1]}})
    ['A']
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from . import current_state, manifest
from .files import FileStore

log = logging.getLogger(__name__)

#: Merges that fail in a row before the compactor stops (and runs merge layers themselves again).
MAX_FAILURES = 3
#: Delta rows below which a table is not merged for its deltas' size alone (only for their number,
#: :data:`.current_state.MAX_DELTAS`): a young table's base is small, so its deltas soon hold as many
#: rows, but reading them costs little next to a merge's own fixed cost (a few Spark jobs).
MIN_MERGE_ROWS = 100_000


def due(info: Mapping[str, Any]) -> bool:
    """Whether a table's layers are due for a merge: as many deltas as a run would merge itself
    (:data:`.current_state.MAX_DELTAS`), or deltas holding as many rows as the base, and at least
    :data:`MIN_MERGE_ROWS`.

    Example:
        >>> due({"state_version": 3, "state_rows": 10, "state_deltas": [4, 5], "delta_rows": [3000, 3000]})
        False
        >>> due({"state_version": 3, "state_rows": 10, "state_deltas": list(range(4, 12)), "delta_rows": [1] * 8})
        True
    """
    deltas = info.get("state_deltas", [])
    if not info.get("state_version") or not deltas:
        return False
    rows = sum(int(n) for n in info.get("delta_rows", []))
    return len(deltas) >= current_state.MAX_DELTAS or rows >= max(MIN_MERGE_ROWS, int(info.get("state_rows", 0)))


def due_tables(tables: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The tables whose layers are due for a merge (:func:`due`), the most layered first."""
    return sorted((t for t, info in tables.items() if due(info)), key=lambda t: (-len(current_state.layers(tables[t])), t))


class Compactor:
    """Merges one table's layers at a time on a background thread (see the module docstring).

    A run given a compactor (:meth:`.Changelog.compactor`) writes deltas where it would have merged
    layers, adopts finished merges when it commits and calls :meth:`after_commit` afterwards. Safe
    to share between the runs of one warehouse, one run at a time (a streaming query's micro-batches).

    Example::

        compactor = Compactor()
        Changelog(spark).staging(staging).warehouse(warehouse).compactor(compactor).run()
        compactor.close()   # waits for a merge under way
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending: int | None = None  # the version being written
        self._merged: list[current_state.MergedBase] = []
        self._failures = 0
        self._stats: dict[str, Any] = {"merges": 0, "adopted": 0, "dropped": 0, "failures": 0,
                                       "last_error": None, "last_merge_seconds": None}

    def active(self) -> bool:
        """Whether runs should leave merging layers to this compactor."""
        with self._lock:
            return self._failures < MAX_FAILURES

    def keep(self) -> set[int]:
        """The versions whose state folders pruning must keep: the merge under way and finished
        merges not yet adopted."""
        with self._lock:
            return {m.version for m in self._merged} | ({self._pending} if self._pending is not None else set())

    def take_merged(self) -> list[current_state.MergedBase]:
        """The finished merges, for the run about to commit (which adopts or drops each)."""
        with self._lock:
            merged, self._merged = self._merged, []
            return merged

    def count(self, *, adopted: int = 0, dropped: int = 0) -> None:
        """What the committing run did with the merges it took."""
        with self._lock:
            self._stats["adopted"] += adopted
            self._stats["dropped"] += dropped

    def after_commit(self, spark: Any, fs: FileStore, committed: manifest.Manifest) -> int | None:
        """Start merging a due table's layers of ``committed`` unless a merge is under way or
        waiting; returns the version claimed for it (None when none started)."""
        with self._lock:
            if self._failures >= MAX_FAILURES or self._pending is not None or self._merged:
                return None
        due = due_tables(committed.tables)
        if not due:
            return None
        version, _ = manifest.claim_version(fs, committed)
        with self._lock:
            self._pending = version
        self._thread = threading.Thread(target=self._merge, args=(spark, fs, committed, due[0], version),
                                        name=f"spanner-watcher compaction v{version}", daemon=True)
        self._thread.start()
        return version

    def _merge(self, spark: Any, fs: FileStore, committed: manifest.Manifest, table: str, version: int) -> None:
        started = time.perf_counter()
        try:
            merged = current_state.merge_layers(spark, fs, committed, table, version)
        except Exception as exc:  # noqa: BLE001 - any failure: reported, the runs go on with their layers
            log.warning("merging the state layers of %s into version %d failed: %s", table, version, exc)
            with self._lock:
                self._pending = None
                self._failures += 1
                self._stats["failures"] += 1
                self._stats["last_error"] = f"{table} (version {version}): {exc}"
            return
        with self._lock:
            self._pending = None
            self._merged.append(merged)
            self._failures = 0
            self._stats["merges"] += 1
            self._stats["last_merge_seconds"] = round(time.perf_counter() - started, 3)

    def close(self, timeout: float | None = None) -> None:
        """Wait for a merge under way (it is adopted by the next run, if any)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def stats(self) -> dict[str, Any]:
        """Merges finished, adopted, dropped (a run rewrote the table first) and failed; the last error."""
        with self._lock:
            return {**self._stats, "merging": self._pending is not None, "waiting": len(self._merged)}
