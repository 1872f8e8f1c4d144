"""The Sink interface: the one way a watcher's batches go somewhere durable before its checkpoint moves.

A sink is attached to a :class:`~watcher.capture.base.Watcher` of any capture mode (polled
tables, database watchers, change sets, history tables, change streams, groups of them) with
:meth:`Sink.attach`; it then gets each batch the watcher delivers through
:meth:`Sink.submit_batch`, which by default calls :meth:`Sink.write_batch` and is done when it
returns. :class:`~watcher.staging.sink.StagingSink` (staging files) implements
:meth:`~Sink.write_batch` only; :class:`~watcher.sinks.kafka.KafkaSink` (Kafka topics) also
:meth:`~Sink.submit_batch`, acknowledging a batch later, when the broker did.

Ordering:
    A batch is one poll's changes of one table (for a change stream: one read's changes of one
    table). The batches of one poll loop (a polled table's shard set, a change-stream
    partition) are handed over in order, one call at a time. A sink implementing only
    :meth:`Sink.write_batch` gets the next batch of that loop only after it returned for this
    one. A sink overriding :meth:`Sink.submit_batch` may get the next batches while earlier
    ones are still in flight (at most ``max_batches_in_flight`` of the watcher, 4 by default;
    then the loop waits for its oldest); it must make them durable in the order it got them
    (KafkaSink: one idempotent producer, so per partition the broker takes them in that order).
    Within a batch the changes are in commit-timestamp order per key (a polled batch: in
    commit-timestamp order, then key order). Batches of different tables (a DatabaseWatcher's
    tables, a change stream's partitions) carry no order between them.

Acknowledged:
    :meth:`Sink.write_batch` returning normally, or the future :meth:`Sink.submit_batch`
    returned completing with a result, means the batch is durable where the sink puts it (a
    staging file renamed into place and fsynced; every Kafka message acknowledged by the
    broker). The watcher's checkpoint moves past a batch only once every sink acknowledged it
    and every batch of the same poll loop handed over before it (:mod:`watcher.capture.acks`):
    checkpoints move in order and never past a batch not acknowledged. A watcher that stops
    waits for the batches in flight (up to its stop timeout) and stores what was acknowledged.

Several sinks:
    A watcher may feed several sinks; each batch is handed to them in the order they were
    attached (a synchronous sink acknowledges before the next sink gets the batch; one
    acknowledging later does not hold up the next), and the checkpoint moves only once every
    sink acknowledged the batch. When one refuses it, the batch is not acknowledged: another
    sink may get the same batch again (delivery is at-least-once), and nothing is lost.

Errors:
    A sink that raises in :meth:`Sink.write_batch` or :meth:`Sink.submit_batch`, or whose
    future completes with an exception, refuses the batch. The checkpoint stays before it, and
    the poll loop goes back there: the batches it had handed over after the refused one are read
    and handed over again (at-least-once; the same changes carry the same change ids, and a
    consumer that keeps the first copy of each id sees each key in commit order). A watcher that
    is killed with batches in flight hands them over again from its stored checkpoint when it is
    started again. The watcher then does what it does
    for a failing batch callback: a :class:`~watcher.capture.table_watcher.TableWatcher` (and
    the DatabaseWatcher, change-set and history watchers made of them) fails with a
    :class:`~watcher.errors.CallbackError` naming the batch (``callback_error_policy="fail"``, the
    default) or delivers again from the refused batch on after a backoff of its ``retry_policy``
    (``callback_error_policy="retry"``); a
    :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher` fails, and resumes from
    its stored progress when started again. A failed watcher never loses its place.

Threading:
    :meth:`Sink.write_batch` and :meth:`Sink.submit_batch` run on the watcher's delivery thread
    (a poll thread; for a change stream, the thread of the partition whose read made the batch),
    never twice at once for one poll loop, but a sink attached to several poll loops (a
    DatabaseWatcher, a change stream's partitions, several watchers) is called from several
    threads at once: an implementation must be thread-safe. A future may be completed on any
    thread (KafkaSink: its reporting thread); the watcher only waits on it. The application
    calls :meth:`Sink.close` once its watchers stopped (or uses the sink as a context manager).

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

import concurrent.futures as cf
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

    def submit_batch(self, changes: Sequence[Change], table: TableInfo) -> cf.Future[None]:
        """Hand ``changes`` over; the future completes once they are durable (or with the refusal's exception).

        By default: :meth:`write_batch`, then a completed future (a sink that implements only
        :meth:`write_batch` is synchronous, as it always was). Override it to acknowledge later
        and let the watcher go on reading meanwhile; batches handed over must become durable in
        the order they came. Raising refuses the batch at once.

        >>> class Nothing(Sink):
        ...     def write_batch(self, changes, table):
        ...         pass
        >>> Nothing().submit_batch([], None).done()
        True
        """
        self.write_batch(changes, table)
        done: cf.Future[None] = cf.Future()
        done.set_result(None)
        return done

    def attach(self, watcher: Watcher) -> None:
        """Get every batch of ``watcher`` (any :class:`~watcher.capture.base.Watcher`) before its checkpoint moves."""

        def deliver(changes: list[Change]) -> cf.Future[None]:
            return self.submit_batch(changes, watcher.table_info(changes[0].table))

        watcher.add_batch_callback(deliver)

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the sink holds (connections, files), once the watchers feeding it stopped."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def attach_sinks(watcher: Watcher, sinks: Iterable[Sink]) -> None:
    """Attach ``sinks`` to ``watcher`` in order: each batch goes to every sink, one after the other, and
    the checkpoint moves once all of them acknowledged it (and every earlier batch of its poll loop).

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
