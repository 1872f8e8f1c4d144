"""KafkaSink's faults, each with a clear error or a policy and nothing lost: no broker at start, a message
larger than its topic takes (fail naming table and key, or the dead-letter topic), a topic that cannot
be created or named."""

from __future__ import annotations

import base64
import os
import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.sinks.support import AMOUNT, AT, ITEMS_DDL, read_topic, row, write
from tests.watcher.core_support import wait_until
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, RetryPolicy, State, TableId, TableWatcher
from watcher.devtools.kafka_broker import free_port
from watcher.errors import CallbackError, ConfigurationError
from watcher.sinks import BrokerUnreachableError, MessageTooLargeError, TopicCreationError, TopicMissingError
from watcher.sinks.dead_letter import HEADERS as DEAD_LETTER_HEADERS
from watcher.sinks.kafka import KafkaSink

#: The test topic's limit: a small row fits, a row with a 30 KB blob does not.
TOPIC_LIMIT = 20_000
#: The producer's batches stay under the topic's limit (the broker checks whole batches).
PRODUCER = {"batch.size": 16_384}


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def watchers():
    made: list[TableWatcher] = []

    def make(db: Any, **kwargs: Any) -> TableWatcher:
        w = TableWatcher(db, "Items", poll_interval=0.01, initial_timestamp=MIN_TIMESTAMP,
                         retry_policy=RetryPolicy(initial=0.01, maximum=0.05), **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop()


def big_row(a: int, b: str, blob_bytes: int) -> tuple[Any, ...]:
    return (a, b, 1, AMOUNT, base64.b64encode(os.urandom(blob_bytes)), AT)


def create_topic(servers: str, topic: str, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": servers})  # kept until the answer came: its end cancels the request
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(20)
    # The controller answered; the broker's metadata, which the sink reads, follows a moment later.
    wait_until(lambda: topic in admin.list_topics(timeout=5).topics, 20, 0.05)


def test_no_broker_at_start_is_one_line_naming_the_servers_within_the_connect_timeout(make_database, watchers):
    servers = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    sink = KafkaSink(servers, create_topics=True, connect_timeout=1.5)
    w = watchers(make_database([ITEMS_DDL]))
    started = time.monotonic()
    with pytest.raises(BrokerUnreachableError) as refused:
        sink.attach(w)
    took = time.monotonic() - started
    assert 1.0 <= took < 4.0
    message = str(refused.value)
    assert "\n" not in message and servers in message and "1.5 s" in message
    assert refused.value.bootstrap_servers == servers
    sink.close()
    with pytest.raises(ConfigurationError, match="connect_timeout"):
        KafkaSink(servers, connect_timeout=0)


def test_a_message_too_large_for_its_topic_fails_the_batch_naming_table_and_key(make_database, watchers, broker,
                                                                                prefix):
    db = make_database([ITEMS_DDL])
    topic = f"{prefix}.Items"
    create_topic(broker.bootstrap_servers, topic, **{"max.message.bytes": str(TOPIC_LIMIT)})
    checkpoints = InMemoryCommitTimestampRepository()
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, config=PRODUCER)
    w = watchers(db, checkpoints=checkpoints)
    sink.attach(w)
    w.start()
    write(db, [row(1, "small"), big_row(2, "big", 30_000)])
    wait_until(lambda: w.state == State.FAILED, 20)
    assert isinstance(w.failure, CallbackError)
    cause = w.failure.__cause__
    assert isinstance(cause, MessageTooLargeError)
    assert cause.table == "Items" and cause.key == '{"table":"Items","key":["2","big"]}' and cause.topic == topic
    assert cause.limit == TOPIC_LIMIT and cause.size > TOPIC_LIMIT
    assert 'table Items, key {"table":"Items","key":["2","big"]}' in str(w.failure)
    assert checkpoints.get(TableId("Items")).commit_timestamp == MIN_TIMESTAMP  # the checkpoint stayed
    assert sink.messages_sent == 0  # nothing of the batch was sent: the small row comes again with it
    sink.close()


def test_a_dead_letter_topic_takes_the_message_too_large_with_why_and_the_watcher_goes_on(make_database, watchers,
                                                                                          broker, prefix):
    db = make_database([ITEMS_DDL])
    topic, letters = f"{prefix}.Items", f"{prefix}.dead-letters"
    create_topic(broker.bootstrap_servers, topic, **{"max.message.bytes": str(TOPIC_LIMIT)})
    checkpoints = InMemoryCommitTimestampRepository()
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, dead_letter_topic=letters, create_topics=True,
                     config=PRODUCER)
    w = watchers(db, checkpoints=checkpoints)
    sink.attach(w)
    w.start()
    # The dead-letter topic (1 MB by default) keeps the 30 KB row whole; a 2 MB row goes there without its value.
    committed = write(db, [row(1, "small"), big_row(2, "big", 30_000), big_row(3, "huge", 2_000_000), row(4, "after")])
    wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp >= committed, 30)
    main = read_topic(broker.bootstrap_servers, topic, at_least=2)
    dead = read_topic(broker.bootstrap_servers, letters, at_least=2)
    sink.close()

    assert [m.key_values for m in main] == [("1", "small"), ("4", "after")]
    assert [m.key_values for m in dead] == [("2", "big"), ("3", "huge")]
    kept, dropped = dead
    for m in dead:
        assert DEAD_LETTER_HEADERS[0] in m.headers and m.change_id  # the change is named
        assert m.headers["dead_letter.topic"] == topic and m.headers["dead_letter.limit"] == str(TOPIC_LIMIT)
        assert int(m.headers["dead_letter.bytes"]) > TOPIC_LIMIT
        assert m.headers["dead_letter.reason"].startswith("message too large")
        assert m.headers["table"] == "Items" and m.headers["commit_timestamp"]
    assert kept.headers["dead_letter.value"] == "kept" and kept.value["after"]["A"] == "2"
    assert dropped.headers["dead_letter.value"] == "dropped" and dropped.value is None
    assert sink.dead_lettered == 2 and w.failure is None and w.state == State.RUNNING


def test_a_topic_that_cannot_be_created_or_named_fails_naming_it(make_database, watchers, broker, prefix):
    db = make_database([ITEMS_DDL])
    # A replication factor the one-node cluster cannot give: the broker refuses to create the topic.
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{prefix}.%table%", create_topics=True, replication_factor=3)
    w = watchers(db, checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(w)
    w.start()
    write(db, [row(1, "x")])
    wait_until(lambda: w.state == State.FAILED, 20)
    cause = w.failure.__cause__
    assert isinstance(cause, TopicCreationError) and cause.topic == f"{prefix}.Items"
    assert f"could not create Kafka topic {prefix}.Items" in str(w.failure) and "replication factor 3" in str(w.failure)
    sink.close()
    # A template that gives no legal topic name for the table: the error names the name it gave.
    bad = KafkaSink(broker.bootstrap_servers, topic=f"{prefix} %table%", create_topics=True)
    with pytest.raises(ConfigurationError, match=f"gives '{prefix} Items' for table Items: not a legal Kafka topic"):
        bad.topic_of("Items")
    with pytest.raises(ConfigurationError, match="dead_letter_topic"):
        KafkaSink(broker.bootstrap_servers, dead_letter_topic="%table%.dlq")


def test_a_missing_dead_letter_topic_fails_naming_it_when_a_message_needs_it(make_database, watchers, broker, prefix):
    db = make_database([ITEMS_DDL])
    topic, letters = f"{prefix}.Items", f"{prefix}.dead-letters"
    create_topic(broker.bootstrap_servers, topic, **{"max.message.bytes": str(TOPIC_LIMIT)})
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, dead_letter_topic=letters, config=PRODUCER)  # no creating
    w = watchers(db, checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(w)
    w.start()
    write(db, [row(1, "small")])  # no message needs the dead-letter topic yet: it is not asked for
    wait_until(lambda: sink.messages_sent == 1, 20)
    write(db, [big_row(2, "big", 30_000)])
    wait_until(lambda: w.state == State.FAILED, 20)
    assert isinstance(w.failure.__cause__, TopicMissingError) and w.failure.__cause__.topic == letters
    assert f"Kafka topic {letters} does not exist" in str(w.failure)
    sink.close()
