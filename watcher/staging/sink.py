"""The staging sink: each poll's changes as one durable, atomic batch file, on any filesystem.

The staging folder is a plain path or a URL (:mod:`watcher.storage_urls`: ``file:/p``,
``file:///p``, ``hdfs://``, ``gs://``, ``s3://``/``s3a://``, ``abfs://`` when pyarrow and the
credentials for it are there); batches are written through ``pyarrow.fs``. A batch is durable
before the watcher's checkpoint moves (the sink runs as a batch callback). After a crash a
batch may be staged twice; the changelog job removes the duplicates.

What holds where (the way a batch is published is chosen per filesystem, :data:`PUBLISH`):

- Local and mounted filesystems: the batch is written under a hidden temporary name
  (``.<batch>.tmp``), flushed to disk (fsync), renamed into place, and the folder is fsynced,
  so a reader never sees half a batch and a batch, once named, survives a power loss. A crash
  can leave a temporary file, which no reader lists (it is hidden and lacks the ``.jsonl``
  suffix) and which may be deleted.
- HDFS: the same temporary name and rename (atomic in HDFS); the data is on the datanodes
  once the file is closed (no fsync to ask for).
- Object stores (S3, GCS), which have no atomic rename: the batch is uploaded once, straight
  to its final name, and an object becomes visible only whole, when its upload completes, so
  a reader still never sees half a batch; a crash leaves either no object or the whole one
  (an interrupted multipart upload stays invisible; a bucket lifecycle rule cleans those up).
  Batch names carry a random part, so no batch ever overwrites another.
- Any other filesystem pyarrow opens: temporary name, then pyarrow's move. Whether that move
  is atomic is the store's to say; readers ignore the temporary names in any case.

Layout and records follow the staging contract (:mod:`watcher.staging.contract`):
``<directory>/table=<Table>/<first commit timestamp>-<uuid>.jsonl``, one JSON record per
change, values in :mod:`watcher.codec`'s typed JSON.

Example::

    sink = StagingSink("staging/")                    # or "file:///data/staging", "gs://bucket/staging"
    sink.attach(watcher)            # any Watcher: TableWatcher, DatabaseWatcher, change sets, history
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import Change
from ..sinks.base import Sink
from ..storage_urls import open_filesystem
from . import contract
from .contract import BATCH_SUFFIX, RECORD_FIELDS, STAGING_FORMAT, shard_label

# The contract's names that were the sink's before the contract had a module, kept importable from here.
__all__ = ["BATCH_SUFFIX", "RECORD_FIELDS", "STAGING_FORMAT", "StagingSink", "shard_label"]

if TYPE_CHECKING:  # the sink needs only the interface's shape at run time
    from ..capture.table_info import TableInfo

TypesFor = Callable[[str], Mapping[str, str]]

#: A batch is written under a temporary name, then renamed to its final one.
RENAME = "rename"
#: A batch is uploaded once, to its final name (object stores: an object appears whole or not at all).
WRITE_ONCE = "write-once"
#: How a batch is published, by pyarrow filesystem (``type_name``); any other: :data:`RENAME`.
PUBLISH = {"local": RENAME, "hdfs": RENAME, "s3": WRITE_ONCE, "gcs": WRITE_ONCE}


class StagingSink(Sink):
    """Writes batches of changes under ``directory`` (a path or a URL; see the module's guarantees).

    A :class:`~watcher.sinks.base.Sink`: :meth:`attach` it to any watcher; a batch is acknowledged
    once its file is in place (renamed and fsynced, or uploaded whole).

    Args:
        directory: the staging folder (created if missing): a path (relative to the working folder)
            or a URL of any filesystem pyarrow opens.
        watcher_id: recorded in every record (default: a random id per sink).
        fsync: flush each batch to disk before it becomes visible (on by default; tests may turn it off).

    Raises:
        StorageURLError: pyarrow cannot open the URL's filesystem (the message says what is missing).
    """

    def __init__(self, directory: str | os.PathLike[str], *, watcher_id: str | None = None, fsync: bool = True) -> None:
        self._fs: Any
        self._fs, self._base, folder = open_filesystem(directory)
        #: The folder: a :class:`~pathlib.Path` when it is local, else its URL.
        self.directory: Path | str = Path(folder.local) if folder.local is not None else folder.uri
        self.uri = folder.uri
        self.publish = PUBLISH.get(self._fs.type_name, RENAME)
        self._local = folder.local is not None
        self._fs.create_dir(self._base, recursive=True)
        self._folders: set[str] = set()
        self.watcher_id = watcher_id or f"watcher-{uuid.uuid4().hex[:12]}"
        self.fsync = fsync
        self.batches_written = 0
        self.records_written = 0

    def write_batch(self, changes: Sequence[Change], table: TableInfo) -> None:
        """Stage one batch of one table (the :class:`~watcher.sinks.base.Sink` interface): :meth:`write`."""
        self.write(changes, table.column_types, table.key_columns)

    def write(self, changes: Sequence[Change], types: Mapping[str, str], key_columns: Sequence[str], *,
              read_method: str | None = None, mod_types: Sequence[str | None] | None = None) -> Path | str | None:
        """Write one batch atomically and durably; returns its path (its URL off this machine), None for no changes.

        ``read_method``: what every record says; by default ``change_stream`` for a change read
        from a change stream (it carries a ``server_transaction_id``, and its record the
        contract's stream fields), else ``cdc``. ``mod_types`` overrides the changes' own.
        """
        if not changes:
            return None
        batch = contract.batch_id(changes[0].commit_timestamp)
        name = contract.staged_name(changes[0].table, batch)
        text = contract.batch_text(
            contract.change_record(change, batch_id=batch, seq=seq, types=types, key_columns=key_columns,
                                   watcher_id=self.watcher_id, read_method=read_method,
                                   mod_type=mod_types[seq] if mod_types is not None else getattr(change, "mod_type", None))
            for seq, change in enumerate(changes))
        folder, _, file = f"{self._base}/{name}".rpartition("/")
        if self._local or folder not in self._folders:  # a local mkdir is cheap; on a remote store it is requests
            self._fs.create_dir(folder, recursive=True)
            self._folders.add(folder)
        self._publish(folder, file, contract.temp_name(batch), text.encode("utf-8"))
        self.batches_written += 1
        self.records_written += len(changes)
        return Path(folder, file) if self._local else f"{self.uri}/{name}"

    def _publish(self, folder: str, file: str, temp: str, data: bytes) -> None:
        """Make ``folder/file`` hold ``data``, whole or not at all, by the filesystem's :data:`PUBLISH` way."""
        final = f"{folder}/{file}"
        if self.publish == WRITE_ONCE:
            with self._fs.open_output_stream(final) as stream:  # visible when the upload completes, not before
                stream.write(data)
            return
        staged = f"{folder}/{temp}"
        with self._fs.open_output_stream(staged) as stream:
            stream.write(data)
        if self.fsync and self._local:
            _fsync(staged, os.O_RDONLY)  # fsync covers the file, whichever descriptor asks
        self._fs.move(staged, final)
        if self.fsync and self._local:
            _fsync(folder, os.O_RDONLY)  # the rename itself survives a power loss


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
