"""The staging sink: each poll's changes as one durable, atomic batch file.

A batch is written to a temporary file, flushed to disk, then renamed into place, so a
reader (the Spark changelog job) never sees half a batch; it is durable before the
watcher's checkpoint moves (the sink runs as a batch callback). After a crash a batch may
be staged twice; the changelog job removes the duplicates.

Layout and records follow the staging contract (:mod:`watcher.staging.contract`):
``<directory>/table=<Table>/<first commit timestamp>-<uuid>.jsonl``, one JSON record per
change, values in :mod:`watcher.codec`'s typed JSON.

Example::

    sink = StagingSink("staging/")
    sink.attach(watcher)            # any Watcher: TableWatcher, DatabaseWatcher, change sets, history
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import Change
from . import contract
from .contract import BATCH_SUFFIX, RECORD_FIELDS, STAGING_FORMAT, shard_label

# The contract's names that were the sink's before the contract had a module, kept importable from here.
__all__ = ["BATCH_SUFFIX", "RECORD_FIELDS", "STAGING_FORMAT", "StagingSink", "shard_label"]

if TYPE_CHECKING:  # the sink needs only the interface's shape at run time
    from ..capture.base import Watcher

TypesFor = Callable[[str], Mapping[str, str]]


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
              read_method: str | None = None, mod_types: Sequence[str | None] | None = None) -> Path | None:
        """Write one batch atomically and durably; returns its path (None for no changes).

        ``read_method``: what every record says; by default ``change_stream`` for a change read
        from a change stream (it carries a ``server_transaction_id``, and its record the
        contract's stream fields), else ``cdc``. ``mod_types`` overrides the changes' own.
        """
        if not changes:
            return None
        batch = contract.batch_id(changes[0].commit_timestamp)
        final = self.directory / contract.staged_name(changes[0].table, batch)
        folder = final.parent
        folder.mkdir(parents=True, exist_ok=True)
        text = contract.batch_text(
            contract.change_record(change, batch_id=batch, seq=seq, types=types, key_columns=key_columns,
                                   watcher_id=self.watcher_id, read_method=read_method,
                                   mod_type=mod_types[seq] if mod_types is not None else getattr(change, "mod_type", None))
            for seq, change in enumerate(changes))
        temp = folder / contract.temp_name(batch)
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
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
        self.records_written += len(changes)
        return final
