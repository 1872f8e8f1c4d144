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
    """Table -> loop -> greatest timestamp seen, from per-batch rows (table, shard, read_ts, max_commit, read_method)."""
    found: dict[str, dict[str, str]] = {}
    for b in batches:
        seen = max(t for t in (b.read_ts, b.max_commit, "") if t is not None)
        if b.read_method not in WATERMARK_METHODS or not seen or not b.table:
            continue
        loops = found.setdefault(b.table, {})
        loop = NO_SHARD if b.shard is None else str(b.shard)
        if loop not in loops or seen > loops[loop]:
            loops[loop] = seen
    return found
