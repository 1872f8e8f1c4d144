"""The partitions of a change stream over time, and the tokens that name them.

The generations come from the stream's :class:`~.timeline.Timeline` (on the churn timer,
or where load decided): without any, one partition from the stream's creation on, never
ending; generation ``g`` covers commit timestamps ``[start(g), end(g))``; even generations
are one partition over the whole key space, odd ones are split in two (one per key bucket,
:data:`~.capture.BUCKETS`). So the stream alternately splits (each child has one parent)
and merges (the child names both parents), and a reader must follow Spanner's partition
workflow: a child only after all its parents finished.

A token is opaque to clients: ``csp1.`` and base64 of (stream, generation, bucket mask,
creation, timeline key: the churn period, or -1 for load).

Example:
    >>> from .timeline import TimerTimeline
    >>> timer = TimerTimeline(created=0, period=10)
    >>> p = partition_at("S", timer, ts=15)
    >>> (p.generation, p.start, p.end, p.mask)
    (1, 10, 20, 1)
    >>> [(c.generation, c.mask) for c in children(p)][0]
    (2, 3)
    >>> decode(p.token, "S", timer) == p
    True
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from .capture import BUCKETS
from .timeline import Timeline

TOKEN_PREFIX = "csp1."
WHOLE = (1 << BUCKETS) - 1


@dataclass(frozen=True)
class Partition:
    """One partition: its generation, bucket mask, and time range ``[start, end)`` (end None: open)."""

    stream: str
    generation: int
    mask: int
    timeline: Timeline

    @property
    def start(self) -> int:
        return self.timeline.start(self.generation)

    @property
    def end(self) -> int | None:
        return self.timeline.end(self.generation)

    @property
    def token(self) -> str:
        raw = json.dumps([self.stream.lower(), self.generation, self.mask, self.timeline.created, self.timeline.key],
                         separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(raw.encode()).decode("ascii")


def _layout(generation: int) -> list[int]:
    """The bucket masks (bit b: key bucket b) of a generation's partitions: whole, or one per bucket."""
    return [WHOLE] if generation % 2 == 0 else [1 << b for b in range(BUCKETS)]


def is_split_generation(generation: int) -> bool:
    return len(_layout(generation)) > 1


def is_split(timeline: Timeline, ts: int) -> bool:
    """True when the stream was split in several partitions at commit timestamp ``ts``."""
    return is_split_generation(timeline.generation_at(ts))


def partition_at(stream: str, timeline: Timeline, ts: int) -> Partition:
    """The first partition (lowest mask) of the generation covering ``ts`` (used by doctests)."""
    return current(stream, timeline, ts)[0]


def current(stream: str, timeline: Timeline, ts: int) -> list[Partition]:
    """The partitions covering commit timestamp ``ts``: what a query without a token is told to read."""
    g = timeline.generation_at(ts)
    return [Partition(stream.lower(), g, m, timeline) for m in _layout(g)]


def children(p: Partition) -> list[Partition]:
    """The partitions that follow ``p`` at its end (which must be known)."""
    end = p.end
    assert end is not None
    return [c for c in current(p.stream, p.timeline, end) if c.mask & p.mask]


def parents(p: Partition) -> list[Partition]:
    """The partitions that ``p`` follows (none for generation 0)."""
    if p.generation == 0:
        return []
    return [q for q in current(p.stream, p.timeline, p.start - 1) if q.mask & p.mask]


def decode(token: str, stream: str, timeline: Timeline) -> Partition | None:
    """The partition a token names, if it is one of ``stream``'s on ``timeline``."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        name, generation, mask, created, key = json.loads(base64.urlsafe_b64decode(token[len(TOKEN_PREFIX):].encode()))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        return None
    if name != stream.lower() or key != timeline.key or created != timeline.created or not isinstance(generation, int):
        return None
    if not timeline.has(generation):
        return None
    p = Partition(stream.lower(), generation, mask, timeline)
    return p if mask in _layout(generation) else None
