"""The staging sink: each poll's changes as one durable, atomic batch file.

A batch is written to a temporary file, flushed to disk, then renamed into place, so a
reader (the Spark changelog job) never sees half a batch; it is durable before the
watcher's checkpoint moves (the sink runs as a batch callback). After a crash a batch may
be staged twice; the changelog job removes the duplicates.

Layout: ``<directory>/table=<Table>/<first commit timestamp>-<uuid>.jsonl``, one JSON
record per change (see :data:`RECORD_FIELDS`), values in :mod:`watcher.codec`'s typed JSON.

Example::

    sink = StagingSink("staging/")
    sink.attach(watcher)            # any Watcher: TableWatcher, DatabaseWatcher, change sets, history
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..codec import encode_value, timestamp_text
from ..model import Change

if TYPE_CHECKING:  # the sink needs only the interface's shape at run time
    from ..capture.base import Watcher

#: Format version written in every record, so a later job can tell what it reads.
STAGING_FORMAT = 1
RECORD_FIELDS = ("v", "batch_id", "seq", "table", "key_columns", "keys", "commit_timestamp", "read_timestamp",
                 "shard", "watcher_id", "read_method", "mod_type", "values", "types")
BATCH_SUFFIX = ".jsonl"

TypesFor = Callable[[str], Mapping[str, str]]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def shard_label(shard: Any) -> Any:
    if shard is None or isinstance(shard, (bool, int, float, str)):
        return shard
    if isinstance(shard, (list, tuple)):
        return [shard_label(v) for v in shard]
    return str(shard)


class StagingSink:
    """Writes batches of changes under ``directory``.

    Args:
        directory: the staging folder (created if missing).
        watcher_id: recorded in every record (default: a random id per sink).
        fsync: flush each batch to disk before it becomes visible (on by default; tests may turn it off).
    """

    def __init__(self, directory: str | os.PathLike[str], *, watcher_id: str | None = None, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.watcher_id = watcher_id or f"watcher-{uuid.uuid4().hex[:12]}"
        self.fsync = fsync
        self.batches_written = 0
        self.records_written = 0

    def attach(self, watcher: Watcher) -> None:
        """Stage every poll of ``watcher`` (any :class:`~watcher.capture.base.Watcher`) before its checkpoint moves."""

        def stage(changes: list[Change]) -> None:
            info = watcher.table_info(changes[0].table)
            self.write(changes, info.column_types, info.key_columns)

        watcher.add_batch_callback(stage)

    def write(self, changes: Sequence[Change], types: Mapping[str, str], key_columns: Sequence[str], *,
              read_method: str = "cdc", mod_types: Sequence[str | None] | None = None) -> Path | None:
        """Write one batch atomically and durably; returns its path (None for no changes)."""
        if not changes:
            return None
        table = changes[0].table
        folder = self.directory / f"table={_safe(table)}"
        folder.mkdir(parents=True, exist_ok=True)
        batch_id = f"{timestamp_text(changes[0].commit_timestamp).replace(':', '').replace('-', '')}-{uuid.uuid4().hex}"
        lines = []
        for seq, change in enumerate(changes):
            record = {
                "v": STAGING_FORMAT,
                "batch_id": batch_id,
                "seq": seq,
                "table": change.table,
                "key_columns": list(key_columns),
                "keys": [encode_value(types[k], v) for k, v in zip(key_columns, change.keys, strict=True)],
                "commit_timestamp": timestamp_text(change.commit_timestamp),
                "read_timestamp": timestamp_text(change.read_timestamp) if change.read_timestamp is not None else None,
                "shard": shard_label(change.shard),
                "watcher_id": self.watcher_id,
                "read_method": read_method,
                "mod_type": mod_types[seq] if mod_types is not None else getattr(change, "mod_type", None),
                "values": {c: encode_value(types.get(c, "STRING"), v) for c, v in change.row.items()},
                "types": dict(types),
            }
            lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
        final = folder / f"{batch_id}{BATCH_SUFFIX}"
        temp = folder / f".{batch_id}.tmp"
        with open(temp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(temp, final)
        if self.fsync:
            dir_fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        self.batches_written += 1
        self.records_written += len(lines)
        return final
