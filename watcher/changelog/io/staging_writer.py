"""Staging batches written by Spark (backfill and reconcile), named by the staging contract.

The rows come from Spark tasks as ``(batch_id, line)``; each batch is written by one task.
Spark writes them under a hidden temporary folder of the staging folder (one folder per
batch id), then each file is renamed to ``<staging>/table=<T>/<batch_id>.jsonl``
(:func:`watcher.staging.contract.staged_name`): a rename is atomic, so the changelog job
never sees half a batch, and only Hadoop's FileSystem API is used, so it works wherever
the staging folder lives. Spark's text writer ends every line with a newline, as the
contract's batch files do.
"""

from __future__ import annotations

import uuid
from typing import Any

from watcher.errors import ChangelogError
from watcher.staging.contract import staged_name

from .files import open_fs
from .fs import NO_CHECKSUMS

#: Hidden from the changelog job, which lists only ``table=*/*.jsonl``.
TEMP_DIR = "_spanner-watcher-tmp"


def write_batches(spark: Any, staging: str, table: str, lines: Any) -> list[str]:
    """Write ``lines`` (batch_id, value) as batch files of ``table``; returns the staged batch names."""
    fs = open_fs(spark, staging)
    temp = f"{TEMP_DIR}/{uuid.uuid4().hex}"
    try:
        # "error" (not "errorifexists", which the Spark Connect client does not know): same mode
        lines.write.options(**NO_CHECKSUMS).mode("error").partitionBy("batch_id").text(fs.uri(temp))
        staged = []
        for folder in fs.glob_dirs(f"{temp}/batch_id=*"):
            batch_id = folder.rsplit("batch_id=", 1)[1]
            files = fs.glob(f"{temp}/batch_id={batch_id}/part-*")
            if len(files) != 1:  # one task writes one batch; anything else would break its seq numbers
                raise ChangelogError(f"batch {batch_id} was written as {len(files)} files under {fs.uri(temp)}")
            fs.move(files[0].uri, staged_name(table, batch_id))
            staged.append(staged_name(table, batch_id))
        return staged
    finally:
        fs.delete(temp)
        if not fs.list_names(TEMP_DIR):
            fs.delete(TEMP_DIR)
