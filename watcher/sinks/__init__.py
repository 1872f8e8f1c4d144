"""Sinks: where a watcher's batches go before its checkpoint moves (:mod:`.base` has the contract).

:class:`~watcher.staging.sink.StagingSink` writes staging files; :class:`~watcher.sinks.kafka.KafkaSink`
publishes to Kafka (it needs the ``kafka`` extra: ``pip install spanner-watcher[kafka]``).
:class:`~watcher.sinks.metered.MeteredSink` counts any sink's figures (:mod:`.metrics`).
"""

from __future__ import annotations

from .base import Sink, attach_sinks
from .errors import BrokerUnreachableError, DeliveryError, MessageTooLargeError, SinkError, TopicCreationError, TopicMissingError
from .metered import MeteredSink
from .metrics import SinkMetrics

__all__ = ["BrokerUnreachableError", "DeliveryError", "MessageTooLargeError", "MeteredSink", "Sink", "SinkError",
           "SinkMetrics", "TopicCreationError", "TopicMissingError", "attach_sinks"]
