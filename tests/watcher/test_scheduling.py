"""The poll loop's scheduling: a run that reschedules itself is never lost, runs never overlap."""

from __future__ import annotations

import threading
import time

import pytest
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from tests.watcher.core_support import wait_until
from watcher.capture.scheduling import PollJob


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared-pool"])
def test_a_run_due_while_the_one_before_is_still_returning_runs_after_it(shared):
    """A loaded machine can keep a run's thread from returning for longer than the poll interval
    after it rescheduled itself; the next run must then wait for it, not be skipped (a skipped
    one-shot run ended the loop for good: the watcher read RUNNING and never polled again)."""
    scheduler = None
    if shared:
        scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(4)}, daemon=True)
        scheduler.start()
    runs, active, most_active = [], [0], [0]
    guard = threading.Lock()

    def run() -> None:
        with guard:
            active[0] += 1
            most_active[0] = max(most_active[0], active[0])
        runs.append(time.monotonic())
        if len(runs) < 5:
            job.next_in(0.0)
        time.sleep(0.2)  # the thread starved between rescheduling and returning
        with guard:
            active[0] -= 1

    job = PollJob("test-loop", run, scheduler=scheduler)
    try:
        job.start()
        wait_until(lambda: len(runs) == 5, timeout=20)
        time.sleep(0.3)
        assert len(runs) == 5  # one chain: no run twice
        assert most_active[0] == 1
        # each run began after the one before had finished its sleep
        assert all(b - a >= 0.19 for a, b in zip(runs, runs[1:], strict=False))
    finally:
        job.cancel()
        job.shutdown()
        if scheduler is not None:
            scheduler.shutdown(wait=False)


def test_a_cancelled_loop_runs_no_more():
    runs = []

    def run() -> None:
        runs.append(1)
        job.next_in(0.05)

    job = PollJob("test-cancel", run)
    try:
        job.start()
        wait_until(lambda: len(runs) >= 3, timeout=20)
        job.cancel()
        at_cancel = len(runs)
        time.sleep(0.5)  # ten more runs, had the loop gone on
        assert len(runs) <= at_cancel + 1  # a run already due at the cancel may still come, and not reschedule
    finally:
        job.shutdown()
