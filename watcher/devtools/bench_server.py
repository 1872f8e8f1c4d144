"""The local Spanner server as a separate process, for benchmarks.

A benchmark's writers and watchers should not share a Python interpreter (nor its GIL)
with the server they measure, so :class:`ServerProcess` runs ``python -m watcher
local-spanner`` as a child and reads the address it prints.

Example::

    with ServerProcess(port=0) as server:
        os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any, Self

from ..errors import ConfigurationError

#: Seconds the server gets to print its address, and to stop after SIGTERM.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
_READY = "export SPANNER_EMULATOR_HOST="


class ServerProcess:
    """``python -m watcher local-spanner --port PORT [--data-dir DIR]`` as a child process.

    The server's log (stderr) is appended to ``log_path`` when given, else read and dropped.
    ``source`` is a checkout whose ``watcher`` package runs the server instead of this one
    (a benchmark comparing with an older version of the server). ``options`` are more
    ``local-spanner`` arguments, e.g. ``("--change-stream-split-rate", "150")``.
    """

    def __init__(self, port: int = 0, data_dir: str | None = None, host: str = "127.0.0.1", *,
                 log_path: str | None = None, source: str | None = None, options: Sequence[str] = ()) -> None:
        self.port, self.data_dir, self.host, self.log_path = port, data_dir, host, log_path
        self.source, self.options = source, tuple(options)
        self.process: subprocess.Popen[str] | None = None
        self.emulator_host = ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> Self:
        """Start the server; a port in use or a bad folder raises ConfigurationError with its message."""
        command = [sys.executable, "-m", "watcher", "local-spanner", "--host", self.host, "--port", str(self.port)]
        if self.data_dir:
            command += ["--data-dir", self.data_dir]
        command += self.options
        # A session of its own: Ctrl-C at a terminal reaches the whole foreground process group, and
        # the server would stop at once under a benchmark that is still finishing its run; the
        # benchmark stops it with SIGTERM when it is done (stop()).
        placement: dict[str, Any] = {"start_new_session": True}
        if self.source:  # "-m" puts the working folder first on sys.path: the checkout's package wins
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [self.source, os.environ.get("PYTHONPATH")])))
            placement |= {"cwd": self.source, "env": env}
        if self.log_path:
            with open(self.log_path, "a") as log:
                self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, **placement)
        else:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **placement)
        line = _read_line(self.process, START_TIMEOUT)
        if not line.startswith(_READY):
            error = self._error_output()
            self.stop()
            where = f" (its log: {self.log_path})" if self.log_path else ""
            raise ConfigurationError((_reason(error) or f"the local Spanner server did not start within {START_TIMEOUT:g} s")
                                     + where)
        self.emulator_host = line.strip()[len(_READY):]
        if not self.log_path:  # drain the log so that a chatty server never blocks on a full pipe
            threading.Thread(target=_drain, args=(self.process,), daemon=True).start()
        return self

    def _error_output(self) -> str:
        """What the server said before it failed to print its address (it is exiting, or hangs)."""
        assert self.process is not None
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            return ""
        if self.log_path:
            with open(self.log_path) as log:
                return log.read()[-4000:]
        return self.process.stderr.read() if self.process.stderr is not None else ""

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def cpu_seconds(self) -> float:
        """User plus system CPU seconds the server has used (0 once it is gone)."""
        try:
            return process_cpu_seconds(self.pid)
        except (OSError, AssertionError):
            return 0.0

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid``, all its threads (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _reason(stderr: str) -> str:
    """The server's one-line error, without its program prefix."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last.split(": error: ", 1)[1] if ": error: " in last else last


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(process.stdout.readline() if process.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


def _drain(process: subprocess.Popen[str]) -> None:
    stream = process.stderr
    if stream is None:
        return
    for _ in stream:
        pass
