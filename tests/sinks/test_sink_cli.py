"""``spanner-watcher watch`` with Kafka sinks, run as a user runs it: a broker that does not answer or a
producer setting librdkafka does not know is one line and status 2; a staging and a Kafka sink both
get every change of a real table, published to a real broker; ``/metrics`` has each sink's figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from google.cloud import spanner

from tests.conftest import INSTANCE, PROJECT, SINGERS_DDL
from tests.sinks.support import read_topic
from tests.test_cli_commands import CLI, REPO, TIMEOUT, _env
from watcher.devtools.kafka_broker import free_port


def _watch(config: Path, database: Any, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "watch", "--config", str(config), "--quiet", *more, "--project", PROJECT,
                           "--instance", INSTANCE, "--database", database.database_id],
                          env=_env(os.environ["SPANNER_EMULATOR_HOST"]), cwd=REPO, capture_output=True, text=True,
                          timeout=TIMEOUT)


def _config(path: Path, text: str) -> Path:
    path.write_text('[watch]\ninitial_timestamp = "beginning"\npoll_interval = 0.1\n' + textwrap.dedent(text))
    return path


def test_a_broker_that_does_not_answer_is_one_line_naming_the_servers_and_status_2(singers_db, tmp_path: Path) -> None:
    servers = f"127.0.0.1:{free_port()}"
    config = _config(tmp_path / "watch.toml", f"""
        [kafka]
        bootstrap_servers = "{servers}"
        connect_timeout = 1
        """)
    result = _watch(config, singers_db, "--duration", "30")
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"spanner-watcher watch: error: {config}: kafka.bootstrap_servers: no Kafka broker ")
    assert servers in lines[0]
    assert "watching" not in result.stdout and not (tmp_path / "staging").exists()  # nothing started


def test_a_producer_setting_librdkafka_does_not_know_is_named_with_its_key(singers_db, tmp_path: Path) -> None:
    config = _config(tmp_path / "watch.toml", """
        [[sinks]]
        type = "kafka"
        bootstrap_servers = "127.0.0.1:9"
        [sinks.producer]
        "compresion.type" = "lz4"
        """)
    result = _watch(config, singers_db, "--duration", "30")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith(f"spanner-watcher watch: error: {config}: sinks[0].producer.compresion.type: ")
    assert "compresion.type" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_watch_stages_and_publishes_every_change_to_each_sink_in_order(make_database, broker, tmp_path: Path) -> None:
    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(25)])
    prefix = f"cli{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(f"{prefix}.Singers", 2, 1)])[f"{prefix}.Singers"].result(20)
    config = _config(tmp_path / "watch.toml", f"""
        [tables]
        include = ["Singers"]
        [[sinks]]
        type = "staging"
        staging_dir = "staged"
        [[sinks]]
        type = "kafka"
        name = "events"
        bootstrap_servers = "{broker.bootstrap_servers}"
        topic_prefix = "{prefix}"
        format = "record"
        [sinks.producer]
        "compression.type" = "lz4"
        """)
    result = _watch(config, database, "--until-caught-up", "--duration", "120")
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    first = result.stdout.splitlines()[0]
    assert f"; staging to {tmp_path / 'staged'}; publishing to Kafka at {broker.bootstrap_servers} (topics {prefix}.%table%, sink events)" in first, first
    assert f"25 changes published to Kafka at {broker.bootstrap_servers} (sink events)" in result.stdout
    messages = read_topic(broker.bootstrap_servers, f"{prefix}.Singers", at_least=25)
    assert sorted(int(m.key_values[0]) for m in messages) == list(range(25))
    staged = [json.loads(line) for path in (tmp_path / "staged").rglob("*.jsonl") for line in path.read_text().splitlines()]
    assert sorted(int(r["keys"][0]) for r in staged) == list(range(25))
    # Without [watch] watcher_id, both sinks' records still name one watcher.
    (watcher_id,) = {m.value["watcher_id"] for m in messages}
    assert {r["watcher_id"] for r in staged} == {watcher_id}


def test_watch_serves_each_sinks_figures_at_metrics(make_database, broker, tmp_path: Path) -> None:
    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(5)])
    prefix = f"met{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(f"{prefix}.Singers", 1, 1)])[f"{prefix}.Singers"].result(20)
    config = _config(tmp_path / "watch.toml", f"""
        [tables]
        include = ["Singers"]
        [kafka]
        bootstrap_servers = "{broker.bootstrap_servers}"
        topic_prefix = "{prefix}"
        """)
    proc = subprocess.Popen([*CLI, "watch", "--config", str(config), "--quiet", "--metrics-port", "0", "--duration", "120",
                             "--project", PROJECT, "--instance", INSTANCE, "--database", database.database_id],
                            env=_env(os.environ["SPANNER_EMULATOR_HOST"]), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("metrics at "):
                url = line.split()[2].rstrip(",")
                break
        assert url, proc.stderr.read() if proc.stderr else ""
        deadline = time.monotonic() + 60
        while True:
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            if 'spanner_watcher_sink_acknowledged_total{sink="kafka"} 5' in text or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert 'spanner_watcher_sink_acknowledged_total{sink="kafka"} 5' in text, text
    assert 'spanner_watcher_sink_acknowledged_total{sink="staging"} 5' in text
    assert 'spanner_watcher_sink_ack_latency_seconds_count{sink="kafka"} ' in text
    assert 'spanner_watcher_rows_total{table="Singers"' in text
    assert proc.returncode == 0
