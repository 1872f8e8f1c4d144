"""The watching process SIGKILLed mid-batch while writers commit, and started again, several times: a
consumer reading the topic from its start sees every committed change, each key's changes in commit
order, and duplicates only as the same change id (what a restarted process sends again of the batch
the killed one had in flight)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from google.api_core.exceptions import NotFound

from tests.conftest import INSTANCE, PROJECT
from tests.sinks.delivery_check import Writers, check_delivery
from tests.sinks.support import ITEMS_DDL, read_topic
from tests.watcher.core_support import wait_until
from watcher import MIN_TIMESTAMP, SpannerCommitTimestampRepository, TableId

ROOT = Path(__file__).resolve().parents[2]
KILLS = 3
#: Rows per poll: a transaction writes two, so batches end inside the writers' stream.
LIMIT = 20
#: Seconds each batch is held after Kafka acknowledged it and before the checkpoint moves (a second sink's
#: time), so most kills land mid-batch.
HOLD = 0.2


def test_a_watcher_killed_mid_batch_and_restarted_loses_nothing_and_keeps_each_keys_order(make_database, broker):
    db = make_database([ITEMS_DDL])
    topic = f"t{uuid.uuid4().hex[:10]}.Items"
    rng = random.Random(20)
    checkpoints = SpannerCommitTimestampRepository(db)

    def spawn() -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.Popen([sys.executable, "-m", "tests.sinks.kafka_child", PROJECT, INSTANCE, db.database_id,
                                 "Items", broker.bootstrap_servers, topic, str(LIMIT), str(HOLD)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def position() -> Any:
        """The checkpoint the children stored (the minimum before the first one created its table)."""
        try:
            stored = checkpoints.get(TableId("Items"))
        except NotFound:
            return MIN_TIMESTAMP
        return MIN_TIMESTAMP if stored is None else stored.commit_timestamp

    with Writers(db, pause=0.08) as writers:
        for _ in range(KILLS):
            before = position()
            child = spawn()
            try:
                # Kill at a random moment once this process moved the checkpoint (it is publishing).
                wait_until(lambda p=child, b=before: position() > b or p.poll() is not None, 30, 0.02)
                time.sleep(rng.uniform(0.9, 1.4))  # caught up with the backlog the restart left
                assert child.poll() is None, child.stderr.read().decode()  # type: ignore[union-attr]
            finally:
                child.send_signal(signal.SIGKILL)
                child.wait(10)
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
    repeated = len(messages) - len(unique)
    assert 0 < repeated <= KILLS * LIMIT, "a kill repeats at most the batch in flight (and some kill landed in one)"
    print(f"\nwatcher kill: {len(writers.commits)} transactions, {KILLS} kills, {len(messages)} messages read, "
          f"{repeated} duplicates")
