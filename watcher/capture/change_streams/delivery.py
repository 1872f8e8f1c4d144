"""Who gets a change-stream watcher's changes, and in which order.

Partitions are read on several threads, but their batches are delivered one at a time:
batch callbacks first (one list per table, so a staging sink writes one table per file),
then every change to every callback. Callbacks therefore never run two at once, and the
changes of one key (always in one partition for a time range; a child partition starts
only after its parents finished) come in commit order. With nobody to hand changes to, a
partition waits (:meth:`Delivery.wait_for_consumer`) instead of moving its progress past
changes nobody saw. A batch callback may return its acknowledgement as a future
(:mod:`..acks`): :meth:`Delivery.deliver` hands them back, and the partition's progress moves
once they came.

Example:
    >>> import threading
    >>> d = Delivery()
    >>> got = []
    >>> d.add_batch_callback(lambda changes: got.append(("batch", len(changes))))
    >>> d.add_callback(lambda change: got.append(("change", change)))
    >>> d.wait_for_consumer(threading.Event())
    >>> d.deliver([], "S")
    []
    >>> got
    []
"""

from __future__ import annotations

import threading
from typing import Any

from ...errors import CallbackError
from ...model import Change
from ..acks import pending
from ..base import BatchCallback, Callback, PollListener, PollRecord
from ..handoff import StopDelivery


class Delivery:
    """The callbacks, batch callbacks and poll listeners of one watcher (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._consumers = threading.Condition(self._lock)
        self._one_batch = threading.Lock()
        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[BatchCallback] = []
        self._poll_listeners: list[PollListener] = []

    def add_callback(self, callback: Callback) -> None:
        with self._lock:
            self._callbacks.append(callback)
            self._consumers.notify_all()

    def remove_callback(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def add_batch_callback(self, callback: BatchCallback) -> None:
        with self._lock:
            self._batch_callbacks.append(callback)
            self._consumers.notify_all()

    def add_poll_listener(self, listener: PollListener) -> None:
        with self._lock:
            self._poll_listeners.append(listener)

    def wait_for_consumer(self, stop: threading.Event) -> None:
        """Return once a callback or batch callback is there; StopDelivery when ``stop`` is set first."""
        with self._consumers:
            while not self._callbacks and not self._batch_callbacks:
                if stop.is_set():
                    raise StopDelivery()
                self._consumers.wait(0.1)

    def deliver(self, changes: list[Change], watcher_name: str) -> list[Any]:
        """One batch: batch callbacks per table, then each change to each callback; the batch callbacks'
        acknowledgements still to come. A callback's exception becomes a CallbackError; StopDelivery
        (a consumer gone at stop) passes through."""
        if not changes:
            return []
        results: list[Any] = []
        with self._lock:
            callbacks, batch_callbacks = list(self._callbacks), list(self._batch_callbacks)
        by_table: dict[str, list[Change]] = {}
        for c in changes:
            by_table.setdefault(c.table, []).append(c)
        with self._one_batch:
            try:
                for batch_callback in batch_callbacks:
                    for group in by_table.values():
                        results.append(batch_callback(group))
                for change in changes:
                    for callback in callbacks:
                        callback(change)
            except StopDelivery:
                raise
            except Exception as exc:
                raise CallbackError(f"a callback of change stream watcher {watcher_name} raised: {exc!r}") from exc
        return pending(results)

    def polled(self, record: PollRecord) -> Any:
        """Tell the poll listeners about one delivered batch."""
        with self._lock:
            listeners = list(self._poll_listeners)
        for listener in listeners:
            listener(record)
