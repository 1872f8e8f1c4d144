"""A real Apache Kafka broker (KRaft mode, no ZooKeeper) as a child JVM, for tests, the demo and benchmarks.

The jars come from Maven: ``kafka/pom.xml`` beside this module names ``org.apache.kafka:kafka_2.13``
(4.x) and a log4j2 binding; ``mvn dependency:build-classpath`` resolves them into ``~/.m2`` and
writes the classpath, once per digest of the pom, into the cache folder
(:func:`watcher.changelog.spark.jvm.jar.cache_dir`); offline first, online when ``~/.m2`` lacks a jar.
The first broker that stops cleanly leaves a class-data archive of the JVM beside the classpath
(``classes.jsa``), which later brokers start from in about half the time. ``./run.sh setup``
resolves the jars and makes the archive (``python -m watcher.devtools.kafka_broker``), so tests
find both ready.

:class:`KafkaBroker` formats a fresh storage folder with a random cluster id, then runs one
process that is broker and controller at once (``process.roles=broker,controller``) on two free
loopback ports, and waits until it accepts connections. :meth:`KafkaBroker.stop` ends the process
(a crash with ``kill=True``) and keeps its data; :meth:`KafkaBroker.start` runs it again on the
same ports and data, so a test can take the broker away under a running producer and bring it
back. The broker's output goes to ``broker.log`` in its folder (:meth:`KafkaBroker.log_tail`).

Example::

    with KafkaBroker() as broker:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
        ...
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import Any, Self

from ..changelog.spark.jvm.jar import cache_dir
from . import jvm_tools, maven_classpath
from .jvm_tools import JvmToolsMissing

#: The Maven project naming the broker's jars.
POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
#: JVM options for a small, short-lived broker: quick start, little memory.
JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k",
               "-Djava.awt.headless=true")
#: What the broker prints once it serves clients.
_STARTED = "Kafka Server started"
_ARCHIVE = "classes.jsa"

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
"""


#: ``mvn`` or ``java`` is missing (the tools' one error, under the name callers knew).
KafkaToolsMissing = JvmToolsMissing


class KafkaBrokerFailed(RuntimeError):
    """The jars could not be resolved, or the broker did not come up; the message holds the last lines of its output."""


def pom_digest() -> str:
    """The digest of the pom: the classpath's identity in the cache."""
    return maven_classpath.pom_digest(POM)


def _tools() -> tuple[str, str]:
    return jvm_tools.tools("the Kafka broker")


def cache_folder() -> Path:
    """Where the classpath and the class-data archive of the current pom are kept."""
    return cache_dir() / f"kafka-broker-{pom_digest()}"


def classpath(*, force: bool = False) -> str:
    """The broker's classpath, resolved by Maven once per pom digest (cached; jars in ``~/.m2``).

    Raises :class:`KafkaToolsMissing` or :class:`KafkaBrokerFailed`.
    """
    return maven_classpath.resolve(POM, cache_folder(), KafkaBrokerFailed, purpose="the Kafka broker", force=force)


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_id() -> str:
    """A random cluster id as Kafka writes them (16 random bytes, URL-safe base64 without padding).

    >>> len(cluster_id())
    22
    """
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def server_properties(folder: Path, port: int, controller_port: int, partitions: int = 1) -> str:
    """The configuration of a one-node cluster: broker and controller in one process, on loopback."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(folder / "data"),
        "num.partitions": str(partitions),
        # one node: every internal topic has one replica, and consumer groups need not wait for others
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # A node restarted after a crash registers again only once its old registration lapsed (9 s by default)
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "auto.create.topics.enable": "true",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class KafkaBroker:
    """One Kafka node (broker and controller) in a child JVM; see the module docstring.

    Args:
        folder: where its configuration, data and log go (default: a new temporary folder, removed at :meth:`close`).
        start_timeout: seconds the broker has to come up.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, start_timeout: float = 90.0) -> None:
        self._own_folder = folder is None
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="kafka-broker-"))
        self.start_timeout = start_timeout
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:  # two quick asks may get the same free port
            self.controller_port = free_port()
        self.log_path = self.folder / "broker.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._classpath: str | None = None
        self._formatted = False
        self._archive_partial: Path | None = None  # the archive this run writes at a clean exit

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _java(self, main: str, *args: str, archive: list[str] | None = None) -> list[str]:
        if self._classpath is None:
            self._classpath = classpath()
        _, java = _tools()
        return [java, *JVM_OPTIONS, *(archive or []), f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
                "-cp", self._classpath, main, *args]

    def _archive_options(self) -> list[str]:
        """Start from the class-data archive, or write one at a clean exit when there is none yet."""
        archive = cache_folder() / _ARCHIVE
        if archive.is_file():
            self._archive_partial = None
            return [f"-XX:SharedArchiveFile={archive}"]
        self._archive_partial = cache_folder() / f"{_ARCHIVE}.{os.getpid()}-{self.port}.partial"
        return [f"-XX:ArchiveClassesAtExit={self._archive_partial}"]

    def _keep_archive(self) -> None:
        partial, self._archive_partial = self._archive_partial, None
        if partial is not None and partial.is_file():
            os.replace(partial, cache_folder() / _ARCHIVE)  # the first of several to finish wins

    def _prepare(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "server.properties"
        config.write_text(server_properties(self.folder, self.port, self.controller_port))
        (self.folder / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_path))
        archive = cache_folder() / _ARCHIVE  # the broker's classes serve the storage tool too (same classpath)
        # "=": a random id may start with "-", which the tool would take for an option
        command = self._java(STORAGE_TOOL, "format", f"--cluster-id={cluster_id()}", "-c", str(config),
                             archive=[f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else [])
        done = subprocess.run(command,
                              capture_output=True, text=True, timeout=self.start_timeout, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise KafkaBrokerFailed(f"formatting the broker's storage in {self.folder} failed (exit {done.returncode}):\n{tail}")
        self._formatted = True

    def start(self) -> Self:
        """Run the broker (formatting its storage the first time) and wait until it serves clients."""
        if self.running:
            return self
        if not self._formatted:
            self._prepare()
        started_before = self._log_text().count(_STARTED)
        with open(self.folder / "stdout.log", "ab") as out:
            command = self._java(MAIN_CLASS, str(self.folder / "server.properties"), archive=self._archive_options())
            self._process = subprocess.Popen(command,
                                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _RUNNING.add(self)
        deadline = time.monotonic() + self.start_timeout
        while self._log_text().count(_STARTED) <= started_before or not _accepts(self.port):
            if self._process.poll() is not None:
                raise KafkaBrokerFailed(f"the Kafka broker exited with {self._process.returncode} while starting:\n"
                                        f"{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop(kill=True)
                raise KafkaBrokerFailed(f"the Kafka broker did not start within {self.start_timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)
        return self

    def stop(self, *, kill: bool = False, timeout: float = 30.0) -> None:
        """End the broker (SIGTERM: a clean shutdown; ``kill``: SIGKILL, a crash); its data stays for :meth:`start`."""
        process, self._process = self._process, None
        _RUNNING.discard(self)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if kill:
            self._archive_partial = None  # a killed JVM writes no archive
        else:
            self._keep_archive()

    def close(self) -> None:
        """Stop the broker and remove its folder when the broker made it."""
        self.stop()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's log and of its own output (for a failure's report)."""
        return jvm_tools.log_tail((self.log_path, self.folder / "stdout.log"), lines)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: Brokers this process started and has not stopped: killed when the interpreter exits, so none outlives it.
_RUNNING: weakref.WeakSet[KafkaBroker] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for broker in list(_RUNNING):
        broker.stop(kill=True)
        if broker._own_folder:
            shutil.rmtree(broker.folder, ignore_errors=True)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def main() -> int:
    """Resolve the broker's jars and make its class-data archive (``./run.sh setup``); one line on stderr
    says why when it cannot."""
    try:
        jars = classpath().count(os.pathsep) + 1
        if not (cache_folder() / _ARCHIVE).is_file():
            with KafkaBroker():  # started and stopped cleanly: the JVM writes the archive as it exits
                pass
        print(f"{jars} jars on the Kafka broker's classpath; class-data archive in {cache_folder() / _ARCHIVE}")
        return 0
    except (KafkaToolsMissing, KafkaBrokerFailed, OSError, subprocess.SubprocessError) as exc:
        print(f"kafka broker: {exc}".splitlines()[0], file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
