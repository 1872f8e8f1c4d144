"""What a partition does with the records that arrived since its last batch (pure).

A partition's reader queues parsed rows (lists of records), then ``END`` or the error that
ended the query. :func:`steps` cuts what was taken from the queue into :class:`Step` s, each
done in order: deliver its data change records as one batch and move the watermark (to the
last record's commit timestamp, or a later heartbeat), then register the child partitions
it names, then finish the partition (``end``) or raise ``error``. In ``MUTABLE_KEY_RANGE``
streams a partition start record cuts a step as child partitions do (``starts``), and so does
a partition event record (``event``: the watcher marks the move-outs, then waits for the
move-ins' sources, before the next step); a partition end record ends the partition; what
was taken is processed in (timestamp, record_sequence) order. Records the watcher must
not deliver are dropped here: those at the resume point that were delivered before a
restart (``skip_ids`` at ``skip_at``), and those of ``ignore_tables`` (the progress table).

Example:
    >>> import datetime as dt
    >>> t = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    >>> from .records import HeartbeatRecord
    >>> [(len(s.records), s.heartbeat == t, s.end) for s in steps([[HeartbeatRecord(t)], END])]
    [(0, True, True)]
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from .key_range_records import PartitionEndRecord, PartitionEventRecord, PartitionStartRecord, sequence_order
from .reader import END
from .records import ChildPartitionsRecord, DataChangeRecord, HeartbeatRecord


@dataclass
class Step:
    """Deliver ``records`` (then move to ``heartbeat`` if later), then register ``children`` or the
    ``starts``' partitions, then handle the key-range moves of ``event``, then finish (``end``) or raise ``error``."""

    records: list[DataChangeRecord] = field(default_factory=list)
    heartbeat: Any = None
    heartbeats: int = 0
    children: ChildPartitionsRecord | None = None
    starts: PartitionStartRecord | None = None
    event: PartitionEventRecord | None = None
    end: bool = False
    error: BaseException | None = None


def _in_sequence_order(items: Iterable[Any]) -> list[Any]:
    """``items`` with the records of consecutive record lists merged into one list in sequence order."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, list) and out and isinstance(out[-1], list):
            out[-1].extend(item)
        else:
            out.append(list(item) if isinstance(item, list) else item)
    return [sequence_order(i) if isinstance(i, list) else i for i in out]


def steps(items: Iterable[Any], *, skip_at: Any = None, skip_ids: Collection[str] = (),
          ignore_tables: Collection[str] = (), in_sequence_order: bool = False) -> list[Step]:
    """The steps for ``items`` (record lists, then possibly END or an exception) taken from a reader
    (``in_sequence_order``: a MUTABLE_KEY_RANGE stream's, sorted as its records must be processed)."""
    ignored = {t.upper() for t in ignore_tables}
    out: list[Step] = []
    step = Step()
    if in_sequence_order:
        items = _in_sequence_order(items)
    for item in items:
        if item is END or isinstance(item, BaseException):
            step.end = item is END
            step.error = item if isinstance(item, BaseException) else None
            out.append(step)
            return out
        for rec in item:
            if isinstance(rec, DataChangeRecord):
                if rec.table_name.upper() in ignored:
                    continue
                if skip_ids and rec.commit_timestamp == skip_at and rec.record_id in skip_ids:
                    continue
                step.records.append(rec)
            elif isinstance(rec, HeartbeatRecord):
                step.heartbeat = rec.timestamp if step.heartbeat is None else max(step.heartbeat, rec.timestamp)
                step.heartbeats += 1
            elif isinstance(rec, ChildPartitionsRecord):
                step.children = rec
                out.append(step)
                step = Step()
            elif isinstance(rec, PartitionStartRecord):
                step.starts = rec
                out.append(step)
                step = Step()
            elif isinstance(rec, PartitionEventRecord):
                step.event = rec
                out.append(step)
                step = Step()
            elif isinstance(rec, PartitionEndRecord):
                step.end = True
                out.append(step)
                return out
    if step.records or step.heartbeats:
        out.append(step)
    return out
