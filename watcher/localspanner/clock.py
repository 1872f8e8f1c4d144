"""The server's clock: strictly increasing, microsecond-granular timestamps.

Spanner commit timestamps have microsecond granularity and, within a database, never
repeat. One :class:`Clock` serves every database of a server, so commit timestamps and
strong-read timestamps are strictly increasing across all of them. The wall clock is
injected, so tests can drive it.

Example:
    >>> c = Clock(now_nanos=lambda: 5_000)
    >>> c.next(), c.next()     # the wall clock stands still, the clock does not
    (5000, 6000)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MICROSECOND = 1_000


class Clock:
    def __init__(self, now_nanos: Callable[[], int] = time.time_ns) -> None:
        self._now = now_nanos
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        """A timestamp (ns since the epoch, a whole number of microseconds) above every earlier one."""
        with self._lock:
            t = self._now() // MICROSECOND * MICROSECOND
            if t <= self._last:
                t = self._last + MICROSECOND
            self._last = t
            return t

    def advance_past(self, nanos: int) -> None:
        """Make every later :meth:`next` return more than ``nanos`` (a read at a future time)."""
        with self._lock:
            if nanos >= self._last:
                self._last = nanos // MICROSECOND * MICROSECOND

    def wall_nanos(self) -> int:
        """The wall clock, for staleness arithmetic and time-outs (not for ordering)."""
        return self._now()

    @property
    def last(self) -> int:
        return self._last
