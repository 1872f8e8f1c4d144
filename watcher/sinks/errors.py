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
    """No broker of ``bootstrap_servers`` answered within ``timeout`` seconds (raised before anything is published).

    >>> str(BrokerUnreachableError("127.0.0.1:1", 5, "Local: Broker transport failure"))
    'no Kafka broker at 127.0.0.1:1 answered within 5 s (Local: Broker transport failure)'
    """

    def __init__(self, bootstrap_servers: str, timeout: float, reason: str) -> None:
        super().__init__(f"no Kafka broker at {bootstrap_servers} answered within {timeout:g} s ({reason})")
        self.bootstrap_servers = bootstrap_servers
        self.timeout = timeout
        self.reason = reason


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
