"""librdkafka producer settings checked before a watcher starts: a setting it does not know, or a value it
refuses, is a ConfigurationError naming it (a typo in a configuration's producer table is found at once,
not as a broker that seems not to answer).

Example:
    >>> check_producer_settings({"compression.type": "lz4", "linger.ms": 5})
    >>> check_producer_settings({"compresion.type": "lz4"})
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: librdkafka refused a producer setting: No such configuration property: "compresion.type"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError

__all__ = ["check_producer_settings", "setting_named"]

#: How librdkafka names a setting it does not know or a value it refuses.
_NAMED = re.compile(r'(?:property|value for property)[: ]+"?([A-Za-z0-9._-]+)"?')
#: Where the checking client points: nothing is sent, the client is dropped at once.
_NOWHERE = "127.0.0.1:9"


def setting_named(message: str) -> str | None:
    """The setting a librdkafka configuration error names, if it names one.

    >>> setting_named('No such configuration property: "compresion.type"')
    'compresion.type'
    >>> setting_named("something else") is None
    True
    """
    match = _NAMED.search(message)
    return match.group(1) if match else None


def check_producer_settings(config: Mapping[str, Any]) -> None:
    """Raise a ConfigurationError naming the setting when librdkafka refuses ``config`` for a producer."""
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError as exc:  # the core package does not need Kafka
        raise ImportError("the Kafka sink needs confluent-kafka: pip install 'spanner-watcher[kafka]'") from exc

    try:  # librdkafka checks every setting when the client is made, before it connects
        Producer({**config, "bootstrap.servers": _NOWHERE, "log_level": 0}).flush(0)
    except KafkaException as exc:
        raise ConfigurationError(f"librdkafka refused a producer setting: {exc.args[0].str()}") from None
