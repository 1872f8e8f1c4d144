"""``spanner-watcher demo --sink kafka``: the demo's tables watched into a real Kafka broker, read back by a plain consumer.

1. start a Kafka broker (KRaft, a child JVM: :mod:`.kafka_broker`; needs ``mvn`` and ``java``)
   and the embedded local Spanner, and make the schema as the demo does (:func:`.demo.create_schema`: the
   watcher's tables and Singers, in GoogleSQL or, ``dialect=POSTGRESQL``, a PostgreSQL database);
2. run writers for a while, and a DatabaseWatcher over all 37 shards (or, ``mode="change_stream"``,
   a ChangeStreamWatcher) whose every batch a :class:`~watcher.sinks.kafka.KafkaSink` publishes
   (Debezium envelopes on ``demo.Singers`` by default) before the checkpoint moves;
3. read the topics from the start with a plain Kafka consumer, and print a count per topic, a
   few events, and whether each key's last event is the table's last version.

Example:
    >>> summary = run_kafka_demo(seconds=2, workdir=tempfile.mkdtemp(), quiet=True)  # doctest: +SKIP
    >>> summary["keys_missing"]                                                       # doctest: +SKIP
    0
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile  # noqa: F401  (used by the example)
import time
import uuid
from collections import Counter
from typing import Any

from rich.console import Console

from ..dialects import GOOGLE_SQL, Dialect
from . import demo_report, html_report
from .bench import table_hint
from .demo import SHARDS, _final_names, _prepare_workdir, _server_now, _Writers, create_schema
from .demo_capture import STREAM

#: The demo's topic template: Debezium's ``<prefix>.<table>``.
TOPIC_PREFIX = "demo"
#: The capture modes this demo runs (one at a time).
KAFKA_MODES = ("poll", "change_stream")
#: Events printed as a sample.
SAMPLE = 3


def run_kafka_demo(seconds: float = 20.0, *, workdir: str = "spanner-watcher-demo", writers: int = 4, keys: int = 2_000,
                   rows_per_txn: int = 20, seed: int = 7, quiet: bool = False, mode: str = "poll",
                   event_format: str = "debezium", bootstrap_servers: str | None = None,
                   poll_interval: float = 0.2, heartbeat: float = 1.0, emulator_host: str | None = None,
                   dialect: Dialect = GOOGLE_SQL, topic_prefix: str = TOPIC_PREFIX) -> dict[str, Any]:
    """Run the Kafka demo; returns its figures (also printed unless ``quiet``).

    ``bootstrap_servers``: publish to that running cluster instead of starting a broker (the
    topics ``<topic_prefix>.*``, ``demo.*`` by default, must be free to use). ``emulator_host``: use that running server instead of
    starting the embedded one (the demo makes an instance of its own there). ``dialect``: the
    database's. Raises
    :class:`~watcher.devtools.jvm_tools.JvmToolsMissing` before anything starts when a broker
    is needed and ``mvn`` or ``java`` is missing.
    """
    from google.cloud import spanner

    from ..capture.change_streams.watcher import ChangeStreamWatcher
    from ..capture.database_watcher import DatabaseWatcher
    from ..capture.shards import FixedShardProvider
    from ..checkpoints import SpannerCommitTimestampRepository
    from ..localspanner.server import LocalSpanner
    from ..model import MIN_TIMESTAMP
    from ..sinks.kafka import KafkaSink
    from ..sinks.metered import MeteredSink
    from ..sinks.topics import debezium_topic
    from . import jvm_tools
    from .kafka_broker import KafkaBroker

    if mode not in KAFKA_MODES:
        raise ValueError(f"mode must be one of {', '.join(KAFKA_MODES)} with the Kafka sink, got {mode!r}")
    if bootstrap_servers is None:
        jvm_tools.tools("the Kafka demo's broker")  # said before anything starts
    console = Console(quiet=quiet)
    started = time.monotonic()
    work = _prepare_workdir(workdir)
    previous_host = os.environ.get("SPANNER_EMULATOR_HOST")
    with contextlib.ExitStack() as running:
        broker: KafkaBroker | None = None
        servers = bootstrap_servers or ""
        if bootstrap_servers is None:
            with console.status("starting a Kafka broker..."):
                broker = running.enter_context(KafkaBroker(work / "kafka"))
            servers = broker.bootstrap_servers
        server = None if emulator_host else running.enter_context(LocalSpanner(data_dir=str(work / "spanner")))
        host = emulator_host or server.emulator_host  # type: ignore[union-attr]
        os.environ["SPANNER_EMULATOR_HOST"] = host
        try:
            where = f"(a broker in {work / 'kafka'})" if broker is not None else "(a cluster already running)"
            console.print(f"[bold]1.[/] Kafka at {servers} {where}; local Spanner on {host}")
            client = spanner.Client(project="demo-project")
            instance_id = "demo" if server is not None else f"demo-{uuid.uuid4().hex[:8]}"
            instance = client.instance(instance_id, configuration_name="projects/demo-project/instanceConfigs/emulator-config")
            instance.create().result(60)
            database = instance.database("singers", database_dialect=dialect.database_dialect)
            database.create().result(60)
            create_schema(database, dialect, change_stream=mode == "change_stream")
            watcher: Any = (
                DatabaseWatcher(database, include=["Singers"], shard_provider=FixedShardProvider("ShardId", SHARDS),
                                table_hint=table_hint(dialect), poll_interval=poll_interval, initial_timestamp=MIN_TIMESTAMP,
                                checkpoints=SpannerCommitTimestampRepository(database))
                if mode == "poll" else
                ChangeStreamWatcher(database, STREAM, heartbeat=heartbeat, start=_server_now(database), watcher_id="demo"))
            kafka = KafkaSink(servers, topic=debezium_topic(topic_prefix), event_format=event_format,
                              create_topics=True, partitions=3, watcher_id="demo")
            sink = MeteredSink(kafka, "kafka")
            sink.attach(watcher)
            published: dict[int, str | None] = {}  # each key's last value, once Kafka acknowledged its batch
            watcher.add_batch_callback(lambda changes: published.update(
                (c.keys[0], c.row.get("FirstName")) for c in changes))
            console.print(f"[bold]2.[/] watching Singers ({mode}); every batch published to "
                          f"{topic_prefix}.Singers ({event_format}) before the checkpoint moves")
            load = _Writers(database, writers, keys, rows_per_txn, seed)
            with watcher:
                threads = load.start()
                time.sleep(seconds)
                load.stop.set()
                for t in threads:
                    t.join(10)
                final = _final_names(database)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and any(published.get(k) != v for k, v in final.items()):
                    time.sleep(0.1)
            sink.close()
            figures = sink.metrics.snapshot()
            console.print(f"[bold]3.[/] {load.mutations:,} mutations written in {load.transactions:,} transactions; "
                          f"{figures['acknowledged']:,} changes published and acknowledged")
            messages = consume(servers, f"{topic_prefix}.", at_least=kafka.messages_sent)
        finally:
            if previous_host is None:
                os.environ.pop("SPANNER_EMULATOR_HOST", None)
            else:
                os.environ["SPANNER_EMULATOR_HOST"] = previous_host
    last = {}
    for m in messages:  # in partition order, and one key's events stay in one partition
        last[m["key"]["key"][0]] = _first_name(m["value"], event_format)
    missing = sum(1 for k, v in final.items() if last.get(str(k)) != v)
    summary = {"mode": mode, "dialect": dialect.name, "bootstrap_servers": servers, "mutations_written": load.mutations,
               "keys_written": len(load.keys_written), "rows_in_table": len(final),
               "changes_published": figures["acknowledged"], "messages_consumed": len(messages),
               "messages_per_topic": dict(Counter(m["topic"] for m in messages)), "keys_missing": missing,
               "writer_errors": len(load.errors), "sample": [_short(m) for m in messages[:SAMPLE]],
               "seconds": round(time.monotonic() - started, 1)}
    _print_summary(console, summary)
    report = html_report.write(work / demo_report.REPORT, demo_report.kafka_page(summary))
    summary["report"] = str(report)
    console.print(f"report: {report} (open it in a browser: the figures in one file)")
    return summary


def consume(bootstrap_servers: str, prefix: str, *, at_least: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every message of the topics named ``prefix*``, from their start, as a plain consumer reads them
    (waits for ``at_least``): dicts of topic, partition, offset, key and value (JSON), by topic, partition, offset."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "spanner-watcher-demo",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        topics = {name: t for name, t in consumer.list_topics(timeout=10).topics.items() if name.startswith(prefix)}
        consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for name, t in topics.items() for p in t.partitions])
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(got) < at_least and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.2):
                if m.error() is None and m.value() is not None:
                    got.append({"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                                "key": json.loads(m.key() or b"null"), "value": json.loads(m.value() or b"null")})
        return sorted(got, key=lambda m: (m["topic"], m["partition"], m["offset"]))
    finally:
        consumer.close()


def _first_name(value: dict[str, Any], event_format: str) -> Any:
    row = value["after"] if event_format == "debezium" else value["values"]
    return (row or {}).get("FirstName")


def _short(message: dict[str, Any], width: int = 160) -> str:
    text = f"{message['topic']} key={json.dumps(message['key'], separators=(',', ':'))} " \
           f"value={json.dumps(message['value'], separators=(',', ':'))}"
    return text if len(text) <= width else text[:width - 3] + "..."


def _print_summary(console: Console, summary: dict[str, Any]) -> None:
    for topic, n in sorted(summary["messages_per_topic"].items()):
        console.print(f"  {topic}: {n:,} messages")
    console.print("A few of them, as a plain consumer receives them:")
    for line in summary["sample"]:
        console.print(f"  {line}", markup=False, highlight=False)
    verdict = ("every key's last event is the table's last version" if summary["keys_missing"] == 0 else
               f"{summary['keys_missing']:,} keys whose last version did not arrive")
    console.print(f"[bold]4.[/] consumed {summary['messages_consumed']:,} messages: {verdict} "
                  f"({summary['rows_in_table']:,} rows; {summary['seconds']:.1f} s in all)")
    console.print("Consume it yourself from a cluster of your own (this broker stopped with the demo):")
    console.print(f"  kafka-console-consumer.sh --bootstrap-server HOST:9092 --topic {TOPIC_PREFIX}.Singers "
                  "--from-beginning --property print.key=true", markup=False, highlight=False)
