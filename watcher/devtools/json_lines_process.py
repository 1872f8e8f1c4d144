"""A child process that prints one JSON object a line, read as it comes: the watcher programs benchmarks run.

A thread reads the child's stdout as it comes (so the child never waits on a full pipe);
:meth:`JsonLinesProcess.events` yields the parsed lines in order, also from another thread,
until the child ended; :meth:`JsonLinesProcess.stop` closes the child's stdin (the programs
take that as the signal to stop and print their last line), waits, and returns everything it
printed with its exit status and stderr.

Example:
    >>> import sys
    >>> child = JsonLinesProcess([sys.executable, "-c", "print('{\\"event\\": \\"started\\"}')"])
    >>> next(child.events())
    {'event': 'started'}
    >>> lines, returncode, _ = child.stop()
    >>> lines, returncode
    (['{"event": "started"}\\n'], 0)
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any


class JsonLinesProcess:
    """``argv`` started with a pipe for stdin and stdout, stderr kept in a temporary file."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 name: str = "child-stdout") -> None:
        self._log = tempfile.TemporaryFile(mode="w+")
        self._lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.process = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        text=True, cwd=cwd, env=None if env is None else dict(env))
        self._reader = threading.Thread(target=self._read, name=name, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def events(self) -> Iterator[dict[str, Any]]:
        """Each JSON line (parsed) as it arrives, until the child ends; other lines are skipped."""
        while (line := self._queue.get()) is not None:
            if line.startswith("{"):
                yield json.loads(line)
        self._queue.put(None)  # a second reader ends too

    def stop(self, timeout: float = 60.0) -> tuple[list[str], int, str]:
        """Close the child's stdin and wait for it (killed after ``timeout``): (lines printed, exit status, stderr)."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except OSError:
            pass  # it has ended already
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout)
        self._log.seek(0)
        stderr = self._log.read()
        self._log.close()
        return self._lines, self.process.returncode, stderr
