"""The partitions of a change stream over time, and the tokens that name them.

The timeline is a pure function of the stream's creation time and the server's churn
period ``P`` (0: no churn), so it needs no state and survives a restart:

* without churn, one partition from the stream's creation on, never ending;
* with churn, generation ``g`` covers commit timestamps ``[created + g*P, created + (g+1)*P)``;
  even generations are one partition over the whole key space, odd ones are split in
  two (one per key bucket, :data:`~.capture.BUCKETS`). So the stream alternately splits
  (each child has one parent) and merges (the child names both parents), and a reader
  must follow Spanner's partition workflow: a child only after all its parents finished.

A token is opaque to clients: ``csp1.`` and base64 of (stream, generation, bucket mask, P).

Example:
    >>> p = partition_at("S", created=0, churn=10, ts=15)
    >>> (p.generation, p.start, p.end, p.mask)
    (1, 10, 20, 1)
    >>> [(c.generation, c.mask) for c in children(p)][0]
    (2, 3)
    >>> decode(p.token, "S", 10) == p
    True
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from .capture import BUCKETS

TOKEN_PREFIX = "csp1."
WHOLE = (1 << BUCKETS) - 1


@dataclass(frozen=True)
class Partition:
    """One partition: its generation, bucket mask, and time range ``[start, end)`` (end None: open)."""

    stream: str
    generation: int
    mask: int
    created: int
    churn: int

    @property
    def start(self) -> int:
        return self.created + self.generation * self.churn

    @property
    def end(self) -> int | None:
        return None if not self.churn else self.created + (self.generation + 1) * self.churn

    @property
    def token(self) -> str:
        raw = json.dumps([self.stream.lower(), self.generation, self.mask, self.created, self.churn], separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(raw.encode()).decode("ascii")


def _layout(generation: int) -> list[int]:
    """The bucket masks (bit b: key bucket b) of a generation's partitions: whole, or one per bucket."""
    return [WHOLE] if generation % 2 == 0 else [1 << b for b in range(BUCKETS)]


def generation_at(created: int, churn: int, ts: int) -> int:
    return 0 if not churn else max(0, (ts - created) // churn)


def is_split(created: int, churn: int, ts: int) -> bool:
    """True when the stream was split in several partitions at commit timestamp ``ts``."""
    return len(_layout(generation_at(created, churn, ts))) > 1


def partition_at(stream: str, created: int, churn: int, ts: int) -> Partition:
    """The first partition (lowest mask) of the generation covering ``ts`` (used by doctests)."""
    return current(stream, created, churn, ts)[0]


def current(stream: str, created: int, churn: int, ts: int) -> list[Partition]:
    """The partitions covering commit timestamp ``ts``: what a query without a token is told to read."""
    g = generation_at(created, churn, ts)
    masks = _layout(g)
    return [Partition(stream.lower(), g, m, created, churn) for m in masks]


def children(p: Partition) -> list[Partition]:
    """The partitions that follow ``p`` at its end."""
    following = current(p.stream, p.created, p.churn, p.end or 0)
    return [c for c in following if c.mask & p.mask]


def parents(p: Partition) -> list[Partition]:
    """The partitions that ``p`` follows (none for generation 0)."""
    if p.generation == 0:
        return []
    before = current(p.stream, p.created, p.churn, p.start - 1)
    return [q for q in before if q.mask & p.mask]


def decode(token: str, stream: str, churn: int) -> Partition | None:
    """The partition a token names, if it is one of ``stream``'s under the current churn period."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        name, generation, mask, created, period = json.loads(base64.urlsafe_b64decode(token[len(TOKEN_PREFIX):].encode()))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        return None
    if name != stream.lower() or period != churn or not isinstance(generation, int) or generation < 0:
        return None
    p = Partition(stream.lower(), generation, mask, created, churn)
    return p if mask in _layout(generation) else None
