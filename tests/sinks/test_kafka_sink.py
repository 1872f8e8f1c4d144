"""KafkaSink fed by a TableWatcher, read back from a real broker: every change once per poll, per-key
commit order, keys with NULL parts, shared commit timestamps, values typed exactly in both event
formats, the Debezium envelope, the headers, topic templates and a missing topic."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from google.cloud import spanner

from tests.sinks.support import AMOUNT, AT, BIG, ITEMS_DDL, TYPES, Message, per_key, read_topic, row, write
from tests.watcher.core_support import Collector, wait_until
from watcher import MIN_TIMESTAMP, DatabaseWatcher, InMemoryCommitTimestampRepository, RetryPolicy, State, TableWatcher
from watcher.codec import decode_value
from watcher.errors import CallbackError, ConfigurationError
from watcher.model import rfc3339_nanos, timestamp_nanos
from watcher.sinks import TopicMissingError
from watcher.sinks.debezium import SPANNER_SOURCE_FIELDS
from watcher.sinks.events import HEADERS, change_id
from watcher.sinks.kafka import KafkaSink
from watcher.sinks.topics import debezium_topic
from watcher.staging import contract

OTHER_DDL = "CREATE TABLE Other (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"
FAST = RetryPolicy(initial=0.01, maximum=0.05)
#: Debezium's common source fields, in its order (AbstractSourceInfoStructMaker).
DEBEZIUM_COMMON = ("version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns")


@pytest.fixture
def topic_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def watchers():
    made: list[Any] = []

    def make(db: Any, table: str = "Items", **kwargs: Any) -> TableWatcher:
        kwargs.setdefault("poll_interval", 0.01)
        kwargs.setdefault("checkpoints", InMemoryCommitTimestampRepository())
        kwargs.setdefault("initial_timestamp", MIN_TIMESTAMP)
        kwargs.setdefault("retry_policy", FAST)
        w = TableWatcher(db, table, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop()


def values_of(message: Message) -> dict[str, Any]:
    """The row a message carries, decoded to Python values by the column types."""
    value = message.value
    if message.headers["event_format"] == "record":
        return {c: decode_value(value["types"][c], v) for c, v in value["values"].items()}
    return {c: decode_value(TYPES[c], v) for c, v in value["after"].items()}


@pytest.mark.parametrize("event_format", ["debezium", "record"])
def test_every_change_arrives_once_per_poll_in_commit_order_per_key_with_exact_values(
        make_database, watchers, broker, topic_prefix, event_format):
    db = make_database([ITEMS_DDL])
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{topic_prefix}.%table%", event_format=event_format,
                     create_topics=True, partitions=3)
    w = watchers(db)
    delivered = Collector()
    w.add_callback(delivered)
    sink.attach(w)
    w.start()
    commits = [write(db, [row(1, "x", BIG), row(1, None, 2), row(2, "y", 3)])]  # a NULL key part among them
    delivered.wait_for(3)
    commits.append(write(db, [row(1, "x", BIG + 1)]))
    delivered.wait_for(4)
    commits.append(write(db, [row(1, None, BIG + 2), row(2, "y", 4)]))
    delivered.wait_for(6)
    messages = read_topic(broker.bootstrap_servers, f"{topic_prefix}.Items", at_least=6)
    sink.close()

    assert len(messages) == len(delivered) == 6  # once per poll: no message twice, none missing
    assert len({m.change_id for m in messages}) == 6
    keys = per_key(messages)
    assert set(keys) == {("1", "x"), ("1", None), ("2", "y")}
    for key, ms in keys.items():
        assert len({m.partition for m in ms}) == 1, f"key {key} spread over partitions"
        assert [m.headers["commit_timestamp"] for m in ms] == sorted(m.headers["commit_timestamp"] for m in ms)
    assert [values_of(m)["Big"] for m in keys[("1", "x")]] == [BIG, BIG + 1]
    assert [values_of(m)["Big"] for m in keys[("1", None)]] == [2, BIG + 2]
    last = values_of(keys[("1", None)][-1])
    assert last == {"A": 1, "B": None, "Big": BIG + 2, "Amount": AMOUNT, "Blob": b"\x00\xff", "Seen": AT,
                    "Ts": commits[2]}
    assert last["Seen"].nanosecond == 123456789 and timestamp_nanos(last["Ts"]) == timestamp_nanos(commits[2])
    # The headers name the change as the changelog will: the same change id as its staging record's.
    for m in messages:
        assert tuple(m.headers) == HEADERS
        assert m.headers["table"] == "Items" and m.headers["mod_type"] == "UPSERT"
        assert m.headers["event_format"] == event_format
    first = keys[("1", "x")][0]
    (change,) = [c for c in delivered.changes if c.keys == (1, "x") and c.commit_timestamp == commits[0]]
    staged = contract.change_record(change, batch_id="b", seq=0, types=TYPES, key_columns=["A", "B"], watcher_id=None)
    assert first.change_id == change_id(staged)
    assert first.headers["commit_timestamp"] == rfc3339_nanos(commits[0])
    if event_format == "record":
        assert tuple(first.value) == contract.RECORD_FIELDS
        assert first.value["keys"] == ["1", "x"] and first.value["watcher_id"] == sink.watcher_id
    assert w.failure is None and w.state == State.RUNNING


def test_the_debezium_envelope_carries_the_spanner_connectors_fields(make_database, watchers, broker, topic_prefix):
    db = make_database([ITEMS_DDL])
    sink = KafkaSink(broker.bootstrap_servers, topic=debezium_topic(topic_prefix), create_topics=True,
                     clock=lambda: 1_714_557_600_987_654_321)
    w = watchers(db)
    sink.attach(w)
    w.start()
    committed = write(db, [row(5, "e", BIG)])
    (message,) = read_topic(broker.bootstrap_servers, f"{topic_prefix}.Items", at_least=1)
    sink.close()

    event = message.value
    assert list(event) == ["before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"]
    assert event["op"] == "u" and event["before"] is None  # a poll cannot tell an insert from an update
    assert (event["ts_ms"], event["ts_ns"]) == (1_714_557_600_987, 1_714_557_600_987_654_321)
    assert event["after"]["Big"] == str(BIG) and event["after"]["B"] == "e"
    source = event["source"]
    assert tuple(source)[:len(DEBEZIUM_COMMON)] == DEBEZIUM_COMMON
    assert set(SPANNER_SOURCE_FIELDS) <= set(source)
    nanos = timestamp_nanos(committed)
    assert (source["ts_ms"], source["ts_us"], source["ts_ns"]) == (nanos // 10**6, nanos // 1000, nanos)
    assert source["connector"] == "spanner" and source["snapshot"] == "false"
    assert source["commit_timestamp"] == rfc3339_nanos(committed)
    database_id = db.name.rsplit("/", 1)[-1]
    assert (source["db"], source["database_id"], source["table"]) == (database_id, database_id, "Items")
    assert (source["project_id"], source["instance_id"]) == tuple(db.name.split("/")[1:4:2])
    assert source["server_transaction_id"] is None and source["change_stream_name"] is None  # polled


def test_transactions_sharing_a_commit_timestamp_all_arrive(make_database, watchers, broker, topic_prefix,
                                                            shared_commit_timestamps):
    db = make_database([ITEMS_DDL])
    first = write(db, [row(1, "a"), row(2, "a")])
    second = write(db, [row(3, "a"), row(4, "a")])
    assert first == second, "the server did not let two blind writes share a commit timestamp"
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{topic_prefix}-%table%", event_format="record",
                     create_topics=True, partitions=2)
    w = watchers(db, limit=3)  # a poll cuts through the rows of the shared timestamp
    sink.attach(w)
    w.start()
    messages = read_topic(broker.bootstrap_servers, f"{topic_prefix}-Items", at_least=4)
    sink.close()
    assert sorted(m.key_values for m in messages) == [("1", "a"), ("2", "a"), ("3", "a"), ("4", "a")]
    assert {m.headers["commit_timestamp"] for m in messages} == {rfc3339_nanos(first)}
    assert len({m.change_id for m in messages}) == 4


def test_topic_templates_name_each_tables_topic_from_the_database(make_database, broker, topic_prefix):
    db = make_database([ITEMS_DDL, OTHER_DDL])
    database_id = db.name.rsplit("/", 1)[-1]
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{topic_prefix}.%project%.%instance%.%database%.%table%",
                     create_topics=True)
    w = DatabaseWatcher(db, poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                        initial_timestamp=MIN_TIMESTAMP)
    sink.attach(w)
    with w:
        write(db, [row(1, "x")])
        with db.batch() as batch:
            batch.insert("Other", ("Id", "Ts"), [(7, spanner.COMMIT_TIMESTAMP)])
        _, project, _, instance, _, _ = db.name.split("/")
        items = read_topic(broker.bootstrap_servers, f"{topic_prefix}.{project}.{instance}.{database_id}.Items", at_least=1)
        other = read_topic(broker.bootstrap_servers, f"{topic_prefix}.{project}.{instance}.{database_id}.Other", at_least=1)
    sink.close()
    assert [m.key for m in items] == [{"table": "Items", "key": ["1", "x"]}]
    assert [m.key for m in other] == [{"table": "Other", "key": ["7"]}]
    assert sink.topic_of("Items", "projects/p/instances/i/databases/d") == f"{topic_prefix}.p.i.d.Items"


def test_a_missing_topic_fails_the_watcher_naming_it_and_the_checkpoint_stays(make_database, watchers, broker,
                                                                              topic_prefix):
    db = make_database([ITEMS_DDL])
    checkpoints = InMemoryCommitTimestampRepository()
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{topic_prefix}.%table%")  # create_topics=False
    w = watchers(db, checkpoints=checkpoints)
    sink.attach(w)
    w.start()
    before = w.position
    write(db, [row(1, "x")])
    wait_until(lambda: w.state == State.FAILED, 20)
    assert isinstance(w.failure, CallbackError)
    assert isinstance(w.failure.__cause__, TopicMissingError)
    assert f"{topic_prefix}.Items" in str(w.failure) and "create_topics=True" in str(w.failure)
    assert w.position == before


def test_options_that_cannot_work_are_refused_naming_them(broker):
    with pytest.raises(ConfigurationError, match="enable.idempotence"):
        KafkaSink(broker.bootstrap_servers, config={"enable.idempotence": False})
    with pytest.raises(ConfigurationError, match="message.timeout.ms: the sink's delivery_timeout gives it"):
        KafkaSink(broker.bootstrap_servers, config={"message.timeout.ms": 1000})
    with pytest.raises(ConfigurationError, match="event_format"):
        KafkaSink(broker.bootstrap_servers, event_format="avro")
    with pytest.raises(ConfigurationError, match="%tabel%"):
        KafkaSink(broker.bootstrap_servers, topic="x.%tabel%")
    with pytest.raises(ConfigurationError, match="needs the database name"):
        KafkaSink(broker.bootstrap_servers, topic="%database%.%table%").topic_of("Items")
