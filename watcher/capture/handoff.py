"""Changes handed from a watcher's poll threads to consumers iterating over ``changes()``.

A :class:`Handoff` is a one-slot rendezvous: the poll thread's ``put`` returns only once the
consumer has handled the change (asked for the next one) or gone away, so the watcher's
checkpoint never passes a change the consumer has not finished with. Several poll threads
(a DatabaseWatcher's tables) may put at once; they take turns.

:class:`Iterators` is the one implementation of ``changes()`` every watcher shares.

Example:
    >>> import threading
    >>> h = Handoff()
    >>> t = threading.Thread(target=h.put, args=("change-1",)); t.start()
    >>> h.take(1.0)
    'change-1'
    >>> h.done(); t.join(1.0); t.is_alive()
    False
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any


class StopDelivery(Exception):
    """Raised into a delivery when the watcher stops while a consumer holds the change.

    The change was not handled: the poll cycle keeps its position before it, so it is
    delivered again after a restart.
    """


class _Slot:
    __slots__ = ("item", "handled")

    def __init__(self, item: Any) -> None:
        self.item = item
        self.handled = False


class Handoff:
    """A one-slot handoff between producers (poll threads) and one consumer."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._slot: _Slot | None = None
        self._taken = False
        self._closed = False

    def put(self, item: Any) -> bool:
        """Offer ``item`` and wait until the consumer handled it (True) or the handoff closed first (False)."""
        slot = _Slot(item)
        with self._cond:
            while self._slot is not None and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._slot, self._taken = slot, False
            self._cond.notify_all()
            while self._slot is slot and not self._closed:
                self._cond.wait()
            return slot.handled

    def take(self, timeout: float | None = None) -> Any:
        """The next item, or None when closed or after ``timeout`` seconds without one."""
        with self._cond:
            if not self._cond.wait_for(lambda: (self._slot is not None and not self._taken) or self._closed, timeout):
                return None
            if self._closed or self._slot is None:
                return None
            self._taken = True
            return self._slot.item

    def done(self) -> None:
        """The consumer finished with the item it took."""
        with self._cond:
            if self._slot is not None:
                self._slot.handled = True
            self._slot, self._taken = None, False
            self._cond.notify_all()

    def consume(self, timeout: float | None = None) -> Iterator[Any]:
        """The consumer's side as an iterator: each item counts as done when the next is asked for;
        ends when closed or after ``timeout`` seconds without an item, and closes the handoff."""
        try:
            while True:
                item = self.take(timeout)
                if item is None:
                    return
                yield item
                self.done()
        finally:
            self.close()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._slot = None
            self._cond.notify_all()


class Iterators:
    """The open ``changes()`` iterators of one watcher.

    A change a consumer holds when the watcher stops (:meth:`end`) is refused with
    :class:`StopDelivery`; a consumer that closes its iterator itself has handled what it took.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[Handoff] = []
        self._ending = False

    def iterate(self, subscribe: Callable[[Callable[[Any], None]], None],
                unsubscribe: Callable[[Callable[[Any], None]], None], timeout: float | None = None) -> Iterator[Any]:
        """Items delivered to a callback registered with ``subscribe`` while the iterator is open."""
        handoff = Handoff()

        def offer(item: Any) -> None:
            if not handoff.put(item) and self._ending:
                raise StopDelivery()

        with self._lock:
            self._open.append(handoff)
        subscribe(offer)
        try:
            yield from handoff.consume(timeout)
        finally:
            unsubscribe(offer)
            with self._lock:
                if handoff in self._open:
                    self._open.remove(handoff)

    def end(self) -> None:
        """The watcher stops or failed: every open iterator ends, held changes count as not handled."""
        with self._lock:
            self._ending = True
            handoffs = list(self._open)
        for h in handoffs:
            h.close()

    def reopen(self) -> None:
        """The watcher (re)started: iterators opened from now on receive changes."""
        with self._lock:
            self._ending = False
