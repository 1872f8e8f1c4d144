"""The APScheduler glue of a poll loop: one job at a time on a private or shared scheduler.

A :class:`PollJob` runs a function (the watcher's poll cycle) as a one-shot APScheduler job
that the function reschedules when it is done; a lock keeps runs of one loop from overlapping.
It owns a private BackgroundScheduler unless it was given one; a scheduler or executor it was
given is never shut down by it.

Example::

    job = PollJob("spanner-watcher-Singers", cycle)
    job.start()              # runs cycle() at once
    job.next_in(1.0)         # (inside cycle) run it again in a second
    job.cancel(); job.shutdown()
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
import threading
from collections.abc import Callable
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger


class PollJob:
    """Schedules one function, one run at a time.

    Args:
        job_id: the APScheduler job id (unique on a shared scheduler).
        run: what each run calls.
        scheduler: a scheduler to share (None: a private one with one thread).
        executor: an executor to run on (added to the scheduler under a name of its own).
    """

    def __init__(self, job_id: str, run: Callable[[], None], *, scheduler: BaseScheduler | None = None,
                 executor: Any = None) -> None:
        self.job_id = job_id
        self.run = run
        self._given_scheduler = scheduler
        self._given_executor = executor
        self._scheduler: BaseScheduler | None = None
        self._executor_alias = "default"
        self._lock = threading.Lock()
        self._running = threading.Lock()
        self._cancelled = threading.Event()

    def run_on(self, scheduler: BaseScheduler | None) -> None:
        """Share ``scheduler`` from the next :meth:`start` on (None: a private one)."""
        self._given_scheduler = scheduler

    def start(self) -> None:
        """Make sure a scheduler runs and run the function at once."""
        with self._lock:
            self._cancelled.clear()
            if self._given_scheduler is not None:
                self._scheduler = self._given_scheduler
            elif self._scheduler is None or not self._scheduler.running:
                self._scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(1)}, daemon=True)
                self._scheduler.start()
            if self._given_executor is not None:
                self._executor_alias = self.job_id
                with contextlib.suppress(ValueError):  # already added by an earlier start
                    self._scheduler.add_executor(self._given_executor, alias=self._executor_alias)
        self.next_in(0.0)

    def next_in(self, seconds: float) -> None:
        """Run the function after ``seconds`` (replacing a run not yet begun); nothing once cancelled."""
        scheduler = self._scheduler
        if scheduler is None or self._cancelled.is_set():
            return
        when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
        # The function reschedules itself before it has returned, and APScheduler counts it as
        # running until its thread gets to say it has: a run falling due in that gap would be
        # skipped under a bound of one instance, and a skipped one-shot run is dropped for good
        # (the loop would stop polling while its watcher reads RUNNING). So no bound here; the
        # lock in _tick keeps runs one at a time.
        scheduler.add_job(self._tick, DateTrigger(run_date=when), id=self.job_id, misfire_grace_time=None,
                          executor=self._executor_alias, replace_existing=True, max_instances=sys.maxsize,
                          name=self.job_id)

    def _tick(self) -> None:
        with self._running:  # a run falling due while the one before is still returning waits for it
            self.run()

    def cancel(self) -> None:
        """Drop the next run; a run in progress goes on (and cannot reschedule itself)."""
        self._cancelled.set()
        if self._scheduler is not None:
            with contextlib.suppress(Exception):  # already gone
                self._scheduler.remove_job(self.job_id)

    def shutdown(self) -> None:
        """Shut the private scheduler down (a shared one only loses the executor added to it)."""
        with self._lock:
            scheduler = self._scheduler
            if scheduler is not None and self._given_executor is not None:
                with contextlib.suppress(KeyError):
                    scheduler.remove_executor(self._executor_alias, shutdown=False)
            if scheduler is None or scheduler is self._given_scheduler:
                return
            self._scheduler = None
        with contextlib.suppress(SchedulerNotRunningError):  # shut down by a concurrent failure cleanup
            scheduler.shutdown(wait=False)
