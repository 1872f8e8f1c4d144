"""A standalone Spark cluster for tests and benchmarks: one master and one worker from the pyspark distribution.

Both run as separate processes on the loopback interface (``spark-class ...Master`` and
``...Worker``, as a user would start them from the pyspark wheel), the worker with
:data:`WORKER_CORES` cores; :class:`StandaloneCluster` stops them when its block ends.

Example::

    with StandaloneCluster(workdir) as cluster:
        spark = SparkSession.builder.master(cluster.url).getOrCreate()

>>> StandaloneCluster("/tmp/x", memory="1g").url.startswith("spark://127.0.0.1:")
True
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType

#: The worker's cores and memory: the machine's two cores, as local[2] gets them.
WORKER_CORES = 2
WORKER_MEMORY = "2g"
#: Seconds the master and worker get to start (JVMs start slowly on a loaded machine).
START_TIMEOUT = 240.0


def spark_class() -> Path:
    """The pyspark distribution's ``bin/spark-class``."""
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StandaloneCluster:
    """Master + worker on 127.0.0.1 for the duration of a ``with`` block; ``url`` is the master's."""

    def __init__(self, workdir: str | Path, *, cores: int = WORKER_CORES, memory: str = WORKER_MEMORY,
                 drop_env: tuple[str, ...] = ()) -> None:
        self.home = Path(workdir) / "spark-cluster"
        self.cores, self.memory, self.drop_env = cores, memory, drop_env
        self.port, self.master_ui, self.worker_ui = free_port(), free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "MASTER", *self.drop_env)}
        env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(self.home / "logs"),
                   SPARK_WORKER_DIR=str(self.home / "work"))
        return env

    def _start(self, name: str, args: list[str]) -> None:
        with open(self.home / f"{name}.log", "wb") as log:
            self._procs.append(subprocess.Popen([str(spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                                env=self._env(), cwd=self.home))

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui}/json/", timeout=2) as reply:
                return int(json.load(reply).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def __enter__(self) -> StandaloneCluster:
        self.home.mkdir(parents=True, exist_ok=True)
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(self.port), "--webui-port", str(self.master_ui)])
            self._start("worker", ["org.apache.spark.deploy.worker.Worker", self.url, "--cores", str(self.cores),
                                   "--memory", self.memory, "--host", "127.0.0.1",
                                   "--webui-port", str(self.worker_ui), "--work-dir", str(self.home / "work")])
            deadline = time.monotonic() + START_TIMEOUT
            while self.alive_workers() < 1:
                if time.monotonic() > deadline or any(p.poll() is not None for p in self._procs):
                    logs = "\n".join((self.home / f"{n}.log").read_text(errors="replace")[-2000:]
                                     for n in ("master", "worker"))
                    raise RuntimeError(f"the standalone cluster did not start:\n{logs}")
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the worker, then the master (each by its own process id)."""
        for proc in reversed(self._procs):
            stop_process(proc)
        self._procs.clear()


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Stop ``proc`` with SIGTERM, then SIGKILL if it has not ended within 20 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
