"""One micro-batch partition, read in a Spark task: its loops' rows between two positions, at R.

Every loop (table, shard) of the partition is read with the watcher's own poll queries
(:mod:`watcher.capture.polling`), bounded on both sides: after the start position (the rest of a
commit-timestamp group after its key first, then later timestamps) and at or before the end
position, in one snapshot at exactly the end offset's read timestamp R. The rows are therefore
exactly the committed row versions between the two offsets as of R, in (commit timestamp, key)
order, and a task run again reads the same rows. Loops of one table between the same two
positions are read together, one query over their shards (:func:`shared_reads`).

Each loop's rows are one staged batch (:mod:`watcher.staging.contract`): its id is derived from
the end offset (``<R compact>-stream-<watcher id>-t<table>s<shard>``, the same on a retry), its
``seq`` numbers 0..n-1 in read order, so the changelog job de-duplicates and logs them like
files a watcher staged.

Example:
    >>> stream_batch_id("2024-05-01T10:00:00.123456789Z", "spark-stream", 1, 12)
    '20240501T100000.123456789Z-stream-spark-stream-t1s12'
    >>> json_field("a"), json_field(3), json_field([1, "x"]), json_field(None)
    ('a', '3', '[1,"x"]', None)
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from pyspark.sql.datasource import InputPartition

from ...capture.polling import PollQuery, continuation_query, simple_query
from ...capture.row_values import bytes_decoder, column_types
from ...capture.shards import FixedShardProvider, ShardFilter
from ...capture.table_info import TableInfo, is_table_not_found
from ...model import Change, Checkpoint
from ...request_settings import DEFAULT_SETTINGS, RequestSettings
from ...staging import contract
from ..input.staging_reader import TEXT_FIELDS
from ..rules.records import STAGING_READ_FIELDS
from ..snapshots.spanner_source import SpannerLocation
from .dropped import table_dropped

#: Rows one poll query of a bounded read returns at most (the read pages on within the bounds).
PAGE_ROWS = 50_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: The row layout: every staging field as read (``staging_reader.read_schema()``); the fields read
#: as text (keys, shard, the values objects) carry their JSON text, as Spark reads a staged file.
_ROW_FIELDS = tuple((name, name in TEXT_FIELDS) for name, _, _ in STAGING_READ_FIELDS)


@dataclass(frozen=True)
class LoopRead:
    """One loop's share of a micro-batch: rows after ``start`` up to ``end`` (Checkpoint texts)."""

    table_index: int
    shard_index: int
    info: TableInfo
    shard_column: str | None
    shard: Any
    start: str
    end: str


@dataclass(frozen=True)
class StreamPartition(InputPartition):
    """A Spark partition of a micro-batch (picklable): a group of loops and the read timestamp."""

    location: SpannerLocation
    read_timestamp: str
    loops: tuple[LoopRead, ...]
    hint: str
    watcher_id: str
    #: The priority and request tag of the partition's queries.
    request_settings: RequestSettings = DEFAULT_SETTINGS


def stream_batch_id(read_timestamp: str, watcher_id: str, table_index: int, shard_index: int) -> str:
    """The staged batch id of one loop's rows in the micro-batch ending at ``read_timestamp``."""
    return (f"{contract.compact_timestamp(read_timestamp)}-stream-{_UNSAFE.sub('_', watcher_id)}"
            f"-t{table_index}s{shard_index}")


def json_field(value: Any) -> str | None:
    """A JSON field as Spark reads it into a STRING column: strings bare, the rest as compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def staging_row(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """A staging record as a row of the source's schema (the JSON fields as their text)."""
    return tuple(json_field(rec.get(name)) if text else rec.get(name) for name, text in _ROW_FIELDS)


_databases: dict[SpannerLocation, Any] = {}
_lock = threading.Lock()


def database(location: SpannerLocation) -> Any:
    """A client ``Database`` for ``location``, one per process (a Python worker reads many partitions)."""
    with _lock:
        if location not in _databases:
            _databases[location] = location.open()
        return _databases[location]


def loop_filter(loop: LoopRead) -> ShardFilter | None:
    return None if loop.shard_column is None else FixedShardProvider(loop.shard_column, loop.shard).shard_filter()


def bounded_queries(loop: LoopRead, hint: str, limit: int, since: Checkpoint, until: Checkpoint,
                    columns: Sequence[str] | None = None) -> list[PollQuery]:
    """The poll queries of a loop's rows after ``since`` and at or before ``until``, in order:
    the rest of ``since``'s group after its key (when it has one), then later timestamps."""
    shard = loop_filter(loop)
    queries = []
    if since.key is not None:
        queries.append(continuation_query(loop.info, hint, limit=limit, since=since, shard=shard, until=until,
                                          columns=columns))
    queries.append(simple_query(loop.info, hint, limit=limit, since=since.commit_timestamp, shard=shard, until=until,
                                columns=columns))
    return queries


def _loop_rows(snapshot: Any, loop: LoopRead, hint: str,
               request_options: dict[str, Any] | None = None) -> Iterator[tuple[list[Any], list[Any]]]:
    """(fields, row) of every row of the loop's range, paging by position within the bounds. The
    result set's fields are read once per query (protobuf types are slow to read), not per row."""
    since, until = Checkpoint.from_text(loop.start), Checkpoint.from_text(loop.end)
    info = loop.info
    while True:
        got = 0
        last: list[Any] | None = None
        position: tuple[int, list[int]] = (0, [])
        for query in bounded_queries(loop, hint, PAGE_ROWS, since, until):
            results = snapshot.execute_sql(query.sql, params=query.params, param_types=query.types,
                                           request_options=request_options)
            fields: list[Any] | None = None
            decode: Any = None
            for raw in results:
                if fields is None:
                    fields = list(results.fields)
                    decode = bytes_decoder(fields)
                    names = [f.name for f in fields]
                    position = (names.index(info.commit_timestamp_column), [names.index(k) for k in info.key_columns])
                row = decode(list(raw))  # keys as the watcher holds them (BYTES as bytes)
                got += 1
                yield fields, row
                last = row
            if got >= PAGE_ROWS:
                break  # the page is full: go on from its last row
        if got < PAGE_ROWS or last is None:
            return
        since = Checkpoint(last[position[0]], tuple(last[i] for i in position[1]))


def shared_reads(loops: Sequence[LoopRead]) -> list[tuple[LoopRead, dict[Any, LoopRead]]]:
    """The partition's loops as reads: loops of one table and shard column between the same two
    positions share one read over all their shards (``shard IN UNNEST(...)``), whose rows are split
    back by shard value; (read, {shard value: loop}) each, in the loops' order. Every micro-batch
    after the first leaves all loops at one position, so a task then runs a query per table, not per
    shard. Each shard's rows keep their (commit timestamp, key) order, so every loop's records (its
    batch id, each row's ``seq``) are those its own query would give.

    >>> from watcher.model import TableId
    >>> info = TableInfo(TableId("T"), "Ts", ("A",), {"A": "INT64", "Ts": "TIMESTAMP"})
    >>> loops = [LoopRead(0, i, info, "S", s, "a", "b") for i, s in enumerate([5, 6])] + [LoopRead(0, 2, info, "S", 7, "x", "b")]
    >>> [(read.shard, sorted(by)) for read, by in shared_reads(loops)]
    [([5, 6], [5, 6]), (7, [7])]
    """
    groups: dict[tuple[Any, ...], list[LoopRead]] = {}
    for loop in loops:
        shareable = loop.shard_column is not None and type(loop.shard) in SHAREABLE_SHARD_TYPES
        key = (loop.table_index, loop.shard_column, loop.start, loop.end) if shareable else (id(loop),)
        groups.setdefault(key, []).append(loop)
    reads = []
    for members in groups.values():
        first = members[0]
        if len(members) == 1:
            reads.append((first, {first.shard: first}))
        else:
            shared = LoopRead(first.table_index, -1, first.info, first.shard_column, [m.shard for m in members],
                              first.start, first.end)
            reads.append((shared, {m.shard: m for m in members}))
    return reads


#: Shard values a shared read can split its rows by: they come back from Spanner as the same value.
SHAREABLE_SHARD_TYPES = (int, str)


def read(partition: StreamPartition) -> Iterator[tuple[Any, ...]]:
    """Runs in a Spark task: the staging-record rows (``staging_reader.read_schema()`` order) of the partition."""
    at = DatetimeWithNanoseconds.from_rfc3339(partition.read_timestamp)
    with database(partition.location).snapshot(read_timestamp=at, multi_use=True) as snap:
        for shared, loops in shared_reads(partition.loops):
            yield from _read_records(snap, shared, loops, partition, at)


def _read_records(snap: Any, shared: LoopRead, loops: dict[Any, LoopRead], partition: StreamPartition,
                  at: Any) -> Iterator[tuple[Any, ...]]:
    try:
        yield from _read_changes(snap, shared, loops, partition, at)
    except gexc.GoogleAPICallError as exc:
        if is_table_not_found(exc):  # dropped since the micro-batch was planned: its rows are gone
            raise table_dropped(shared.info.table.table, Checkpoint.from_text(shared.start),
                                f"found reading the micro-batch ending at {partition.read_timestamp}") from exc
        raise


def _read_changes(snap: Any, shared: LoopRead, loops: dict[Any, LoopRead], partition: StreamPartition,
                  at: Any) -> Iterator[tuple[Any, ...]]:
    info = shared.info
    types: Mapping[str, str] = {}  # the first query's (one snapshot: every page has the same)
    seqs = dict.fromkeys(loops, 0)
    batch_ids = {shard: stream_batch_id(partition.read_timestamp, partition.watcher_id, loop.table_index,
                                        loop.shard_index) for shard, loop in loops.items()}
    split = len(loops) > 1
    only = next(iter(loops))
    names: list[str] = []
    current: list[Any] | None = None  # the fields of the query the rows come from (read once per query)
    for fields, row in _loop_rows(snap, shared, partition.hint, partition.request_settings.request_options()):
        if fields is not current:
            current, names = fields, [f.name for f in fields]
            types = types or column_types(fields)
        record = dict(zip(names, row, strict=True))
        shard = record[str(shared.shard_column)] if split else only
        change = Change(info.table.table, tuple(record[k] for k in info.key_columns), record,
                        record[info.commit_timestamp_column], loops[shard].shard, at, column_types=types)
        rec = contract.change_record(change, batch_id=batch_ids[shard], seq=seqs[shard], types=types,
                                     key_columns=info.key_columns, watcher_id=partition.watcher_id)
        yield staging_row(rec)
        seqs[shard] += 1


__all__ = ["LoopRead", "StreamPartition", "bounded_queries", "database", "read", "shared_reads", "staging_row",
           "stream_batch_id"]
