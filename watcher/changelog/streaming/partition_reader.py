"""One micro-batch partition, read in a Spark task: its loops' rows between two positions, at R.

Every loop (table, shard) of the partition is read with the watcher's own poll queries
(:mod:`watcher.capture.polling`), bounded on both sides: after the start position (the rest of a
commit-timestamp group after its key first, then later timestamps) and at or before the end
position, in one snapshot at exactly the end offset's read timestamp R. The rows are therefore
exactly the committed row versions between the two offsets as of R, in (commit timestamp, key)
order, and a task run again reads the same rows.

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
from ...capture.row_values import column_types, real_bytes
from ...capture.shards import FixedShardProvider, ShardFilter
from ...capture.table_info import TableInfo, is_table_not_found
from ...model import Change, Checkpoint
from ...staging import contract
from ..records import STAGING_READ_FIELDS
from ..spanner_source import SpannerLocation
from .dropped import table_dropped

#: Rows one poll query of a bounded read returns at most (the read pages on within the bounds).
PAGE_ROWS = 50_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: The row layout: every staging field as read (``staging_reader.read_schema()``); the fields read
#: as text (keys, shard, the values objects) carry their JSON text, as Spark reads a staged file.
_ROW_FIELDS = tuple((name, kind == "STRING" or kind.startswith("MAP<")) for name, kind, _ in STAGING_READ_FIELDS)


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


def _loop_rows(snapshot: Any, loop: LoopRead, hint: str) -> Iterator[tuple[list[Any], list[Any]]]:
    """(fields, row) of every row of the loop's range, paging by position within the bounds."""
    since, until = Checkpoint.from_text(loop.start), Checkpoint.from_text(loop.end)
    info = loop.info
    while True:
        got = 0
        last: Checkpoint | None = None
        for query in bounded_queries(loop, hint, PAGE_ROWS, since, until):
            results = snapshot.execute_sql(query.sql, params=query.params, param_types=query.types)
            for raw in results:
                fields = list(results.fields)
                row = real_bytes(fields, list(raw))  # keys as the watcher holds them (BYTES as bytes)
                got += 1
                yield fields, row
                names = [f.name for f in fields]
                last = Checkpoint(row[names.index(info.commit_timestamp_column)],
                                  tuple(row[names.index(k)] for k in info.key_columns))
            if got >= PAGE_ROWS:
                break  # the page is full: go on from its last row
        if got < PAGE_ROWS or last is None:
            return
        since = last


def read(partition: StreamPartition) -> Iterator[tuple[Any, ...]]:
    """Runs in a Spark task: the staging-record rows (``staging_reader.read_schema()`` order) of the partition."""
    at = DatetimeWithNanoseconds.from_rfc3339(partition.read_timestamp)
    with database(partition.location).snapshot(read_timestamp=at, multi_use=True) as snap:
        for loop in partition.loops:
            yield from _loop_records(snap, loop, partition, at)


def _loop_records(snap: Any, loop: LoopRead, partition: StreamPartition, at: Any) -> Iterator[tuple[Any, ...]]:
    info = loop.info
    batch_id = stream_batch_id(partition.read_timestamp, partition.watcher_id, loop.table_index, loop.shard_index)
    try:
        yield from _loop_changes(snap, loop, partition, at, batch_id)
    except gexc.GoogleAPICallError as exc:
        if is_table_not_found(exc):  # dropped since the micro-batch was planned: its rows are gone
            raise table_dropped(info.table.table, Checkpoint.from_text(loop.start),
                                f"found reading the micro-batch ending at {partition.read_timestamp}") from exc
        raise


def _loop_changes(snap: Any, loop: LoopRead, partition: StreamPartition, at: Any, batch_id: str) -> Iterator[tuple[Any, ...]]:
    info = loop.info
    types: Mapping[str, str] | None = None
    seq = 0
    for fields, row in _loop_rows(snap, loop, partition.hint):
        names = [f.name for f in fields]
        if types is None:
            types = column_types(fields)
        record = dict(zip(names, row, strict=True))
        change = Change(info.table.table, tuple(record[k] for k in info.key_columns), record,
                        record[info.commit_timestamp_column], loop.shard, at, column_types=types)
        rec = contract.change_record(change, batch_id=batch_id, seq=seq, types=types, key_columns=info.key_columns,
                                     watcher_id=partition.watcher_id)
        yield staging_row(rec)
        seq += 1


__all__ = ["LoopRead", "StreamPartition", "bounded_queries", "database", "read", "staging_row", "stream_batch_id"]
