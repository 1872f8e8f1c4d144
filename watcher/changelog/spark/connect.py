"""What differs when the session is a Spark Connect client (``SparkSession.builder.remote("sc://...")``).

A Connect session has no ``sparkContext``, no JVM gateway and no RDD API on the driver: the
jobs use only DataFrame and SQL operations, files go through :mod:`..io.arrow_fs`, and the few
facts a classic driver asks the SparkContext for come from the session's configuration.
The class is recognized by its module, so nothing here imports the Connect client (which
needs pandas, pyarrow and grpcio-status) unless the session is one.

Example:
    >>> is_connect(object())
    False
    >>> parallelism_of_master("local[3]"), parallelism_of_master("local"), parallelism_of_master("spark://h:7077")
    (3, 1, None)
"""

from __future__ import annotations

import os
import re
from typing import Any

_LOCAL = re.compile(r"^local(?:\[(\d+|\*)(?:,\s*\d+)?\])?$")


def is_connect(spark: Any) -> bool:
    """``spark`` is a Spark Connect session (``pyspark.sql.connect.session.SparkSession``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_session(spark: Any) -> bool:
    """``spark`` is a SparkSession, classic (``pyspark.sql.SparkSession``) or Connect."""
    kind = type(spark)
    return any(c.__name__ == "SparkSession" and c.__module__ in ("pyspark.sql.session", "pyspark.sql.connect.session")
               for c in kind.__mro__)


def parallelism_of_master(master: str | None) -> int | None:
    """The default parallelism a local master gives (its thread count); None for other masters."""
    match = _LOCAL.match(master or "")
    if match is None:
        return None
    threads = match.group(1)
    if threads is None:
        return 1
    return (os.cpu_count() or 1) if threads == "*" else int(threads)


def default_parallelism(spark: Any) -> int:
    """The session's default parallelism: the SparkContext's, or under Connect the configured one.

    Under Connect it is ``spark.default.parallelism`` when set, else the thread count of a local
    master, else the shuffle partitions (what a cluster's plans use anyway).
    """
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return max(1, int(configured))
    local = parallelism_of_master(spark.conf.get("spark.master", None))
    if local is not None:
        return local
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "200")))


def session_id(spark: Any) -> str:
    """An id of the session's application (classic) or of the Connect session itself."""
    if is_connect(spark):
        return f"connect:{spark.session_id}"
    return str(spark.sparkContext.applicationId)
