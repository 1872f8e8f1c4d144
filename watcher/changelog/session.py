"""The Spark session the command line uses (spark-submit brings its own), and settings a job
sets on a session for its own plans only.

Example:
    >>> spark = get_session("local[2]")       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

#: Settings for a single-machine run: few shuffle partitions, no UI, UTC.
LOCAL_SETTINGS = {
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}


def get_session(master: str | None = None, app: str = "spanner-watcher") -> Any:
    """The active session, or a new one on ``master`` (default ``local[*]``) with LOCAL_SETTINGS."""
    import os
    import sys
    import time

    from pyspark.sql import SparkSession

    # Python workers must run the interpreter that has this project's packages (the venv's),
    # not whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is None or master.startswith("local"):
        # A local run stays on the loopback interface (and Spark stops warning about it).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app).master(master or "local[*]")
    for key, value in LOCAL_SETTINGS.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - only the JVM start failure is retried
        # On a loaded machine the JVM sometimes dies while starting ("Java gateway process exited
        # before sending its port number"); a second start is what a user would do by hand.
        if "JAVA_GATEWAY_EXITED" not in str(exc) and "Java gateway process exited" not in str(exc):
            raise
        time.sleep(2.0)
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextlib.contextmanager
def temporary_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Set SQL settings of ``spark`` for the block, then put back what was there.

    The job tunes a few settings for its own plans only (the session is the user's).

    Example:
        >>> with temporary_conf(spark, {"spark.sql.shuffle.partitions": "4"}):   # doctest: +SKIP
        ...     df.write.parquet(path)
    """
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
