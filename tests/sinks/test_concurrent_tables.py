"""One KafkaSink fed by a DatabaseWatcher's poll threads at once (several tables, concurrent writers,
polls cut short by LIMIT): every delivered change is in Kafka exactly once, each key's in commit order."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from google.cloud import spanner

from tests.sinks.support import per_key, read_topic
from tests.watcher.core_support import Collector, wait_until
from watcher import MIN_TIMESTAMP, DatabaseWatcher, InMemoryCommitTimestampRepository
from watcher.sinks.kafka import KafkaSink

TABLES = ("Alpha", "Beta", "Gamma")
DDL = [f"CREATE TABLE {t} (Id INT64 NOT NULL, N INT64, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) "
       f"PRIMARY KEY (Id)" for t in TABLES]
ROUNDS, KEYS = 12, 4


def writer(db: Any, table: str) -> None:
    for n in range(ROUNDS):
        with db.batch() as batch:
            batch.insert_or_update(table, ("Id", "N", "Ts"), [(k, n, spanner.COMMIT_TIMESTAMP) for k in range(KEYS)])


def newest_delivered(delivered: Collector) -> set[tuple[str, int]]:
    """The (table, key) pairs whose newest version the watcher delivered."""
    return {(c.table, c.keys[0]) for c in list(delivered.changes) if c.row["N"] == ROUNDS - 1}


def test_poll_threads_of_several_tables_share_one_sink(make_database, broker):
    db = make_database(DDL)
    prefix = f"t{uuid.uuid4().hex[:10]}"
    sink = KafkaSink(broker.bootstrap_servers, topic=f"{prefix}.%table%", event_format="record", create_topics=True,
                     partitions=2)
    w = DatabaseWatcher(db, poll_interval=0.01, limit=3, checkpoints=InMemoryCommitTimestampRepository(),
                        initial_timestamp=MIN_TIMESTAMP)
    delivered = Collector()
    w.add_callback(delivered)
    sink.attach(w)
    with w:
        threads = [threading.Thread(target=writer, args=(db, t)) for t in TABLES]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wait_until(lambda: newest_delivered(delivered) == {(t, k) for t in TABLES for k in range(KEYS)}, 30)
        read = {t: read_topic(broker.bootstrap_servers, f"{prefix}.{t}",
                              at_least=sum(c.table == t for c in delivered.changes)) for t in TABLES}
    sink.close()
    assert w.failure is None
    for table, messages in read.items():
        mine = [c for c in delivered.changes if c.table == table]
        assert len(messages) == len({m.change_id for m in messages}) == len(mine), table  # none twice, none missing
        for key, ms in per_key(messages).items():
            versions = [int(m.value["values"]["N"]) for m in ms]
            assert versions == sorted(versions), (table, key, versions)  # commit order per key
            assert versions[-1] == ROUNDS - 1  # the newest version arrived
