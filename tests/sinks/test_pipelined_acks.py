"""Batches in flight: a watcher reads on while KafkaSink's batches wait for the broker, and its checkpoint
never passes a batch the broker has not acknowledged, through a paused broker, a killed one and a killed
watcher, and for a change stream's partitions; a consumer reading the topic from its start sees every
committed change, each key in commit order.

The checkpoint store here checks every write against the batches handed to the sink so far: a
checkpoint at or past a batch's last change while that batch's acknowledgement is missing or failed
is recorded as a violation.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from google.api_core.exceptions import NotFound

from tests.conftest import INSTANCE, PROJECT
from tests.sinks.delivery_check import Writers, check_delivery
from tests.sinks.support import ITEMS_DDL, read_topic
from tests.watcher.core_support import wait_until
from watcher import (
    MIN_TIMESTAMP,
    CallbackError,
    Change,
    ChangeStreamWatcher,
    Checkpoint,
    DatabaseWatcher,
    InMemoryCommitTimestampRepository,
    InMemoryProgressStore,
    SpannerCommitTimestampRepository,
    State,
    TableId,
    TableWatcher,
)
from watcher.capture.change_streams.progress import PartitionProgress
from watcher.capture.table_info import TableInfo
from watcher.devtools.kafka_broker import KafkaBroker
from watcher.sinks import DeliveryError, Sink
from watcher.sinks.kafka import KafkaSink

ROOT = Path(__file__).resolve().parents[2]
#: Batches a poll loop may have in flight in these tests.
IN_FLIGHT = 3
#: Rows per poll (a transaction writes two): many small batches, so several are in flight at once.
LIMIT = 20


class Recorded(Sink):
    """The real KafkaSink, with each batch's last change and acknowledgement kept (for the checkpoint's check)."""

    def __init__(self, kafka: KafkaSink) -> None:
        self.kafka = kafka
        self.batches: list[tuple[Change, cf.Future[None]]] = []
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        self.submit_batch(changes, table).result()

    def submit_batch(self, changes: Sequence[Change], table: TableInfo) -> cf.Future[None]:
        future = self.kafka.submit_batch(changes, table)
        with self._lock:
            self.batches.append((changes[-1], future))
            self.most_in_flight = max(self.most_in_flight, self.unacknowledged())
        return future

    def unacknowledged(self) -> int:
        return sum(1 for _, f in list(self.batches) if not f.done())

    def covered_but_not_acknowledged(self, checkpoint: Checkpoint) -> list[Change]:
        """Last changes of batches ``checkpoint`` is at or past that were not acknowledged: still in flight, or
        refused and not read past again by a later batch that was acknowledged (a restart's)."""
        def covered(last: Change) -> bool:
            return last.commit_timestamp < checkpoint.commit_timestamp or (
                last.commit_timestamp == checkpoint.commit_timestamp and checkpoint.key is None)

        def acknowledged(f: cf.Future[None]) -> bool:
            return f.done() and f.exception() is None

        with self._lock:
            batches = list(self.batches)
        bad = []
        for i, (last, f) in enumerate(batches):
            if not covered(last) or acknowledged(f):
                continue
            if f.done() and any(acknowledged(g) and later.commit_timestamp >= last.commit_timestamp
                                for later, g in batches[i + 1:]):
                continue  # refused, then delivered again
            bad.append(last)
        return bad


class CheckedCheckpoints(InMemoryCommitTimestampRepository):
    """Checkpoints in memory; a write past a batch not acknowledged is noted in ``violations``."""

    def __init__(self, sink: Recorded) -> None:
        super().__init__()
        self.sink = sink
        self.violations: list[tuple[Checkpoint, list[Change]]] = []
        self.writes = 0

    def set(self, table: TableId, checkpoint: Checkpoint, shard: Any = None) -> None:
        bad = self.sink.covered_but_not_acknowledged(checkpoint)
        if bad:
            self.violations.append((checkpoint, bad))
        self.writes += 1
        super().set(table, checkpoint, shard)


@contextlib.contextmanager
def paused(broker: KafkaBroker) -> Iterator[None]:
    """The broker process stopped (SIGSTOP): connections stay open, nothing is acknowledged until it goes on."""
    pid = broker._process.pid  # type: ignore[union-attr]  # the fixture's own child process
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def errors_into(errors: list[Any]) -> Any:
    """A delivery callback noting each message's error (None: delivered) in ``errors``."""
    return lambda err, _msg: errors.append(err)


def _serves_idempotent_producers(servers: str, topic: str, timeout: float = 60.0) -> None:
    """Wait until an idempotent producer gets its message into ``topic`` (a broker just started loads its
    producer state first, longer than a 1 s delivery timeout), so that no batch fails on the start itself."""
    deadline = time.monotonic() + timeout
    while True:
        errors: list[Any] = []
        producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "message.timeout.ms": 5000})
        producer.produce(topic, b"ready", on_delivery=errors_into(errors))
        producer.flush(10)
        if errors == [None]:
            return
        assert time.monotonic() < deadline, f"the broker did not take an idempotent producer's message: {errors}"


def _caught_up(w: Any, checkpoints: CheckedCheckpoints, last: Any) -> bool:
    assert w.failure is None, f"the watcher failed: {w.failure!r}"
    stored = checkpoints.get(TableId("Items"))
    return stored is not None and stored.commit_timestamp >= last


def _watcher(db: Any, broker: KafkaBroker, topic: str, kind: str = "table",
             **kafka_options: Any) -> tuple[Any, Recorded, CheckedCheckpoints]:
    """A watcher of Items (``kind``: a TableWatcher, or a DatabaseWatcher of that one table) publishing to ``topic``."""
    kafka = KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True, partitions=2, **kafka_options)
    sink = Recorded(kafka)
    checkpoints = CheckedCheckpoints(sink)
    options = {"poll_interval": 0.01, "limit": LIMIT, "checkpoints": checkpoints, "initial_timestamp": MIN_TIMESTAMP,
               "max_batches_in_flight": IN_FLIGHT}
    w = (TableWatcher(db, "Items", **options) if kind == "table" else
         DatabaseWatcher(db, ["Items"], discover_interval=None, **options))
    sink.attach(w)
    return w, sink, checkpoints


def test_a_paused_broker_holds_the_checkpoint_behind_the_batches_in_flight_and_the_reads_behind_the_window(
        make_database, broker):
    db = make_database([ITEMS_DDL])
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    w, sink, checkpoints = _watcher(db, broker, topic)
    try:
        w.start()
        with Writers(db) as writers:
            wait_until(lambda: sink.kafka.messages_sent >= 100, 30)
            with paused(broker):
                wait_until(lambda: sink.unacknowledged() == IN_FLIGHT, 20)  # the window filled
                held, polls = checkpoints.get(TableId("Items")), w.stats()["polls"]
                time.sleep(1.0)
                assert w.stats()["polls"] == polls, "a full window stops the reads"
                assert sink.unacknowledged() == IN_FLIGHT
                assert checkpoints.get(TableId("Items")) == held
                first_waiting = min(last.commit_timestamp for last, f in sink.batches if not f.done())
                assert held.commit_timestamp <= first_waiting
                assert w.position.commit_timestamp > held.commit_timestamp  # read on past the stored checkpoint
            wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp > held.commit_timestamp, 30)
            time.sleep(0.5)
        assert writers.error is None
        last = writers.commits[-1][1]
        wait_until(lambda: _caught_up(w, checkpoints, last), 60)
        messages = read_topic(broker.bootstrap_servers, topic, at_least=len(writers.commits))
    finally:
        w.stop()
        sink.kafka.close()
    assert w.failure is None
    check_delivery(messages, writers.commits)
    assert checkpoints.violations == []
    assert sink.most_in_flight == IN_FLIGHT
    print(f"\npaused broker: {len(writers.commits)} transactions, {len(sink.batches)} batches, "
          f"{checkpoints.writes} checkpoint writes, {len(messages)} messages read")


@pytest.mark.parametrize("kind", ["table", "database"])
def test_batches_in_flight_deliver_every_change_once_in_each_keys_commit_order(make_database, broker, kind):
    db = make_database([ITEMS_DDL])
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    w, sink, checkpoints = _watcher(db, broker, topic, kind)
    try:
        w.start()
        with Writers(db) as writers:
            wait_until(lambda: sink.kafka.messages_sent >= 200, 30)
        assert writers.error is None
        last = writers.commits[-1][1]
        wait_until(lambda: _caught_up(w, checkpoints, last), 60)
        messages = read_topic(broker.bootstrap_servers, topic, at_least=len(writers.commits))
    finally:
        w.stop()
        sink.kafka.close()
    assert w.failure is None
    unique = check_delivery(messages, writers.commits)
    assert len(messages) == len(unique), "a change arrived twice without any fault"
    assert checkpoints.violations == []
    assert 1 < sink.most_in_flight <= IN_FLIGHT
    if kind == "database":
        assert w.watchers["Items"].max_batches_in_flight == IN_FLIGHT


def test_a_broker_killed_with_batches_in_flight_fails_the_watcher_before_them_and_a_restart_delivers_all(
        make_database, broker):
    db = make_database([ITEMS_DDL])
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    w, sink, checkpoints = _watcher(db, broker, topic, delivery_timeout=3.0,
                                    config={"reconnect.backoff.max.ms": 200})
    ready = f"{topic}.ready"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(ready, 1, 1)])[ready].result(30)
    _serves_idempotent_producers(broker.bootstrap_servers, ready)
    try:
        w.start()
        with Writers(db) as writers:
            wait_until(lambda: sink.kafka.messages_sent >= 100, 30)
            broker.stop(kill=True)  # batches in flight lose their broker for longer than delivery_timeout
            wait_until(lambda: w.state == State.FAILED, 30)
            assert isinstance(w.failure, CallbackError) and "a sink refused" in str(w.failure)
            assert isinstance(w.failure.__cause__, DeliveryError)
            held = checkpoints.get(TableId("Items"))
            refused = [last for last, f in sink.batches if f.done() and f.exception() is not None]
            assert refused and held.commit_timestamp <= min(last.commit_timestamp for last in refused)
            assert w.position == held  # the restart reads again from the stored checkpoint
            broker.start()
            _serves_idempotent_producers(broker.bootstrap_servers, ready)
            w.start()
            time.sleep(1.0)
        assert writers.error is None
        last = writers.commits[-1][1]
        wait_until(lambda: _caught_up(w, checkpoints, last), 60)
        messages = read_topic(broker.bootstrap_servers, topic, at_least=len(writers.commits))
    finally:
        w.stop()
        sink.kafka.close()
    check_delivery(messages, writers.commits)
    assert checkpoints.violations == []
    print(f"\nkilled broker: {len(writers.commits)} transactions, {len(refused)} batches refused, "
          f"{len(messages)} messages read")


def test_a_watcher_killed_with_batches_in_flight_loses_nothing_when_started_again(make_database, broker):
    db = make_database([ITEMS_DDL])
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    checkpoints = SpannerCommitTimestampRepository(db)

    def spawn() -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.Popen([sys.executable, "-m", "tests.sinks.kafka_child", PROJECT, INSTANCE, db.database_id,
                                 "Items", broker.bootstrap_servers, topic, str(LIMIT), "0"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def position() -> Any:
        try:
            stored = checkpoints.get(TableId("Items"))
        except NotFound:  # the child has not created its checkpoint table yet
            return MIN_TIMESTAMP
        return MIN_TIMESTAMP if stored is None else stored.commit_timestamp

    with Writers(db, pause=0.02) as writers:
        child = spawn()
        try:
            wait_until(lambda: position() > MIN_TIMESTAMP or child.poll() is not None, 60, 0.02)
            time.sleep(1.0)  # publishing under way
            assert child.poll() is None, child.stderr.read().decode()  # type: ignore[union-attr]
            with paused(broker):
                time.sleep(1.5)  # the child hands batches over and waits: none acknowledged
                held = position()
                child.send_signal(signal.SIGKILL)  # killed with its window full
                child.wait(10)
            committed_at_kill = writers.commits[-1][1]
            assert held < committed_at_kill
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGKILL)
                child.wait(10)
        time.sleep(0.5)
    assert writers.error is None and writers.commits
    last = writers.commits[-1][1]
    final = spawn()
    try:
        wait_until(lambda: position() >= last or final.poll() is not None, 60, 0.02)
        assert final.poll() is None, final.stderr.read().decode()  # type: ignore[union-attr]
        messages = read_topic(broker.bootstrap_servers, topic, at_least=len(writers.commits))
    finally:
        final.send_signal(signal.SIGKILL)
        final.wait(10)
    unique = check_delivery(messages, writers.commits)
    print(f"\nwatcher killed with batches in flight: {len(writers.commits)} transactions, {len(messages)} messages "
          f"read, {len(messages) - len(unique)} duplicates")


class CheckedProgress(InMemoryProgressStore):
    """Change-stream progress in memory; a partition's watermark saved at or past one of its batches not
    acknowledged is noted in ``violations``."""

    def __init__(self, sink: Recorded) -> None:
        super().__init__()
        self.sink = sink
        self.violations: list[tuple[str, Any]] = []

    def save(self, stream: str, watcher_id: str, rows: Sequence[PartitionProgress]) -> None:
        with self.sink._lock:
            batches = list(self.sink.batches)
        def acknowledged(f: cf.Future[None]) -> bool:
            return f.done() and f.exception() is None

        def covered(last: Change, row: PartitionProgress) -> bool:
            # at the watermark itself, the row says which records of that commit timestamp were delivered
            # (a transaction's records may be split over two batches)
            if last.commit_timestamp != row.watermark:
                return last.commit_timestamp < row.watermark
            ids = row.delivered_at_watermark
            return not ids or f"{last.server_transaction_id}/{last.record_sequence}" in ids

        for row in rows:
            for i, (last, f) in enumerate(batches):
                if last.partition_token != row.token or not covered(last, row) or acknowledged(f):
                    continue
                if f.done() and any(acknowledged(g) and later.partition_token == row.token
                                    and later.commit_timestamp >= last.commit_timestamp
                                    for later, g in batches[i + 1:]):
                    continue  # refused, then delivered again (as the polling check allows)
                self.violations.append((row.token, row.watermark))
        super().save(stream, watcher_id, rows)


def test_a_paused_broker_holds_each_stream_partitions_progress_behind_its_batches_in_flight(make_database, broker):
    db = make_database([ITEMS_DDL, "CREATE CHANGE STREAM ItemsStream FOR Items"])
    with db.snapshot() as snap:
        start = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    sink = Recorded(KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True, partitions=2))
    progress = CheckedProgress(sink)
    w = ChangeStreamWatcher(db, "ItemsStream", heartbeat=1.0, start=start, progress=progress, max_batch_rows=10,
                            max_batches_in_flight=IN_FLIGHT)
    sink.attach(w)
    try:
        w.start()
        with Writers(db) as writers:
            wait_until(lambda: sink.kafka.messages_sent >= 100, 30)
            with paused(broker):
                wait_until(lambda: sink.unacknowledged() >= IN_FLIGHT, 20)  # a partition's window filled
                time.sleep(1.0)
                assert w.failure is None
            wait_until(lambda: sink.unacknowledged() == 0, 30)
            time.sleep(0.5)
        assert writers.error is None
        messages = read_topic(broker.bootstrap_servers, topic, at_least=2 * len(writers.commits), timeout=60)
    finally:
        w.stop()
        sink.kafka.close()
    assert w.failure is None
    check_delivery(messages, writers.commits)
    assert progress.violations == []
    assert sink.most_in_flight >= IN_FLIGHT
    print(f"\nchange stream, paused broker: {len(writers.commits)} transactions, {len(sink.batches)} batches, "
          f"{len(messages)} messages read")
