"""The server's clock: increasing, microsecond-granular timestamps.

Spanner commit timestamps have microsecond granularity. One :class:`Clock` serves every
database of a server, so commit timestamps and strong-read timestamps increase across
all of them. The wall clock is injected, so tests can drive it.

By default every timestamp is unique. With ``share_timestamps`` a commit may get the
previous commit's timestamp, as on Spanner, where transactions that do not overlap may
share one: only when nothing else took a timestamp since (no read, so once a read at R
has returned no later commit gets a timestamp <= R) and the two commits write disjoint,
known rows (so per row, timestamps still strictly increase).

Example:
    >>> c = Clock(now_nanos=lambda: 5_000)
    >>> c.next(), c.next()     # the wall clock stands still, the clock does not
    (5000, 6000)
    >>> c.share_timestamps = True
    >>> c.next_commit({"a"}), c.next_commit({"b"}), c.next_commit({"a"}), c.next(), c.next_commit({"c"})
    (7000, 7000, 8000, 9000, 10000)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Set

MICROSECOND = 1_000


class Clock:
    def __init__(self, now_nanos: Callable[[], int] = time.time_ns, *, share_timestamps: bool = False) -> None:
        self._now = now_nanos
        self._last = 0
        self._lock = threading.Lock()
        #: Let non-conflicting consecutive commits share a timestamp (settable at run time).
        self.share_timestamps = share_timestamps
        # Rows written at ``_last`` while it is a commit timestamp nothing else has followed;
        # None once a read (or anything but a shareable commit) took a timestamp.
        self._shared_rows: set[Hashable] | None = None

    def _tick(self) -> int:
        t = self._now() // MICROSECOND * MICROSECOND
        if t <= self._last:
            t = self._last + MICROSECOND
        self._last = t
        return t

    def next(self) -> int:
        """A timestamp (ns since the epoch, a whole number of microseconds) above every earlier one."""
        with self._lock:
            self._shared_rows = None
            return self._tick()

    def next_commit(self, rows: Set[Hashable] | None) -> int:
        """A commit timestamp for a commit writing ``rows`` (None: not known, never shared).

        Above every earlier timestamp, or with :attr:`share_timestamps` equal to the previous
        commit's when nothing else took a timestamp since and no row is written twice at it.
        """
        with self._lock:
            shared = self._shared_rows
            if self.share_timestamps and rows is not None and shared is not None and shared.isdisjoint(rows):
                shared.update(rows)
                return self._last
            t = self._tick()
            self._shared_rows = set(rows) if rows is not None else None
            return t

    def advance_past(self, nanos: int) -> None:
        """Make every later :meth:`next` and :meth:`next_commit` return more than ``nanos`` (a read at that time)."""
        with self._lock:
            self._shared_rows = None
            if nanos >= self._last:
                self._last = nanos // MICROSECOND * MICROSECOND

    def wall_nanos(self) -> int:
        """The wall clock, for staleness arithmetic and time-outs (not for ordering)."""
        return self._now()

    @property
    def last(self) -> int:
        return self._last
