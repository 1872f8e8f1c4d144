"""The broker process killed under a running watcher: the checkpoint stays while Kafka is away, and
after the restart every change arrives (at least once); de-duplication by change id gives each once."""

from __future__ import annotations

import uuid

import pytest

from tests.sinks.support import ITEMS_DDL, deduplicated, per_key, read_topic, row, write
from tests.watcher.core_support import Collector, wait_until
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, RetryPolicy, State, TableId, TableWatcher
from watcher.sinks import DeliveryError
from watcher.sinks.kafka import KafkaSink


def test_a_broker_outage_holds_the_checkpoint_and_loses_nothing(make_database, broker):
    db = make_database([ITEMS_DDL])
    checkpoints = InMemoryCommitTimestampRepository()
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True, partitions=2, delivery_timeout=1.0,
                     config={"reconnect.backoff.max.ms": 200})  # find the broker back at once, not after up to 10 s
    w = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=checkpoints, initial_timestamp=MIN_TIMESTAMP,
                     callback_error_policy="retry", retry_policy=RetryPolicy(initial=0.05, maximum=0.3))
    delivered = Collector()
    w.add_callback(delivered)
    sink.attach(w)
    try:
        w.start()
        first = write(db, [row(1, "x", 1), row(2, "y", 1)])
        wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp >= first, 20)
        held = checkpoints.get(TableId("Items"))

        broker.stop(kill=True)  # a crash: nothing is flushed, connections drop
        second = write(db, [row(1, "x", 2), row(3, "z", 2)])
        wait_until(lambda: w.stats()["retries"] >= 2, 30)  # the sink failed the batch at least twice
        assert checkpoints.get(TableId("Items")) == held
        assert w.state == State.RUNNING and w.failure is None
        with pytest.raises(DeliveryError) as refused:  # what the watcher was told: topic, key and error
            sink.write_batch([delivered.changes[0]], w.table_info("Items"))
        assert f"topic {topic}, key " + '{"table":"Items","key":["1","x"]}' in str(refused.value)
        assert refused.value.failures and refused.value.total == 1

        broker.start()
        wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp >= second, 60)
        messages = read_topic(broker.bootstrap_servers, topic, at_least=4)
    finally:
        w.stop()
        sink.close()

    unique = deduplicated(messages)
    assert len(messages) >= len(unique) == 4  # at least once; once per change id
    assert sorted(m.key_values for m in unique) == [("1", "x"), ("1", "x"), ("2", "y"), ("3", "z")]
    ordered = per_key(unique)[("1", "x")]
    assert [m.value["after"]["Big"] for m in ordered] == ["1", "2"]  # the key's versions in commit order
    assert w.failure is None
