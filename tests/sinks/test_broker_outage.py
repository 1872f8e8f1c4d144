"""The broker process SIGKILLed mid-publish under a running watcher while writers commit, then restarted on
the same port and log folder: the checkpoint stays while Kafka is away, the watcher retries, and a
consumer reading from the beginning sees every committed change (a polled key's versions written
between two polls coalesce into the newer, as polling sees rows), each key's changes in commit order,
and duplicates only as the same change id with the same content."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.sinks.delivery_check import Writers, check_delivery
from tests.sinks.support import ITEMS_DDL, read_topic
from tests.watcher.core_support import Collector, wait_until
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, RetryPolicy, State, TableId, TableWatcher
from watcher.sinks import DeliveryError
from watcher.sinks.kafka import KafkaSink


def test_the_broker_killed_mid_publish_and_restarted_loses_nothing_and_keeps_each_keys_order(make_database, broker):
    db = make_database([ITEMS_DDL])
    checkpoints = InMemoryCommitTimestampRepository()
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True, partitions=2, delivery_timeout=1.0,
                     config={"reconnect.backoff.max.ms": 200})  # find the broker back at once, not after up to 10 s
    w = TableWatcher(db, "Items", poll_interval=0.01, limit=50, checkpoints=checkpoints, initial_timestamp=MIN_TIMESTAMP,
                     callback_error_policy="retry", retry_policy=RetryPolicy(initial=0.05, maximum=0.3))
    delivered = Collector()
    w.add_callback(delivered)
    sink.attach(w)
    try:
        w.start()
        with Writers(db) as writers:
            wait_until(lambda: sink.messages_sent >= 150, 20)  # publishing is under way, hot keys seen several times
            broker.stop(kill=True)  # a crash: nothing is flushed, connections drop, batches are in flight
            wait_until(lambda: w.stats()["retries"] >= 1, 30)
            held = checkpoints.get(TableId("Items"))
            wait_until(lambda: w.stats()["retries"] >= 3, 30)  # the sink failed the batch again and again
            assert checkpoints.get(TableId("Items")) == held
            assert w.state == State.RUNNING and w.failure is None
            first = delivered.changes[0]
            with pytest.raises(DeliveryError) as refused:  # what the watcher was told: topic, key and error
                sink.write_batch([first], w.table_info("Items"))
            a, b = first.keys
            assert f'topic {topic}, key {{"table":"Items","key":["{a}","{b}"]}}' in str(refused.value)
            assert refused.value.failures and refused.value.total == 1

            broker.start()  # the same port and log folder
            wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp > held.commit_timestamp, 60)
            time.sleep(1.0)  # more writes after the restart
        assert writers.error is None
        last = writers.commits[-1][1]
        wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp >= last, 60)
        messages = read_topic(broker.bootstrap_servers, topic, at_least=len(writers.commits))
    finally:
        w.stop()
        sink.close()

    unique = check_delivery(messages, writers.commits)
    assert len(messages) >= len(unique) > len(writers.commits)  # at least once; once per change id
    assert w.failure is None
    print(f"\nbroker kill: {len(writers.commits)} transactions, {len(messages)} messages read, "
          f"{len(messages) - len(unique)} duplicates, {w.stats()['retries']} retries")
