"""The package's JVM functions in a Spark session: the jar added, the functions registered.

:func:`old_values_function` is what the changelog asks before each run: the name of the
registered ``OldValues`` function, or None, and then the run takes its SQL path. A classic
session gets the jar by ``ADD JAR`` (the driver's session loads it, and Spark ships it to every
executor of a cluster); a Spark Connect session gets it as an artifact of the session, uploaded
to the server. Each session gets the jar once and the function once (a function registered
in a session is found in its clones too, e.g. a streaming query's), and each application runs
it once in a task before a job relies on it.

``SPANNER_WATCHER_JVM_FUNCTIONS=off`` keeps every session on the SQL path.

Example:
    >>> enabled({"SPANNER_WATCHER_JVM_FUNCTIONS": "off"}), enabled({})
    (False, True)
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...rules.classify import sql_literal
from ..connect import is_connect, session_id
from . import jar

log = logging.getLogger(__name__)

#: The SQL name of the old-values function in a session, and its class in the jar.
OLD_VALUES = "spanner_watcher_old_values"
OLD_VALUES_CLASS = "watcher.changelog.spark.jvm.OldValues"
_OFF = ("0", "off", "false", "no")

_lock = threading.Lock()
_jar_added: set[str] = set()  # session ids (classic: application ids) that have the jar
_probed: set[str] = set()  # ... whose executors ran the function
_failed: set[str] = set()  # ... where adding, registering or running it failed
_build_failure: Exception | None = None
_warned: set[str] = set()


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether JVM functions are to be used (``SPANNER_WATCHER_JVM_FUNCTIONS`` is not off)."""
    environ = os.environ if environ is None else environ
    return environ.get("SPANNER_WATCHER_JVM_FUNCTIONS", "on").strip().lower() not in _OFF


def old_values_function(spark: Any) -> str | None:
    """The name of the ``OldValues`` function registered in ``spark``, or None when it cannot be
    (turned off, no JDK to build it, the session or its executors refused the jar): the caller's
    SQL path then.

    Cheap after the first call in a session: one catalog lookup. The first call of an
    application (or Connect session) also runs the function once in a Spark task, so that
    executors that cannot load it fail here, not in the job; a failure is remembered for the
    process, and later calls take the SQL path at once.
    """
    if not enabled():
        return None
    key = ""
    try:
        key = session_id(spark)
        if key in _failed:
            return None
        if spark.catalog.functionExists(OLD_VALUES):
            return OLD_VALUES
        if _build_failure is not None:
            return None
        _add_jar(spark, key, _jar())
        _register(spark)
        _probe(spark, key)
        return OLD_VALUES
    except Exception as exc:  # noqa: BLE001 - any failure here leaves the SQL path, which gives the same rows
        with _lock:
            _failed.add(key)
        _warn_once(exc)
        return None


def _jar() -> str:
    """The jar's path; a failed build is not tried again in this process (it would fail again,
    and each try may cost javac's time)."""
    global _build_failure
    if _build_failure is not None:
        raise _build_failure
    try:
        return str(jar.jar_path())
    except Exception as exc:
        _build_failure = exc
        raise


def _add_jar(spark: Any, key: str, path: str) -> None:
    with _lock:
        if key in _jar_added:
            return
        if is_connect(spark):
            spark.addArtifacts(path)
        else:  # as a file: URI, so that no character of the path is read as URI syntax
            spark.sql("ADD JAR " + sql_literal(Path(path).as_uri()))
        _jar_added.add(key)


def _register(spark: Any) -> None:
    from pyspark.sql.types import StringType

    spark.udf.registerJavaFunction(OLD_VALUES, OLD_VALUES_CLASS, StringType())


def _probe(spark: Any, key: str) -> None:
    """Run the function in one Spark task (once per application or Connect session) and check its answer."""
    with _lock:
        if key in _probed:
            return
    got = spark.range(1).selectExpr(f"{OLD_VALUES}('{{\"a\":1}}', '{{\"a\":2}}') AS o").collect()[0][0]
    if got != '{"a":1}':
        raise RuntimeError(f"the function gave {got!r} for a known update in a Spark task")
    with _lock:
        _probed.add(key)


def _warn_once(exc: BaseException) -> None:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    with _lock:
        if reason in _warned:
            return
        _warned.add(reason)
    log.warning("changelog: old values take the SQL path (same results, slower): the JVM function is "
                "unavailable: %s", reason)
