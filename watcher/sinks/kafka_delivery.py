"""KafkaSink's producer and its batches in flight: sent together, acknowledged by the delivery reports.

:class:`InFlightProducer` holds one idempotent librdkafka producer (made again after a give-up) and
a reporting thread that serves its delivery reports and completes each batch's future. The client
never drops a message on its own (the sink's producer settings have no local message timeout); a
batch not acknowledged within ``delivery_timeout``, or with a failed message, makes the producer be
given up: everything it still holds is purged at once, so the batches behind the failed one fail
with it and the broker never writes a later message of a partition after a missing one.

Example::

    producer = InFlightProducer({"bootstrap.servers": "127.0.0.1:9092", "enable.idempotence": True,
                                 "acks": "all", "message.timeout.ms": 0}, delivery_timeout=30.0)
    report = producer.send("Singers", [("shop.Singers", event)])
    report.future.result()                 # acknowledged, or DeliveryError naming topic, key and error
    producer.close()
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from . import events
from .errors import DeliveryError, SinkError

log = logging.getLogger(__name__)

__all__ = ["InFlightProducer", "Report"]

#: Seconds a batch whose purged messages were never reported (its producer gone) waits before it fails.
_REPORT_GRACE = 5.0
#: Seconds the reporting thread waits in one poll of the producer (how soon a report is served).
_POLL_SECONDS = 0.02


class Report:
    """The delivery reports of one batch (the client calls back on the sink's reporting thread)."""

    def __init__(self, table: str, total: int, deadline: float) -> None:
        self.table = table
        self.total = total
        self.deadline = deadline
        self.reported = 0
        self.failures: list[tuple[str, str, str]] = []
        self.fatal = False
        self.overdue = False
        self.future: cf.Future[None] = cf.Future()
        self.future.set_running_or_notify_cancel()
        self._lock = threading.Lock()

    def report(self, err: KafkaError | None, msg: Any) -> None:
        """One message's report (one bound method for the whole batch: no closure per message)."""
        with self._lock:
            self.reported += 1
            if err is not None:
                why = err.str() if not self.overdue else f"not acknowledged in time, then dropped ({err.str()})"
                self.failures.append((str(msg.topic()), (msg.key() or b"").decode("utf-8"), why))
                self.fatal = self.fatal or err.fatal()
            finished = self.reported >= self.total
        if finished:
            self.finish()

    def finish(self, missing: str | None = None) -> None:
        """Acknowledge the batch or refuse it (``missing``: why some reports never came)."""
        if self.future.done():
            return
        with self._lock:
            failures = list(self.failures)
        if missing is not None:
            failures.append(("*", "*", missing))
        if failures:
            self.future.set_exception(DeliveryError(self.table, failures, self.total))
        else:
            self.future.set_result(None)

    @property
    def failed(self) -> bool:
        with self._lock:
            return bool(self.failures)


class InFlightProducer:
    """One producer and its batches in flight (see the module docstring); thread-safe."""

    def __init__(self, settings: Mapping[str, Any], delivery_timeout: float) -> None:
        self.settings = dict(settings)
        self.delivery_timeout = delivery_timeout
        self._lock = threading.RLock()  # held while a batch is produced, and by a give-up in that thread
        self._producer: Producer | None = None
        #: The batches in flight, oldest first, each with the producer that has its messages.
        self._in_flight: dict[Report, Producer] = {}
        self._reporting: threading.Thread | None = None
        self._closing = threading.Event()
        self._wake = threading.Event()

    def close(self) -> None:
        """Wait up to ``delivery_timeout`` for the batches in flight, then drop the producer (what is left fails)."""
        deadline = time.monotonic() + self.delivery_timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._in_flight:
                    break
            time.sleep(_POLL_SECONDS)
        self._closing.set()
        self._wake.set()
        thread = self._reporting
        if thread is not None:
            thread.join(self.delivery_timeout + _REPORT_GRACE)
        with self._lock:
            producer, self._producer = self._producer, None
            left = list(self._in_flight)
            self._in_flight.clear()
            self._reporting = None
        if producer is not None:
            producer.purge()
            producer.poll(0)
        for report in left:
            report.finish("the sink was closed before the broker acknowledged it")
        self._closing.clear()

    def send(self, table: str, messages: Sequence[tuple[str, events.Event]]) -> Report:
        """Hand one batch's ``(topic, message)`` pairs to the producer, in order; its report (and future).

        Raises:
            SinkError: the client refused a message at once (the producer is given up).
        """
        report = Report(table, len(messages), time.monotonic() + self.delivery_timeout)
        with self._lock:  # one batch's messages go to the producer together: the order of batches is kept
            producer = self._client()
            self._in_flight[report] = producer
            try:
                for topic, message in messages:
                    while True:
                        try:
                            producer.produce(topic, value=message.value, key=message.key,
                                             headers=list(message.headers), on_delivery=report.report)
                            break
                        except BufferError:  # the client's queue is full: deliveries make room
                            producer.poll(_POLL_SECONDS)
            except KafkaException as exc:
                self._in_flight.pop(report, None)
                self._give_up(producer)
                raise SinkError(f"Kafka refused a message of table {table} for topic {topic}: {exc}") from exc
        self._wake.set()
        return report

    def _report(self) -> None:
        """The reporting thread: serves the delivery reports and gives up on a producer whose batch failed or
        is overdue (every batch in flight behind it fails with it, so none is written past a gap)."""
        while not self._closing.is_set():
            with self._lock:
                producer = self._producer
                flying = list(self._in_flight.items())
            if not flying:
                self._wake.wait(0.5)
                self._wake.clear()
                continue
            if producer is not None:
                producer.poll(_POLL_SECONDS)
            else:
                time.sleep(_POLL_SECONDS)
            now = time.monotonic()
            doomed: set[Any] = set()
            for report, owner in flying:
                if report.future.done():
                    with self._lock:
                        self._in_flight.pop(report, None)
                    if report.failed:
                        doomed.add(owner)
                elif now > report.deadline:
                    report.overdue = True
                    doomed.add(owner)
                    if now > report.deadline + _REPORT_GRACE:  # its producer is gone and never reported it
                        report.finish(f"no delivery report within {self.delivery_timeout + _REPORT_GRACE:.0f} s")
            for owner in doomed:
                try:
                    self._give_up(owner)
                except Exception:  # noqa: BLE001 - the thread must live on: the batches' deadlines still end them
                    log.warning("could not drop a failed Kafka producer's messages", exc_info=True)

    def _give_up(self, producer: Producer) -> None:
        """Drop what the producer still holds and start afresh with a new one: a failed batch is sent again whole.

        The purge also fails the batches other threads have in flight on this producer; their
        watchers send them again, as they do any batch that was not acknowledged.
        """
        with self._lock:
            if self._producer is producer:
                self._producer = None
        try:
            producer.purge()
        finally:
            producer.poll(0)  # the purged messages' reports: their batches fail now

    def _client(self) -> Producer:
        """The producer (a new one after a give-up) and the reporting thread; called holding the lock."""
        if self._producer is None:
            self._producer = Producer(self.settings)
        if self._reporting is None or not self._reporting.is_alive():
            self._reporting = threading.Thread(target=self._report, name="kafka-sink-reports", daemon=True)
            self._reporting.start()
        return self._producer
