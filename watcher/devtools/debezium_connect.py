"""Debezium's Spanner connector in Kafka Connect (standalone worker) as a child JVM, for benchmarks.

The jars come from Maven: ``debezium/pom.xml`` beside this module names Kafka Connect's runtime
(``org.apache.kafka:connect-runtime``, the broker's Kafka version) and
``io.debezium:debezium-connector-spanner``; :mod:`~watcher.devtools.maven_classpath` resolves them
once per digest of the pom. The connector's jars sit on the worker's classpath, so no plugin
folder is needed.

:class:`DebeziumConnect` writes a worker configuration (JSON converters without schemas, offsets
in a file, its REST listener on a free loopback port) and one connector configuration
(:func:`connector_config`: the server named by ``gcp.spanner.emulator.host``, plaintext and no
credentials), runs ``ConnectStandalone`` on them and waits until the connector's task reports
RUNNING through the REST API. The connector keeps its own bookkeeping in Kafka (a sync topic and a
rebalancing topic per connector name); its change events go to ``<connector name>.<table>``.
:meth:`DebeziumConnect.stop` ends the worker with SIGTERM (Connect's clean shutdown).

Example::

    with DebeziumConnect(broker.bootstrap_servers, server.emulator_host, project="p", instance="i",
                         database="db", change_stream="SingersStream") as connect:
        ...  # read connect.topic("Singers")
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from ..changelog.spark.jvm.jar import cache_dir
from . import jvm_tools, maven_classpath
from .kafka_broker import free_port

#: The Maven project naming the worker's and the connector's jars.
POM = Path(__file__).resolve().parent / "debezium" / "pom.xml"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
CONNECTOR_CLASS = "io.debezium.connector.spanner.SpannerConnector"
JVM_OPTIONS = ("-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.connect.name = org.apache.kafka.connect.runtime.WorkerSourceTask
logger.connect.level = INFO
"""


class DebeziumConnectFailed(RuntimeError):
    """The jars could not be resolved, or the worker or its connector did not come up; the message holds its log's end."""


def cache_folder() -> Path:
    """Where the classpath of the current pom is kept."""
    return cache_dir() / f"debezium-connect-{maven_classpath.pom_digest(POM)}"


def classpath(*, force: bool = False) -> str:
    """The worker's classpath, resolved by Maven once per pom digest (cached; jars in ``~/.m2``)."""
    return maven_classpath.resolve(POM, cache_folder(), DebeziumConnectFailed, purpose="Kafka Connect with Debezium",
                                   force=force)


def connector_config(name: str, bootstrap_servers: str, emulator_host: str, *, project: str, instance: str,
                     database: str, change_stream: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spanner connector's settings for a database of a local server at ``emulator_host``.

    >>> c = connector_config("dbz", "127.0.0.1:9092", "127.0.0.1:9010", project="p", instance="i", database="d",
    ...                      change_stream="S")
    >>> c["gcp.spanner.emulator.host"], c["connector.spanner.sync.kafka.bootstrap.servers"]
    ('http://127.0.0.1:9010', '127.0.0.1:9092')
    """
    return {
        "name": name,
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": "1",
        "gcp.spanner.project.id": project,
        "gcp.spanner.instance.id": instance,
        "gcp.spanner.database.id": database,
        "gcp.spanner.change.stream": change_stream,
        "gcp.spanner.emulator.host": f"http://{emulator_host}",
        # the connector's own producers and consumers (sync and rebalancing topics) need the broker too
        "connector.spanner.sync.kafka.bootstrap.servers": bootstrap_servers,
        **(extra or {}),
    }


def worker_config(folder: Path, bootstrap_servers: str, rest_port: int) -> dict[str, str]:
    """A standalone worker: JSON without schemas (a consumer reads the envelope itself), offsets in ``folder``."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "offset.storage.file.filename": str(folder / "offsets.dat"),
        "offset.flush.interval.ms": "1000",
        "listeners": f"http://127.0.0.1:{rest_port}",
    }


def _properties(settings: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class DebeziumConnect:
    """A standalone Connect worker running one Spanner connector; see the module docstring.

    Args:
        bootstrap_servers: the Kafka broker.
        emulator_host: ``host:port`` of the local Spanner server.
        project, instance, database, change_stream: what the connector reads.
        name: the connector's name (its topics' prefix).
        extra: further connector settings (e.g. ``gcp.spanner.start.time``).
        folder: configuration, offsets and log (default: a new temporary folder, removed at :meth:`close`).
    """

    def __init__(self, bootstrap_servers: str, emulator_host: str, *, project: str, instance: str, database: str,
                 change_stream: str, name: str = "spanner-dbz", extra: Mapping[str, str] | None = None,
                 folder: str | os.PathLike[str] | None = None, start_timeout: float = 180.0) -> None:
        self._own_folder = folder is None
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="debezium-connect-"))
        self.name, self.start_timeout = name, start_timeout
        self.rest_port = free_port()
        self.connector = connector_config(name, bootstrap_servers, emulator_host, project=project, instance=instance,
                                          database=database, change_stream=change_stream, extra=extra)
        self.worker = worker_config(self.folder, bootstrap_servers, self.rest_port)
        self.log_path = self.folder / "connect.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The worker JVM's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def topic(self, table: str) -> str:
        """The topic of ``table``'s change events."""
        return f"{self.name}.{table}"

    def start(self) -> Self:
        """Run the worker and wait until the connector's task is RUNNING."""
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "worker.properties").write_text(_properties(self.worker))
        (self.folder / "connector.properties").write_text(_properties(self.connector))
        (self.folder / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_path))
        jars = classpath()
        _, java = jvm_tools.tools("Kafka Connect with Debezium")
        command = [java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
                   "-cp", jars, MAIN_CLASS, str(self.folder / "worker.properties"),
                   str(self.folder / "connector.properties")]
        with open(self.folder / "stdout.log", "ab") as out:
            self._process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             env={k: v for k, v in os.environ.items() if k != "SPANNER_EMULATOR_HOST"})
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._process.poll() is not None:
                raise DebeziumConnectFailed(f"Kafka Connect exited with {self._process.returncode} while starting:\n"
                                            f"{self.log_tail()}")
            state = self.status()
            tasks = state.get("tasks") or []
            if any(t.get("state") == "FAILED" for t in tasks) or state.get("connector", {}).get("state") == "FAILED":
                trace = " ".join(t.get("trace", "") for t in tasks) or state.get("connector", {}).get("trace", "")
                self.stop()
                raise DebeziumConnectFailed(f"the connector {self.name} failed: {trace[:3000]}")
            if tasks and all(t.get("state") == "RUNNING" for t in tasks):
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise DebeziumConnectFailed(f"the connector {self.name} was not RUNNING within {self.start_timeout:.0f} s "
                                            f"({state}):\n{self.log_tail()}")
            time.sleep(0.5)

    def status(self) -> dict[str, Any]:
        """The connector's status from the worker's REST API (empty while the worker does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}/connectors/{self.name}/status",
                                        timeout=5) as reply:
                return dict(json.load(reply))
        except (urllib.error.URLError, OSError, ValueError):
            return {}

    def stop(self, timeout: float = 60.0) -> None:
        """End the worker with SIGTERM (Connect stops its tasks and flushes offsets), SIGKILL after ``timeout``."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def close(self) -> None:
        """Stop the worker and remove its folder when it made it."""
        self.stop()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the worker's log and output (for a failure's report)."""
        return jvm_tools.log_tail((self.log_path, self.folder / "stdout.log"), lines)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
