"""The sink tests' table and writes, and reading a topic back as a consumer does."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import spanner

#: A table with a two-part key (its second part may be NULL) and the types that must arrive exactly.
ITEMS_DDL = ("CREATE TABLE Items (A INT64 NOT NULL, B STRING(MAX), Big INT64, Amount NUMERIC, Blob BYTES(MAX), "
             "Seen TIMESTAMP, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (A, B)")
TYPES = {"A": "INT64", "B": "STRING", "Big": "INT64", "Amount": "NUMERIC", "Blob": "BYTES", "Seen": "TIMESTAMP",
         "Ts": "TIMESTAMP"}
COLUMNS = ("A", "B", "Big", "Amount", "Blob", "Seen")
BIG = 2**62 + 1
AMOUNT = decimal.Decimal("12345678901234567890.123456789")
AT = DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, nanosecond=123456789, tzinfo=dt.UTC)


def write(db: Any, rows: list[tuple[Any, ...]]) -> Any:
    """One transaction writing Items ``rows`` (COLUMNS order); returns its commit timestamp."""
    with db.batch() as batch:
        batch.insert_or_update("Items", (*COLUMNS, "Ts"), [(*r, spanner.COMMIT_TIMESTAMP) for r in rows])
    return batch.committed


def row(a: int, b: str | None, big: int = 1) -> tuple[Any, ...]:
    return (a, b, big, AMOUNT, base64.b64encode(b"\x00\xff"), AT)  # the client sends BYTES as base64




@dataclass(frozen=True)
class Message:
    """One message as read: where it was, its key, value (parsed JSON) and headers (texts)."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    headers: dict[str, str]

    @property
    def change_id(self) -> str:
        return self.headers["change_id"]

    @property
    def key_values(self) -> tuple[Any, ...]:
        return tuple(self.key["key"])


def read_topic(servers: str, topic: str, *, at_least: int, timeout: float = 20.0, settle: float = 0.3) -> list[Message]:
    """Every message of ``topic`` from its start: waits for ``at_least`` of them, then ``settle`` seconds more
    (so a message delivered twice is seen twice). Ordered by partition, then offset."""
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"reader-{topic}", "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        partitions = _partitions(consumer, topic, deadline)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        got: list[Message] = []
        settled_at: float | None = None
        while time.monotonic() < deadline and (settled_at is None or time.monotonic() < settled_at):
            for m in consumer.consume(500, 0.1):
                if m.error() is not None:
                    continue
                headers: list[tuple[str, bytes]] = m.headers() or []  # type: ignore[assignment]
                got.append(Message(str(m.topic()), int(m.partition() or 0), int(m.offset() or 0),
                                   json.loads(m.key() or b"null"), json.loads(m.value() or b"null"),
                                   {k: v.decode("utf-8") for k, v in headers}))
            if len(got) >= at_least and settled_at is None:
                settled_at = time.monotonic() + settle
        return sorted(got, key=lambda m: (m.partition, m.offset))
    finally:
        consumer.close()


def _partitions(consumer: Consumer, topic: str, deadline: float) -> list[int]:
    """The partitions of ``topic`` once it exists (the sink creates it with its first batch)."""
    while True:
        listed = consumer.list_topics(topic, timeout=5).topics.get(topic)
        if listed is not None and listed.error is None and listed.partitions:
            return sorted(listed.partitions)
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} did not appear")
        time.sleep(0.05)


def per_key(messages: list[Message]) -> dict[tuple[Any, ...], list[Message]]:
    """Each key's messages in the order a consumer of its partition reads them."""
    out: dict[tuple[Any, ...], list[Message]] = defaultdict(list)
    for m in messages:
        out[m.key_values].append(m)
    return dict(out)


def deduplicated(messages: list[Message]) -> list[Message]:
    """The first message of each change id (what a consumer de-duplicating by the header keeps)."""
    seen: set[str] = set()
    out = []
    for m in messages:
        if m.change_id not in seen:
            seen.add(m.change_id)
            out.append(m)
    return out
