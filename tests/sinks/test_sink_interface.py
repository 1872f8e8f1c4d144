"""The Sink interface: several sinks on one watcher, the checkpoint moving only once every sink
acknowledged a batch; a sink written as the docs show; the staging sink is one."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.sinks.support import ITEMS_DDL, deduplicated, read_topic, row, write
from tests.watcher.core_support import wait_until
from watcher import MIN_TIMESTAMP, Change, InMemoryCommitTimestampRepository, RetryPolicy, State, TableId, TableWatcher
from watcher.capture.table_info import TableInfo
from watcher.sinks import Sink, attach_sinks
from watcher.sinks.kafka import KafkaSink
from watcher.staging.sink import StagingSink


class ListSink(Sink):
    """Keeps every batch (thread-safe)."""

    def __init__(self) -> None:
        self.batches: list[list[Change]] = []
        self._lock = threading.Lock()

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        with self._lock:
            self.batches.append(list(changes))


class FailingSink(Sink):
    """Refuses its first ``failures`` batches, noting where the watcher's checkpoint stood at each call."""

    def __init__(self, failures: int, checkpoints: InMemoryCommitTimestampRepository) -> None:
        self.failures = failures
        self.checkpoints = checkpoints
        self.calls: list[tuple[Any, int]] = []

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        self.calls.append((self.checkpoints.get(TableId("Items")), len(changes)))
        if len(self.calls) <= self.failures:
            raise ConnectionError("the second sink's store is away")


def test_the_checkpoint_moves_only_after_every_sink_acknowledged_the_batch(make_database, broker):
    db = make_database([ITEMS_DDL])
    checkpoints = InMemoryCommitTimestampRepository()
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    kafka = KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True)
    failing = FailingSink(2, checkpoints)
    kept = ListSink()
    w = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=checkpoints, initial_timestamp=MIN_TIMESTAMP,
                     callback_error_policy="retry", retry_policy=RetryPolicy(initial=0.01, maximum=0.05))
    attach_sinks(w, [kafka, failing, kept])
    with w:
        start = checkpoints.get(TableId("Items"))
        committed = write(db, [row(1, "x"), row(2, None)])
        wait_until(lambda: len(kept.batches) == 1, 20)
        wait_until(lambda: checkpoints.get(TableId("Items")).commit_timestamp >= committed, 10)
        assert w.failure is None and w.state == State.RUNNING
    messages = read_topic(broker.bootstrap_servers, topic, at_least=6)
    kafka.close()

    # While the second sink refused the batch, the checkpoint stayed where the watcher started.
    assert [c for c, _ in failing.calls] == [start, start, start]
    assert [n for _, n in failing.calls] == [2, 2, 2]
    assert [len(b) for b in kept.batches] == [2]  # the sink after the failing one got it once, when it went through
    # The first sink acknowledged the batch at each try: it is there three times, and once per change id.
    assert len(messages) == 6
    assert sorted(m.key_values for m in deduplicated(messages)) == [("1", "x"), ("2", None)]


def test_the_staging_sink_is_a_sink_and_writes_the_batches_a_watcher_delivers(make_database, tmp_path):
    db = make_database([ITEMS_DDL])
    staging = StagingSink(tmp_path / "staging", fsync=False)
    assert isinstance(staging, Sink)
    w = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                     initial_timestamp=MIN_TIMESTAMP)
    staging.attach(w)
    with w:
        write(db, [row(1, "x")])
        wait_until(lambda: staging.records_written == 1, 20)
    (batch,) = (tmp_path / "staging" / "table=Items").glob("*.jsonl")
    assert '"keys":["1","x"]' in batch.read_text()


def test_the_documented_sink_works_as_written(make_database, capsys):
    page = (Path(__file__).resolve().parents[2] / "docs" / "sinks.md").read_text()
    code = re.search(r"Your own sink is one method:\n\n```python\n(.*?)```", page, re.S)
    assert code is not None, "the sink example of docs/sinks.md is gone"
    db = make_database([ITEMS_DDL])
    w = TableWatcher(db, "Items", poll_interval=0.01, checkpoints=InMemoryCommitTimestampRepository(),
                     initial_timestamp=MIN_TIMESTAMP)
    exec(code.group(1), {"watcher": w})  # defines PrintingSink and attaches one, as a user would
    with w:
        write(db, [row(3, "r")])
        wait_until(lambda: "Items (3, 'r')" in capsys.readouterr().out, 20)
    assert w.failure is None
