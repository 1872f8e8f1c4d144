"""The Kafka cluster as the Kafka sink needs it: a broker that answers, topics that exist, their message limit.

:class:`KafkaTopics` asks the cluster with an admin client (its log lines go to this module's
logger, not to stderr): :meth:`KafkaTopics.list` is a
:class:`~watcher.sinks.errors.BrokerUnreachableError` naming the bootstrap servers when no broker
answers in time; :meth:`KafkaTopics.check` makes sure a topic exists before its first message
(created when allowed, else :class:`~watcher.sinks.errors.TopicMissingError`; a creation the broker
refuses is a :class:`~watcher.sinks.errors.TopicCreationError`) and returns the most bytes one of
its messages may have: the topic's ``max.message.bytes``, or the producer's ``message.max.bytes``
when smaller. Each topic is asked about once; the answers are kept.

Example::

    topics = KafkaTopics({"bootstrap.servers": "127.0.0.1:9092"}, create=True, partitions=3,
                         replication_factor=1, timeout=30)
    limit = topics.check("shop.Singers")          # bytes
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from .errors import BrokerUnreachableError, SinkError, TopicCreationError, TopicMissingError

__all__ = ["KafkaTopics"]

#: librdkafka's defaults of the producer's largest message and largest batch of messages, in bytes.
PRODUCER_MESSAGE_MAX = 1_000_000
PRODUCER_BATCH_SIZE = 1_000_000
#: The topic setting the broker checks a record batch against.
TOPIC_MESSAGE_MAX = "max.message.bytes"

_LOG = logging.getLogger(__name__)


def _error(exc: KafkaException) -> KafkaError | None:
    return exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None


class KafkaTopics:
    """The topics of the cluster that ``settings`` (producer settings, ``bootstrap.servers`` among them) reach.

    Args:
        settings: the producer's settings (the admin client takes the same).
        create: create a missing topic (with ``partitions`` and ``replication_factor``).
        timeout: seconds each question to the cluster may take.
    """

    def __init__(self, settings: Mapping[str, Any], *, create: bool, partitions: int, replication_factor: int,
                 timeout: float) -> None:
        self.settings = dict(settings)
        self.bootstrap_servers = str(settings["bootstrap.servers"])
        self.create = create
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout = timeout
        self._limits: dict[str, int] = {}
        self._lock = threading.Lock()

    def _admin(self) -> AdminClient:
        return AdminClient({**self.settings, "logger": _LOG})  # type: ignore[dict-item]

    def list(self, timeout: float | None = None) -> Mapping[str, Any]:
        """The cluster's topics; BrokerUnreachableError naming the bootstrap servers when none answered in time."""
        wait = self.timeout if timeout is None else timeout
        try:
            return self._admin().list_topics(timeout=wait).topics  # type: ignore[no-any-return]
        except KafkaException as exc:
            error = _error(exc)
            raise BrokerUnreachableError(self.bootstrap_servers, wait, error.str() if error else str(exc)) from exc

    def check(self, topic: str) -> int:
        """Make sure ``topic`` exists (created when allowed, else TopicMissingError); returns the most bytes
        one of its messages may have (the topic's and the producer's limits)."""
        with self._lock:
            if topic in self._limits:
                return self._limits[topic]
        listed = self.list()
        found = topic in listed and listed[topic].error is None
        if not found and not self.create:
            raise TopicMissingError(topic, "create it, or give the sink create_topics=True")
        admin = self._admin()
        if not found:
            self._create(admin, topic)
        limit = min(self._limit(admin, topic), int(self.settings.get("message.max.bytes", PRODUCER_MESSAGE_MAX)))
        batch = int(self.settings.get("batch.size", PRODUCER_BATCH_SIZE))
        if batch > limit:  # the broker checks whole batches against the topic's limit
            _LOG.warning("Kafka topic %s takes messages of at most %d bytes, less than the producer's batch.size %d: "
                         "a batch of small messages may be refused; give the sink config batch.size <= %d",
                         topic, limit, batch, limit)
        with self._lock:
            self._limits[topic] = limit
        return limit

    def _limit(self, admin: AdminClient, topic: str) -> int:
        """The topic's ``max.message.bytes`` as the broker reports it (a topic just created may take a moment
        to be known to the broker that answers)."""
        resource = ConfigResource(ResourceType.TOPIC, topic)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                entries = admin.describe_configs([resource], request_timeout=self.timeout)[resource].result(self.timeout)
                return int(entries[TOPIC_MESSAGE_MAX].value)
            except KafkaException as exc:
                error = _error(exc)
                if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise SinkError(f"Kafka at {self.bootstrap_servers} did not say how large a message topic {topic} "
                                f"takes: {exc}") from exc

    def _create(self, admin: AdminClient, topic: str) -> None:
        futures = admin.create_topics([NewTopic(topic, num_partitions=self.partitions,
                                                replication_factor=self.replication_factor)],
                                      operation_timeout=self.timeout, request_timeout=self.timeout)
        try:
            futures[topic].result(self.timeout)
        except KafkaException as exc:
            error = _error(exc)
            if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return  # another sink created it first
            raise TopicCreationError(topic, self.partitions, self.replication_factor,
                                     f"{error.name()}: {error.str()}" if error is not None else str(exc)) from exc
