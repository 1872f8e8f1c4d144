"""A ChangeStreamWatcher feeding two KafkaSinks (one per event format): the stream's real mod types,
an UPDATE's and a DELETE's values before, the DELETE's tombstone, the transaction's identity in the
source block."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

from google.cloud.spanner import KeySet

from tests.sinks.support import read_topic
from watcher import ChangeStreamWatcher, InMemoryProgressStore
from watcher.model import rfc3339_nanos
from watcher.sinks import attach_sinks
from watcher.sinks.kafka import KafkaSink
from watcher.staging import contract

SINGERS_DDL = ("CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Money NUMERIC) "
               "PRIMARY KEY (SingerId)")


def commit(db: Any, work: Callable[[Any], Any]) -> Any:
    """Run ``work`` in one read/write transaction; its commit timestamp."""
    txns: list[Any] = []

    def run(txn: Any) -> None:
        txns.append(txn)
        work(txn)

    db.run_in_transaction(run)
    return txns[-1].committed


def test_stream_changes_arrive_with_their_mod_types_and_values_before(make_database, broker):
    db = make_database([SINGERS_DDL, "CREATE CHANGE STREAM S FOR Singers"])  # OLD_AND_NEW_VALUES by default
    with db.snapshot() as snap:
        start = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    debezium = KafkaSink(broker.bootstrap_servers, topic=f"{prefix}.%table%", create_topics=True, partitions=2,
                         tombstones=True)
    records = KafkaSink(broker.bootstrap_servers, topic=f"{prefix}-records.%table%", event_format="record",
                        create_topics=True)
    w = ChangeStreamWatcher(db, "S", heartbeat=dt.timedelta(seconds=1), start=start, progress=InMemoryProgressStore())
    attach_sinks(w, [debezium, records])
    with w:
        commits = [commit(db, lambda t: t.insert("Singers", ("SingerId", "Name", "Money"), [(7, "Ann", "1.50")])),
                   commit(db, lambda t: t.update("Singers", ("SingerId", "Name"), [(7, "Bo")])),
                   commit(db, lambda t: t.delete("Singers", KeySet(keys=[[7]])))]
        events = read_topic(broker.bootstrap_servers, f"{prefix}.Singers", at_least=4)
        staged = read_topic(broker.bootstrap_servers, f"{prefix}-records.Singers", at_least=3)
    debezium.close()
    records.close()

    *events, tombstone = events  # after the DELETE: its key without a value, for compacted topics
    assert tombstone.value is None and tombstone.key == events[-1].key
    assert tombstone.headers == {}

    assert [m.value["op"] for m in events] == ["c", "u", "d"]
    assert [m.headers["mod_type"] for m in events] == ["INSERT", "UPDATE", "DELETE"]
    assert [m.headers["commit_timestamp"] for m in events] == [rfc3339_nanos(c) for c in commits]
    insert, update, delete = (m.value for m in events)
    assert insert["before"] is None and insert["after"] == {"SingerId": "7", "Name": "Ann", "Money": "1.5"}
    assert update["before"] == {"SingerId": "7", "Name": "Ann"} and update["after"]["Name"] == "Bo"
    assert delete["after"] is None and delete["before"] == {"SingerId": "7", "Name": "Bo", "Money": "1.5"}
    for event in (insert, update, delete):
        source = event["source"]
        assert source["server_transaction_id"] and source["change_stream_name"] == "S"
        assert source["mod_number"] == 0 and source["sequence"] is not None
        assert source["value_capture_type"] == "OLD_AND_NEW_VALUES" and source["system_transaction"] is False
    # The record format is the staging record of a stream change; both sinks name each change alike.
    assert [m.value["mod_type"] for m in staged] == ["INSERT", "UPDATE", "DELETE"]
    assert all(tuple(m.value)[:len(contract.STREAM_RECORD_FIELDS)] == contract.STREAM_RECORD_FIELDS for m in staged)
    assert staged[2].value["old_values"] == {"Name": "Bo", "Money": "1.5"}, staged[2].value
    assert [m.change_id for m in staged] == [m.change_id for m in events]
    assert w.failure is None
