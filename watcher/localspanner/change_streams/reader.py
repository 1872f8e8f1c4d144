"""Answering a change stream query: child partitions, data change records and heartbeats as result rows.

One :class:`ChangeStreamReads` per database engine. A query without a token gets one
child_partitions record naming the partitions at its start. A partition's query returns
its data change records with ``start <= commit_timestamp <= end`` in commit order, a
heartbeat after every ``heartbeat_milliseconds`` without records, and when the partition
ends (on the churn timer, or as load splits and merges it: :mod:`.load`) a child_partitions record; with ``end_timestamp`` NULL it stays open and
hands over new commits as they happen: a commit that wrote records wakes the waiting
queries (:meth:`ChangeStreamReads.notify`). That is the ``IMMUTABLE_KEY_RANGE`` format; a
stream with ``partition_mode = 'MUTABLE_KEY_RANGE'`` returns its records as protobuf
messages and tells its partitions' key-range moves instead (:mod:`.key_range_reads`); the
reading loop is the same, each mode gives it a :class:`~.read_plan.Plan`.

What has been returned is always complete: records are read only up to a *safe*
timestamp taken like a strong read's (under the engine's visibility lock), after which
no commit can get a lower timestamp.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import errors
from ..common.clock import Clock
from ..common.requests import Field, ReadOnlyOptions, ResultStream, Staleness, Statement, TransactionKind, TransactionSelector
from ..datamodel import types as T
from ..datamodel import values
from ..ddl.change_stream_options import MUTABLE_KEY_RANGE, retention_seconds
from ..schema.catalog import Catalog, ChangeStream
from ..storage.store import Storage
from . import key_range_reads, partitions, read_function
from .load import TIMELINES_SUFFIX, LoadPolicy, LoadTimelines
from .read_plan import Plan, mod_values
from .records import Record, decode_body, fetch
from .timeline import Timeline, TimerTimeline

_DATA_CHANGE = T.struct_of(
    ("commit_timestamp", T.TIMESTAMP), ("record_sequence", T.STRING), ("server_transaction_id", T.STRING),
    ("is_last_record_in_transaction_in_partition", T.BOOL), ("table_name", T.STRING),
    ("column_types", T.array_of(T.struct_of(("name", T.STRING), ("type", T.JSON), ("is_primary_key", T.BOOL),
                                            ("ordinal_position", T.INT64)))),
    ("mods", T.array_of(T.struct_of(("keys", T.JSON), ("new_values", T.JSON), ("old_values", T.JSON)))),
    ("mod_type", T.STRING), ("value_capture_type", T.STRING), ("number_of_records_in_transaction", T.INT64),
    ("number_of_partitions_in_transaction", T.INT64), ("transaction_tag", T.STRING), ("is_system_transaction", T.BOOL))
_HEARTBEAT = T.struct_of(("timestamp", T.TIMESTAMP))
_CHILD_PARTITIONS = T.struct_of(
    ("start_timestamp", T.TIMESTAMP), ("record_sequence", T.STRING),
    ("child_partitions", T.array_of(T.struct_of(("token", T.STRING), ("parent_partition_tokens", T.array_of(T.STRING))))))
#: The one column of a change stream query's result.
CHANGE_RECORD_TYPE = T.array_of(T.struct_of(
    ("data_change_record", T.array_of(_DATA_CHANGE)), ("heartbeat_record", T.array_of(_HEARTBEAT)),
    ("child_partitions_record", T.array_of(_CHILD_PARTITIONS))))
FIELDS = [Field("ChangeRecord", CHANGE_RECORD_TYPE)]
#: Longest wait between two looks at the clock while a query is open (a partition end or end_timestamp may pass).
MAX_WAIT_SECONDS = 0.5
log = logging.getLogger(__name__)


class ChangeStreamReads:
    """The change stream queries of one database: its storage, clock, visibility lock (held from choosing a
    commit timestamp to COMMIT) and current catalog; ``churn_seconds`` gives the partition churn period,
    ``load_policy`` the load that splits and merges partitions instead (None: the churn timer does)."""

    def __init__(self, storage: Storage, clock: Clock, visibility: threading.Lock, catalog: Callable[[], Catalog],
                 churn_seconds: Callable[[], float] = lambda: 0.0, database: str = "",
                 load_policy: Callable[[], LoadPolicy | None] = lambda: None) -> None:
        self.storage, self.clock, self.visibility, self.catalog = storage, clock, visibility, catalog
        self.database = database
        self.churn_seconds = churn_seconds
        self.load_policy = load_policy
        self._load = LoadTimelines(storage.path + TIMELINES_SUFFIX)
        self._changed = threading.Condition()
        self._commits = 0
        self._closed = False

    def notify(self) -> None:
        """A commit wrote change records: wake the open queries, and split partitions it made hot."""
        with self._changed:
            self._commits += 1
            self._changed.notify_all()
        self.follow_load()

    def follow_load(self) -> None:
        """Split and merge partitions as their load says, if partitions follow load (see :mod:`.load`).
        A failure is logged, never raised: callers are commits that are already durable and open queries."""
        policy = self.load_policy()
        if policy is None or self._closed:
            return
        try:
            self._load.look(policy, self.catalog().change_streams, self.clock, self.visibility,
                            self.storage.reader, self.storage.release)
        except Exception:  # noqa: BLE001 - partitions stay as they are until the next look
            log.exception("following the change stream load of %s failed; partitions stay as they are", self.database)

    def timeline(self, stream: ChangeStream) -> Timeline:
        """The generations of ``stream``'s partitions: as load decided, or on the churn timer."""
        if self.load_policy() is not None:
            return self._load.of(stream)
        return TimerTimeline(stream.created_nanos, int(self.churn_seconds() * 1e9))

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def execute(self, statement: Statement, selector: TransactionSelector | None, *, plan: bool = False) -> ResultStream:
        """Check the query and return its result stream (rows come lazily, as the query runs)."""
        _check_single_use(selector)
        request = read_function.parse(statement)
        stream = self.catalog().change_stream(request.stream)
        if stream is None:
            raise errors.change_stream_read_unknown_stream(request.stream)
        mutable = stream.option("partition_mode") == MUTABLE_KEY_RANGE
        fields = key_range_reads.FIELDS if mutable else FIELDS
        if plan:
            return ResultStream(fields, iter(()), query_plan=True)
        self._check_start(stream, request.start)
        timeline = self.timeline(stream)
        if mutable:
            follow: Plan = key_range_reads.plan(stream, request, timeline)
        else:
            follow = _immutable_plan(stream, request, timeline)
        if follow.rows is None:  # the first query: one record naming partitions
            return ResultStream(fields, iter(follow.end_rows()))
        return ResultStream(fields, self._run(stream, follow, request), flush_each_row=True)

    def _check_start(self, stream: ChangeStream, start: int) -> None:
        shown = values.nanos_to_rfc3339(start)
        if start < stream.created_nanos:
            raise errors.change_stream_start_too_early(shown, values.nanos_to_rfc3339(stream.created_nanos),
                                                       f"the change stream {stream.name} did not exist yet")
        retention = (retention_seconds(str(stream.option("retention_period"))) or 86_400) * 1_000_000_000
        earliest = self.clock.wall_nanos() - retention
        if start < earliest:
            raise errors.change_stream_start_too_early(shown, values.nanos_to_rfc3339(earliest),
                                                       f"it is outside the retention period of {stream.name}")

    def _safe_timestamp(self) -> int:
        """A timestamp below every later commit's, with every earlier commit visible (like a strong read's)."""
        with self.visibility:
            return self.clock.next()

    def _run(self, stream: ChangeStream, plan: Plan, request: read_function.ReadRequest) -> Iterator[list[Any]]:
        heartbeat = request.heartbeat_ms / 1000
        cursor = request.start
        last_output = time.monotonic()
        conn = self.storage.reader()
        assert plan.rows is not None
        try:
            while True:
                if self._closed:  # the database was dropped (or the server stops) under the open query
                    raise errors.database_not_found(self.database)
                self.follow_load()
                seen = self._commits
                safe = self._safe_timestamp()
                last = plan.last()  # after the safe timestamp: every end at or below it is known
                upper = min(x for x in (request.end, last, 2**63 - 1) if x is not None)
                top = min(safe, upper)
                if top >= cursor:
                    for row in plan.rows(conn, cursor, top):
                        yield row
                        last_output = time.monotonic()
                    cursor = top + 1
                if last is not None and safe >= last and upper == last:
                    yield from plan.end_rows()
                    return
                if request.end is not None and safe >= request.end:
                    return
                idle = time.monotonic() - last_output
                if idle >= heartbeat:
                    yield plan.heartbeat(top)
                    last_output = time.monotonic()
                    idle = 0.0
                with self._changed:
                    if self._commits == seen and not self._closed:
                        self._changed.wait(min(heartbeat - idle, MAX_WAIT_SECONDS))
        finally:
            self.storage.release(conn)


def _immutable_plan(stream: ChangeStream, request: read_function.ReadRequest, timeline: Timeline) -> Plan:
    heartbeat_row = lambda ts: _row(([], [(ts,)], []))  # noqa: E731
    if request.token is None:
        row = _child_partitions_row(request.start, [(p, []) for p in partitions.current(
            stream.name, timeline, request.start)])
        return Plan(lambda: None, None, lambda: [row], heartbeat_row)
    part = partitions.decode(request.token, stream.name, timeline)
    if part is None:
        raise errors.partition_token_unknown(request.token)
    end = part.end
    if request.start < part.start or (end is not None and request.start >= end):
        raise errors.partition_token_ended(request.token, values.nanos_to_rfc3339(request.start))

    def rows(conn: Any, lo: int, hi: int) -> Iterator[list[Any]]:
        return _data_change_rows(fetch(conn, stream.name, lo, hi, part.mask), stream, part)

    def end_rows() -> list[list[Any]]:
        assert part.end is not None
        return [_child_partitions_row(part.end, [(c, [q.token for q in partitions.parents(c)])
                                                 for c in partitions.children(part)])]

    def last() -> int | None:
        end = part.end
        return None if end is None else end - 1

    return Plan(last, rows, end_rows, heartbeat_row)


def _check_single_use(selector: TransactionSelector | None) -> None:
    selector = selector or TransactionSelector.default()
    options = selector.single_use
    if options is None or options.kind != TransactionKind.READ_ONLY:
        raise errors.change_stream_read_needs_single_use()
    bound = (options.read_only or ReadOnlyOptions()).bound
    if bound not in (Staleness.STRONG, None):
        raise errors.change_stream_read_needs_single_use()


def _child_partitions_row(start: int, children: list[tuple[partitions.Partition, list[str]]]) -> list[Any]:
    record = (start, "00000000", [(c.token, parent_tokens) for c, parent_tokens in children])
    return _row(([], [], [record]))


def _data_change_rows(found: list[Record], stream: ChangeStream, part: partitions.Partition) -> Iterator[list[Any]]:
    for i, r in enumerate(found):
        body = decode_body(r.body)
        last = i + 1 == len(found) or found[i + 1].txn != r.txn
        split = partitions.is_split(part.timeline, r.commit_nanos)
        record = (r.commit_nanos, f"{r.seq:08d}", r.txn, last, body["table"],
                  [tuple(c) for c in body["column_types"]], _mods(body), body["mod_type"],
                  body["value_capture_type"], r.records_in_txn, r.buckets_in_txn if split else 1,
                  body["transaction_tag"], body.get("system", False))
        yield _row(([record], [], []))


def _mods(body: dict[str, Any]) -> list[tuple[str, ...]]:
    """The record's mods as (keys, new_values, old_values) JSON texts."""
    return [tuple(_json(part) for part in mod) for mod in mod_values(body)]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _row(change_record: tuple[list[Any], list[Any], list[Any]]) -> list[Any]:
    """A result row (wire values): the ChangeRecord array holding one element."""
    return [values.stored_to_wire(CHANGE_RECORD_TYPE, [change_record])]
