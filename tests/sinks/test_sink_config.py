"""The sinks of a ``watch`` configuration (``[[sinks]]``, ``[kafka]``): every mistake named by file and key,
the settings as given, and a Kafka sink built from them publishing through a real broker."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest

from tests.sinks.support import ITEMS_DDL, read_topic, row, write
from tests.watcher.core_support import wait_until
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository, TableWatcher
from watcher.cli.config import ConfigError, parse_config
from watcher.cli.config_sinks import KafkaSinkSettings, StagingSinkSettings
from watcher.sinks import attach_sinks
from watcher.sinks.kafka import KafkaSink


def _parse(text: str, base: Path | None = None):
    return parse_config(textwrap.dedent(text), "watch.toml", base_dir=base or Path("/cfg"))


KAFKA = '[kafka]\nbootstrap_servers = "127.0.0.1:9092"\n'


@pytest.mark.parametrize("text, message", [
    ('[[sinks]]\ntype = "kafka"\nbootstrap_servers = "k:1"\ntopic_template = "%foo%"',
     "watch.toml: sinks[0].topic_template: unknown placeholder %foo% (known: %database%, %instance%, %project%, %table%)"),
    ('[[sinks]]\ntype = "kafka"\nbootstrap_servers = "k:1"\ntopic_template = "a b/%table%"',
     "watch.toml: sinks[0].topic_template: gives 'a b/Table' for table Table: not a legal Kafka topic name"),
    ('[[sinks]]\ntype = "kafka"\nbootstrap_servers = "k:1"\ntopic_prefix = ""',
     "watch.toml: sinks[0].topic_prefix: must not be empty"),
    ('[[sinks]]\ntype = "kafka"\nbootstrap_servers = "k:1"\ntopic_prefix = "a"\ntopic_template = "%table%"',
     "watch.toml: sinks[0].topic_prefix: give topic_template or topic_prefix, not both"),
    ('[[sinks]]\ntype = "kafka"', "watch.toml: sinks[0].bootstrap_servers: missing: name the Kafka brokers"),
    ('[[sinks]]\ntype = "kafak"', "watch.toml: sinks[0].type: unknown sink type 'kafak' (did you mean kafka?)"),
    ('[[sinks]]\nname = "x"', "watch.toml: sinks[0].type: missing: say which sink, one of staging, kafka"),
    ("sinks = []", "watch.toml: sinks: an empty list sends nothing anywhere"),
    ('sinks = "kafka"', "watch.toml: sinks: expected [[sinks]] entries (an array of tables), got a string"),
    ('kafka = 3', "watch.toml: kafka: expected a table ([kafka]), got an integer"),
    ("[kafka]\ntopic_template = \"%table%\"", "watch.toml: kafka.bootstrap_servers: missing"),
    ('[kafka]\nbootstrap_servers = "localhost"', "watch.toml: kafka.bootstrap_servers: expected host:port, got 'localhost'"),
    ('[kafka]\nbootstrap_servers = "k:1,k:99999"', "watch.toml: kafka.bootstrap_servers: expected host:port, got 'k:99999'"),
    ('[kafka]\nbootstrap_servers = []', 'watch.toml: kafka.bootstrap_servers: expected a list of "host:port" strings'),
    (KAFKA + 'format = "avro"', "watch.toml: kafka.format: unknown format 'avro' (known: debezium, record)"),
    (KAFKA + 'format = "recrod"', "watch.toml: kafka.format: unknown format 'recrod' (did you mean record?)"),
    (KAFKA + 'create_topics = "yes"', "watch.toml: kafka.create_topics: expected true or false, got a string"),
    (KAFKA + "tombstones = 1", "watch.toml: kafka.tombstones: expected true or false, got an integer"),
    (KAFKA + "partitions = 0", "watch.toml: kafka.partitions: must be at least 1, got 0"),
    (KAFKA + "replication_factor = 1.5", "watch.toml: kafka.replication_factor: expected an integer, got a number"),
    (KAFKA + "delivery_timeout = 0", "watch.toml: kafka.delivery_timeout: must be at least 0.001, got 0"),
    (KAFKA + 'connect_timeout = "5s"', "watch.toml: kafka.connect_timeout: expected a number of seconds, got a string"),
    (KAFKA + 'dead_letter_topic = "dead.%table%"',
     "watch.toml: kafka.dead_letter_topic: 'dead.%table%': one topic for every table, without placeholders"),
    (KAFKA + 'dead_letter_topic = "dead letters"', "watch.toml: kafka.dead_letter_topic: gives 'dead letters'"),
    (KAFKA + 'topic = "x"', "watch.toml: kafka.topic: unknown key; kafka takes name, bootstrap_servers, topic_template"),
    (KAFKA + 'type = "kafka"', "watch.toml: kafka.type: unknown key"),
    (KAFKA + 'producer = "lz4"', "watch.toml: kafka.producer: expected a table of librdkafka settings"),
    (KAFKA + '[kafka.producer]\n"enable.idempotence" = false',
     "watch.toml: kafka.producer.enable.idempotence: fixed by the sink (enable.idempotence=true)"),
    (KAFKA + '[kafka.producer]\n"acks" = 1', "watch.toml: kafka.producer.acks: fixed by the sink (acks=all)"),
    (KAFKA + '[kafka.producer]\n"bootstrap.servers" = "x:1"',
     "watch.toml: kafka.producer.bootstrap.servers: set by the sink's own key bootstrap_servers"),
    (KAFKA + '[kafka.producer]\n"message.timeout.ms" = 5',
     "watch.toml: kafka.producer.message.timeout.ms: set by the sink's own key delivery_timeout"),
    (KAFKA + '[kafka.producer]\n"linger.ms" = [5]',
     "watch.toml: kafka.producer.linger.ms: expected a string, number or true/false, got a list"),
    (KAFKA + 'name = "bad name"', "watch.toml: kafka.name: 'bad name': use letters, digits"),
    (KAFKA + 'name = "staging"', "watch.toml: kafka.name: another sink is named staging"),
    (KAFKA + 'name = "k"\n[[sinks]]\ntype = "staging"', "watch.toml: kafka.name: with [[sinks]], [kafka] holds"),
    ('[[sinks]]\ntype = "staging"\n[[sinks]]\ntype = "staging"',
     "watch.toml: sinks[1].staging_dir: /cfg/staging is the folder of another staging sink"),
    ('[[sinks]]\ntype = "staging"\nbootstrap_servers = "k:1"', "watch.toml: sinks[0].bootstrap_servers: unknown key"),
    ('[[sinks]]\ntype = "kafka"\nname = "a"\nbootstrap_servers = "k:1"\n[[sinks]]\ntype = "kafka"\nname = "a"\n'
     'bootstrap_servers = "k:1"', "watch.toml: sinks[1].name: another sink is named a"),
])
def test_a_mistake_is_one_error_naming_the_file_and_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse(text)
    assert str(err.value).startswith(message), str(err.value)


def test_without_sinks_every_batch_is_staged() -> None:
    cfg = _parse("[watch]\nstaging_dir = \"out\"")
    assert cfg.sinks == ()
    assert cfg.sink_settings() == (StagingSinkSettings("watch.staging_dir", "staging", Path("/cfg/out")),)


def test_a_kafka_table_adds_a_kafka_sink_after_the_staging_sink_with_every_key() -> None:
    cfg = _parse("""
        [kafka]
        bootstrap_servers = ["k1:9092", "k2:9093"]
        topic_prefix = "shop"
        format = "record"
        create_topics = true
        partitions = 3
        replication_factor = 2
        delivery_timeout = 12.5
        connect_timeout = 2
        tombstones = true
        server_name = "shop-db"
        dead_letter_topic = "shop.dead-letters"
        [kafka.producer]
        "compression.type" = "lz4"
        "linger.ms" = 5
        """)
    staging, kafka = cfg.sink_settings()
    assert isinstance(staging, StagingSinkSettings) and staging.staging_dir == Path("/cfg/staging")
    assert kafka == KafkaSinkSettings(
        "kafka", "kafka", "k1:9092,k2:9093", topic_template="shop.%table%", format="record", create_topics=True,
        partitions=3, replication_factor=2, delivery_timeout=12.5, connect_timeout=2.0, tombstones=True, server_name="shop-db",
        dead_letter_topic="shop.dead-letters", producer={"compression.type": "lz4", "linger.ms": 5})


def test_sinks_entries_are_the_sinks_in_order_with_the_kafka_table_as_their_defaults() -> None:
    cfg = _parse("""
        [kafka]
        bootstrap_servers = "k:9092"
        format = "record"
        [kafka.producer]
        "linger.ms" = 5
        [[sinks]]
        type = "kafka"
        topic_template = "%database%.%table%"
        [[sinks]]
        type = "staging"
        staging_dir = "gs://bucket/staging"
        [[sinks]]
        type = "kafka"
        bootstrap_servers = "other:9092"
        format = "debezium"
        [sinks.producer]
        "compression.type" = "zstd"
        """)
    first, staging, second = cfg.sink_settings()
    assert (first.name, staging.name, second.name) == ("kafka", "staging", "kafka-2")
    assert (first.bootstrap_servers, first.topic_template, first.format, first.producer) == (
        "k:9092", "%database%.%table%", "record", {"linger.ms": 5})
    assert staging.staging_dir == "gs://bucket/staging"
    assert (second.bootstrap_servers, second.topic_template, second.format, second.producer) == (
        "other:9092", "%table%", "debezium", {"linger.ms": 5, "compression.type": "zstd"})
    assert second.key_of("format") == "sinks[2].format"


def test_the_built_sink_has_every_setting() -> None:
    cfg = _parse(KAFKA + 'topic_template = "x.%table%"\ncreate_topics = true\nconnect_timeout = 3\n'
                 'dead_letter_topic = "dead"\n[kafka.producer]\n"linger.ms" = 7')
    kafka = cfg.sink_settings()[1]
    sink = kafka.build(watcher_id="w1", database="projects/p/instances/i/databases/d")
    assert isinstance(sink, KafkaSink)
    assert (sink.bootstrap_servers, sink.template.template, sink.create_topics, sink.watcher_id) == (
        "127.0.0.1:9092", "x.%table%", True, "w1")
    assert sink.topic_of("Singers") == "x.Singers"
    assert (sink.connect_timeout, sink.dead_letter_topic) == (3.0, "dead")
    assert kafka.arguments()["config"] == {"linger.ms": 7}


def test_a_kafka_sink_from_the_configuration_publishes_beside_staging_through_a_real_broker(
        make_database, broker, tmp_path: Path) -> None:
    db = make_database([ITEMS_DDL])
    prefix = f"c{uuid.uuid4().hex[:10]}"
    cfg = parse_config(textwrap.dedent(f"""
        [watch]
        staging_dir = "staged"
        [kafka]
        bootstrap_servers = "{broker.bootstrap_servers}"
        topic_template = "{prefix}.%database%.%table%"
        format = "record"
        create_topics = true
        [kafka.producer]
        "linger.ms" = 0
        """), "watch.toml", base_dir=tmp_path)
    sinks = [s.build(watcher_id="cfg-test", **({"database": db} if isinstance(s, KafkaSinkSettings) else {}))
             for s in cfg.sink_settings()]
    watcher = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                           initial_timestamp=MIN_TIMESTAMP)
    attach_sinks(watcher, sinks)
    with watcher:
        write(db, [row(1, "a"), row(2, "b")])
        wait_until(lambda: sinks[1].messages_sent >= 2, timeout=20)
    for s in sinks:
        s.close()
    messages = read_topic(broker.bootstrap_servers, f"{prefix}.{db.database_id}.Items", at_least=2)
    assert sorted(m.key_values for m in messages) == [("1", "a"), ("2", "b")]
    assert {m.value["watcher_id"] for m in messages} == {"cfg-test"}
    assert sinks[0].records_written == 2  # the staging sink got the same batch


def test_max_batches_in_flight_reaches_every_kind_of_watcher_and_a_bad_value_names_its_key(make_database) -> None:
    from watcher.capture.helper_tables.history import HistoryWatcher
    from watcher.cli.commands.watch_build import build_mode_watchers, build_watcher

    db = make_database([ITEMS_DDL, "CREATE TABLE Orders (Id INT64, CHANGE_SET_ID STRING(36)) PRIMARY KEY (Id)",
                        "CREATE TABLE CHANGE_SETS (CHANGE_SET_ID STRING(36) NOT NULL, COMMIT_TIMESTAMP TIMESTAMP "
                        "OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (CHANGE_SET_ID)",
                        "CREATE CHANGE STREAM ItemsStream FOR Items"])
    cfg = _parse("""
        [watch]
        max_batches_in_flight = 7
        [tables]
        include = ["Items"]
        [[change_sets]]
        tables = ["Orders"]
        [[change_streams]]
        stream = "ItemsStream"
    """)
    watchers = [build_watcher(db, cfg, ["Items"]), *build_mode_watchers(db, cfg)]
    assert [type(w).__name__ for w in watchers] == ["DatabaseWatcher", "ChangeSetWatcher", "ChangeStreamWatcher"]
    polled, change_sets, stream = watchers
    assert (polled.max_batches_in_flight, change_sets.inner.max_batches_in_flight,
            stream.max_batches_in_flight) == (7, 7, 7)
    assert HistoryWatcher(db, "Items", max_batches_in_flight=5).inner.max_batches_in_flight == 5
    with pytest.raises(ConfigError) as caught:
        _parse("[watch]\nmax_batches_in_flight = 0\n")
    assert str(caught.value) == "watch.toml: watch.max_batches_in_flight: must be at least 1, got 0 (line 2)"
