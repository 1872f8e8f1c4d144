"""Partitions that follow load, as on Spanner: a hot partition splits, cold neighbours merge back.

A partition's write rate is the number of data change records it holds per second of
commit time over the last ``window_seconds`` (records are written at commit, so they are
the count). The newest generation of a stream's :class:`~.timeline.LoadTimeline` ends, which
is the same split or merge the churn timer makes, when it is at least one window old and

* whole (one partition): its rate over the window is above ``split_rate``: it splits by key bucket;
* split: every one of its partitions' rates is below ``merge_rate``: they merge back into one.

Spanner splits partitions by load and by size and merges cold ones; its thresholds are
internal, so here they are options of the server. The load is looked at after commits and
while change stream queries wait (at most every :data:`LOOK_EVERY_SECONDS`), and a generation
ends at a fresh timestamp taken under the visibility lock, above every safe timestamp a
reader already has. The timelines are kept in a JSON file beside the database, so a
restarted server still knows the partitions it handed out.

Example:
    >>> policy = LoadPolicy(split_rate=100, merge_rate=10, window_seconds=1)
    >>> policy.ends(0, 2_000_000_000, {0: 80, 1: 40}), policy.ends(0, 500_000_000, {0: 80, 1: 40})
    (True, False)
    >>> policy.ends(0, 2_000_000_000, {0: 50, 1: 40}), policy.ends(1, 2_000_000_000, {0: 5, 1: 9})
    (False, True)
    >>> policy.ends(1, 2_000_000_000, {0: 5, 1: 11})
    False
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..common.clock import Clock
from ..schema.catalog import ChangeStream
from .capture import BUCKETS
from .partitions import is_split_generation
from .records import bucket_counts
from .timeline import LoadTimeline

log = logging.getLogger(__name__)

#: The file beside a database's that keeps its load timelines (its path plus this).
TIMELINES_SUFFIX = ".partitions.json"
#: The least time between two looks at the load of one database.
LOOK_EVERY_SECONDS = 0.1
#: The merge rate when none is given: this fraction of the split rate.
DEFAULT_MERGE_FRACTION = 0.25
#: The window a rate is measured over when none is given.
DEFAULT_WINDOW_SECONDS = 2.0


@dataclass(frozen=True)
class LoadPolicy:
    """Split a partition above ``split_rate`` records/s, merge split ones all below ``merge_rate``, rates over ``window_seconds``."""

    split_rate: float
    merge_rate: float
    window_seconds: float = DEFAULT_WINDOW_SECONDS

    def __post_init__(self) -> None:
        if not self.split_rate > 0:
            raise ValueError(f"the change stream split rate must be above 0 records/s, got {self.split_rate}")
        if not 0 <= self.merge_rate < self.split_rate:
            raise ValueError(f"the change stream merge rate must be 0 or more and below the split rate "
                             f"{self.split_rate}, got {self.merge_rate}")
        if not self.window_seconds > 0:
            raise ValueError(f"the change stream load window must be above 0 seconds, got {self.window_seconds}")

    @classmethod
    def of(cls, split_rate: float, merge_rate: float | None = None,
           window_seconds: float | None = None) -> LoadPolicy | None:
        """The policy of the server options (split rate 0: partitions do not follow load)."""
        if not split_rate:
            return None
        return cls(split_rate, split_rate * DEFAULT_MERGE_FRACTION if merge_rate is None else merge_rate,
                   DEFAULT_WINDOW_SECONDS if window_seconds is None else window_seconds)

    @property
    def window_nanos(self) -> int:
        return int(self.window_seconds * 1e9)

    def ends(self, generation: int, age_nanos: int, counts: dict[int, int]) -> bool:
        """True when ``generation``, ``age_nanos`` old, ends given its records per bucket over the last window."""
        if age_nanos < self.window_nanos:
            return False
        if is_split_generation(generation):
            return all(counts.get(b, 0) < self.merge_rate * self.window_seconds for b in range(BUCKETS))
        return sum(counts.values()) > self.split_rate * self.window_seconds


class LoadTimelines:
    """The load timelines of one database's streams, kept in ``path`` (JSON) as they grow; thread-safe."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._looking = threading.Lock()
        self._next_look = 0.0
        self._timelines: dict[tuple[str, int], LoadTimeline] = {}
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    saved = json.load(f)
                for name, created, starts in saved.get("streams", []):
                    self._timelines[(name, created)] = LoadTimeline(created, starts)
            except (OSError, ValueError, TypeError) as exc:
                log.warning("the change stream partitions in %s are unreadable (%s); streams start over as one partition",
                            path, exc)

    def of(self, stream: ChangeStream) -> LoadTimeline:
        key = (stream.name.lower(), stream.created_nanos)
        with self._lock:
            found = self._timelines.get(key)
            if found is None:
                found = self._timelines[key] = LoadTimeline(stream.created_nanos)
            return found

    def look(self, policy: LoadPolicy, streams: Iterable[ChangeStream], clock: Clock, visibility: threading.Lock,
             reader: Callable[[], Any], release: Callable[[Any], None]) -> int:
        """End the generations that load says should end (at most every LOOK_EVERY_SECONDS); returns how many."""
        if time.monotonic() < self._next_look or not self._looking.acquire(blocking=False):
            return 0
        ended = 0
        conn = reader()
        try:
            self._next_look = time.monotonic() + LOOK_EVERY_SECONDS
            for stream in streams:
                timeline = self.of(stream)
                g = timeline.current
                now = clock.wall_nanos()
                counts = bucket_counts(conn, stream.name, now - policy.window_nanos, now)
                if policy.ends(g, now - timeline.start(g), counts):
                    with visibility:  # above every safe timestamp handed out, below every later one
                        ended += timeline.append(g, clock.next())
            if ended:
                self._save()
        finally:
            release(conn)
            self._looking.release()
        return ended

    def _save(self) -> None:
        with self._lock:
            saved = {"format_version": 1,
                     "streams": [[name, created, t.starts] for (name, created), t in self._timelines.items() if t.starts]}
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(saved, f)
        os.replace(temporary, self.path)
