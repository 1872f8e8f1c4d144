"""Watchers built on a TableWatcher over a helper table, translating its rows into data changes.

The change-set poller (:mod:`watcher.capture.helper_tables.change_sets`) tails ``CHANGE_SETS`` and the history
watcher (:mod:`watcher.capture.helper_tables.history`) tails a history table; both then hand the application
changes of the *data* tables. What they share lives here: callbacks, the blocking
iterator, the lifecycle and the statistics, all delegated to one inner
:class:`~watcher.capture.table_watcher.TableWatcher` so that polling, retries, exact checkpoints
and failure handling are the same code as for plain tables.

The inner watcher's checkpoint only moves after the translated changes of a helper row
were handed to every callback, so delivery stays at-least-once with at most one poll
repeated after a crash.

Example::

    class Upper(TranslatingWatcher):
        def _translate(self, change):
            yield change
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...checkpoints import CommitTimestampRepository
from ...model import Change, Checkpoint, TableId
from ..handoff import Handoff
from ..table_watcher import Callback, State, TableWatcher


class RenamedCheckpoints(CommitTimestampRepository):
    """A view of a checkpoint store that files one table's checkpoints under another name.

    Several pollers may tail the same helper table (``CHANGE_SETS``) for different data
    tables; each keeps its own place under its own name.

    >>> from watcher.checkpoints import InMemoryCommitTimestampRepository
    >>> base = InMemoryCommitTimestampRepository()
    >>> view = RenamedCheckpoints(base, TableId("CHANGE_SETS"), TableId("CHANGE_SETS:Orders"))
    >>> from watcher.model import MIN_TIMESTAMP
    >>> view.set(TableId("CHANGE_SETS"), Checkpoint(MIN_TIMESTAMP))
    >>> base.get(TableId("CHANGE_SETS:Orders")) == Checkpoint(MIN_TIMESTAMP)
    True
    """

    def __init__(self, store: CommitTimestampRepository, table: TableId, stored_as: TableId) -> None:
        self.store = store
        self.table = table
        self.stored_as = stored_as

    def _map(self, table: TableId) -> TableId:
        return self.stored_as if table == self.table else table

    def initialize(self) -> None:
        self.store.initialize()

    def get(self, table: TableId, shard: Any = None) -> Checkpoint | None:
        return self.store.get(self._map(table), shard)

    def set(self, table: TableId, checkpoint: Checkpoint, shard: Any = None) -> None:
        self.store.set(self._map(table), checkpoint, shard)

    def oldest(self, table: TableId) -> Any:
        return self.store.oldest(self._map(table))


class TranslatingWatcher(ABC):
    """Runs ``self.inner`` (a TableWatcher on a helper table) and delivers translated changes.

    Subclasses build ``self.inner`` and implement :meth:`_translate`; they may add a batch
    hook with ``self.inner.add_batch_callback`` to prepare a whole poll at once.
    """

    inner: TableWatcher

    def __init__(self) -> None:
        self._callbacks: list[Callback] = []
        self._handoffs: list[Handoff] = []
        self._lock = threading.RLock()
        self._attached = False

    @abstractmethod
    def _translate(self, change: Change) -> Iterable[Change]:
        """The data changes one row of the helper table stands for, in delivery order."""

    def _dispatch(self, helper_change: Change) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for change in self._translate(helper_change):
            for cb in callbacks:
                cb(change)

    # --- the TableWatcher surface ----------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self.inner.state

    @property
    def failure(self) -> BaseException | None:
        return self.inner.failure

    @property
    def position(self) -> Checkpoint | None:
        """The inner watcher's position on the helper table."""
        return self.inner.position

    def add_callback(self, callback: Callable[[Change], Any]) -> None:
        """Call ``callback(change)`` for every translated change, one at a time, in order."""
        with self._lock:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[Change], Any]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def add_failure_listener(self, listener: Callable[[TableWatcher, BaseException], None]) -> None:
        self.inner.add_failure_listener(listener)

    def start(self) -> TranslatingWatcher:
        self._prepare()
        with self._lock:
            if not self._attached:
                self.inner.add_callback(self._dispatch)
                self._attached = True
        self.inner.start()
        return self

    def _prepare(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Hook run at each start, before the inner watcher starts (schema discovery)."""

    def stop(self, timeout: float | None = 30.0) -> None:
        with self._lock:
            for h in list(self._handoffs):
                h.close()
        self.inner.stop(timeout)

    def __enter__(self) -> TranslatingWatcher:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def changes(self, timeout: float | None = None) -> Iterator[Change]:
        """A blocking iterator over translated changes (see :meth:`TableWatcher.changes`)."""
        handoff = Handoff()
        offer = handoff.put
        with self._lock:
            self._handoffs.append(handoff)
            self._callbacks.append(offer)
        try:
            yield from handoff.consume(timeout)
        finally:
            with self._lock:
                self.remove_callback(offer)
                if handoff in self._handoffs:
                    self._handoffs.remove(handoff)

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    def prometheus(self) -> str:
        return self.inner.prometheus()
