"""Spanner changes as a Spark Structured Streaming source, and a changelog writer per micro-batch.

Register the source, read it, and write the changelog with Spark's checkpointing::

    from watcher.changelog import streaming
    streaming.register(spark)
    changes = (spark.readStream.format("spanner_watcher")
               .option("database", "projects/p/instances/i/databases/d")
               .option("table", "Singers").option("shard_column", "ShardId").option("shards", "[0, 1, 2]")
               .load())
    writer = streaming.changelog_writer("/data/warehouse")
    query = (changes.writeStream.foreachBatch(writer)
             .option("checkpointLocation", "/data/checkpoints/singers").start())
    ...
    writer.stats()["freshness"]       # commit -> visible in the changelog view, seconds

Or keep the raw records as files, exactly once:
``changes.writeStream.format("json").option("path", ...).option("checkpointLocation", ...).start()``.

Offsets are the exact per-loop positions (:mod:`.offsets`); micro-batches read at the end
offset's read timestamp on the executors (:mod:`.partition_reader`), so a query killed at any
point and started again from its checkpoint reads each change once into the changelog.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import cluster
from .options import SOURCE_NAME, StreamOptions
from .writer import ChangelogWriter, changelog_writer

_lock = threading.Lock()
_shipped: set[str] = set()


def register(spark: Any) -> None:
    """Register the ``spanner_watcher`` source with ``spark`` (once per session is enough; again is harmless).

    The package is added to the session's Python files (also in local mode), so that Spark's Python
    workers, which plan and read the stream, import the same ``watcher`` as the driver.
    """
    from .source import SpannerWatcherSource

    sc = spark.sparkContext
    with _lock:
        if sc.applicationId not in _shipped:
            sc.addPyFile(cluster.package_zip())
            _shipped.add(sc.applicationId)
    spark.dataSource.register(SpannerWatcherSource)


__all__ = ["SOURCE_NAME", "ChangelogWriter", "StreamOptions", "changelog_writer", "register"]
