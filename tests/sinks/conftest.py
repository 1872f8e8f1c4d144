"""One real Kafka broker (KRaft, a child JVM) for the sink tests, and ways to read what reached it.

The broker starts once per run (:func:`kafka_broker`) and is skipped when Maven or Java is
missing; when a test here fails, the end of the broker's log is added to its report.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from watcher.devtools.kafka_broker import KafkaBroker, KafkaToolsMissing

_BROKER: list[KafkaBroker] = []


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A running one-node Kafka cluster for the whole run (its data in a temporary folder)."""
    broker = KafkaBroker()
    _BROKER.append(broker)
    try:
        try:
            broker.start()
        except KafkaToolsMissing as exc:
            pytest.skip(str(exc))
        yield broker
    finally:
        broker.close()
        _BROKER.remove(broker)


@pytest.fixture
def broker(kafka_broker: KafkaBroker) -> KafkaBroker:
    """The run's broker, running (a test that stopped it and failed must not leave it down)."""
    if not kafka_broker.running:
        kafka_broker.start()
    return kafka_broker


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if report.failed and _BROKER:
        report.sections.append(("kafka broker log", _BROKER[0].log_tail()))
    return report
