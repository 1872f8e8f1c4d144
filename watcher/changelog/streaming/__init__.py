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

Or read a change stream instead of polling (every version, deletes, old values; the same staging
records a ChangeStreamWatcher stages): ``.option("change_stream", "SingersStream")`` in place of
the table and poll options (:mod:`.change_stream_source`).

Or keep the raw records as files, exactly once:
``changes.writeStream.format("json").option("path", ...).option("checkpointLocation", ...).start()``.

Offsets are the exact per-loop positions (:mod:`.offsets`); micro-batches read at the end
offset's read timestamp on the executors (:mod:`.partition_reader`), so a query killed at any
point and started again from its checkpoint reads each change once into the changelog.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..spark import cluster
from .options import SOURCE_NAME, StreamOptions
from .writer import ChangelogWriter, changelog_writer

_lock = threading.Lock()
_shipped: set[str] = set()


def register(spark: Any) -> None:
    """Register the ``spanner_watcher`` source with ``spark`` (once per session is enough; again is harmless).

    The Python processes Spark starts for the source import the same ``watcher`` as the driver:
    the tasks through the package zip added to the session (:func:`.cluster.package_zip`), and the
    driver-side planner of the stream, which Spark gives no Python files, through the zip's path in
    the PYTHONPATH the source is registered with. The driver's SPANNER_EMULATOR_HOST (the default of
    the ``emulator_host`` option) goes along the same way.
    """
    from .source import SpannerWatcherSource

    sc = spark.sparkContext
    package = cluster.package_zip()
    with _lock:
        if sc.applicationId not in _shipped:
            sc.addPyFile(package)
            _shipped.add(sc.applicationId)
        env = sc.environment  # the environment every Python function registered from now on carries
        before = dict(env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
        env.update({name: os.environ[name] for name in cluster.EXECUTOR_ENV if os.environ.get(name)})
        try:
            spark.dataSource.register(SpannerWatcherSource)
        finally:  # only the source carries them: other functions keep the session's environment
            env.clear()
            env.update(before)

__all__ = ["SOURCE_NAME", "ChangelogWriter", "StreamOptions", "changelog_writer", "register"]
