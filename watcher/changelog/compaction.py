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
   any later run claims its own) for a table that is due (:func:`plan`), and on its thread writes
   the newest row per key over some of the table's layers in M (:func:`merge_layers`): all of them
   as the base of c when the deltas are large (as many rows as the base) or very many; else only
   its newest :data:`.current_state.MAX_DELTAS` deltas, as one delta of c, which costs what those
   hold, not what the table does.
2. The first run that commits after the merge finished adopts it: in that run's manifest c takes
   the place of the layers it merged (:func:`adopt`), when they are still the table's layers in
   that order; a run that rewrote the table meanwhile drops it. c is newer than every layer it
   merged and older than every delta written after M, as those layers were, so the newest row of
   every key is the same before and after.
3. Until adopted or dropped, c's folder is kept from pruning (:meth:`Compactor.keep`). If the
   process dies first, c is one more run that never committed: later runs list it as aborted and
   prune its folder. A merge that fails is reported (:meth:`Compactor.stats`); after
   :data:`MAX_FAILURES` failures in a row the compactor stops, and runs merge layers themselves
   again (:meth:`Compactor.active`).

Example:
    >>> next_merge({"A": {"state_version": 3, "state_rows": 10, "state_deltas": [4], "delta_rows": [200_000]},
    ...             "B": {"state_version": 3, "state_rows": 10, "state_deltas": [4], "delta_rows": [1]}})
    ('A', (3, 4))
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import arrow_merge, current_state, manifest, records
from .files import FileStore
from .fs import NO_CHECKSUMS

log = logging.getLogger(__name__)

#: Merges that fail in a row before the compactor stops (and runs merge layers themselves again).
MAX_FAILURES = 3
#: Delta rows below which a table is not merged for its deltas' size alone (only for their number,
#: :data:`.current_state.MAX_DELTAS`): a young table's base is small, so its deltas soon hold as many
#: rows, but reading them costs little next to a merge's own fixed cost (a few Spark jobs).
MIN_MERGE_ROWS = 100_000


#: Deltas past which all of a table's layers are merged into a base, however small they are.
MAX_DELTAS_MERGED = 2 * current_state.MAX_DELTAS


def plan(info: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The layers of a table to merge now, oldest first (None: none). All of them (into a base)
    when its deltas hold as many rows as its base, and at least :data:`MIN_MERGE_ROWS`, or number
    :data:`MAX_DELTAS_MERGED`; else its newest :data:`.current_state.MAX_DELTAS` deltas (into one
    delta) once it has that many.

    Example:
        >>> plan({"state_version": 3, "state_rows": 10, "state_deltas": [4, 5], "delta_rows": [3000, 3000]})
        >>> plan({"state_version": 3, "state_rows": 10, "state_deltas": list(range(4, 13)), "delta_rows": [1] * 9})
        (5, 6, 7, 8, 9, 10, 11, 12)
        >>> plan({"state_version": 3, "state_rows": 10, "state_deltas": [4, 5], "delta_rows": [60_000, 60_000]})
        (3, 4, 5)
    """
    deltas = [int(v) for v in info.get("state_deltas", [])]
    if not info.get("state_version") or not deltas:
        return None
    rows = sum(int(n) for n in info.get("delta_rows", []))
    if len(deltas) >= MAX_DELTAS_MERGED or rows >= max(MIN_MERGE_ROWS, int(info.get("state_rows", 0))):
        return tuple(current_state.layers(info))
    if len(deltas) >= current_state.MAX_DELTAS:
        return tuple(deltas[-current_state.MAX_DELTAS:])
    return None


def next_merge(tables: Mapping[str, Mapping[str, Any]]) -> tuple[str, tuple[int, ...]] | None:
    """The table to merge next and its layers to merge (:func:`plan`): of the tables with layers
    to merge, the most layered (None: none)."""
    plans = [(t, layers) for t, info in tables.items() if (layers := plan(info))]
    if not plans:
        return None
    return min(plans, key=lambda p: (-len(current_state.layers(tables[p[0]])), p[0]))


@dataclass(frozen=True)
class Merged:
    """Layers of a table merged apart from the runs: run ``version``'s folder holds the newest row
    per key of the layers ``merged`` (oldest first), as the table's base (``base``) or as a delta."""

    table: str
    version: int
    merged: tuple[int, ...]
    rows: int
    base: bool


def merge_layers(spark: Any, fs: FileStore, committed: manifest.Manifest, table: str, version: int,
                 layers: tuple[int, ...]) -> Merged:
    """Write the newest row per key of ``table``'s ``layers`` in ``committed`` (all of them, or its
    newest deltas) as the base or a delta of run ``version``, a version claimed for it. Nothing is
    committed (:func:`adopt` does that in a later run's manifest). Layers of at most
    :data:`.arrow_merge.MAX_ROWS` rows are merged on the driver (:mod:`.arrow_merge`), larger ones by Spark,
    as are those the driver fails to merge (Spark's write replaces what it left)."""
    info = committed.tables[table]
    base = layers[0] == info.get("state_version")
    counts = dict(current_state.layer_rows(info))
    rows_in = [counts.get(v) for v in layers]
    store = arrow_merge.store_for(fs) if None not in rows_in and sum(n or 0 for n in rows_in) <= arrow_merge.MAX_ROWS else None
    if store is not None:
        try:
            written = arrow_merge.merge(store, table, [(v, base and n == 0) for n, v in enumerate(layers)], version,
                                        base=base)
            return Merged(table, version, layers, written, base)
        except Exception as exc:  # noqa: BLE001 - e.g. pyarrow lacks the store's credentials: Spark merges (overwriting)
            log.warning("merging the state layers of %s on the driver failed (%s); merging them with Spark", table, exc)
    if base:
        source = committed
    else:  # only these deltas: a manifest that names them alone
        source = manifest.Manifest(committed.version, tables={table: {"state_deltas": list(layers), "delta_rows": rows_in}})
    rows = records.conform(current_state.latest(current_state.load_layers(spark, fs, source, [table])),
                           records.STATE_FIELDS)
    schema = records.schema_ddl(records.STATE_FIELDS)
    if base:
        target = fs.uri(current_state.version_dir(version))
        rows.write.options(**NO_CHECKSUMS).mode("overwrite").partitionBy("table_name").parquet(target)
        written = spark.read.schema(schema).option("basePath", target).parquet(f"{target}/table_name={table}")
    else:
        target = fs.uri(current_state.deltas_dir(version))
        rows.coalesce(1).write.options(**NO_CHECKSUMS).mode("overwrite").parquet(target)
        written = spark.read.schema(schema).parquet(target)
    return Merged(table, version, layers, int(written.count()), base)


def adopt(info: Mapping[str, Any], merged: Merged) -> dict[str, Any] | None:
    """The table's manifest entry with ``merged`` in place of the layers it merged; None when those
    are no longer the table's layers in that order (a run rewrote the table meanwhile).

    Example:
        >>> entry = {"state_version": 3, "state_rows": 80, "state_deltas": [5, 6, 10], "delta_rows": [9, 9, 4]}
        >>> adopt(entry, Merged("T", 9, (3, 5, 6), 100, True))
        {'state_version': 9, 'state_rows': 100, 'state_deltas': [10], 'delta_rows': [4]}
        >>> adopt(entry, Merged("T", 9, (5, 6), 12, False))
        {'state_version': 3, 'state_rows': 80, 'state_deltas': [9, 10], 'delta_rows': [12, 4]}
        >>> adopt({"state_version": 11, "state_rows": 120, "state_deltas": [], "delta_rows": []},
        ...       Merged("T", 9, (3, 5, 6), 100, True)) is None
        True
    """
    current = current_state.layer_rows(info)
    versions = [v for v, _ in current]
    start = 0 if merged.base else next((i for i, v in enumerate(versions) if i > 0 and v == merged.merged[0]), -1)
    if (start < 0 or not info.get("state_version") or tuple(versions[start:start + len(merged.merged)]) != merged.merged):
        return None
    before, after = current[:start], current[start + len(merged.merged):]
    if any(v <= merged.version for v, _ in after):  # c must stay older than every delta after it
        return None
    if merged.base:
        adopted: dict[str, Any] = {**info, "state_version": merged.version, "state_rows": merged.rows}
        deltas = after
    else:
        adopted = dict(info)
        deltas = [*before[1:], (merged.version, merged.rows), *after]
    adopted["state_deltas"] = [v for v, _ in deltas]
    if all(n is not None for _, n in deltas):
        adopted["delta_rows"] = [n for _, n in deltas]
    else:  # counts not known (an older manifest): none are kept, so that readers look for each layer's rows
        adopted.pop("delta_rows", None)
    return adopted


#: The nice value of the thread that merges (Linux: per thread): the runs come first.
MERGE_NICENESS = 10


def background_priority() -> None:
    """Lower the calling thread's CPU priority to :data:`MERGE_NICENESS` (where the OS has per-thread
    priorities): on a machine without spare cores a merge then takes the CPU the runs leave idle,
    instead of slowing the micro-batch beside it. Only the merge's own thread is lowered (the driver
    merge reads and writes on it, :mod:`.arrow_merge`); Spark's threads, and the runs, keep theirs."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), MERGE_NICENESS)
    except (AttributeError, OSError):  # no per-thread priority here: the merge runs at the runs' priority
        pass


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
        self._merged: list[Merged] = []
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

    def take_merged(self) -> list[Merged]:
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
        chosen = next_merge(committed.tables)
        if chosen is None:
            return None
        table, layers = chosen
        version, _ = manifest.claim_version(fs, committed)
        with self._lock:
            self._pending = version
        self._thread = threading.Thread(target=self._merge, args=(spark, fs, committed, table, version, layers),
                                        name=f"spanner-watcher compaction v{version}", daemon=True)
        self._thread.start()
        return version

    def _merge(self, spark: Any, fs: FileStore, committed: manifest.Manifest, table: str, version: int,
               layers: tuple[int, ...]) -> None:
        background_priority()
        started = time.perf_counter()
        try:
            merged = merge_layers(spark, fs, committed, table, version, layers)
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
