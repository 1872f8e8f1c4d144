"""Where the SIGKILL tests kill a changelog run: before its first commit, or right after one table's commit.

:func:`install` patches, in the process it runs in, the ledger's ``begin`` and every engine's table
write (Spark's and the driver's, so the kill lands wherever the run is computed), so that the process
SIGKILLs itself (nothing cleaned up) at ``step`` of the ``skip + 1``-th run that gets there: a
streaming query's micro-batches are runs, so ``skip`` lets earlier micro-batches commit whole.

Example:
    >>> STEPS[0], STEPS[-1]
    ('before:runs', 'after:watermarks')
"""

from __future__ import annotations

import os
import signal

#: The steps a test may kill a run at: before the ``runs`` commit (the run's first), after each table's.
STEPS = ("before:runs", "after:runs", "after:changelog", "after:current_state", "after:watermarks")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(step: str, skip: int = 0) -> None:
    """SIGKILL this process at ``step`` (of :data:`STEPS`) of the run after the first ``skip`` runs."""
    from watcher.changelog.engines.driver.engine import DriverRun
    from watcher.changelog.engines.spark.engine import SparkRun
    from watcher.changelog.tables.ledger import Ledger

    if step not in STEPS:
        raise ValueError(f"step must be one of {', '.join(STEPS)}, got {step!r}")
    when, _, table = step.partition(":")
    begun = [0]
    begin = Ledger.begin

    def begin_then_die(self, *args, **kwargs):
        begun[0] += 1
        if begun[0] > skip and step == "before:runs":
            _die()
        run = begin(self, *args, **kwargs)
        if begun[0] > skip and step == "after:runs":
            _die()
        return run

    def dying(write):
        def write_then_die(self, name):
            write(self, name)
            if begun[0] > skip and when == "after" and name == table:
                _die()
        return write_then_die

    Ledger.begin = begin_then_die
    for run_class in (SparkRun, DriverRun):
        run_class.write = dying(run_class.write)
