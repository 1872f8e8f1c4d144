"""The sinks' errors: a batch a sink could not make durable, a topic that cannot be used, a broker that does not answer.

Example:
    >>> raise TopicMissingError("orders.Singers", "create_topics=True creates it")
    Traceback (most recent call last):
    ...
    watcher.sinks.errors.TopicMissingError: Kafka topic orders.Singers does not exist (create_topics=True creates it)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import WatcherError


class SinkError(WatcherError):
    """A sink did not acknowledge a batch: the watcher's checkpoint does not move past it."""


class TopicMissingError(SinkError):
    """The topic a table's changes go to does not exist and the sink may not create it."""

    def __init__(self, topic: str, hint: str) -> None:
        super().__init__(f"Kafka topic {topic} does not exist ({hint})")
        self.topic = topic


class BrokerUnreachableError(SinkError):
    """No broker of ``bootstrap_servers`` answered within ``seconds`` (one line, naming them).

    >>> str(BrokerUnreachableError("127.0.0.1:9092", 5.0, "Local: Broker transport failure"))
    'no Kafka broker of 127.0.0.1:9092 answered within 5 s (Local: Broker transport failure)'
    """

    def __init__(self, bootstrap_servers: str, seconds: float, reason: str) -> None:
        super().__init__(f"no Kafka broker of {bootstrap_servers} answered within {seconds:g} s ({_one_line(reason)})")
        self.bootstrap_servers = bootstrap_servers
        self.seconds = seconds


class TopicCreationError(SinkError):
    """The broker refused to create a topic the sink needs (the message names the topic and why).

    >>> str(TopicCreationError("orders.Singers", 1, 3, "INVALID_REPLICATION_FACTOR"))
    'could not create Kafka topic orders.Singers (1 partitions, replication factor 3): INVALID_REPLICATION_FACTOR'
    """

    def __init__(self, topic: str, partitions: int, replication_factor: int, reason: str) -> None:
        super().__init__(f"could not create Kafka topic {topic} ({partitions} partitions, replication factor "
                         f"{replication_factor}): {_one_line(reason)}")
        self.topic = topic


class MessageTooLargeError(SinkError):
    """A change's message is larger than its topic takes, and the sink has no dead-letter topic for it.

    >>> print(MessageTooLargeError("Singers", '{"table":"Singers","key":["7"]}', "orders.Singers", 10_485_900, 1_048_588))
    the change of table Singers, key {"table":"Singers","key":["7"]} is a message of up to 10485900 bytes; topic orders.Singers takes at most 1048588 (raise the topic's max.message.bytes and the producer's message.max.bytes, or give the sink a dead_letter_topic)
    """

    def __init__(self, table: str, key: str, topic: str, size: int, limit: int) -> None:
        super().__init__(f"the change of table {table}, key {key} is a message of up to {size} bytes; topic {topic} "
                         f"takes at most {limit} (raise the topic's max.message.bytes and the producer's "
                         f"message.max.bytes, or give the sink a dead_letter_topic)")
        self.table = table
        self.key = key
        self.topic = topic
        self.size = size
        self.limit = limit


class DeliveryError(SinkError):
    """The broker did not acknowledge some messages of a batch; ``failures`` holds (topic, key, error) each.

    >>> str(DeliveryError("Singers", [("Singers", '{"table":"Singers","key":["7"]}', "Local: Message timed out")], 3))
    'Kafka did not acknowledge 1 of 3 messages of a batch of table Singers: topic Singers, key {"table":"Singers","key":["7"]}: Local: Message timed out'
    """

    #: Failures named in the message at most (the rest are counted).
    SHOWN = 3

    def __init__(self, table: str, failures: Sequence[tuple[str, str, str]], total: int) -> None:
        shown = "; ".join(f"topic {t}, key {k}: {e}" for t, k, e in failures[:self.SHOWN])
        more = f" (and {len(failures) - self.SHOWN} more)" if len(failures) > self.SHOWN else ""
        super().__init__(f"Kafka did not acknowledge {len(failures)} of {total} messages of a batch of table "
                         f"{table}: {shown}{more}")
        self.table = table
        self.failures = list(failures)
        self.total = total


def _one_line(text: str) -> str:
    """The first line of ``text`` (a client's reason may run over several)."""
    return text.strip().splitlines()[0] if text.strip() else "no reason given"
