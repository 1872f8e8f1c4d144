"""Batches in flight: handed to the sinks, their acknowledgements still to come, and the checkpoint behind them.

A batch callback (a sink's) may return a :class:`concurrent.futures.Future` instead of returning
once the batch is durable: the future's result is the acknowledgement, its exception a refusal
(a callback passing batches on, as a translating watcher does, returns a list of them).
One poll loop (a polled table's shard set, a change-stream partition) keeps its batches in an
:class:`InFlight` window, in the order they were handed over, each with the position the loop
reaches after it. The loop goes on reading while they are in flight; the position it may store
is the one after the newest batch that was acknowledged together with every batch before it, so
a checkpoint moves in order and never past a batch not yet acknowledged. The window holds
``limit`` batches at most: a loop whose window is full waits for its oldest batch (back-pressure).
A refused batch empties the window and raises a :class:`~watcher.errors.CallbackError` naming
it; the loop then goes back to the acknowledged position (the later batches are read and handed
over again: at-least-once, the same changes with the same change ids).

Example:
    >>> from concurrent.futures import Future
    >>> window = InFlight("start", limit=2)
    >>> first, second = Future(), Future()
    >>> window.add("after 1", [first], "batch 1")
    >>> window.add("after 2", [second], "batch 2")
    >>> window.full, window.settle()
    (True, 'start')
    >>> second.set_result(None)
    >>> window.settle()                      # batch 2 waits for batch 1: the checkpoint stays
    'start'
    >>> first.set_result(None)
    >>> window.settle(), len(window)
    ('after 2', 0)
    >>> window.add("after 3", [Future()], "batch 3")
    >>> window.add("after an empty poll", [], "")    # no batch of its own: moves with batch 3
    >>> len(window), window.newest
    (1, 'after an empty poll')
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..errors import CallbackError, ConfigurationError

__all__ = ["DEFAULT_MAX_BATCHES_IN_FLIGHT", "InFlight", "checked_limit", "pending"]

#: Batches one poll loop hands to its sinks before it waits for the oldest one's acknowledgement.
DEFAULT_MAX_BATCHES_IN_FLIGHT = 4
#: Seconds between looks at the stop event while a full window waits.
_ROOM_CHECK_SECONDS = 0.1

P = TypeVar("P")


def checked_limit(max_batches_in_flight: Any) -> int:
    """``max_batches_in_flight`` when it is a positive integer, else the ConfigurationError every watcher raises.

    >>> checked_limit(4)
    4
    >>> checked_limit(0)
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: max_batches_in_flight must be a positive integer, got 0
    """
    if isinstance(max_batches_in_flight, bool) or not isinstance(max_batches_in_flight, int) or max_batches_in_flight < 1:
        raise ConfigurationError(f"max_batches_in_flight must be a positive integer, got {max_batches_in_flight!r}")
    return max_batches_in_flight


def pending(results: Iterable[Any]) -> list[cf.Future[Any]]:
    """The acknowledgements among batch callbacks' return values, lists of them flattened (anything else:
    acknowledged at once).

    >>> done = cf.Future(); done.set_result(None)
    >>> len(pending([None, done, 3, [done, None]]))
    2
    """
    out: list[cf.Future[Any]] = []
    for r in results:
        if isinstance(r, cf.Future):
            out.append(r)
        elif isinstance(r, list):
            out.extend(pending(r))
    return out


@dataclass
class _Batch(Generic[P]):
    position: P
    acks: Sequence[cf.Future[Any]]
    what: str

    @property
    def done(self) -> bool:
        return all(a.done() for a in self.acks)


class InFlight(Generic[P]):
    """One poll loop's batches in flight, oldest first (see the module docstring); not thread-safe:
    one loop's thread uses it."""

    def __init__(self, acknowledged: P, limit: int = DEFAULT_MAX_BATCHES_IN_FLIGHT) -> None:
        if limit < 1:
            raise ValueError(f"batches in flight must be at least 1, got {limit}")
        self.limit = limit
        #: The position after the newest batch acknowledged with every batch before it.
        self.acknowledged = acknowledged
        self._batches: deque[_Batch[P]] = deque()

    def __len__(self) -> int:
        return len(self._batches)

    @property
    def newest(self) -> P:
        """The position after the newest batch handed over (acknowledged or not)."""
        return self._batches[-1].position if self._batches else self.acknowledged

    @property
    def full(self) -> bool:
        """As many batches in flight as the loop may have: wait before handing over the next."""
        return len(self._batches) >= self.limit

    def add(self, position: P, acks: Sequence[cf.Future[Any]], what: str) -> None:
        """A batch handed over (``what`` names it in a refusal's message); ``position``: the loop's after it."""
        if not acks:  # acknowledged with the batch before it (an empty poll's position moves too)
            if self._batches:
                self._batches[-1].position = position
            else:
                self.acknowledged = position
            return
        self._batches.append(_Batch(position, list(acks), what))

    def settle(self, wait: float | None = 0.0) -> P:
        """The acknowledged position, after waiting up to ``wait`` seconds (None: as long as it takes) for
        every batch in flight; raises CallbackError for the oldest refused batch (the window is emptied)."""
        deadline = None if wait is None else time.monotonic() + wait
        while self._batches:
            head = self._batches[0]
            if not head.done:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                cf.wait(head.acks, timeout=left)
                if not head.done:
                    break
            self._batches.popleft()
            self._check(head)
            self.acknowledged = head.position
        return self.acknowledged

    def make_room(self, stop: threading.Event | None = None) -> bool:
        """Wait until the window has room for one more batch (True), or ``stop`` is set first (False);
        raises CallbackError for a refused batch, as :meth:`settle` does."""
        while self.full:
            if stop is not None and stop.is_set():
                return False
            self.settle(_ROOM_CHECK_SECONDS)
        return True

    def abandon(self) -> P:
        """Forget the batches still in flight (they are handed over again from the acknowledged position)."""
        self._batches.clear()
        return self.acknowledged

    def _check(self, batch: _Batch[P]) -> None:
        for ack in batch.acks:
            error = ack.exception() if not ack.cancelled() else cf.CancelledError("acknowledgement cancelled")
            if error is not None:
                self._batches.clear()
                raise CallbackError(f"a sink refused {batch.what}: {error!r}") from error
