"""Change-stream mode of the ``spanner_watcher`` source: a change stream's partitions as Spark partitions.

``.option("change_stream", "SingersStream")`` selects it. Offsets are
:class:`.stream_offsets.StreamOffset` JSON (a read timestamp R, the partitions live after it,
the segments of the micro-batch ending there):

* **initial offset**: the stream's first query (no partition token) at the start (``now``: just
  after a strong read's timestamp; or the given timestamp, which must lie within the stream's
  retention) names the first partitions; R is the instant before the start.
* **latestOffset** (driver): R' = a new strong read's timestamp; the partition tree from the
  frontier to R' is walked (:mod:`.stream_plan`; the driver reads the window's records once
  to find the child partitions). Without a wanted data change record in the window the offset
  stays (no micro-batch), unless the window has grown past :data:`IDLE_ADVANCE`: then an empty
  micro-batch moves it, so an idle stream's offset never falls out of the retention period.
* **partitions** (driver): the segments (partition, from, R') of the window, as planned by the
  latestOffset that made the end offset (kept in memory), or planned again from the two offsets
  (after a restart: the past partition tree does not change). One Spark partition per segment,
  so reading scales with the stream's partitions, up to ``max_partitions`` (consecutive segments
  share one beyond that: partition churn can leave hundreds of short segments in one window);
  **read** (executors, :mod:`.stream_reader`) runs each segment's bounded query and emits its
  data change records as staging records.

The read function includes ``end_timestamp`` (records with commit timestamp <= R, as Spanner's
documentation says and the embedded server does), so a record at exactly R belongs to the
micro-batch ending at R, and the next one starts at R + 1 ns. The offsets alone fix every read,
so a micro-batch read again after a failure gives the same rows (within the retention period).

Both partition modes are read (the stream's ``partition_mode``): in ``MUTABLE_KEY_RANGE`` the
rows are ChangeStreamRecord protobufs, partitions live on across micro-batches and new ones
come from partition start records (:mod:`.stream_plan`). A window lies in the past, so the
order of reads across partitions needs no wait at key-range moves: the changelog orders each
key's changes by commit timestamp and record sequence.

Schema changes need nothing of this mode: each data change record carries its column types, so
an added column is in the records after it and a dropped one is not. A dropped table's changes
stay in the stream: the query reads them to the end (their records are committed before the
drop) and then finds no more of them, while the other tables go on (Spanner refuses to drop a
table that a stream names; a stream ``FOR ALL`` lets it go).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from pyspark.sql.datasource import DataSourceStreamReader

from ...capture.change_streams import key_range_records, records
from ...capture.change_streams.reader import first_partitions
from ...capture.change_streams.stream_info import StreamInfo, describe_stream, read_error, server_now
from ...codec import timestamp_text
from . import stream_reader
from .options import StreamOptions
from .partition_reader import database
from .snapshots import StrongSnapshot
from .stream_offsets import Segment, StreamOffset, after, before
from .stream_plan import PartitionRead, plan
from .stream_reader import SegmentPartition, SegmentRead

#: An idle stream's offset moves (by an empty micro-batch) once its window is this long.
IDLE_ADVANCE = dt.timedelta(minutes=10)


class ChangeStreamReader(DataSourceStreamReader):
    """The stream reader of change-stream mode (see the module docstring)."""

    def __init__(self, options: StreamOptions) -> None:
        assert options.change_stream is not None, "change-stream mode needs option change_stream"
        self.options = options
        self._info: StreamInfo | None = None  # described on first use (the driver only)
        #: (start, end) offset JSON -> the segments latestOffset planned between them (the driver only).
        self._planned: dict[tuple[str, str], tuple[Segment, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_info": None, "_planned": {}}

    # -- driver side -------------------------------------------------------------------------

    def _database(self) -> Any:
        return database(self.options.location)

    def _stream(self) -> StreamInfo:
        """The stream (ChangeStreamNotFoundError naming it when the database has none of that name)."""
        if self._info is None:
            self._info = describe_stream(self._database(), str(self.options.change_stream),
                                         request_settings=self.options.request_settings)
        return self._info

    def initialOffset(self) -> dict[str, Any]:
        info, db = self._stream(), self._database()
        if self.options.start == "now":
            with StrongSnapshot(db, self.options.request_settings) as (_, read_ts):
                start = after(read_ts)
        else:
            start = DatetimeWithNanoseconds.from_rfc3339(self.options.start)
            info.check_start(start, server_now(db, request_settings=self.options.request_settings))
        try:
            found = first_partitions(db, info.name, start, request_settings=self.options.request_settings,
                                     mutable_key_range=info.mutable_key_range)
        except Exception as exc:  # noqa: BLE001 - named as the library's error for this stream
            raise read_error(info, exc, start) from exc
        return StreamOffset(before(start), {child.token: at for child, at in found}).to_json()

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        begin = StreamOffset.from_json(start)
        with StrongSnapshot(self._database(), self.options.request_settings) as (_, read_ts):
            pass
        if read_ts <= begin.read_timestamp:
            return start
        end, segments, found = plan(begin, read_ts, self._read_partition)
        if not found and read_ts - begin.read_timestamp < IDLE_ADVANCE:
            return start  # nothing to read: no micro-batch (the next plan walks the window again)
        doc = end.to_json()
        self._planned = {_key(start, doc): segments}  # only the latest: Spark asks for it next
        return doc

    def _read_partition(self, token: str, start: Any, end: Any) -> PartitionRead:
        """One partition over the window, on the driver: its child_partitions records (a MUTABLE_KEY_RANGE
        stream's partition start records as such, and whether it ended), its wanted records counted."""
        keep = stream_reader.wanted(self.options.tables)
        children: list[records.ChildPartitionsRecord] = []
        count, ended, moves_in = 0, False, []
        for rec in stream_reader.query_records(self._database(), self._stream(), token, start, end,
                                               request_settings=self.options.request_settings):
            if isinstance(rec, records.ChildPartitionsRecord):
                children.append(rec)
            elif isinstance(rec, key_range_records.PartitionStartRecord):
                children.append(records.ChildPartitionsRecord(
                    rec.start_timestamp, rec.record_sequence, tuple(records.ChildPartition(t, ()) for t in rec.tokens)))
            elif isinstance(rec, key_range_records.PartitionEndRecord):
                ended = True
            elif isinstance(rec, key_range_records.PartitionEventRecord) and rec.sources:
                moves_in.append(rec.commit_timestamp)
            elif isinstance(rec, records.DataChangeRecord) and keep(rec.table_name):
                count += 1
        return PartitionRead(children, count, ended if self._stream().mutable_key_range else None, moves_in)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[SegmentPartition]:
        finish = StreamOffset.from_json(end)
        segments = self._planned.get(_key(start, end))
        if segments is None:  # a micro-batch of a checkpoint (a restart): the same window, planned again
            segments = plan(StreamOffset.from_json(start), finish.read_timestamp, self._read_partition)[1]
        reads = [SegmentRead(i, s.token, timestamp_text(s.start), timestamp_text(s.end) if s.end is not None else None)
                 for i, s in enumerate(segments)]
        at = timestamp_text(finish.read_timestamp)
        return [SegmentPartition(self.options.location, self._stream(), at, tuple(group), self.options.watcher_id,
                                 self.options.tables, self.options.request_settings)
                for group in _groups(reads, self.options.max_partitions)]

    # -- executor side -----------------------------------------------------------------------

    def read(self, partition: Any) -> Iterator[tuple[Any, ...]]:
        return stream_reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the offsets live in Spark's checkpoint, not in Spanner."""


def _key(start: dict[str, Any], end: dict[str, Any]) -> tuple[str, str]:
    return json.dumps(start, sort_keys=True), json.dumps(end, sort_keys=True)


def _groups(reads: list[SegmentRead], most: int) -> list[list[SegmentRead]]:
    """``reads`` cut into at most ``most`` runs of consecutive segments, as even as can be.

    >>> [len(g) for g in _groups([SegmentRead(i, "t", "s") for i in range(7)], 3)]
    [3, 2, 2]
    """
    count = min(len(reads), most)
    size, extra = divmod(len(reads), count) if count else (0, 0)
    out, at = [], 0
    for i in range(count):
        n = size + (1 if i < extra else 0)
        out.append(reads[at:at + n])
        at += n
    return out
