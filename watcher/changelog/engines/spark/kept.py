"""The run's window, kept: computed once, read by the tally, the state's write, the groups and the changelog's write.

:func:`cache` keeps it in Spark's cache (serialized in memory, spilled to disk; a block lost with
its executor is computed again from the lineage), :func:`release` frees it.

Example:
    >>> release(None)
"""

from __future__ import annotations

from typing import Any


def _level() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK  # PySpark's: serialized in memory, spilled to disk


def cache(frame: Any) -> Any:
    """``frame`` in Spark's cache (a lost block is computed again). Free it with :func:`release`."""
    return frame.persist(_level())


def release(frame: Any | None) -> None:
    """Free what :func:`cache` holds of ``frame`` (None: nothing)."""
    if frame is not None:
        frame.unpersist()
