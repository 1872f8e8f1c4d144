"""Helpers of the crash tests' child processes: connect, append lines durably, run a watcher until it fails.

A child (``python -m tests.<area>.<name>_child ...``) builds its watcher, then hands it to
:func:`run_until_failure`; the parent test kills it with SIGKILL at a random moment and starts
another, so a child never stops on its own unless its watcher failed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from google.cloud import spanner

from watcher.capture.base import Watcher

#: The exit code of a child whose watcher failed (a killed child never gets to exit).
FAILED_EXIT_CODE = 3


def connect(project: str, instance: str, database: str) -> Any:
    """The database through the official client (it connects to SPANNER_EMULATOR_HOST)."""
    return spanner.Client(project=project).instance(instance).database(database)


def line_appender(path: str) -> Callable[[str], None]:
    """A function that appends one line to ``path`` and fsyncs it, so the line outlives a SIGKILL."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(line: str) -> None:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)

    return append


def run_until_failure(watcher: Watcher, *, check_every: float = 0.05) -> int:
    """Start ``watcher``, print ``started`` on stdout and wait until it fails; then print why on stderr
    (the parent shows stderr when a child ended early) and return :data:`FAILED_EXIT_CODE`."""
    watcher.start()
    print("started", flush=True)
    while watcher.failure is None:
        time.sleep(check_every)
    print(f"failed: {watcher.failure!r}", file=sys.stderr, flush=True)
    return FAILED_EXIT_CODE
