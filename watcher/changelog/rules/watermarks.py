"""Watermarks: per table, the commit timestamp up to which the changelog is complete.

Every staged poll ("cdc" batch) carries the read timestamp R of its strong read: the
poll loop (table, shard) had then seen every change committed at or before R. The job
keeps, per loop, the greatest R it has processed; a table's watermark is the smallest of
its loops' (the slowest shard holds it back). Backfill and reconcile batches do not
move watermarks.

A poll saw at least the changes it returned, so a batch counts as seen up to the greater of
its read timestamp and its newest commit timestamp (guarding against a read timestamp
reported with less precision than the commits).

Caveat: a poll cut by its LIMIT has not seen everything up to R; the watcher polls again
at once, so the gap closes with the next batch, but a run that happens in between may
publish a watermark slightly ahead of what it holds.

A change-stream batch ("change_stream") carries its watcher's watermark W as the batch was
delivered (``stream_watermark``, staging format 4): every partition had delivered, in that
batch or before, every change committed up to W (a partition's low watermark moves with
its records and heartbeats; an idle partition's heartbeats keep it close to now). So once
the job processed the batch, the stream's tables are complete up to W: the batch moves the
loop :data:`STREAM_LOOP` of each table it holds, exactly as a poll moves its shard's loop.
A table polled and streamed at once has both kinds of loops; its watermark is the lowest.
The stream's watermark moves with staged batches only: while no change comes, nothing is
staged, and the table's watermark waits at the last batch's.

Example:
    >>> merge_loops({"1": "2024-01-01T00:00:01.000000000Z"}, {"1": "2024-01-01T00:00:02.000000000Z", "2": "2024-01-01T00:00:00.500000000Z"})
    {'1': '2024-01-01T00:00:02.000000000Z', '2': '2024-01-01T00:00:00.500000000Z'}
    >>> table_watermark({'1': '2024-01-01T00:00:02.000000000Z', '2': '2024-01-01T00:00:00.500000000Z'})
    '2024-01-01T00:00:00.500000000Z'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The loop name of a watcher without a shard provider.
NO_SHARD = "*"
#: read_method of batches that move watermarks.
WATERMARK_METHODS = ("cdc",)
#: read_method of change-stream batches, which move watermarks by their ``stream_mark``.
STREAM_METHOD = "change_stream"
#: The loop of a table's change-stream batches.
STREAM_LOOP = "change_stream"


def merge_loops(before: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """Per loop, the greater read timestamp (texts with nine fractional digits sort in time order)."""
    merged = dict(before)
    for loop, ts in new.items():
        if loop not in merged or ts > merged[loop]:
            merged[loop] = ts
    return dict(sorted(merged.items()))


def table_watermark(loops: Mapping[str, str]) -> str | None:
    return min(loops.values()) if loops else None


def loops_from_batches(batches: Iterable[Any]) -> dict[str, dict[str, str]]:
    """Table -> loop -> greatest timestamp seen, from per-batch rows (table, shard, read_ts, max_commit,
    read_method, and a change-stream batch's stream_mark).

    >>> from types import SimpleNamespace as B
    >>> loops_from_batches([B(table="T", shard=None, read_ts="2024-...2Z", max_commit="2024-...1Z", read_method="cdc"),
    ...                     B(table="T", shard=None, read_ts=None, max_commit="2024-...9Z", read_method="change_stream",
    ...                       stream_mark="2024-...5Z")])
    {'T': {'*': '2024-...2Z', 'change_stream': '2024-...5Z'}}
    """
    found: dict[str, dict[str, str]] = {}
    for b in batches:
        stream_mark = getattr(b, "stream_mark", None)
        if b.read_method == STREAM_METHOD and stream_mark and b.table:
            seen, loop = stream_mark, STREAM_LOOP
        else:
            seen = max(t for t in (b.read_ts, b.max_commit, "") if t is not None)
            if b.read_method not in WATERMARK_METHODS or not seen or not b.table:
                continue
            loop = NO_SHARD if b.shard is None else str(b.shard)
        loops = found.setdefault(b.table, {})
        if loop not in loops or seen > loops[loop]:
            loops[loop] = seen
    return found
