"""When a change stream's partition generations start: on a timer, or where load decided.

Generation ``g`` covers commit timestamps ``[start(g), end(g))``; even generations are one
partition over the whole key space, odd ones are split by key bucket (:mod:`.partitions`
and :mod:`.key_ranges` tell them in each partition mode). Two triggers end a generation,
and both feed the same split and merge code, which only asks a timeline:

* :class:`TimerTimeline`: every ``period`` nanoseconds from the stream's creation (0: never).
  A pure function, so it needs no state and survives a restart.
* :class:`LoadTimeline`: the starts the load trigger appended (:mod:`.load`), each taken at a
  fresh timestamp above every safe timestamp a reader was given, so no reader ever sees the
  past change; until a generation's end is appended, it is open.

A timeline's ``key`` goes into partition tokens, so a token of one timeline names no
partition of another (a changed period, or the switch between timer and load).

Example:
    >>> t = TimerTimeline(created=0, period=10)
    >>> (t.generation_at(25), t.start(2), t.end(2), t.starts_in(5, 30))
    (2, 20, 30, [(1, 10), (2, 20), (3, 30)])
    >>> load = LoadTimeline(created=0)
    >>> (load.generation_at(99), load.end(0), load.append(0, 40), load.append(0, 50))
    (0, None, True, False)
    >>> (load.generation_at(39), load.generation_at(40), load.end(0), load.start(1), load.end(1))
    (0, 1, 40, 40, None)
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

#: The token key of load-driven timelines (timer periods are 0 or more).
LOAD_KEY = -1


class Timeline(Protocol):
    """The generations of one stream (thread-safe: load timelines only ever grow)."""

    @property
    def created(self) -> int: ...

    @property
    def key(self) -> int: ...

    def start(self, generation: int) -> int: ...

    def end(self, generation: int) -> int | None:
        """Where ``generation`` ends (exclusive), None while it is open."""
        ...

    def generation_at(self, ts: int) -> int: ...

    def has(self, generation: int) -> bool:
        """True when ``generation`` has started (at some timestamp, maybe in the future)."""
        ...

    def starts_in(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """``(generation, start)`` of the generations after the first that start in ``[lo, hi]``."""
        ...


@dataclass(frozen=True)
class TimerTimeline:
    """A new generation every ``period`` nanoseconds from ``created`` (0: one generation forever)."""

    created: int
    period: int

    @property
    def key(self) -> int:
        return self.period

    def start(self, generation: int) -> int:
        return self.created + generation * self.period

    def end(self, generation: int) -> int | None:
        return None if not self.period else self.start(generation + 1)

    def generation_at(self, ts: int) -> int:
        return 0 if not self.period else max(0, (ts - self.created) // self.period)

    def has(self, generation: int) -> bool:
        return generation == 0 or (self.period > 0 and generation > 0)

    def starts_in(self, lo: int, hi: int) -> list[tuple[int, int]]:
        if not self.period:
            return []
        g = max(1, -(-(lo - self.created) // self.period))  # the first generation starting at or after lo
        out = []
        while self.start(g) <= hi:
            out.append((g, self.start(g)))
            g += 1
        return out


class LoadTimeline:
    """Generations whose starts were appended as load decided (``starts[i]``: where generation ``i + 1`` starts)."""

    key = LOAD_KEY

    def __init__(self, created: int, starts: Iterable[int] = ()) -> None:
        self.created = created
        self._starts = list(starts)
        self._lock = threading.Lock()

    @property
    def starts(self) -> list[int]:
        return list(self._starts)

    @property
    def current(self) -> int:
        """The newest generation (open)."""
        return len(self._starts)

    def append(self, generation: int, ts: int) -> bool:
        """End ``generation`` at ``ts`` if it is still the newest; False when another trigger was first."""
        with self._lock:
            if generation != len(self._starts) or ts <= self.start(generation):
                return False
            self._starts.append(ts)
            return True

    def start(self, generation: int) -> int:
        return self.created if generation == 0 else self._starts[generation - 1]

    def end(self, generation: int) -> int | None:
        starts = self._starts
        return starts[generation] if generation < len(starts) else None

    def generation_at(self, ts: int) -> int:
        return bisect.bisect_right(self._starts, ts)

    def has(self, generation: int) -> bool:
        return 0 <= generation <= len(self._starts)

    def starts_in(self, lo: int, hi: int) -> list[tuple[int, int]]:
        return [(i + 1, s) for i, s in enumerate(self._starts) if lo <= s <= hi]
