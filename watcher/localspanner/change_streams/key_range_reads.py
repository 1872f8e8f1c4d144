"""Answering a query of a ``MUTABLE_KEY_RANGE`` stream: one protobuf ChangeStreamRecord per row.

A query without a token gets one partition start record naming the partitions at its start
(:func:`.key_ranges.current`). A partition's query returns, in timestamp order, its data
change records (the keys it holds at each commit timestamp, :meth:`~.key_ranges.KeyRangePartition.holds`),
its partition start and event records where key ranges move (:func:`.key_ranges.events`),
heartbeats when idle and, for a partition that ends, its partition end record last. Within
one timestamp the record sequences order events before data: a partition's events take
``00000000`` and ``00000001``, data records their sequence within the transaction plus
:data:`DATA_SEQUENCE_BASE` (still unique and ordered within the transaction across partitions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import errors
from ..common.requests import Field
from ..datamodel import types as T
from ..datamodel import values
from ..schema.catalog import ChangeStream
from . import key_ranges, proto_records
from .key_ranges import Event, KeyRangePartition
from .partitions import WHOLE, is_split
from .read_function import ReadRequest
from .read_plan import Plan, mod_values
from .records import Record, decode_body, fetch
from .timeline import Timeline

CHANGE_RECORD_TYPE = T.proto_of(proto_records.FQN)
#: The one column of a MUTABLE_KEY_RANGE stream's query result.
FIELDS = [Field("ChangeRecord", CHANGE_RECORD_TYPE)]
#: Data record sequences start here, above those of the partition records at the same timestamp.
DATA_SEQUENCE_BASE = 2


def _row(message: bytes) -> list[Any]:
    return [values.stored_to_wire(CHANGE_RECORD_TYPE, message)]


def _heartbeat(ts: int) -> list[Any]:
    return _row(proto_records.heartbeat(ts))


def plan(stream: ChangeStream, request: ReadRequest, timeline: Timeline) -> Plan:
    """The plan of ``request`` (a first query when it has no token); INVALID_ARGUMENT for a token that
    names no partition of ``stream`` or one that does not cover the start."""
    if request.token is None:
        tokens = [p.token for p in key_ranges.current(stream.name, timeline, request.start)]
        row = _row(proto_records.partition_start(request.start, "00000000", tokens))
        return Plan(lambda: None, None, lambda: [row], _heartbeat)
    part = key_ranges.decode(request.token, stream.name, timeline)
    if part is None:
        raise errors.partition_token_unknown(request.token)
    end = part.end
    if request.start < part.start or (end is not None and request.start > end):
        raise errors.partition_token_ended(request.token, values.nanos_to_rfc3339(request.start))

    def rows(conn: Any, lo: int, hi: int) -> Iterator[list[Any]]:
        found = [r for r in fetch(conn, stream.name, lo, hi, WHOLE) if part.holds(r.bucket, r.commit_nanos)]
        pending = [e for e in key_ranges.events(part, lo, hi) if e.kind != "end" and e.ts != part.end]
        data = iter(_data_rows(found, part))
        i = 0
        for ts, row in data:
            while i < len(pending) and pending[i].ts <= ts:
                yield from _event_rows(part, pending[i])
                i += 1
            yield row
        for event in pending[i:]:
            yield from _event_rows(part, event)

    def end_rows() -> list[list[Any]]:
        assert part.end is not None
        return [r for e in key_ranges.events(part, part.end, part.end) for r in _event_rows(part, e)]

    return Plan(lambda: part.end, rows, end_rows, _heartbeat)


def _event_rows(part: KeyRangePartition, event: Event) -> list[list[Any]]:
    """The rows of one event (a move out and the partition's end share a timestamp: sequences 0 and 1)."""
    others = [p.token for p in event.others]
    if event.kind == "start":
        return [_row(proto_records.partition_start(event.ts, "00000000", others))]
    if event.kind == "end":
        return [_row(proto_records.partition_end(event.ts, "00000001", part.token))]
    sequence = "00000000" if event.kind == "move_in" or not part.is_home else "00000001"
    moves = {"moved_in_from": others} if event.kind == "move_in" else {"moved_out_to": others}
    return [_row(proto_records.partition_event(event.ts, sequence, part.token, **moves))]


def _data_rows(found: list[Record], part: KeyRangePartition) -> Iterator[tuple[int, list[Any]]]:
    for i, r in enumerate(found):
        body = decode_body(r.body)
        last = i + 1 == len(found) or found[i + 1].txn != r.txn
        split = is_split(part.timeline, r.commit_nanos)
        message = proto_records.data_change(
            r.commit_nanos, f"{r.seq + DATA_SEQUENCE_BASE:08d}", r.txn, last, body["table"], body["column_types"],
            mod_values(body), body["mod_type"], body["value_capture_type"], r.records_in_txn,
            r.buckets_in_txn if split else 1, body["transaction_tag"], body.get("system", False))
        yield r.commit_nanos, _row(message)
