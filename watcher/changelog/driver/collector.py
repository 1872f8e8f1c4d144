"""Python's cyclic garbage collector held off while a driver run works.

A driver run makes a few hundred thousand short-lived objects (each line's parsed record, its
row, the window's values). That many allocations trigger the collector's full passes, and a full
pass walks every object of the process, the application's and Spark's Python side included, a
noticeable part of a small run (benchmarks/RESULTS.md, changelog_job). The run's objects form no reference cycles,
so reference counting frees them as the run lets them go; the collector runs again as before
once no run is working. Several runs at once (threads) count: the collector is back when the
last one ends, and only if it was on when the first began.

Example:
    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_active = 0
_was_enabled = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the cyclic collector off for the block (see the module docstring)."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()
