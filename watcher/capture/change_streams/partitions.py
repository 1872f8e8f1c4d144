"""Which change-stream partitions to read, and when (Spanner's partition workflow as data).

The first query (no partition token) names the first partitions. Each partition is read
from its start; when it ends it names its children. A child starts only once **all** its
parents finished (after a merge one child has several parents, and every parent reports it:
it is still read once). Partitions known from stored progress are restored as they were:
a finished one is never read again, an unfinished one is ready again. A finished partition
whose progress row was pruned is forgotten (:meth:`PartitionScheduler.forget`): its children
stop waiting for it, as their stored rows do, and a record naming it again is ignored.

Slots: the watcher reads at most ``max_concurrent_partitions`` partitions at once, and
partitions of a ``MUTABLE_KEY_RANGE`` stream live on, so more may be ready than there are
slots. Ready partitions take turns in line (:meth:`PartitionScheduler.take_ready` with a
``limit``): the ones never read first, in the order they became known, then the ones that gave
up their slot (:meth:`PartitionScheduler.yield_turn`), at the back in the order they did. A
partition waiting at a move-in is ``held`` (not handed out until its sources caught up), and
the sources such partitions wait for go ``first``.

Pure bookkeeping: no threads, no client; the watcher holds a lock around it.

Example:
    >>> s = PartitionScheduler()
    >>> s.add("a", (), "t0"); s.add("b", (), "t0")
    True
    True
    >>> [p.token for p in s.take_ready()]
    ['a', 'b']
    >>> s.add("ab", ("a", "b"), "t1"); s.add("ab", ("a", "b"), "t1")   # a merge, reported by both parents
    True
    False
    >>> s.finish("a"); s.take_ready()
    []
    >>> s.finish("b"); [p.token for p in s.take_ready()]
    ['ab']
    >>> s.add("c", (), "t2"); s.add("d", (), "t2"); s.yield_turn("ab")    # one slot free: in line
    True
    True
    >>> [p.token for p in s.take_ready(1)], [p.token for p in s.take_ready(2, first={"ab"})]
    (['c'], ['ab', 'd'])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Partition:
    """A partition of a change stream: its token, its parents' tokens and the time it starts at."""

    token: str
    parents: tuple[str, ...]
    start: Any


class PartitionScheduler:
    """Known partitions and their state: waiting, taken (being read) or finished."""

    def __init__(self) -> None:
        self._known: dict[str, Partition] = {}
        self._taken: set[str] = set()
        self._finished: set[str] = set()
        #: Each partition's place in line for a slot (lower first).
        self._turn: dict[str, int] = {}
        self._turns = 0
        #: Partitions forgotten: a record naming one again (a partition read again from before it) adds nothing.
        self._gone: set[str] = set()
        #: Finished partitions forgotten since this scheduler was made.
        self.forgotten = 0

    def _to_back(self, token: str) -> None:
        self._turns += 1
        self._turn[token] = self._turns

    def add(self, token: str, parents: Iterable[str], start: Any) -> bool:
        """Make a partition known; False when it was known already (a second parent reporting it) or
        was forgotten (finished and pruned: never read again)."""
        if token in self._known or token in self._gone:
            return False
        self._known[token] = Partition(token, tuple(parents), start)
        self._to_back(token)
        return True

    def restore(self, token: str, parents: Iterable[str], start: Any, *, finished: bool) -> None:
        """A partition from stored progress (finished ones are never handed out again)."""
        self.add(token, parents, start)
        if finished:
            self._finished.add(token)

    def is_ready(self, token: str) -> bool:
        p = self._known[token]
        return (token not in self._taken and token not in self._finished
                and all(parent in self._finished for parent in p.parents))

    def ready(self, held: Collection[str] = ()) -> list[Partition]:
        """The partitions that could be read now (all parents finished, not taken, not ``held``), in line order."""
        ready = [p for t, p in self._known.items() if t not in held and self.is_ready(t)]
        return sorted(ready, key=lambda p: self._turn[p.token])

    def take_ready(self, limit: int | None = None, *, held: Collection[str] = (),
                   first: Collection[str] = ()) -> list[Partition]:
        """The partitions that can be read now, marked as taken: at most ``limit`` (None: all), those of
        ``first`` before the others, else in line order (older partitions first); never ``held`` ones."""
        ready = sorted(self.ready(held), key=lambda p: p.token not in first)[:limit]
        self._taken.update(p.token for p in ready)
        return ready

    def release(self, token: str) -> None:
        """A taken partition was not finished (the watcher stopped or will retry it): ready again, keeping its place."""
        self._taken.discard(token)

    def yield_turn(self, token: str) -> None:
        """A taken partition gave up its slot before its end: ready again, at the back of the line."""
        self._taken.discard(token)
        self._to_back(token)

    def finish(self, token: str) -> None:
        """The partition was read to its end: its children may become ready."""
        self._taken.discard(token)
        self._finished.add(token)

    def forget(self, token: str) -> None:
        """Drop the finished partition ``token`` (its progress row was pruned): its children no
        longer name it as a parent, so they wait only for their other parents.

        >>> s = PartitionScheduler()
        >>> s.restore("a", (), 0, finished=True); s.restore("ab", ("a", "b"), 1, finished=False)
        >>> s.forget("a"); s.partition("ab").parents, s.finished, s.forgotten
        (('b',), [], 1)
        """
        if token not in self._finished:
            raise ValueError(f"partition {token!r} is not finished: only finished partitions are forgotten")
        del self._known[token]
        del self._turn[token]
        self._finished.discard(token)
        self._gone.add(token)
        self.forgotten += 1
        for child, p in self._known.items():
            if token in p.parents:
                self._known[child] = Partition(child, tuple(t for t in p.parents if t != token), p.start)

    def partition(self, token: str) -> Partition:
        return self._known[token]

    def is_finished(self, token: str) -> bool:
        return token in self._finished

    @property
    def active(self) -> list[str]:
        """Partitions taken and not finished (being read, or queued for a reader)."""
        return [t for t in self._known if t in self._taken]

    @property
    def waiting(self) -> list[str]:
        """Partitions known but not taken and not finished (parents still running, or not yet handed out)."""
        return [t for t in self._known if t not in self._taken and t not in self._finished]

    @property
    def finished(self) -> list[str]:
        return [t for t in self._known if t in self._finished]

    @property
    def unfinished(self) -> list[Partition]:
        return [p for t, p in self._known.items() if t not in self._finished]

    def done(self) -> bool:
        """Every known partition finished (only meaningful once the first query named some)."""
        return bool(self._known) and not self.unfinished
