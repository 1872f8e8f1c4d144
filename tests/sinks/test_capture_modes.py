"""Every capture mode feeds a KafkaSink and a StagingSink at once: the change reaches both, named by
the same change id, with the op its mode can tell (a table, a database, change sets, a history
table, a group of watchers)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.sinks.support import read_topic
from tests.watcher.core_support import wait_until
from tests.watcher.test_watcher_interface import KINDS, Kind
from watcher.changelog.driver.staged import parse_batch
from watcher.changelog.driver.window import change_id as changelog_change_id
from watcher.sinks import attach_sinks
from watcher.sinks.debezium import op_of
from watcher.sinks.events import change_id
from watcher.sinks.kafka import KafkaSink
from watcher.staging import contract
from watcher.staging.sink import StagingSink


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_capture_mode_feeds_both_sinks_with_one_change_id(kind: Kind, make_database: Any, broker: Any,
                                                                 tmp_path: Any) -> None:
    db = make_database(kind.ddl())
    kind.prepare(db)
    w = kind.build(db)
    prefix = f"t{uuid.uuid4().hex[:10]}"
    kafka = KafkaSink(broker.bootstrap_servers, topic=f"{prefix}.%table%", create_topics=True)
    staging = StagingSink(tmp_path, fsync=False)
    attach_sinks(w, [kafka, staging])
    with w:
        kind.write(db, 1, "one")
        wait_until(lambda: staging.records_written >= 1, 20)
        (message,) = read_topic(broker.bootstrap_servers, f"{prefix}.{kind.table}", at_least=1)
    kafka.close()
    (batch,) = tmp_path.rglob("*.jsonl")
    (staged,) = [json.loads(line) for line in batch.read_text().splitlines()]
    assert message.change_id == change_id(staged)
    if staged["v"] == contract.STAGING_FORMAT:  # a polled row: the changelog's driver reads it; same id as it computes
        (row,) = parse_batch(batch.read_text(), contract.batch_name(str(batch)))
        assert message.change_id == changelog_change_id(row.table, row.keys, row.commit_timestamp)
    assert message.value["op"] == op_of(staged["mod_type"])
    assert message.value["after"]["Name"] == staged["values"]["Name"] == "one"
    assert message.key == {"table": kind.table, "key": staged["keys"]}
    assert w.failure is None
