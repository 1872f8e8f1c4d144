"""Killing a streaming changelog query at its worst moment: the SIGKILL tests of both source modes.

The query runs in a child process (:mod:`tests.changelog.streaming_driver`, ``local[1]``); the
test waits until a micro-batch's changelog run is committed while Spark has not yet recorded
the micro-batch as done, and kills the child's process group there. Spark then replays that
micro-batch when the query starts again from its checkpoint: it must read the same rows and
write none of them twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).with_name("streaming_driver.py")
#: Seconds at most until the child reaches the worst moment (the wait ends as soon as it does).
KILL_WAIT = 300.0


@dataclass(frozen=True)
class Killed:
    """Where the child was killed: Spark had recorded ``acknowledged`` micro-batches as done, and
    ``replays`` says whether the changelog already held the next one (then Spark replays it)."""

    acknowledged: int
    replays: bool


def start_driver(database: str, tmp_path: Path, options: Mapping[str, str], trigger: str,
                 die_at: str | None = None, skip: int = 0) -> subprocess.Popen:
    """The child query on ``database`` with the source ``options``, writing ``tmp_path``'s
    ``warehouse`` with its checkpoint in ``checkpoint``; its output goes to ``driver.log``.
    With ``die_at`` it kills itself at that step of the run of its micro-batch after ``skip`` runs."""
    args = [sys.executable, str(DRIVER), "--database", database, "--trigger", trigger,
            "--warehouse", str(tmp_path / "warehouse"), "--checkpoint", str(tmp_path / "checkpoint"),
            *[f"--option={k}={v}" for k, v in options.items()],
            *(["--die-at", die_at, "--die-after-runs", str(skip)] if die_at else [])]
    log = open(tmp_path / "driver.log", "ab")  # noqa: SIM115 - the child writes it until it ends
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True)


def runs_committed(warehouse: Path) -> int:
    """Changelog runs complete (each micro-batch with rows is one): the ``watermarks`` table's commits
    after its creation, as a run's last commit goes there."""
    return max(0, len(list((warehouse / "watermarks" / "_delta_log").glob("*.json"))) - 1)


def batches_acknowledged(checkpoint: Path) -> int:
    """Micro-batches Spark has recorded as done in the checkpoint's commit log."""
    return sum(1 for p in (checkpoint / "commits").glob("*") if p.name.isdigit())


def kill_mid_batch(driver: subprocess.Popen, tmp_path: Path) -> Killed:
    """SIGKILL the child between a micro-batch's changelog commit and Spark's (fails the test with
    the child's log if it ends on its own or never gets there)."""
    warehouse, checkpoint = tmp_path / "warehouse", tmp_path / "checkpoint"
    deadline = time.monotonic() + KILL_WAIT
    while runs_committed(warehouse) <= batches_acknowledged(checkpoint) and driver.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    stop(driver)
    log = (tmp_path / "driver.log").read_text()[-3000:]
    assert driver.returncode == -signal.SIGKILL, log
    acknowledged = batches_acknowledged(checkpoint)
    assert runs_committed(warehouse) > 0, f"no micro-batch reached the changelog before the kill:\n{log}"
    # Unless Spark recorded the batch in the instant between the check and the kill:
    return Killed(acknowledged, runs_committed(warehouse) > acknowledged)


def died_at_its_step(driver: subprocess.Popen, tmp_path: Path) -> None:
    """Wait until the child killed itself at its ``die_at`` step (fails with its log if it did not), then
    kill what is left of its process group (Spark's JVM)."""
    try:
        ended = driver.wait(KILL_WAIT)
    except subprocess.TimeoutExpired:
        ended = None  # never got there: the SIGKILL below is the test's, not the child's
    stop(driver)
    assert ended == -signal.SIGKILL, (tmp_path / "driver.log").read_text()[-3000:]


def stop(driver: subprocess.Popen) -> None:
    """Kill the child's process group (Spark's JVM with it), also when the child itself has ended."""
    try:
        os.killpg(driver.pid, signal.SIGKILL)
    except ProcessLookupError:  # the whole group is gone
        pass
    driver.wait(30)


def resume(query: Any, writer: Any, killed: Killed) -> None:
    """Run ``query``, started again from the killed child's checkpoint with the changelog ``writer``,
    until it has read everything; stop it; check that the micro-batch the kill cut, when the
    changelog held it already, wrote nothing again."""
    try:
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    if killed.replays:
        replayed = writer.batches()[0]
        assert (replayed.batch_id, replayed.changes_written) == (killed.acknowledged, 0), "the replay wrote again"
