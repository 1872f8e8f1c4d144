"""Each sink's figures (published, acknowledged, retries, failures, acknowledgement latency) counted by
MeteredSink around a real KafkaSink and a StagingSink, and served at ``/metrics`` beside the watcher's."""

from __future__ import annotations

import re
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from google.cloud import spanner

from tests.sinks.support import ITEMS_DDL, read_topic, row, write
from tests.watcher.core_support import wait_until
from watcher import MIN_TIMESTAMP, DatabaseWatcher, InMemoryCommitTimestampRepository, RetryPolicy, TableWatcher
from watcher.capture.group import WatcherGroup
from watcher.cli.metrics_server import MetricsServer
from watcher.sinks import attach_sinks
from watcher.sinks.kafka import KafkaSink
from watcher.sinks.metered import MeteredSink
from watcher.sinks.metrics import LATENCY_BUCKETS, SinkMetrics, prometheus_text
from watcher.staging.sink import StagingSink

OTHER_DDL = "CREATE TABLE Other (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"


def _sample(text: str, name: str, sink: str) -> float:
    match = re.search(rf'^{re.escape(name)}\{{sink="{re.escape(sink)}"\}} (\S+)$', text, re.MULTILINE)
    assert match, f"{name} of sink {sink} not in:\n{text}"
    return float(match.group(1))


def _create(broker, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(20)
    wait_until(lambda: all(t in admin.list_topics(timeout=5).topics for t in topics), timeout=20)


def test_latency_histogram_buckets_are_cumulative_and_the_text_names_each_sink() -> None:
    a, b = SinkMetrics("kafka"), SinkMetrics('odd"name')
    for seconds in (0.001, 0.02, 0.02, 7.0, 99.0):
        a.acknowledged(1, seconds)
    a.published(5)
    b.failed()
    b.retried()
    text = prometheus_text([a, b])
    buckets = {bound: int(n) for bound, n in re.findall(r'ack_latency_seconds_bucket\{sink="kafka",le="([^"]+)"\} (\d+)', text)}
    assert buckets["0.005"] == 1 and buckets["0.025"] == 3 and buckets["10"] == 4 and buckets["+Inf"] == 5
    assert len(buckets) == len(LATENCY_BUCKETS) + 1
    assert _sample(text, "spanner_watcher_sink_ack_latency_seconds_sum", "kafka") == 0.001 + 0.02 + 0.02 + 7.0 + 99.0
    assert _sample(text, "spanner_watcher_sink_published_total", "kafka") == 5
    assert _sample(text, "spanner_watcher_sink_failures_total", 'odd\\"name') == 1
    assert _sample(text, "spanner_watcher_sink_retries_total", 'odd\\"name') == 1
    assert text.count("# TYPE spanner_watcher_sink_acknowledged_total counter") == 1
    assert prometheus_text([]) == ""


def test_metered_kafka_and_staging_sinks_count_every_change_and_are_served_at_metrics(
        make_database, broker, tmp_path: Path) -> None:
    db = make_database([ITEMS_DDL, OTHER_DDL])
    prefix = f"m{uuid.uuid4().hex[:10]}"
    _create(broker, f"{prefix}.Items", f"{prefix}.Other")  # the topics exist: only the counting is under test here
    kafka = MeteredSink(KafkaSink(broker.bootstrap_servers, topic=f"{prefix}.%table%"), "kafka")
    staging = MeteredSink(StagingSink(tmp_path / "staging"), "staging")
    # A group of two watchers: KafkaSink attaches to each member itself, which the wrapper must still count.
    group = WatcherGroup([TableWatcher(db, "Items", poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                                       initial_timestamp=MIN_TIMESTAMP),
                          DatabaseWatcher(db, include=["Other"], poll_interval=0.01,
                                          checkpoints=InMemoryCommitTimestampRepository(),
                                          initial_timestamp=MIN_TIMESTAMP)])
    attach_sinks(group, [staging, kafka])
    with group, MetricsServer(group, port=0, sinks=[staging.metrics, kafka.metrics]) as server:
        write(db, [row(1, "a"), row(2, "b"), row(3, "c")])
        with db.batch() as batch:
            batch.insert("Other", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP)])
        wait_until(lambda: kafka.metrics.snapshot()["acknowledged"] >= 4, timeout=30)
        text = urllib.request.urlopen(f"{server.url}/metrics", timeout=10).read().decode()
    kafka.close()
    assert len(read_topic(broker.bootstrap_servers, f"{prefix}.Items", at_least=3)) == 3
    figures = kafka.metrics.snapshot()
    assert figures["published"] == figures["acknowledged"] == 4  # counted once each, not once per level
    assert figures["failures"] == figures["retries"] == 0
    assert figures["latency_count"] >= 2 and figures["latency_sum"] > 0
    assert staging.metrics.snapshot()["acknowledged"] == 4 == staging.sink.records_written
    assert _sample(text, "spanner_watcher_sink_acknowledged_total", "kafka") == 4
    assert _sample(text, "spanner_watcher_sink_acknowledged_total", "staging") == 4
    assert _sample(text, "spanner_watcher_sink_ack_latency_seconds_count", "kafka") == figures["latency_count"]
    assert 'spanner_watcher_rows_total{table="Items"' in text  # the watcher's own figures still come first


def test_a_refused_batch_counts_a_failure_and_its_resending_a_retry(make_database, broker) -> None:
    db = make_database([ITEMS_DDL])
    topic = f"r{uuid.uuid4().hex[:10]}.Items"
    # No topic and no create_topics: a real refusal, until the topic exists.
    kafka = MeteredSink(KafkaSink(broker.bootstrap_servers, topic=topic, delivery_timeout=5), "kafka")
    watcher = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                           initial_timestamp=MIN_TIMESTAMP, callback_error_policy="retry",
                           retry_policy=RetryPolicy(initial=0.05, maximum=0.1))
    kafka.attach(watcher)
    with watcher:
        write(db, [row(1, "a"), row(2, "b")])
        wait_until(lambda: kafka.metrics.snapshot()["retries"] >= 2, timeout=30)
        _create(broker, topic)
        wait_until(lambda: kafka.metrics.snapshot()["acknowledged"] >= 2, timeout=30)
    kafka.close()
    figures = kafka.metrics.snapshot()
    assert figures["failures"] >= 2 and figures["retries"] == figures["failures"]  # every attempt after the first
    assert figures["published"] == figures["acknowledged"] + 2 * figures["failures"]
    assert figures["acknowledged"] == 2 and figures["latency_count"] == 1
    assert len(read_topic(broker.bootstrap_servers, topic, at_least=2)) == 2
