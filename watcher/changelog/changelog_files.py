"""How a run's changelog rows become Parquet files: partitioned by table and date, few dictionaries.

The rows reach the write partitioned by key (the per-key window's shuffle), so each task
writes a file into every (table, date) folder it holds rows of. Rebalancing the rows by folder
first (one file per folder) was measured and not kept: the extra shuffle of the wide rows cost
as much as the files it saved (benchmarks/RESULTS.md, changelog_job).

Parquet's dictionary encoding pays off for repeated values; on columns whose values are all
distinct it builds a dictionary per column chunk only to fall back to plain encoding, so it is
off for those (:data:`DISTINCT_COLUMNS`). Only the encoding changes: the values read back, the
compression codec and the layout stay the same.

Example:
    >>> sorted(write_options())[:2]
    ['fs.file.impl', 'fs.file.impl.disable.cache']
    >>> write_options()["parquet.enable.dictionary#change_id"]
    'false'
"""

from __future__ import annotations

from typing import Any

from .fs import NO_CHECKSUMS

#: The changelog's partition folders: ``table_name=<T>/commit_date=<YYYY-MM-DD>``.
PARTITION_COLUMNS = ("table_name", "commit_date")
#: Columns whose values are (nearly) all distinct within a folder: a dictionary does not pay.
#: (``commit_timestamp``, ``read_timestamp`` and ``keys`` repeat within a transaction, a poll or a
#: hot key, so they keep theirs.)
DISTINCT_COLUMNS = ("change_id", "new_values", "old_values")


def write_options() -> dict[str, str]:
    """Writer options of the changelog's Parquet files (no checksum files; no dictionary for
    :data:`DISTINCT_COLUMNS`, by parquet-mr's per-column ``parquet.enable.dictionary#<column>``)."""
    return {**NO_CHECKSUMS, **{f"parquet.enable.dictionary#{column}": "false" for column in DISTINCT_COLUMNS}}


def append(rows: Any, uri: str) -> None:
    """Append ``rows`` (CHANGELOG_FIELDS) under ``uri``, partitioned by table and commit date."""
    rows.write.options(**write_options()).mode("append").partitionBy(*PARTITION_COLUMNS).parquet(uri)
