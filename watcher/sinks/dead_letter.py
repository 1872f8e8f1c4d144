"""Messages too large for their topic: how large a message is on the wire, and its dead-letter copy.

A Spanner row may hold up to 10 MB; a topic takes messages of at most its ``max.message.bytes``
(1 MB by default) and the producer of at most its ``message.max.bytes``. The Kafka sink checks
every message against both before sending anything of a batch (:func:`wire_size` is an upper
bound of the message's size in a record batch), so a message that cannot fit never reaches the
broker, where it would fail its whole produce request. Such a message either fails the batch
(:class:`~watcher.sinks.errors.MessageTooLargeError`, naming the table and the key) or, when the
sink has a dead-letter topic, goes there instead (:func:`dead_letter`) and the batch moves on.

A dead-letter message has the original's key and headers, plus :data:`HEADERS` saying why: the
topic it was meant for, its size, the limit, and whether its value was kept (``kept``) or,
when it does not fit the dead-letter topic either, dropped (``dropped``: the change id, table,
key and commit timestamp still name the change, so it can be read from Spanner).

Example:
    >>> from watcher.sinks.events import Event
    >>> big = Event(b'{"table":"T","key":["1"]}', b"x" * 5000, (("change_id", b"c1"),), "c1")
    >>> wire_size(big) > 5000
    True
    >>> letter = dead_letter(big, topic="shop.T", limit=1000, room=2000)
    >>> letter.value is None, dict(letter.headers)["dead_letter.value"]
    (True, b'dropped')
"""

from __future__ import annotations

from .events import Event

__all__ = ["HEADERS", "RECORD_BATCH_OVERHEAD", "dead_letter", "wire_size"]

#: The headers a dead-letter message adds to the original's.
HEADERS = ("dead_letter.reason", "dead_letter.topic", "dead_letter.bytes", "dead_letter.limit", "dead_letter.value")
#: Bytes of a record batch's header (Kafka's v2 format), which the broker counts against the topic's limit.
RECORD_BATCH_OVERHEAD = 61
#: Most bytes a record adds around its key, value and headers (length, attributes, deltas, counts as varints).
_RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5
#: Most bytes a header adds around its name and value (two varint lengths).
_HEADER_OVERHEAD = 10


def wire_size(event: Event) -> int:
    """An upper bound of ``event``'s bytes as the only record of a record batch (what the broker checks)."""
    headers = sum(len(name.encode("utf-8")) + len(value) + _HEADER_OVERHEAD for name, value in event.headers)
    return RECORD_BATCH_OVERHEAD + _RECORD_OVERHEAD + len(event.key) + len(event.value or b"") + headers


def dead_letter(event: Event, *, topic: str, limit: int, room: int) -> Event:
    """``event``'s copy for the dead-letter topic: why it is there in :data:`HEADERS`; its value kept when the
    copy fits ``room`` (the dead-letter topic's limit), else dropped."""
    size = wire_size(event)

    def headers(kept: bool) -> tuple[tuple[str, bytes], ...]:
        why = (f"message too large: up to {size} bytes, topic {topic} takes at most {limit}", topic, str(size),
               str(limit), "kept" if kept else "dropped")
        return (*event.headers, *((name, text.encode("utf-8")) for name, text in zip(HEADERS, why, strict=True)))

    kept = Event(event.key, event.value, headers(True), event.change_id)
    if wire_size(kept) <= room:
        return kept
    return Event(event.key, None, headers(False), event.change_id)
