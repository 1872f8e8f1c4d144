"""Change-stream segments, read in a Spark task: each a partition's data change records from its start to R.

For each segment a task runs ``READ_<stream>(start_timestamp => start, end_timestamp => R, partition_token => token)``
(a single-use strong query, as the read function demands) and turns every mod of every data
change record into the staging record a :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher`
stages (every version, ``mod_type``, old values, transaction ids; ``read_method``
``change_stream``), with R as its read timestamp and as its ``stream_watermark`` (every change
committed up to R is in this or an earlier micro-batch once it is written). Heartbeats and
child partitions are the driver's concern (:mod:`.stream_plan`) and are skipped here.

Each segment is one staged batch: its id comes from the end offset (``<R compact>-cstream-<watcher
id>-p<segment index>``, the same on a retry), its ``seq`` numbers each table's records 0..n-1 in
read order (a staged batch holds one table's records: a stream on several tables gives a
segment one batch per table, all with the segment's id).
The query's bounds fix what it returns, so a task run again reads the same records.

Example:
    >>> segment_batch_id("2024-05-01T10:00:00.123456789Z", "spark-stream", 7)
    '20240501T100000.123456789Z-cstream-spark-stream-p7'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from pyspark.sql.datasource import InputPartition

from ...capture.change_streams import key_range_records, records
from ...capture.change_streams.reader import PARAM_TYPES, query_text
from ...capture.change_streams.spanner_progress import TABLE as PROGRESS_TABLE
from ...capture.change_streams.stream_info import StreamInfo, read_error
from ...request_settings import DEFAULT_SETTINGS, RequestSettings, settings_or_default
from ...staging import contract
from ..snapshots.spanner_source import SpannerLocation
from .partition_reader import database, staging_row

#: Heartbeat interval of the bounded queries (they end at R, which is past: no heartbeat is awaited).
HEARTBEAT_MS = 10_000
#: Tables whose changes a stream ``FOR ALL`` sees but nobody wants: a change-stream watcher's progress.
IGNORED_TABLES = (PROGRESS_TABLE,)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class SegmentRead:
    """Segment ``index`` of a micro-batch: partition ``token`` from ``start`` (RFC 3339 text) to ``end``
    (None: to R; a MUTABLE_KEY_RANGE partition's window is cut at its move-ins)."""

    index: int
    token: str
    start: str
    end: str | None = None


@dataclass(frozen=True)
class SegmentPartition(InputPartition):
    """A Spark partition of a change-stream micro-batch (picklable): segments read up to R."""

    location: SpannerLocation
    stream: StreamInfo
    read_timestamp: str
    segments: tuple[SegmentRead, ...]
    watcher_id: str
    tables: tuple[str, ...] = ()  # empty: every table of the stream
    #: The priority and request tag of the segments' change-stream queries.
    request_settings: RequestSettings = DEFAULT_SETTINGS


def segment_batch_id(read_timestamp: str, watcher_id: str, index: int) -> str:
    """The staged batch id of segment ``index`` of the micro-batch ending at ``read_timestamp``."""
    return f"{contract.compact_timestamp(read_timestamp)}-cstream-{_UNSAFE.sub('_', watcher_id)}-p{index}"


def wanted(tables: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a record of a table is wanted: not an ignored table, and in ``tables`` when given (any case).

    >>> keep = wanted(("Singers",)); keep("SINGERS"), keep("Albums"), wanted(())(PROGRESS_TABLE)
    (True, False, False)
    """
    ignored = {t.upper() for t in IGNORED_TABLES}
    only = {t.upper() for t in tables}
    return lambda table: table.upper() not in ignored and (not only or table.upper() in only)


def query_records(db: Any, stream: StreamInfo, token: str, start: Any, end: Any, *,
                  request_settings: RequestSettings | None = None) -> Iterator[Any]:
    """Every record of partition ``token`` from ``start`` to ``end`` (both inclusive), in the order
    the stream returns them (:mod:`~watcher.capture.change_streams.records`, or for a MUTABLE_KEY_RANGE
    stream :mod:`~watcher.capture.change_streams.key_range_records`); a failed read as the library's
    error naming the stream. The query carries ``request_settings``' priority and request tag."""
    params = {"start": start, "end": end, "token": token, "heartbeat": HEARTBEAT_MS}
    options = settings_or_default(request_settings).request_options()
    try:
        with db.snapshot() as snap:
            results = snap.execute_sql(query_text(stream.name), params=params, param_types=PARAM_TYPES,
                                       request_options=options)
            layout = None
            for row in results:
                if stream.mutable_key_range:
                    yield from key_range_records.parse_row(row)
                    continue
                if layout is None:
                    layout = records.layout_of(results.fields)
                yield from records.parse_row(row, layout)
    except gexc.GoogleAPICallError as exc:
        raise read_error(stream, exc, start) from exc


def read(partition: SegmentPartition) -> Iterator[tuple[Any, ...]]:
    """Runs in a Spark task: the staging-record rows of the segments' data change records."""
    at = DatetimeWithNanoseconds.from_rfc3339(partition.read_timestamp)
    keep = wanted(partition.tables)
    db = database(partition.location)
    for segment in partition.segments:
        yield from _segment_rows(db, partition, segment, at, keep)


def _segment_rows(db: Any, partition: SegmentPartition, segment: SegmentRead, at: Any,
                  keep: Callable[[str], bool]) -> Iterator[tuple[Any, ...]]:
    start = DatetimeWithNanoseconds.from_rfc3339(segment.start)
    stop = DatetimeWithNanoseconds.from_rfc3339(segment.end) if segment.end is not None else at
    batch_id = segment_batch_id(partition.read_timestamp, partition.watcher_id, segment.index)
    # A staged batch holds one table's records (the changelog reads it as the file
    # table=<T>/<batch id>.jsonl), so each table's records of a segment number 0..n-1 on their own.
    next_seq: dict[str, int] = {}
    for rec in query_records(db, partition.stream, segment.token, start, stop, request_settings=partition.request_settings):
        if not isinstance(rec, records.DataChangeRecord) or not keep(rec.table_name):
            continue
        for change in rec.changes(segment.token, at, at):
            seq = next_seq.get(rec.table_name, 0)
            next_seq[rec.table_name] = seq + 1
            yield staging_row(contract.change_record(change, batch_id=batch_id, seq=seq, types=rec.types(),
                                                     key_columns=rec.key_columns, watcher_id=partition.watcher_id,
                                                     mod_type=change.mod_type))
