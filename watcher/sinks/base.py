"""The Sink interface: the one way a watcher's batches go somewhere durable before its checkpoint moves.

A sink is attached to a :class:`~watcher.capture.base.Watcher` of any capture mode (polled
tables, database watchers, change sets, history tables, change streams, groups of them) with
:meth:`Sink.attach`; it then gets each batch the watcher delivers through
:meth:`Sink.write_batch`. :class:`~watcher.staging.sink.StagingSink` (staging files) and
:class:`~watcher.sinks.kafka.KafkaSink` (Kafka topics) implement it.

Ordering:
    A batch is one poll's changes of one table (for a change stream: one read's changes of one
    table). The batches of one poll loop arrive in order, one at a time: the next batch of that
    loop comes only after :meth:`Sink.write_batch` returned for this one. Within a batch the
    changes are in commit-timestamp order per key (a polled batch: in commit-timestamp order,
    then key order). Batches of different tables (a DatabaseWatcher's tables, a change
    stream's) carry no order between them.

Acknowledged:
    :meth:`Sink.write_batch` returning normally means the batch is durable where the sink puts
    it (a staging file renamed into place and fsynced; every Kafka message acknowledged by the
    broker). Only then may the watcher's checkpoint move past the batch.

Several sinks:
    A watcher may feed several sinks; they are called in the order they were attached, each
    after the one before acknowledged, and the checkpoint moves only once every sink
    acknowledged the batch. When one raises, the batch is not acknowledged: a sink before it
    may get the same batch again (delivery is at-least-once), and nothing is lost.

Errors:
    A sink that raises leaves the checkpoint where it was. The watcher then does what it does
    for a failing batch callback: a :class:`~watcher.capture.table_watcher.TableWatcher` (and
    the DatabaseWatcher, change-set and history watchers made of them) fails with a
    :class:`~watcher.errors.CallbackError` naming the batch (``callback_error_policy="fail"``, the
    default) or delivers the same batch again after a backoff of its ``retry_policy``
    (``callback_error_policy="retry"``); a
    :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher` fails, and resumes from
    its stored progress when started again. A failed watcher never loses its place.

Threading:
    :meth:`Sink.write_batch` runs on the watcher's delivery thread (a poll thread; for a change
    stream, the thread of the partition whose read made the batch), never twice at once for one
    poll loop, but a sink attached to several poll loops (a DatabaseWatcher, a change stream's
    partitions, several watchers) is called from several threads at once: an implementation
    must be thread-safe. The application calls :meth:`Sink.close` once its watchers stopped (or
    uses the sink as a context manager).

Example (a sink that keeps the batches in memory: a test's, or the start of your own)::

    class ListSink(Sink):
        def __init__(self) -> None:
            self.batches: list[list[Change]] = []
            self._lock = threading.Lock()

        def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
            with self._lock:                       # called from several poll threads
                self.batches.append(list(changes)) # returning = acknowledged

    sink = ListSink()
    sink.attach(watcher)                           # or attach_sinks(watcher, [staging, sink])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

from ..model import Change

if TYPE_CHECKING:  # only the interfaces' shapes are needed at run time
    from ..capture.base import Watcher
    from ..capture.table_info import TableInfo

__all__ = ["Sink", "attach_sinks"]


class Sink(ABC):
    """Where a watcher's batches go before its checkpoint moves (see the module docstring for the contract).

    Subclasses implement :meth:`write_batch`; they may override :meth:`attach` to learn about
    the watcher (e.g. its database's name) and :meth:`close` to release what they hold.
    """

    @abstractmethod
    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        """Make ``changes`` (one batch of one table, never empty) durable; return only once they are.

        ``table`` describes the table: its key columns in key order and its column types
        (a change's own ``column_types``, where it has them, say what it was read as). Raise to
        refuse the batch: the checkpoint then stays before it.
        """

    def attach(self, watcher: Watcher) -> None:
        """Get every batch of ``watcher`` (any :class:`~watcher.capture.base.Watcher`) before its checkpoint moves."""

        def deliver(changes: list[Change]) -> None:
            self.write_batch(changes, watcher.table_info(changes[0].table))

        watcher.add_batch_callback(deliver)

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the sink holds (connections, files), once the watchers feeding it stopped."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def attach_sinks(watcher: Watcher, sinks: Iterable[Sink]) -> None:
    """Attach ``sinks`` to ``watcher`` in order: each batch goes to every sink, one after the other, and
    the checkpoint moves once all of them acknowledged it.

    >>> class Nothing(Sink):
    ...     def write_batch(self, changes, table):
    ...         pass
    >>> class Recorder:
    ...     def __init__(self):
    ...         self.callbacks = []
    ...     def add_batch_callback(self, callback):
    ...         self.callbacks.append(callback)
    >>> w = Recorder()
    >>> attach_sinks(w, [Nothing(), Nothing()])
    >>> len(w.callbacks)
    2
    """
    for sink in sinks:
        sink.attach(watcher)
