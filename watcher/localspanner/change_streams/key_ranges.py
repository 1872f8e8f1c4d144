"""The partitions of a ``MUTABLE_KEY_RANGE`` change stream: long-lived partitions that key ranges move between.

The same generations as :mod:`.partitions` (from the stream's :class:`~.timeline.Timeline`:
generation ``g`` covers commit timestamps ``[start(g), end(g))``; odd generations split the key space by bucket), told
the way a stream of this mode tells it. The *home* partition lives from the stream's
creation on and never ends; it always holds key bucket 0, and every bucket in even
generations. At the start ``B`` of an odd generation the other buckets move out of it, each
into a new partition (a *mover*: generation ``g``, bucket ``b``) that lives until the next
generation starts, when its bucket moves back home and the mover ends. So:

* home at ``B`` of an odd generation: a partition start record naming the movers (start ``B``),
  then a partition event record moving the buckets out to them;
* a mover at its start: a partition event record moving its bucket in from home; at its end:
  one moving it out to home, then its partition end record;
* home at ``B`` of an even generation: a partition event record moving the buckets in from the movers.

Events at a timestamp come before the data records there (their record sequences are lower).
A token is ``csm1.`` and base64 of (stream, created, timeline key, generation, bucket); home has generation -1.

Example:
    >>> from .timeline import TimerTimeline
    >>> timer = TimerTimeline(created=0, period=10)
    >>> home = home_partition("S", timer)
    >>> [(e.ts, e.kind, [p.generation for p in e.others]) for e in events(home, 0, 25)]
    [(10, 'start', [1]), (10, 'move_out', [1]), (20, 'move_in', [1])]
    >>> mover = current("S", timer, 15)[1]
    >>> (mover.start, mover.end, mover.holds(1, 12), mover.holds(1, 20), home.holds(1, 12), home.holds(1, 20))
    (10, 20, True, False, False, True)
    >>> [(e.ts, e.kind) for e in events(mover, 10, 20)]
    [(10, 'move_in'), (20, 'move_out'), (20, 'end')]
    >>> decode(mover.token, "S", timer) == mover
    True
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from .capture import BUCKETS
from .partitions import is_split, is_split_generation
from .timeline import Timeline

TOKEN_PREFIX = "csm1."
HOME = -1


@dataclass(frozen=True)
class KeyRangePartition:
    """A partition of a MUTABLE_KEY_RANGE stream: home (``generation`` -1) or the mover of one bucket in one generation."""

    stream: str
    timeline: Timeline
    generation: int
    bucket: int

    @property
    def is_home(self) -> bool:
        return self.generation == HOME

    @property
    def start(self) -> int:
        return self.timeline.created if self.is_home else self.timeline.start(self.generation)

    @property
    def end(self) -> int | None:
        """The timestamp of the partition end record (None: never ends, or not yet known)."""
        return None if self.is_home else self.timeline.end(self.generation)

    @property
    def token(self) -> str:
        raw = json.dumps([self.stream.lower(), self.timeline.created, self.timeline.key, self.generation, self.bucket],
                         separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    def holds(self, bucket: int, ts: int) -> bool:
        """True when this partition records the changes of key ``bucket`` committed at ``ts``."""
        if self.is_home:
            return bucket == 0 or not is_split(self.timeline, ts)
        return bucket == self.bucket and self.timeline.generation_at(ts) == self.generation


@dataclass(frozen=True)
class Event:
    """A partition record other than data and heartbeats: ``start`` (new partitions ``others``),
    ``move_in`` (from ``others``), ``move_out`` (to ``others``) or ``end``."""

    ts: int
    kind: str
    others: tuple[KeyRangePartition, ...] = ()


def home_partition(stream: str, timeline: Timeline) -> KeyRangePartition:
    return KeyRangePartition(stream.lower(), timeline, HOME, 0)


def _movers(stream: str, timeline: Timeline, generation: int) -> tuple[KeyRangePartition, ...]:
    return tuple(KeyRangePartition(stream.lower(), timeline, generation, b) for b in range(1, BUCKETS))


def current(stream: str, timeline: Timeline, ts: int) -> list[KeyRangePartition]:
    """The partitions holding some key at ``ts``: what a query without a token names."""
    home = home_partition(stream, timeline)
    if not is_split(timeline, ts):
        return [home]
    return [home, *_movers(stream, timeline, timeline.generation_at(ts))]


def events(p: KeyRangePartition, lo: int, hi: int) -> list[Event]:
    """The events of ``p`` at timestamps in ``[lo, hi]``, in the order they are returned."""
    if not p.is_home:
        home = (home_partition(p.stream, p.timeline),)
        end = p.end
        ends = [Event(end, "move_out", home), Event(end, "end")] if end is not None and lo <= end <= hi else []
        return ([Event(p.start, "move_in", home)] if lo <= p.start <= hi else []) + ends
    out: list[Event] = []
    for g, at in p.timeline.starts_in(lo, hi):
        if is_split_generation(g):
            movers = _movers(p.stream, p.timeline, g)
            out += [Event(at, "start", movers), Event(at, "move_out", movers)]
        else:
            out.append(Event(at, "move_in", _movers(p.stream, p.timeline, g - 1)))
    return out


def decode(token: str, stream: str, timeline: Timeline) -> KeyRangePartition | None:
    """The partition a token names, if it is one of ``stream``'s on ``timeline``."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        name, created, key, generation, bucket = json.loads(base64.urlsafe_b64decode(token[len(TOKEN_PREFIX):].encode()))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        return None
    if name != stream.lower() or key != timeline.key or created != timeline.created or not all(
            isinstance(v, int) for v in (generation, bucket)):
        return None
    p = KeyRangePartition(name, timeline, generation, bucket)
    if p.is_home:
        return p if bucket == 0 else None
    valid = is_split_generation(generation) and timeline.has(generation) and 1 <= bucket < BUCKETS
    return p if valid else None
