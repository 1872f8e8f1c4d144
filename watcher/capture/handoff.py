"""A one-slot handoff between a watcher's poll thread and a consumer iterating over changes.

The poll thread's ``put`` returns only once the consumer has handled the change (asked for
the next one) or gone away, so the watcher's checkpoint never passes a change the consumer
has not finished with.

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
from collections.abc import Iterator
from typing import Any


class Handoff:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._item: Any = None
        self._has_item = False
        self._taken = False
        self._closed = False
        self._handled = False

    def put(self, item: Any) -> bool:
        """Offer ``item`` and wait until the consumer handled it (True) or the handoff closed first (False)."""
        with self._cond:
            while self._has_item and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._item, self._has_item, self._taken, self._handled = item, True, False, False
            self._cond.notify_all()
            while self._has_item and not self._closed:
                self._cond.wait()
            return self._handled

    def take(self, timeout: float | None = None) -> Any:
        """The next item, or None when closed or after ``timeout`` seconds without one."""
        with self._cond:
            if not self._cond.wait_for(lambda: (self._has_item and not self._taken) or self._closed, timeout):
                return None
            if self._closed and not self._has_item:
                return None
            self._taken = True
            return self._item

    def done(self) -> None:
        """The consumer finished with the item it took."""
        with self._cond:
            self._item, self._has_item, self._taken = None, False, False
            self._handled = True
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
            self._has_item = False
            self._cond.notify_all()
