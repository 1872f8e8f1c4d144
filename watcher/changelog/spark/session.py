"""The Spark session the command line uses, and settings a job sets on a session for its own plans only.

The master is never imposed: ``--master`` (or ``spark.master`` among the ``--conf`` settings)
when given, else whatever Spark's own configuration says (spark-submit's ``--master``,
``PYSPARK_SUBMIT_ARGS``, the ``MASTER`` variable, ``spark-defaults.conf``), and ``local[*]``
only when nothing names one. The single-machine tuning (:data:`LOCAL_SETTINGS`) fills in
only what the user's configuration leaves open.

Example:
    >>> spark = get_session("local[2]")       # doctest: +SKIP
    >>> spark = get_session(conf={"spark.master": "spark://127.0.0.1:7077"})   # doctest: +SKIP
    >>> spark = get_session(remote="sc://127.0.0.1:15002")   # doctest: +SKIP

A Spark Connect URL (``remote``, ``spark.remote``, or SPARK_REMOTE when no master is named)
gives a Connect session instead: no JVM starts on this side.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..tables import runtime as delta_runtime
from .cluster import executor_env, is_local

#: Settings for a single-machine run: few shuffle partitions, no UI, UTC (defaults only).
LOCAL_SETTINGS = {
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
#: The master when no configuration names one (what spark-submit itself defaults to).
DEFAULT_MASTER = "local[*]"


def configured_master(environ: Mapping[str, str] | None = None) -> str | None:
    """The master Spark's launcher will use, read before it starts (None: nothing names one).

    >>> configured_master({"PYSPARK_SUBMIT_ARGS": "--master spark://h:7077 pyspark-shell"})
    'spark://h:7077'
    >>> configured_master({"PYSPARK_SUBMIT_ARGS": "--conf spark.master=local[3] pyspark-shell"})
    'local[3]'
    >>> configured_master({"MASTER": "spark://h:7077"})
    'spark://h:7077'
    >>> configured_master({}) is None
    True
    """
    environ = os.environ if environ is None else environ
    words = shlex.split(environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for index, word in enumerate(words[:-1]):
        if word == "--master":
            return words[index + 1]
        if word == "--conf" and words[index + 1].startswith("spark.master="):
            return words[index + 1].split("=", 1)[1]
    for word in words:
        if word.startswith("--master="):
            return word.split("=", 1)[1]
    if environ.get("MASTER"):
        return environ["MASTER"]
    conf_dir = environ.get("SPARK_CONF_DIR") or (f"{environ['SPARK_HOME']}/conf" if environ.get("SPARK_HOME") else None)
    defaults = Path(conf_dir, "spark-defaults.conf") if conf_dir else None
    if defaults is not None and defaults.is_file():
        for line in defaults.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0] == "spark.master":
                return parts[1].strip()
    return None


def configured_remote(master: str | None = None, conf: Mapping[str, str] | None = None, *, remote: str | None = None,
                      environ: Mapping[str, str] | None = None) -> str | None:
    """The Spark Connect URL a command runs on (None: a classic session with a JVM driver).

    ``--remote`` (or ``spark.remote`` among the settings), else SPARK_REMOTE as pyspark itself
    reads it, unless the command named a master: an explicit ``--master`` wins over the environment.

    >>> configured_remote(environ={"SPARK_REMOTE": "sc://h:15002"})
    'sc://h:15002'
    >>> configured_remote("local[2]", environ={"SPARK_REMOTE": "sc://h:15002"}) is None
    True
    >>> configured_remote(conf={"spark.remote": "sc://h"}, environ={})
    'sc://h'
    """
    environ = os.environ if environ is None else environ
    settings = conf or {}
    if remote or settings.get("spark.remote"):
        return remote or settings["spark.remote"]
    if master or settings.get("spark.master"):
        return None
    return environ.get("SPARK_REMOTE") or None


def get_session(master: str | None = None, app: str = "spanner-watcher",
                conf: Mapping[str, str] | None = None, *, remote: str | None = None) -> Any:
    """The active session, or a new one with ``conf`` on ``master`` (default: Spark's own configuration).

    Args:
        master: the master URL; None leaves it to ``conf`` and Spark's configuration.
        app: the application name.
        conf: Spark settings (``--conf KEY=VALUE``); they win over LOCAL_SETTINGS.
        remote: a Spark Connect URL (``sc://host:port``); see :func:`configured_remote`.
    """
    url = configured_remote(master, conf, remote=remote)
    if url is not None:
        return connect_session(url, app, conf)
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = dict(conf or {})
    if master:
        settings["spark.master"] = master
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM with its settings
    if not under_submit:  # under spark-submit, its --packages and --conf load Delta (delta_runtime.submit_arguments)
        settings = delta_runtime.spark_settings(settings)
    predicted = settings.get("spark.master") or (None if under_submit else configured_master())
    if not under_submit and is_local(predicted):
        # A local run stays on the loopback interface (and Spark stops warning about it).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # The JVM, with spark-submit's, PYSPARK_SUBMIT_ARGS', defaults' settings; packages are resolved at its launch only.
    launch = None if under_submit else SparkConf().setAll(
        [(key, settings[key]) for key in ("spark.jars.packages", "spark.jars") if key in settings])
    _retry_start(lambda: SparkContext._ensure_initialized(conf=launch))
    known = SparkConf()
    # pyspark's driver takes the workers' Python from PYSPARK_PYTHON only; spark.pyspark.python
    # (--conf, spark-defaults) is what spark-submit would have put there, so it wins here too.
    # Else the interpreter that has this project's packages (the venv's), not the first `python3`.
    python = settings.get("spark.pyspark.python") or known.get("spark.pyspark.python", None)
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if "spark.master" not in settings and not known.contains("spark.master"):
        settings["spark.master"] = DEFAULT_MASTER
    builder = SparkSession.builder.appName(app)
    local = delta_runtime.LOCAL_DELTA_SETTINGS if is_local(settings.get("spark.master") or known.get("spark.master")) else {}
    for key, value in {**LOCAL_SETTINGS, **local, **executor_env()}.items():
        # The launcher turns the console progress bar on for shells; a command prints its own result.
        if key not in settings and (not known.contains(key) or key == "spark.ui.showConsoleProgress"):
            builder = builder.config(key, value)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = _retry_start(builder.getOrCreate)
    session.sparkContext.setLogLevel("ERROR")
    return session


#: Settings a Connect session gets unless the user's ``conf`` names them (session settings only:
#: the server's own configuration is the server's).
CONNECT_SETTINGS = {"spark.sql.session.timeZone": "UTC"}


def connect_session(url: str, app: str = "spanner-watcher", conf: Mapping[str, str] | None = None) -> Any:
    """A Spark Connect session on ``url`` (``sc://host:port``), with ``conf`` as session settings."""
    from pyspark.sql import SparkSession

    settings = {key: value for key, value in {**CONNECT_SETTINGS, **(conf or {})}.items()
                if key not in ("spark.remote", "spark.master")}
    builder = SparkSession.builder.remote(url).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _retry_start(start: Any) -> Any:
    try:
        return start()
    except Exception as exc:  # noqa: BLE001 - only the JVM start failure is retried
        # On a loaded machine the JVM sometimes dies while starting ("Java gateway process exited
        # before sending its port number"); a second start is what a user would do by hand.
        if "JAVA_GATEWAY_EXITED" not in str(exc) and "Java gateway process exited" not in str(exc):
            raise
        time.sleep(2.0)
        try:
            return start()
        except Exception as again:  # noqa: BLE001 - the same failure twice: say what is known to cause it
            again.add_note("If this process used Spanner (gRPC) before starting Spark, set GRPC_ENABLE_FORK_SUPPORT=false "
                           "before importing google.cloud.spanner: grpcio 1.80+ can crash the forked JVM launcher "
                           "(grpc/grpc#43055); the spanner-watcher command does this itself.")
            raise


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


def side_by_side(spark: Any, first: Callable[[], None], second: Callable[[], None]) -> None:
    """Run two independent steps at once (``first`` on a thread of its own, which inherits the
    session's job properties: PySpark's InheritableThread); the first failure is raised once both
    are done.

    >>> done = []
    >>> side_by_side(None, lambda: done.append("first"), lambda: done.append("second"))
    >>> sorted(done)
    ['first', 'second']
    """
    from pyspark.util import InheritableThread

    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            first()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failures.append(exc)

    thread = InheritableThread(guarded, session=spark)
    thread.start()
    try:
        second()
    finally:
        thread.join()
    if failures:
        raise failures[0]


class DeferredSession:
    """A Spark session started when first used: a run the driver engine does needs none, and a
    command line run is spared the JVM's start for it.

    Attribute access starts it (``start()``, once); :func:`started` gives the session itself where
    its type matters (Spark Connect or classic).

    >>> calls = []
    >>> deferred = DeferredSession(lambda: calls.append(1) or "session")
    >>> deferred.is_started, started(deferred), started(deferred), len(calls)
    (False, 'session', 'session', 1)
    """

    def __init__(self, start: Callable[[], Any]) -> None:
        self._start = start
        self._session: Any = None

    def session(self) -> Any:
        if self._session is None:
            self._session = self._start()
        return self._session

    @property
    def is_started(self) -> bool:
        return self._session is not None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.session(), name)


def started(spark: Any) -> Any:
    """``spark``, or the session a :class:`DeferredSession` starts."""
    return spark.session() if isinstance(spark, DeferredSession) else spark
