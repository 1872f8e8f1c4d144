"""What the executors of a Spark cluster need from the driver: this package, and the way to Spanner.

Backfill, reconcile and the Spanner-table export run Python of this package in Spark tasks.
In local mode the tasks run beside the driver and import it from the same place; on a
cluster the executors' Python usually lacks it. :func:`ship` therefore zips the pure-Python
package once per process (the embedded local Spanner and the developer tools stay out: no
task needs them) and adds it to the session with ``addPyFile``, so a cluster whose workers
have only the third-party dependencies (google-cloud-spanner, pyspark) runs the job.

The Spanner connection travels in the task closure (``SpannerLocation``: project, instance,
database and the emulator host); :func:`executor_env` also hands SPANNER_EMULATOR_HOST to the
executors' environment for code that reads it there.

Example:
    >>> is_local("local[2]"), is_local("spark://127.0.0.1:7077"), is_local("local-cluster[2,1,1024]")
    (True, False, False)
    >>> missing_module(RuntimeError("... ModuleNotFoundError: No module named 'watcher'\\n ..."))
    'watcher'
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .connect import is_connect, session_id

#: Sub-packages no executor task imports; they stay out of the shipped zip.
LEFT_OUT = ("localspanner", "devtools")
#: Environment variables of the driver that executors get too (when set).
EXECUTOR_ENV = ("SPANNER_EMULATOR_HOST",)
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")

_lock = threading.Lock()
_zip_path: str | None = None
_shipped: set[str] = set()  # application ids that have the zip


def is_local(master: str | None) -> bool:
    """Tasks run inside the driver's JVM, beside the driver's Python (``local``, ``local[N]``, ``local[*, F]``)."""
    return master is None or master == "local" or master.startswith("local[")


def package_zip() -> str:
    """A zip of the ``watcher`` package's Python files (without :data:`LEFT_OUT`), built once per process."""
    global _zip_path
    with _lock:
        if _zip_path is not None and os.path.exists(_zip_path):
            return _zip_path
        package = Path(__file__).resolve().parents[2]  # watcher/changelog/spark/cluster.py -> watcher/
        target = Path(tempfile.mkdtemp(prefix="spanner-watcher-ship-")) / "spanner_watcher.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(package.rglob("*")):
                relative = path.relative_to(package)
                if (path.suffix != ".py" and path.name != "py.typed") or "__pycache__" in relative.parts:
                    continue
                if relative.parts[0] in LEFT_OUT:
                    continue
                archive.write(path, f"{package.name}/{relative.as_posix()}")
        _zip_path = str(target)
        return _zip_path


def ship(spark: Any) -> str | None:
    """Add the package zip to ``spark`` unless its master is local; returns the zip's path.

    A Spark Connect session always gets it (as a Python artifact of the session): the driver
    cannot know what the server's Python has. Safe to call before every job: a context (or a
    Connect session) gets the zip once.
    """
    if is_connect(spark):
        key = session_id(spark)
        add = lambda path: spark.addArtifacts(path, pyfile=True)  # noqa: E731
    else:
        sc = spark.sparkContext
        if is_local(sc.master):
            return None
        key, add = sc.applicationId, sc.addPyFile
    path = package_zip()
    with _lock:
        if key in _shipped:
            return path
        add(path)
        _shipped.add(key)
    return path


def executor_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings that pass the driver's :data:`EXECUTOR_ENV` variables on to the executors.

    >>> executor_env({"SPANNER_EMULATOR_HOST": "127.0.0.1:9010", "HOME": "/root"})
    {'spark.executorEnv.SPANNER_EMULATOR_HOST': '127.0.0.1:9010'}
    """
    environ = os.environ if environ is None else environ
    return {f"spark.executorEnv.{name}": environ[name] for name in EXECUTOR_ENV if environ.get(name)}


def missing_module(exc: BaseException) -> str | None:
    """The module a Spark task could not import, when that is why ``exc`` (a failed job) happened."""
    match = _MISSING.search(str(exc))
    return match.group(1) if match else None


def missing_module_message(name: str) -> str:
    """One line telling the user what executors lack and what to do.

    >>> missing_module_message("google")
    "the Spark executors' Python cannot import google: install google-cloud-spanner (and this package's other dependencies) on every worker, or point spark.pyspark.python at a Python that has them"
    """
    top = name.split(".", 1)[0]
    if top == "watcher":
        return ("the Spark executors' Python cannot import watcher: the package was not shipped to them; "
                "pass it with spark-submit --py-files or install spanner-watcher on every worker")
    return (f"the Spark executors' Python cannot import {name}: install google-cloud-spanner (and this package's "
            "other dependencies) on every worker, or point spark.pyspark.python at a Python that has them")
