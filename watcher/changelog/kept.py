"""The run's window, kept: computed once, read by the tally, the state's write, the groups and the changelog's write.

Two ways to keep it, the same rows either way:

* :func:`keep` (the default): a local checkpoint of the frame (``DataFrame.localCheckpoint``,
  lazy, serialized in memory and on disk). The rows are kept as Spark's own row bytes, as they
  leave the window: no columnar batches and no per-batch statistics of every text column are
  built, and the readers take the rows back without decoding columns, so the window's stage
  costs less than with Spark's cache (benchmarks/RESULTS.md, changelog_job). The frame keeps the window's partitioning (the groups'
  join relies on it, :mod:`.grouping`). The price: its lineage is cut, so a block lost with its
  executor cannot be computed again, and the Spark job that needed it fails
  (:func:`lost` tells such a failure).
* :func:`cache` (``persist``): Spark's cache, which computes a lost block again from the
  lineage. The run falls back to it when a kept block was lost (:mod:`.run`): nothing is
  committed before the run's last step, so the run builds its window again and writes anew.

Example:
    >>> lost(RuntimeError("[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND] Checkpoint block rdd_6_0 not found!"))
    True
    >>> lost(RuntimeError("[UNRESOLVED_COLUMN] ..."))
    False
"""

from __future__ import annotations

from typing import Any

from .connect import is_connect
from .session import temporary_conf

#: The error class of a Spark job that needed a block of a local checkpoint which is gone.
LOST_BLOCK = "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND"
#: Planned without adaptive execution: the checkpoint keeps the partitioning the plan names
#: (the placement's partitions, :mod:`.placement`), and adaptive execution would run the window's
#: shuffle at once, before the tally's job, and may merge the partitions.
_PLAN_SETTINGS = {"spark.sql.adaptive.enabled": "false"}


def _level() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK  # PySpark's: serialized in memory, spilled to disk


def keep(frame: Any) -> Any:
    """``frame`` as a lazy local checkpoint: computed by the first job that reads it, then read
    from the kept blocks (see the module docstring). Free it with :func:`release`."""
    with temporary_conf(frame.sparkSession, _PLAN_SETTINGS):
        return frame.localCheckpoint(eager=False, storageLevel=_level())


def cache(frame: Any) -> Any:
    """``frame`` in Spark's cache (a lost block is computed again). Free it with :func:`release`."""
    return frame.persist(_level())


def release(frame: Any | None) -> None:
    """Free what :func:`keep` or :func:`cache` holds of ``frame`` (None: nothing).

    A checkpoint's blocks are freed at once on a classic session. A Spark Connect client has no
    handle on them: the server releases them when the client drops the frame (PySpark's
    ``CachedRemoteRelation``), so there the caller just lets go of it.
    """
    if frame is None:
        return
    frame.unpersist()  # a cached frame; nothing for a checkpoint
    if is_connect(frame.sparkSession):
        return
    plan = frame._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


def lost(error: BaseException) -> bool:
    """Whether ``error`` is a Spark job's failure for a kept block that is gone (its executor was lost)."""
    return LOST_BLOCK in str(error)
