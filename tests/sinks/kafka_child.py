"""The watching process of test_watcher_kill: a TableWatcher publishing to Kafka through KafkaSink.

Usage: python -m tests.sinks.kafka_child PROJECT INSTANCE DATABASE TABLE SERVERS TOPIC LIMIT HOLD

HOLD seconds a batch callback after the sink takes (as a slower second sink would): Kafka has
the batch, the checkpoint has not moved yet, so a kill then makes the next process send it again.

Connects to SPANNER_EMULATOR_HOST and keeps its place in LAST_SEEN_COMMIT_TIMESTAMPS of the
watched database, so a process started after a SIGKILL resumes where the killed one's last
acknowledged batch ended.
"""

from __future__ import annotations

import sys
import time

from tests.child_process import connect, run_until_failure
from watcher import MIN_TIMESTAMP, SpannerCommitTimestampRepository, TableWatcher
from watcher.sinks.kafka import KafkaSink


def main(argv: list[str]) -> int:
    project, instance, database, table, servers, topic, limit, hold = argv
    db = connect(project, instance, database)
    sink = KafkaSink(servers, topic=topic, create_topics=True, partitions=2)
    watcher = TableWatcher(db, table, poll_interval=0.02, limit=int(limit), initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=SpannerCommitTimestampRepository(db))
    sink.attach(watcher)
    watcher.add_batch_callback(lambda changes: time.sleep(float(hold)))
    return run_until_failure(watcher)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
