"""Planning a change-stream micro-batch on the driver: the partitions between two read timestamps.

Spark fixes a micro-batch's end offset on the driver before any task runs, and the next offset
needs the partitions live after the new read timestamp R. So the driver walks the partition
tree from the start offset's frontier up to R: it reads each frontier partition from where it
was to R (``end_timestamp`` includes R, as Spanner documents and the embedded server does) and
keeps only the child_partitions records; a partition that names children ended within the
window, and each child (once, however many parents report it) is read from its start the same
way, until every partition either goes on after R (the new frontier, from R + 1 ns) or starts
after R (a child that starts there). Every partition read is a segment of the micro-batch.
In a ``MUTABLE_KEY_RANGE`` stream partitions live on while key ranges move between them: a
partition start record's partitions are read like children (they have no parents) and the
partition goes on; only a partition end record (``ended``) ends it. A partition's window is
cut into segments at each move-in (``moves_in``: the segment from the move on starts there),
and the segments are then ordered by their start, so every segment holding a key's changes
before a move comes before the one holding them after it: the rows of each key come in
commit order, as the rule of these records asks of a reader.

**Cost**: the driver's reads return the data change records of the window too (a change
stream query cannot ask for child partitions alone); they are counted and dropped, so the
window's records are read twice, once here and once on the executors. A merge child is read
as soon as one parent names it, not after all of them: the window lies in the past, so all
its parents ended at its start already, and the order of reads within a micro-batch does not
matter (the changelog orders by commit timestamp and record sequence).

Pure: the reads come in through ``read_partition``.

Example:
    >>> from google.api_core.datetime_helpers import DatetimeWithNanoseconds as T
    >>> from watcher.capture.change_streams.records import ChildPartition, ChildPartitionsRecord
    >>> t = lambda n: T.from_rfc3339(f"2024-05-01T00:00:0{n}Z")
    >>> tree = {"a": [ChildPartitionsRecord(t(2), "0", (ChildPartition("c", ("a", "b")),))],
    ...         "b": [ChildPartitionsRecord(t(2), "0", (ChildPartition("c", ("a", "b")),))]}
    >>> read = lambda token, start, end: PartitionRead(tree.get(token, []), 1)
    >>> begin = StreamOffset(t(0), {"a": t(1), "b": t(1)})
    >>> end, segments, records = plan(begin, t(5), read)
    >>> [(s.token, s.start.second) for s in segments], list(end.frontier), records
    ([('a', 1), ('b', 1), ('c', 2)], ['c'], 3)
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...capture.change_streams.records import ChildPartitionsRecord
from ...model import timestamp_nanos
from .stream_offsets import Segment, StreamOffset, after, before


@dataclass(frozen=True)
class PartitionRead:
    """What reading one partition over a window gave: its child_partitions records (or, for a
    MUTABLE_KEY_RANGE stream, its partition start records as such), how many data change records
    (of the tables the query wants) it held, and whether it ended (None: when it named children)."""

    children: Sequence[ChildPartitionsRecord]
    records: int
    ended: bool | None = None
    #: The timestamps of the partition's move-in events in the window (MUTABLE_KEY_RANGE).
    moves_in: Sequence[Any] = ()


#: ``read_partition(token, start, end)``: the partition read from ``start`` to ``end`` (both inclusive).
ReadPartition = Callable[[str, Any, Any], PartitionRead]


def plan(begin: StreamOffset, read_timestamp: Any,
         read_partition: ReadPartition) -> tuple[StreamOffset, tuple[Segment, ...], int]:
    """The end offset of a micro-batch from ``begin`` to ``read_timestamp`` (R), its segments (in
    the order they were found: parents before children), and how many data change records they hold."""
    frontier: dict[str, Any] = {}
    segments: list[Segment] = []
    records = 0
    known = set(begin.frontier)
    pending: collections.deque[tuple[str, Any]] = collections.deque(
        sorted(begin.frontier.items(), key=lambda item: (item[1], item[0])))
    while pending:
        token, start = pending.popleft()
        if start > read_timestamp:  # starts after the window: the next micro-batch reads it
            frontier[token] = start
            continue
        read = read_partition(token, start, read_timestamp)
        segments += _cut(token, start, read.moves_in)
        records += read.records
        if not (read.ended if read.ended is not None else read.children):
            frontier[token] = after(read_timestamp)
        for rec in read.children:
            for child in rec.children:
                if child.token not in known:
                    known.add(child.token)
                    pending.append((child.token, rec.start_timestamp))
    if any(s.end is not None for s in segments):
        segments.sort(key=lambda s: timestamp_nanos(s.start))  # nanoseconds: datetimes compare to the microsecond
    return StreamOffset(read_timestamp, frontier), tuple(segments), records


def _cut(token: str, start: Any, moves_in: Sequence[Any]) -> list[Segment]:
    """The segments of ``token`` read from ``start``: one, or one more from each later move-in on.

    >>> from watcher.model import from_nanos
    >>> [(s.start.nanosecond, s.end and s.end.nanosecond) for s in _cut("p", from_nanos(5), [from_nanos(9), from_nanos(5)])]
    [(5, 8), (9, None)]
    """
    cuts = sorted({t for t in moves_in if timestamp_nanos(t) > timestamp_nanos(start)}, key=timestamp_nanos)
    starts = [start, *cuts]
    return [Segment(token, a, before(b) if b is not None else None)
            for a, b in zip(starts, [*cuts, None], strict=True)]
