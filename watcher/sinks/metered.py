"""MeteredSink: any sink, with its figures counted (:class:`~watcher.sinks.metrics.SinkMetrics`).

The wrapper counts at the point where the watcher hands a batch over: a batch is published when
its callback is called, acknowledged when the callback returns (or, for a sink that acknowledges
later, when the future it returned completes), failed when it raises (or its future does), and
retried when a batch starting with the same change (table, key, commit timestamp) comes again
after the sink refused it (the watcher sends a refused batch again). It works for sinks that
attach their own callbacks (:meth:`Sink.attach` overridden, as
:class:`~watcher.sinks.kafka.KafkaSink` does for the source of its events): the callbacks the
inner sink registers while being attached are wrapped before they reach the watcher.

Example::

    kafka = MeteredSink(KafkaSink("127.0.0.1:9092", create_topics=True), "kafka")
    attach_sinks(watcher, [MeteredSink(StagingSink("staging"), "staging"), kafka])
    print(prometheus_text([kafka.metrics]))    # or: MetricsServer(watcher, sinks=[...])
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..model import Change
from .base import Sink
from .metrics import SinkMetrics

if TYPE_CHECKING:
    from ..capture.base import Watcher
    from ..capture.table_info import TableInfo

__all__ = ["MeteredSink"]

#: Refused batches remembered for telling a retry from a new batch, at most.
_REMEMBERED = 1024
_METERED = "_spanner_watcher_metered"


def _first(changes: Sequence[Change]) -> tuple[Any, ...]:
    first = changes[0]
    return (first.table, tuple(str(k) for k in first.keys), first.commit_timestamp)


class MeteredSink(Sink):
    """``sink`` with :attr:`metrics` counted (see the module docstring); ``name`` labels its metrics.

    ``clock`` gives seconds for the acknowledgement latency (monotonic by default; tests drive it).
    """

    def __init__(self, sink: Sink, name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.name = name
        self.metrics = SinkMetrics(name)
        self.clock = clock
        self._refused: dict[tuple[Any, ...], None] = {}
        self._lock = threading.Lock()

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        """The inner sink's write_batch, counted."""
        self._metered(lambda batch: self.sink.write_batch(batch, table))(list(changes))

    def submit_batch(self, changes: Sequence[Change], table: TableInfo) -> cf.Future[None]:
        """The inner sink's submit_batch, counted when its acknowledgement comes."""
        return self._metered(lambda batch: self.sink.submit_batch(batch, table))(list(changes))  # type: ignore[no-any-return]

    def attach(self, watcher: Watcher) -> None:
        """Attach the inner sink to ``watcher`` with every batch callback it registers counted."""
        with _wrapping(watcher, self._metered):
            self.sink.attach(watcher)

    def close(self) -> None:
        """Close the inner sink."""
        self.sink.close()

    def _metered(self, callback: Callable[[list[Change]], Any]) -> Callable[[list[Change]], Any]:
        def deliver(changes: list[Change]) -> Any:
            key = _first(changes) if changes else None
            with self._lock:
                again = key in self._refused
            if again:
                self.metrics.retried()
            self.metrics.published(len(changes))
            started = self.clock()
            try:
                result = callback(changes)
            except BaseException:
                self._outcome(key, again, len(changes), started, failed=True)
                raise
            if isinstance(result, cf.Future):  # acknowledged (or refused) when it completes
                result.add_done_callback(
                    lambda f: self._outcome(key, again, len(changes), started,
                                            failed=f.cancelled() or f.exception() is not None))
            else:
                self._outcome(key, again, len(changes), started, failed=False)
            return result

        setattr(deliver, _METERED, True)
        return deliver

    def _outcome(self, key: tuple[Any, ...] | None, again: bool, count: int, started: float, *, failed: bool) -> None:
        if failed:
            self.metrics.failed()
            self._remember(key)
            return
        self.metrics.acknowledged(count, self.clock() - started)
        if again and key is not None:
            with self._lock:
                self._refused.pop(key, None)

    def _remember(self, key: tuple[Any, ...] | None) -> None:
        """Keep a refused batch's first change (the newest few), to know the batch when it comes again."""
        if key is None:
            return
        with self._lock:
            self._refused.pop(key, None)
            self._refused[key] = None
            while len(self._refused) > _REMEMBERED:
                del self._refused[next(iter(self._refused))]


@contextlib.contextmanager
def _wrapping(watcher: Any, wrap: Callable[[Any], Any]) -> Iterator[None]:
    """While attaching: batch callbacks added to ``watcher`` (or, for a group, to its members) are wrapped.

    The method is shadowed on the instances for the duration of the ``with`` only; a callback
    already wrapped (added to a group, which hands it to its members) is not wrapped twice.
    """
    shadowed: list[Any] = []

    def shadow(w: Any) -> None:
        real = w.add_batch_callback

        def add(callback: Any) -> None:
            real(callback if getattr(callback, _METERED, False) else wrap(callback))

        w.add_batch_callback = add
        shadowed.append(w)
        for member in getattr(w, "watchers", ()):  # a WatcherGroup's members
            shadow(member)

    try:
        shadow(watcher)
        yield
    finally:
        for w in shadowed:
            with contextlib.suppress(AttributeError):
                del w.add_batch_callback
