"""The Java Spanner Change Watcher (1.2.1), built and run as a child process.

``javawatcher/`` beside this module is a small Maven project around Google's Java library
(``com.google.cloudspannerecosystem:google-cloud-spanner-change-watcher``): it runs one
SpannerTableTailer with the library's SpannerCommitTimestampRepository and prints one JSON
object a line (see :class:`JavaRun`). Tests use it to prove that users can switch between the
Java library and ours without losing their place; benchmarks can run it side by side with ours.

The build (``mvn -B package``: the program's jar and a file with the runtime classpath, jars
in the default local Maven repository ``~/.m2``) happens once per source digest in the cache
folder (:func:`watcher.changelog.spark.jvm.jar.cache_dir`), offline first and online when the local
repository lacks something. The child reaches the server named by ``SPANNER_EMULATOR_HOST``
(the Java client then uses plaintext and no credentials).

Config keys of a watch run (:func:`watch_config` builds them): ``project``, ``instance``,
``database``, ``table``; ``shard`` (``{"column", "type", "value"}``, :func:`typed`);
``poll_interval_ms``; ``limit``; ``fallback_to_with_query_seconds`` (-1: the WITH query after every
poll that returned rows); ``table_hint`` (e.g. ``@{FORCE_INDEX=Idx}``); ``checkpoint_table``;
``initial_commit_timestamp`` (``"min"``, RFC 3339, or absent: the library's default, the
database's current time); ``min_sessions``;
and when to stop, the first condition met: ``stop_after_idle_polls`` (that many polls in a row
returned nothing), ``stop_after_changes``, ``stop_after_seconds``, ``stop_on_stdin_close``
(also SIGTERM/SIGINT). Mode ``checkpoints`` (:func:`checkpoints_config`) writes checkpoint rows
for given shard values instead.

Example:
    >>> typed(["eu", "us"])
    {'type': 'ARRAY<STRING>', 'value': ['eu', 'us']}
    >>> typed(b"\\x00\\x01")
    {'type': 'BYTES', 'value': 'AAE='}
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..changelog.spark.jvm.jar import cache_dir
from ..spanner_client import database_path
from . import jvm_tools
from .json_lines_process import JsonLinesProcess
from .jvm_tools import JvmToolsMissing

#: The Maven project (pom.xml, src/main/java).
PROJECT_DIR = Path(__file__).resolve().parent / "javawatcher"
MAIN_CLASS = "dev.spannerwatcher.javawatcher.Main"
#: The Java library's version the project builds against (pom.xml's ``change-watcher.version``).
LIBRARY_VERSION = "1.2.1"
#: JVM options for short runs: the client starts faster with the quick compiler and a small GC.
QUICK_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k")
#: Always given: the JVM's own warnings go to stderr (by default they go to stdout, among the JSON lines).
_JVM_BASE = ("-Xlog:disable", "-Xlog:all=warning:stderr")
_BUILD_SECONDS = 600
_JAR = "javawatcher.jar"
_CLASSPATH = "classpath.txt"
_BUILDING = "javawatcher-build-"  # the prefix of a build's private folder


#: ``mvn`` or ``java`` is missing (the tools' one error, under the name callers knew).
JavaToolsMissing = JvmToolsMissing


class JavaBuildFailed(RuntimeError):
    """Maven could not build the program; the message holds Maven's last lines."""


def source_digest() -> str:
    """A digest of the Maven project's sources (pom.xml and every file under src/): the build's identity."""
    digest = hashlib.sha256()
    for path in [PROJECT_DIR / "pom.xml", *sorted((PROJECT_DIR / "src").rglob("*"))]:
        if path.is_file():
            digest.update(path.relative_to(PROJECT_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def tools(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The paths of ``mvn`` and ``java``; raises :class:`JavaToolsMissing`."""
    return jvm_tools.tools("the Java library's program", environ)


@dataclasses.dataclass(frozen=True)
class Build:
    """A built program: its folder, holding the jar and the runtime classpath file."""

    folder: Path

    @property
    def classpath(self) -> str:
        """The ``-cp`` argument: the program's jar, then the library and its dependencies."""
        return os.pathsep.join([str(self.folder / _JAR), (self.folder / _CLASSPATH).read_text().strip()])

    @property
    def class_archive(self) -> Path:
        """The JVM's class-data archive of this build (written by the first run): later runs start in
        about half the CPU time."""
        return self.folder / "classes.jsa"

    def archive_options(self) -> tuple[list[str], Path | None]:
        """JVM options that use the class archive, or that write it at exit (then also the file to
        rename into place with :meth:`keep_archive` once the run ended)."""
        if self.class_archive.is_file():
            return [f"-XX:SharedArchiveFile={self.class_archive}"], None
        partial = self.folder / f"classes.jsa.{os.getpid()}-{threading.get_ident()}.partial"
        return [f"-XX:ArchiveClassesAtExit={partial}"], partial

    def keep_archive(self, partial: Path | None) -> None:
        """Move an archive a run wrote into place (the first of several to finish wins)."""
        if partial is not None and partial.is_file():
            os.replace(partial, self.class_archive)

    def is_complete(self) -> bool:
        """True when the jar, the classpath file and every jar it names exist (``~/.m2`` may have been cleaned)."""
        if not (self.folder / _JAR).is_file() or not (self.folder / _CLASSPATH).is_file():
            return False
        return all(os.path.exists(p) for p in (self.folder / _CLASSPATH).read_text().strip().split(os.pathsep))


def build(*, force: bool = False) -> Build:
    """The program built from the current sources: taken from the cache when complete, else built.

    Maven runs offline first (``-o``: quick, no network when ``~/.m2`` has everything), online
    when that fails. The build happens in a private copy of the project and is renamed into
    place, so builds running at once do not disturb each other. Raises :class:`JavaToolsMissing`
    or :class:`JavaBuildFailed`.
    """
    mvn, _ = tools()
    if not (PROJECT_DIR / "pom.xml").is_file():
        raise JavaBuildFailed(f"no Maven project at {PROJECT_DIR}: it is not part of the installed package; "
                              "build from a source checkout")
    target = Build(cache_dir() / f"javawatcher-{source_digest()}")
    if target.is_complete() and not force:
        return target
    target.folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=_BUILDING, dir=target.folder.parent) as work:
        project = Path(work) / "project"
        shutil.copytree(PROJECT_DIR, project, ignore=shutil.ignore_patterns("target"))
        done = _maven(mvn, project, offline=True)
        if done.returncode != 0:
            done = _maven(mvn, project, offline=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise JavaBuildFailed(f"mvn package failed in {PROJECT_DIR} (exit {done.returncode}):\n{tail}")
        built = Path(work) / "built"
        built.mkdir()
        for name in (_JAR, _CLASSPATH):
            shutil.copy2(project / "target" / name, built / name)
        if target.folder.exists():  # a stale or incomplete build of the same sources
            shutil.rmtree(target.folder, ignore_errors=True)
        try:
            os.replace(built, target.folder)
        except OSError:
            if not target.is_complete():  # another process's build did not win either
                raise
    sweep_old_builds(target.folder)
    return target


def sweep_old_builds(keep: Path, older_than: float = 3600.0) -> list[Path]:
    """Remove the builds of other sources beside ``keep`` (each holds a class archive of some 30 MB)
    untouched for ``older_than`` seconds (a younger one may be another checkout's); returns them."""
    removed = []
    for folder in keep.parent.glob("javawatcher-*"):
        try:
            if folder == keep or folder.name.startswith(_BUILDING) or not folder.is_dir():
                continue
            if time.time() - folder.stat().st_mtime > older_than:
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:  # gone already, or not ours to remove
            continue
    return removed


def _maven(mvn: str, project: Path, *, offline: bool) -> subprocess.CompletedProcess[str]:
    command = [mvn, "-q", "-B", *(["-o"] if offline else []), "package"]
    try:
        return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=_BUILD_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise JavaBuildFailed(f"mvn package took more than {_BUILD_SECONDS} s in {project}") from exc


# --- configs ------------------------------------------------------------------------------------------

_SCALAR_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "BOOL"), (int, "INT64"), (float, "FLOAT64"), (str, "STRING"), (bytes, "BYTES"),
    (dt.datetime, "TIMESTAMP"), (dt.date, "DATE"), (decimal.Decimal, "NUMERIC"), (dict, "JSON"),
)


def spanner_type_name(value: Any) -> str:
    """The Spanner type name the program gets for a Python value (arrays by their first non-null element).

    >>> spanner_type_name([dt.date(2024, 1, 2)]), spanner_type_name(decimal.Decimal("1.5"))
    ('ARRAY<DATE>', 'NUMERIC')
    """
    if isinstance(value, (list, tuple)):
        first = next((v for v in value if v is not None), None)
        if first is None:
            raise ValueError("cannot tell the element type of an array without a non-null element; give the type")
        return f"ARRAY<{spanner_type_name(first)}>"
    for kind, name in _SCALAR_TYPES:  # bool before int, datetime before date: the first match wins
        if isinstance(value, kind):
            return name
    raise TypeError(f"no Spanner type for {value!r} of type {type(value).__name__}")


def typed(value: Any, type_name: str | None = None) -> dict[str, Any]:
    """A value as the program reads it: ``{"type": ..., "value": ...}``; ``type_name`` overrides the
    inferred type (e.g. ``"ARRAY<JSON>"`` for JSON texts).

    >>> typed(dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc))
    {'type': 'TIMESTAMP', 'value': '2024-01-02T00:00:00.000000000Z'}
    >>> typed(['{"a":1}'], "ARRAY<JSON>")
    {'type': 'ARRAY<JSON>', 'value': ['{"a":1}']}
    """
    return {"type": type_name or spanner_type_name(value), "value": _json_value(value)}


def _json_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.datetime):
        return rfc3339_nanos(value)
    if isinstance(value, (dt.date, decimal.Decimal)):
        return str(value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def rfc3339_nanos(value: dt.datetime) -> str:
    """A timestamp in UTC with nine fractional digits (nanoseconds kept when the value has them).

    >>> rfc3339_nanos(dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc))
    '2024-01-02T03:04:05.000006000Z'
    """
    nanos = getattr(value, "nanosecond", 0) or value.microsecond * 1000
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def watch_config(database: Any, table: str, *, shard_column: str | None = None, shard: Any = None,
                 shard_type: str | None = None, poll_interval: float = 0.1, **options: Any) -> dict[str, Any]:
    """The config of a watch run on ``table`` of ``database`` (a ``google.cloud.spanner_v1`` Database).

    ``options`` are further config keys (``stop_after_idle_polls=3``, ``initial_commit_timestamp="min"``, ...).
    """
    project, instance, db = database_path(database.name)
    config: dict[str, Any] = {"project": project, "instance": instance, "database": db, "table": table,
                              "poll_interval_ms": round(poll_interval * 1000)}
    if shard_column is not None:
        config["shard"] = {"column": shard_column, **typed(shard, shard_type)}
    config.update(options)
    return config


def checkpoints_config(database: Any, commit_timestamp: dt.datetime, shards: Sequence[tuple[str, Any, str | None]],
                       **options: Any) -> dict[str, Any]:
    """The config of a ``checkpoints`` run: one checkpoint row per ``(table name, shard value, type or None)``
    (value None: no shard), all at ``commit_timestamp``."""
    project, instance, db = database_path(database.name)
    rows = [{"table": table, **(typed(value, type_name) if value is not None else {})}
            for table, value, type_name in shards]
    return {"project": project, "instance": instance, "database": db, "mode": "checkpoints",
            "commit_timestamp": rfc3339_nanos(commit_timestamp), "shards": rows, **options}


# --- running ------------------------------------------------------------------------------------------

@dataclasses.dataclass
class JavaRun:
    """What one run printed: ``changes`` (the ``change`` lines: table, keys, commit_timestamp as RFC 3339
    with nanoseconds, received_ns, values), the ``started`` line (time_ns, cpu_ns) and the ``stopped``
    line (reason, state, failure, changes, polls, cpu_ns), the exit code and the JVM's log (stderr)."""

    changes: list[dict[str, Any]]
    started: dict[str, Any] | None
    stopped: dict[str, Any] | None
    returncode: int
    stderr: str
    others: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @classmethod
    def from_lines(cls, lines: Sequence[str], returncode: int, stderr: str) -> JavaRun:
        run = cls([], None, None, returncode, stderr)
        for line in lines:
            if not line.startswith("{"):  # not ours (a library printing to stdout): the log keeps it
                run.stderr += line if line.endswith("\n") else line + "\n"
                continue
            event = json.loads(line)
            kind = event.get("event")
            if kind == "change":
                run.changes.append(event)
            elif kind in ("started", "stopped"):
                setattr(run, kind, event)
            else:
                run.others.append(event)
        return run

    def check(self) -> JavaRun:
        """This run, or RuntimeError with the JVM's last log lines when it did not stop cleanly."""
        if self.returncode != 0 or self.stopped is None or self.stopped.get("failure"):
            tail = "\n".join(self.stderr.strip().splitlines()[-25:])
            raise RuntimeError(f"the Java watcher failed (exit {self.returncode}, {self.stopped}):\n{tail}")
        return self


def command(build_: Build, config: Mapping[str, Any], jvm_options: Sequence[str] = QUICK_START) -> list[str]:
    """The command line running the program with ``config`` (``jvm_options`` after ours)."""
    _, java = tools()
    return [java, *_JVM_BASE, *jvm_options, "-cp", build_.classpath, MAIN_CLASS, json.dumps(config)]


def child_environment(emulator_host: str | None = None) -> dict[str, str]:
    """This process's environment with ``SPANNER_EMULATOR_HOST`` set to ``emulator_host`` when given."""
    env = dict(os.environ)
    if emulator_host:
        env["SPANNER_EMULATOR_HOST"] = emulator_host
    return env


def run(build_: Build, config: Mapping[str, Any], *, emulator_host: str | None = None, timeout: float = 120.0,
        jvm_options: Sequence[str] = QUICK_START) -> JavaRun:
    """Run the program to its end (the config must say when to stop) and return what it printed."""
    archive, partial = build_.archive_options()
    done = subprocess.run(command(build_, config, [*archive, *jvm_options]), capture_output=True, text=True,
                          timeout=timeout, env=child_environment(emulator_host), stdin=subprocess.DEVNULL, check=False)
    build_.keep_archive(partial)
    return JavaRun.from_lines(done.stdout.splitlines(), done.returncode, done.stderr)


class JavaWatcherProcess:
    """A running program that watches until :meth:`stop` (its stdin closed), for benchmarks.

    :meth:`events` yields its parsed lines as they come (:mod:`~watcher.devtools.json_lines_process`);
    :meth:`stop` ends it and returns the whole run (the ``stopped`` line carries the process's CPU time).
    """

    def __init__(self, build_: Build, config: Mapping[str, Any], *, emulator_host: str | None = None,
                 jvm_options: Sequence[str] = ()) -> None:
        self._build = build_
        archive, self._partial = build_.archive_options()
        self._child = JsonLinesProcess(command(build_, {**config, "stop_on_stdin_close": True}, [*archive, *jvm_options]),
                                       env=child_environment(emulator_host), name="javawatcher-stdout")
        self.process = self._child.process

    def events(self) -> Iterator[dict[str, Any]]:
        """Each printed line (parsed) as it arrives, until the program ends."""
        return self._child.events()

    def stop(self, timeout: float = 30.0) -> JavaRun:
        """Close the program's stdin (it stops its watcher and prints its last line) and wait for it."""
        lines, returncode, stderr = self._child.stop(timeout)
        self._build.keep_archive(self._partial)
        return JavaRun.from_lines(lines, returncode, stderr)


def main() -> int:
    """Build the program when the cache lacks it and print its folder; print one line and exit 1 when it cannot."""
    try:
        print(build().folder)
    except (JavaToolsMissing, JavaBuildFailed, OSError) as exc:
        first = str(exc).splitlines()[0]
        print(f"spanner-watcher: the Java library's program ({LIBRARY_VERSION}) was not built: {first}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
