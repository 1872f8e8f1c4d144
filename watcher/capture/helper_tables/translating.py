"""Watchers built on a TableWatcher over a helper table, translating its rows into data changes.

The change-set poller (:mod:`watcher.capture.helper_tables.change_sets`) tails ``CHANGE_SETS`` and the history
watcher (:mod:`watcher.capture.helper_tables.history`) tails a history table; both then hand the application
changes of the *data* tables. What they share lives here: the
:class:`~watcher.capture.base.Watcher` interface (callbacks, batch callbacks, the iterator,
the lifecycle and the statistics), delegated to one inner
:class:`~watcher.capture.table_watcher.TableWatcher` so that polling, retries, exact checkpoints
and failure handling are the same code as for plain tables.

The inner watcher's checkpoint only moves after the translated changes of a helper row
were handed to every callback, so delivery stays at-least-once with at most one poll
repeated after a crash. Batch callbacks get each poll's translated changes, one batch per
data table in order of first appearance, before any callback sees them. The inner watcher
only polls while somebody listens, so an iterator not yet asked for a change misses nothing.

Example::

    class Upper(TranslatingWatcher):
        def _translate(self, change):
            yield change
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Self

from ...checkpoints import CommitTimestampRepository
from ...model import Change, Checkpoint, TableId
from ..acks import pending
from ..base import BatchCallback, Callback, PollListener, State, Watcher
from ..table_watcher import TableWatcher


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


class TranslatingWatcher(Watcher):
    """Runs ``self.inner`` (a TableWatcher on a helper table) and delivers translated changes.

    Subclasses build ``self.inner`` and implement :meth:`_translate` and :meth:`table_infos`;
    they may override :meth:`_prepare_batch` to prepare a whole poll at once.
    """

    inner: TableWatcher

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callback] = []
        self._batch_callbacks: list[BatchCallback] = []
        self._lock = threading.RLock()
        self._listening = False
        self._watching_failures = False
        # helper change -> its translation, made for the batch callbacks and reused by _dispatch
        self._translated: dict[int, tuple[Change, list[Change]]] = {}

    @abstractmethod
    def _translate(self, change: Change) -> Iterable[Change]:
        """The data changes one row of the helper table stands for, in delivery order."""

    def _prepare_batch(self, helper_changes: list[Change]) -> None:  # noqa: B027 - an optional hook
        """Hook run once per poll of the helper table, before any of its rows is translated."""

    def _on_batch(self, helper_changes: list[Change]) -> list[Any]:
        self._prepare_batch(helper_changes)
        with self._lock:
            batch_callbacks = list(self._batch_callbacks)
        self._translated = {}
        if not batch_callbacks:
            return []
        per_table: dict[str, list[Change]] = {}
        for helper in helper_changes:
            translated = list(self._translate(helper))
            self._translated[id(helper)] = (helper, translated)
            for change in translated:
                per_table.setdefault(change.table, []).append(change)
        acks = []
        for changes in per_table.values():
            for cb in batch_callbacks:
                acks.append(cb(changes))
        return pending(acks)  # the inner watcher's checkpoint waits for them

    def _dispatch(self, helper_change: Change) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        done = self._translated.pop(id(helper_change), None)
        changes = done[1] if done is not None and done[0] is helper_change else self._translate(helper_change)
        for change in changes:
            for cb in callbacks:
                cb(change)

    def _listen(self) -> None:
        """Listen to the inner watcher exactly while somebody listens to this one."""
        with self._lock:
            wanted = bool(self._callbacks or self._batch_callbacks)
            if wanted and not self._listening:
                self.inner.add_batch_callback(self._on_batch)
                self.inner.add_callback(self._dispatch)
            elif self._listening and not wanted:
                self.inner.remove_callback(self._dispatch)
                self.inner.remove_batch_callback(self._on_batch)
            self._listening = wanted

    # --- the Watcher interface -------------------------------------------------------------------------

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
            self._listen()

    def remove_callback(self, callback: Callable[[Change], Any]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
            self._listen()

    def add_batch_callback(self, callback: BatchCallback) -> None:
        """Call ``callback(changes)`` with each poll's translated changes, one list per data table."""
        with self._lock:
            self._batch_callbacks.append(callback)
            self._listen()

    def add_poll_listener(self, listener: PollListener) -> None:
        """Polls of the helper table."""
        self.inner.add_poll_listener(listener)

    def add_failure_listener(self, listener: Callable[[TableWatcher, BaseException], None]) -> None:
        self.inner.add_failure_listener(listener)

    def start(self) -> Self:
        self._prepare()
        with self._lock:
            if not self._watching_failures:
                # A failed inner watcher ends this watcher's iterators too.
                self.inner.add_failure_listener(lambda _watcher, _exc: self._end_iterators())
                self._watching_failures = True
        self._reopen_iterators()
        self.inner.start()
        return self

    def _prepare(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Hook run at each start, before the inner watcher starts (schema discovery)."""

    def stop(self, timeout: float | None = 30.0) -> None:
        self._end_iterators()
        self.inner.stop(timeout)

    def stats(self) -> dict[str, Any]:
        """The figures of the poll loop on the helper table."""
        return self.inner.stats()

    def poll_stats(self) -> list[dict[str, Any]]:
        return self.inner.poll_stats()
