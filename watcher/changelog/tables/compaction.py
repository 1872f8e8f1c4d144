"""Compaction: the small files that runs leave in the warehouse's tables, rewritten into few.

Every run appends at least one file per table (and per partition it writes): a streaming query
of a micro-batch a second adds thousands an hour, and a reader's planning and scan then cost
by the file, not by the row. After a run committed, a table with at least
:attr:`CompactionPolicy.min_files` files under :attr:`CompactionPolicy.target_size` in one
partition is compacted: delta-rs' OPTIMIZE bin-packs its small files into files of about the
target size, in one commit. A compaction is a pause of the job, longer as its
partitions' small files hold more rows (up to the target size), so it is rare: a streaming
query pauses once in ``min_files`` micro-batches.

What compaction leaves alone: the rows (the same rows in fewer files); the commits' application
transactions (a table holds the same runs, :mod:`.ledger`); the change data feed and any
Delta stream reader (an OPTIMIZE commit changes no data, ``dataChange`` false, so both skip
it); exports (they select rows by ``run_version``). A process killed mid-compaction leaves
the table as it was: the new files are in no commit, and VACUUM removes them later. A compaction
that fails (a concurrent writer's commit first, say) is logged and tried again after the next run;
the run it follows is committed either way.

Example:
    >>> CompactionPolicy().active, CompactionPolicy(min_files=0).active
    (True, False)
    >>> crowded([(("T",), 10), (("T",), 12), (("T",), 20), (("U",), 10)], min_files=2, target_size=15)
    [('T',)]
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...errors import ChangelogError, ConfigurationError
from . import layout
from .ledger import Ledger

log = logging.getLogger(__name__)

#: Files under the target size one partition may hold before its table is compacted.
DEFAULT_MIN_FILES = 256
#: The size compaction packs files to (and below which a file counts as small).
DEFAULT_TARGET_SIZE = 64 << 20


@dataclass(frozen=True)
class CompactionPolicy:
    """When to compact (``min_files`` 0: never) and to what size (bytes).

    >>> CompactionPolicy(min_files=1).check()
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: --compact-files must be 0 (off) or at least 2, got 1
    """

    min_files: int = DEFAULT_MIN_FILES
    target_size: int = DEFAULT_TARGET_SIZE

    def check(self) -> CompactionPolicy:
        if not isinstance(self.min_files, int) or self.min_files < 0 or self.min_files == 1:
            raise ConfigurationError(f"--compact-files must be 0 (off) or at least 2, got {self.min_files!r}")
        if not isinstance(self.target_size, int) or self.target_size <= 0:
            raise ConfigurationError(f"compaction's target size must be a positive number of bytes, got {self.target_size!r}")
        return self

    @property
    def active(self) -> bool:
        return self.min_files > 0


#: The job's policy unless told otherwise.
DEFAULT = CompactionPolicy()


def small_files(files: Iterable[tuple[Any, int]], target_size: int) -> Counter[Any]:
    """Per partition (of ``(partition, size)`` pairs, one per file), its files smaller than ``target_size``.

    >>> small_files([(("T",), 10), (("T",), 12), (("T",), 20), (("U",), 30)], 15)
    Counter({('T',): 2})
    """
    return Counter(partition for partition, size in files if size < target_size)


def crowded(files: Iterable[tuple[Any, int]], *, min_files: int, target_size: int) -> list[Any]:
    """The partitions (of ``(partition, size)`` pairs, one per file) holding at least ``min_files``
    files smaller than ``target_size``, in order."""
    return sorted(partition for partition, n in small_files(files, target_size).items() if n >= min_files)


def _files(table: Any, partition_by: tuple[str, ...]) -> list[tuple[tuple[Any, ...], int]]:
    """(partition values, size) of each file of ``table``'s snapshot, from its log (no file is read)."""
    import pyarrow as pa

    actions = pa.table(table.get_add_actions(flatten=True))
    columns = [actions.column(f"partition.{name}").to_pylist() for name in partition_by]
    sizes = actions.column("size_bytes").to_pylist()
    return [(tuple(column[i] for column in columns), size) for i, size in enumerate(sizes)]


def compact(ledger: Ledger, policy: CompactionPolicy = DEFAULT) -> dict[str, int]:
    """Compact each table of the warehouse that ``policy`` finds crowded; returns, per table compacted,
    the files its compaction removed.

    All in the same run: every run adds a file to most tables, so they fill up together, and a
    streaming query's next micro-batch then waits for one pause every ``min_files`` micro-batches
    rather than one per table.

    >>> import tempfile
    >>> ledger = Ledger(tempfile.mkdtemp()); ledger.create_tables()
    >>> compact(ledger)
    {}
    """
    from deltalake.exceptions import DeltaError

    policy.check()
    if not policy.active:
        return {}
    out: dict[str, int] = {}
    for spec in layout.COMMIT_ORDER:
        try:
            table = ledger.table(spec.name)
        except ChangelogError:  # not made yet: nothing to compact
            continue
        if table.get_add_actions(flatten=False).num_rows < policy.min_files:
            continue  # too few files in all: the per-partition count (its statistics flattened) is not needed
        if not crowded(_files(table, spec.partition_by), min_files=policy.min_files, target_size=policy.target_size):
            continue
        try:
            metrics = table.optimize.compact(target_size=policy.target_size)
        except DeltaError as exc:  # the run is committed: a compaction that failed is tried after the next
            log.warning("warehouse %s: compaction of %s failed, tried again after the next run: %s",
                        ledger.warehouse, spec.name, exc)
            continue
        out[spec.name] = int(metrics.get("numFilesRemoved", 0) or 0)
    return out
