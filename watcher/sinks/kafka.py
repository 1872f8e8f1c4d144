"""KafkaSink: every change a watcher delivers, published to Kafka before the watcher's checkpoint moves.

Each change becomes one message (:mod:`.events`): the key names the table and the primary key,
so one key's changes stay in one partition in commit order; the value is a Debezium envelope or
the project's staging record (``event_format``); the headers carry the changelog's change id, the
commit timestamp, the table and the mod type. A table's topic comes from a template
(:mod:`.topics`: ``%table%``, ``%database%``, ``%instance%``, ``%project%``, or Debezium's
``<prefix>.<table>``).

Delivery (:mod:`.kafka_delivery`): one idempotent producer per sink (``enable.idempotence=true``, ``acks=all``, at most 5
requests in flight per connection: retries inside the client neither duplicate nor reorder
messages of a partition). :meth:`KafkaSink.submit_batch` hands a batch's messages to the
producer and returns a future the delivery reports complete (on the sink's own reporting
thread), so a watcher goes on reading while the batch is in flight (:mod:`watcher.capture.acks`);
:meth:`KafkaSink.write_batch` waits for it. The client never drops a message on its own (no local
message timeout): a batch the broker did not acknowledge within ``delivery_timeout`` (a broker
down, a topic gone), or one with any failed message, makes the sink drop everything its producer
still holds, at once, and start a new producer. The batch fails with a
:class:`~watcher.sinks.errors.DeliveryError` naming its topic, key and error, and so does every
batch still in flight behind it; what the broker wrote of them is, per partition, a prefix of what
was sent (no gaps), so a consumer keeping the first copy of each ``change_id`` sees each key in
commit order. The watcher's checkpoint stays before the failed batch and the batches from there on
are sent again when it retries or restarts: messages that did arrive arrive twice then. Delivery is
at-least-once; consumers de-duplicate by the ``change_id`` header (the changelog's id of the change). Topics are
checked before their first message (:mod:`.kafka_topics`; the producer never has the broker create one on its own):
missing ones are created with ``create_topics=True``, else a
:class:`~watcher.sinks.errors.TopicMissingError` names the topic (a
:class:`~watcher.sinks.errors.TopicCreationError` when the broker refuses to create it).

Faults:

* no broker answers: :meth:`KafkaSink.attach` (or :meth:`KafkaSink.connect`) raises a
  :class:`~watcher.sinks.errors.BrokerUnreachableError` naming the bootstrap servers after
  ``connect_timeout`` seconds, so a watcher does not start against a broker that is not there;
* the broker goes away under a running watcher: batches fail with a DeliveryError and the
  watcher's checkpoint stays; with ``callback_error_policy="retry"`` the watcher sends the same
  batch again until the broker is back (the client reconnects on its own), nothing is lost and
  one key's changes stay in commit order;
* a message larger than its topic takes (``max.message.bytes``, or the producer's
  ``message.max.bytes``): checked before anything of the batch is sent (:mod:`.dead_letter`);
  the batch fails with a :class:`~watcher.sinks.errors.MessageTooLargeError` naming the table
  and the key, or, with ``dead_letter_topic``, the message goes there with headers saying why
  and the rest of the batch goes on.

Example::

    sink = KafkaSink("127.0.0.1:9092", topic="shop.%table%", event_format="debezium", create_topics=True)
    sink.attach(watcher)           # any Watcher; with several sinks: attach_sinks(watcher, [staging, sink])
    with watcher:
        ...
    sink.close()
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    from .kafka_delivery import InFlightProducer
    from .kafka_topics import KafkaTopics
except ImportError as exc:  # the core package does not need Kafka: say which extra brings it
    raise ImportError("KafkaSink needs confluent-kafka: pip install 'spanner-watcher[kafka]'") from exc

from ..capture.change_streams.watcher import ChangeStreamWatcher
from ..capture.group import WatcherGroup
from ..errors import ConfigurationError
from ..model import Change
from ..staging import contract
from . import events
from .base import Sink
from .batch_events import BatchEvents
from .dead_letter import dead_letter, wire_size
from .errors import MessageTooLargeError, SinkError
from .topics import SourceNames, TopicTemplate

if TYPE_CHECKING:
    from ..capture.base import Watcher
    from ..capture.table_info import TableInfo

__all__ = ["ARGUMENT_SETTINGS", "PRODUCER_SETTINGS", "KafkaSink"]

#: Producer settings the sink relies on; ``config`` may not change them.
PRODUCER_SETTINGS: Mapping[str, Any] = {
    "enable.idempotence": True,       # no duplicates or reordering from the client's own retries
    "acks": "all",                    # acknowledged = written to every in-sync replica
    "allow.auto.create.topics": False,  # a missing topic is the sink's to create or to report
}
#: Settings given by the sink's own arguments (``config`` may not set them either): name -> argument.
ARGUMENT_SETTINGS: Mapping[str, str] = {
    "bootstrap.servers": "bootstrap_servers", "metadata.broker.list": "bootstrap_servers",
    "message.timeout.ms": "delivery_timeout", "delivery.timeout.ms": "delivery_timeout",
    "request.required.acks": "acks=all (fixed)",
}
class KafkaSink(Sink):
    """Publishes each batch to Kafka and returns once the broker acknowledged all of it (see the module docstring).

    Args:
        bootstrap_servers: the brokers, ``host:port[,host:port...]``.
        topic: the topic template of a table (:class:`~watcher.sinks.topics.TopicTemplate`).
        event_format: ``debezium`` (Debezium's envelope) or ``record`` (the staging record).
        create_topics: create a missing topic (else a missing topic fails the batch, naming it).
        partitions: partitions of a topic the sink creates.
        replication_factor: replicas of a topic the sink creates.
        database: the database whose names fill the template and the events' source (a
            ``Database``, ``projects/P/instances/I/databases/D`` or a database id); default: the
            attached watcher's.
        server_name: Debezium's ``source.name`` (its logical server name; default: the database id).
        watcher_id: the ``watcher_id`` of the records (default: a random id per sink).
        delivery_timeout: seconds the broker has to acknowledge a message before its batch fails.
        config: more librdkafka producer settings (security, compression, ...); not those of
            :data:`PRODUCER_SETTINGS` nor :data:`ARGUMENT_SETTINGS`.
        tombstones: follow each DELETE's event by a tombstone (its key, no value), as Debezium's
            ``tombstones.on.delete`` does, for compacted topics.
        connect_timeout: seconds the brokers have to answer when the sink is attached (else
            :class:`~watcher.sinks.errors.BrokerUnreachableError`).
        dead_letter_topic: where a message too large for its topic goes instead (with headers saying
            why, :mod:`.dead_letter`); None: such a message fails its batch, naming table and key.
        clock: nanoseconds since the epoch, for the events' ``ts_ms`` (tests drive it).

    Raises:
        ConfigurationError: an option that cannot work (the message names it).
    """

    def __init__(self, bootstrap_servers: str, *, topic: str = "%table%", event_format: str = "debezium",
                 create_topics: bool = False, partitions: int = 1, replication_factor: int = 1,
                 database: Any = None, server_name: str | None = None, watcher_id: str | None = None,
                 delivery_timeout: float = 30.0, config: Mapping[str, Any] | None = None, tombstones: bool = False,
                 connect_timeout: float = 5.0, dead_letter_topic: str | None = None,
                 clock: Callable[[], int] = time.time_ns) -> None:
        if not bootstrap_servers:
            raise ConfigurationError("bootstrap_servers must name at least one broker (host:port)")
        if not isinstance(partitions, int) or partitions < 1:
            raise ConfigurationError(f"partitions must be a positive integer, got {partitions!r}")
        if not isinstance(replication_factor, int) or replication_factor < 1:
            raise ConfigurationError(f"replication_factor must be a positive integer, got {replication_factor!r}")
        if delivery_timeout <= 0:
            raise ConfigurationError(f"delivery_timeout must be > 0 seconds, got {delivery_timeout}")
        if connect_timeout <= 0:
            raise ConfigurationError(f"connect_timeout must be > 0 seconds, got {connect_timeout}")
        clashing = sorted(set(config or {}) & set(PRODUCER_SETTINGS))
        if clashing:
            raise ConfigurationError(f"config may not set {', '.join(clashing)}: the sink's delivery guarantee needs "
                                     f"{', '.join(f'{k}={v}' for k, v in PRODUCER_SETTINGS.items())}")
        given = sorted(set(config or {}) & set(ARGUMENT_SETTINGS))
        if given:
            raise ConfigurationError(f"config may not set {given[0]}: the sink's {ARGUMENT_SETTINGS[given[0]]} gives it")
        self.bootstrap_servers = bootstrap_servers
        self.template = TopicTemplate(topic)
        self.event_format = events.check_format(event_format)
        self.create_topics = create_topics
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.database = database
        self.server_name = server_name
        self.watcher_id = watcher_id or f"watcher-{uuid.uuid4().hex[:12]}"
        self.delivery_timeout = float(delivery_timeout)
        self.tombstones = tombstones
        self.connect_timeout = float(connect_timeout)
        if dead_letter_topic is not None and (not dead_letter_topic or "%" in dead_letter_topic):
            raise ConfigurationError(f"dead_letter_topic must be one topic's name (no placeholders), not {dead_letter_topic!r}")
        #: Where messages too large for their topic go (checked as a topic name is).
        self.dead_letter_topic = TopicTemplate(dead_letter_topic).topic("", SourceNames()) if dead_letter_topic else None
        self.clock = clock
        self._settings = {"bootstrap.servers": bootstrap_servers, **(config or {})}
        # No local message timeout: the client never drops one message and sends a later one of its
        # partition; the sink gives up on whole producers instead (see _give_up).
        self._producer_settings = {**self._settings, **PRODUCER_SETTINGS, "message.timeout.ms": 0}
        self._lock = threading.Lock()
        self._producer = InFlightProducer(self._producer_settings, self.delivery_timeout)
        #: The topics checked, each with the most bytes a message of it may have (topic and producer limits).
        self._topics = KafkaTopics(self._settings, create=create_topics, partitions=partitions,
                                   replication_factor=replication_factor, timeout=self.delivery_timeout)
        self._connected = False
        #: Batches and messages the broker acknowledged; messages sent to the dead-letter topic.
        self.batches_sent = 0
        self.messages_sent = 0
        self.dead_lettered = 0

    # --- the Sink interface ------------------------------------------------------------------------------

    def attach(self, watcher: Watcher) -> None:
        """Publish every batch of ``watcher``; a group's members are attached one by one (each with its own
        database and change stream in the events' source).

        Raises:
            BrokerUnreachableError: no broker answered within ``connect_timeout`` (first attach only).
        """
        self.connect()
        if isinstance(watcher, WatcherGroup):
            for member in watcher.watchers:
                self.attach(member)
            return
        origin = self._origin(self.database if self.database is not None else getattr(watcher, "database", None),
                              watcher.stream if isinstance(watcher, ChangeStreamWatcher) else None)

        def deliver(changes: list[Change]) -> cf.Future[None]:
            return self._publish(changes, watcher.table_info(changes[0].table), origin)

        watcher.add_batch_callback(deliver)

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        """Publish one batch of one table; returns once the broker acknowledged every message."""
        self.submit_batch(changes, table).result()

    def submit_batch(self, changes: Sequence[Change], table: TableInfo) -> cf.Future[None]:
        """Hand one batch of one table to the producer; the future completes once the broker acknowledged
        every message (a DeliveryError when it did not). Too large a message, a missing topic or a
        mixed batch raise at once, before anything is sent."""
        return self._publish(changes, table, self._origin(self.database, None))

    def connect(self) -> None:
        """Make sure a broker answers (once per sink): a :class:`BrokerUnreachableError` after ``connect_timeout``."""
        if self._connected:
            return
        self._topics.list(self.connect_timeout)
        self._connected = True

    def close(self) -> None:
        """Wait up to ``delivery_timeout`` for the batches in flight, then drop the producer (what is left fails)."""
        self._producer.close()

    # --- publishing ----------------------------------------------------------------------------------------

    def topic_of(self, table: str, database: Any = None) -> str:
        """The topic of ``table``'s changes (``database``: default the sink's)."""
        return self.template.topic(table, SourceNames.of(database if database is not None else self.database))

    def _origin(self, database: Any, stream: str | None) -> events.Origin:
        names = SourceNames.of(database)
        return events.Origin(names, stream, self.server_name or names.database or "spanner-watcher")

    def _publish(self, changes: Sequence[Change], table: TableInfo, origin: events.Origin) -> cf.Future[None]:
        if not changes:
            done: cf.Future[None] = cf.Future()
            done.set_result(None)
            return done
        name = changes[0].table
        if any(c.table != name for c in changes):  # the topic is the table's: a mixed batch would land wrongly
            raise SinkError(f"a batch holds changes of one table; this one mixes {sorted({c.table for c in changes})}")
        topic = self.template.topic(name, origin.names)
        messages = self._messages(changes, table, origin)
        outgoing = self._route(name, topic, messages)
        report = self._producer.send(name, outgoing)
        letters = sum(1 for to, _ in outgoing if to != topic)

        def count(future: cf.Future[None]) -> None:
            if future.exception() is None:
                with self._lock:
                    self.batches_sent += 1
                    self.messages_sent += len(outgoing)
                    self.dead_lettered += letters

        report.future.add_done_callback(count)
        return report.future

    def messages(self, changes: Sequence[Change], table: TableInfo) -> list[events.Event]:
        """The messages :meth:`write_batch` sends for one batch of one table (in order; tombstones included)."""
        return self._messages(changes, table, self._origin(self.database, None))

    def _messages(self, changes: Sequence[Change], table: TableInfo, origin: events.Origin) -> list[events.Event]:
        build = BatchEvents(table, self.event_format, origin, self.clock(), watcher_id=self.watcher_id,
                            batch_id=contract.batch_id(changes[0].commit_timestamp))
        messages = [build.event(change, seq) for seq, change in enumerate(changes)]
        if self.tombstones:
            messages = [m for event in messages for m in ((event, event.tombstone()) if event.is_delete else (event,))]
        return messages

    def _route(self, table: str, topic: str, messages: Sequence[events.Event]) -> list[tuple[str, events.Event]]:
        """Each message with its topic: its table's, or the dead-letter topic's when it is too large for the
        table's (without a dead-letter topic: MessageTooLargeError, before anything of the batch is sent)."""
        limit = self._topics.check(topic)
        out: list[tuple[str, events.Event]] = []
        for message in messages:
            size = wire_size(message)
            if size <= limit:
                out.append((topic, message))
                continue
            if self.dead_letter_topic is None:
                raise MessageTooLargeError(table, message.key.decode("utf-8"), topic, size, limit)
            room = self._topics.check(self.dead_letter_topic)
            out.append((self.dead_letter_topic, dead_letter(message, topic=topic, limit=limit, room=room)))
        return out
