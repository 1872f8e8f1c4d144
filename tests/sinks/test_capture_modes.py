"""Every capture mode feeds a KafkaSink and a StagingSink at once: the change reaches both, named by
the same change id, with the op its mode can tell (a table, a database, change sets, a history
table, a group of watchers); a history table's versions at one commit timestamp and its delete."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.sinks.support import read_topic
from tests.watcher.core_support import wait_until
from tests.watcher.test_watcher_interface import KINDS, OPTIONS, PLAIN, Kind
from watcher import HistoryTable, HistoryWatcher, InMemoryCommitTimestampRepository
from watcher.changelog.engines.driver.window import change_id as changelog_change_id
from watcher.changelog.input.staged import parse_batch
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


def test_history_versions_at_one_commit_timestamp_and_a_delete(make_database: Any, broker: Any) -> None:
    db = make_database([PLAIN.format("Docs")])
    history = HistoryTable.discover(db, "Docs")
    history.create(db)
    topic = f"t{uuid.uuid4().hex[:10]}.Docs"
    sink = KafkaSink(broker.bootstrap_servers, topic=topic, create_topics=True)
    w = HistoryWatcher(db, "Docs", checkpoints=InMemoryCommitTimestampRepository(), **OPTIONS)
    sink.attach(w)

    def insert_then_update(txn: Any) -> None:  # two versions of one key at one commit timestamp
        writer = history.writer(txn)
        writer.insert(["Id", "Name"], [[1, "first"]])
        writer.update(["Id", "Name"], [[1, "second"]])

    with w:
        db.run_in_transaction(insert_then_update)
        db.run_in_transaction(lambda txn: history.writer(txn).delete([[1]]))
        messages = read_topic(broker.bootstrap_servers, topic, at_least=3)
    sink.close()
    assert [m.value["op"] for m in messages] == ["c", "u", "d"]
    assert [m.headers["mod_type"] for m in messages] == ["INSERT", "UPDATE", "DELETE"]
    assert messages[0].headers["commit_timestamp"] == messages[1].headers["commit_timestamp"]
    assert len({m.change_id for m in messages}) == 3  # the version sequence tells the two versions apart
    assert messages[1].value["after"]["Name"] == "second"
    assert messages[2].value["before"] == {"Id": "1"} and messages[2].value["after"] is None
