"""The package's JVM functions in a Spark session: the jar added, the functions registered.

:func:`old_values_function` is what the changelog asks before each run: the name of the
registered ``OldValues`` function, or None, and then the run takes its SQL path. A classic
session gets the jar by ``ADD JAR`` (the driver's session loads it, and Spark ships it to every
executor of a cluster); a Spark Connect session gets it as an artifact of the session, uploaded
to the server. Each session gets the jar once and the function once (a function registered
in a session is found in its clones too, e.g. a streaming query's).

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
from typing import Any

from ..connect import is_connect, session_id
from . import jar

log = logging.getLogger(__name__)

#: The SQL name of the old-values function in a session, and its class in the jar.
OLD_VALUES = "spanner_watcher_old_values"
OLD_VALUES_CLASS = "watcher.changelog.jvm.OldValues"
_OFF = ("0", "off", "false", "no")

_lock = threading.Lock()
_jar_added: set[str] = set()  # session ids (classic: application ids) that have the jar
_warned: set[str] = set()


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether JVM functions are to be used (``SPANNER_WATCHER_JVM_FUNCTIONS`` is not off)."""
    environ = os.environ if environ is None else environ
    return environ.get("SPANNER_WATCHER_JVM_FUNCTIONS", "on").strip().lower() not in _OFF


def old_values_function(spark: Any) -> str | None:
    """The name of the ``OldValues`` function registered in ``spark``, or None when it cannot be
    (turned off, no JDK to build it, the session refused the jar): the caller's SQL path then.

    Cheap after the first call in a session: one catalog lookup.
    """
    if not enabled():
        return None
    try:
        if spark.catalog.functionExists(OLD_VALUES):
            return OLD_VALUES
        _add_jar(spark, str(jar.jar_path()))
        _register(spark)
        return OLD_VALUES
    except Exception as exc:  # noqa: BLE001 - any failure here leaves the SQL path, which gives the same rows
        _warn_once(exc)
        return None


def _add_jar(spark: Any, path: str) -> None:
    key = session_id(spark)
    with _lock:
        if key in _jar_added:
            return
        if is_connect(spark):
            spark.addArtifacts(path)
        else:
            spark.sql("ADD JAR " + _sql_string(path))
        _jar_added.add(key)


def _register(spark: Any) -> None:
    from pyspark.sql.types import StringType

    spark.udf.registerJavaFunction(OLD_VALUES, OLD_VALUES_CLASS, StringType())


def _sql_string(text: str) -> str:
    """A Spark SQL string literal of ``text``.

    >>> _sql_string("/tmp/it's.jar")
    "'/tmp/it\\\\'s.jar'"
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _warn_once(exc: BaseException) -> None:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    with _lock:
        if reason in _warned:
            return
        _warned.add(reason)
    log.warning("changelog: old values take the SQL path (same results, slower): the JVM function is "
                "unavailable: %s", reason)
