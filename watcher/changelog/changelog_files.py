"""How a run's changelog rows become Parquet files: partitioned by table and date, few dictionaries.

The rows reach the write where the per-key window's shuffle put them, so each task writes a
file into every (table, date) folder it holds rows of; that shuffle places each table in as few
tasks as its size needs (:mod:`.placement`), so a folder gets that many files. Rebalancing the
rows by folder after the window (one file per folder) was measured and not kept: the extra
shuffle of the wide rows cost as much as the files it saved (benchmarks/RESULTS.md, changelog_job).

Parquet's dictionary encoding pays off for repeated values; on columns whose values are all
distinct it builds a dictionary per column chunk only to fall back to plain encoding, so it is
off for those (:data:`DISTINCT_COLUMNS`). On the other columns a dictionary is given up once it
outgrows :data:`DICTIONARY_BYTES`: parquet-mr's own limit (1 MiB) is never reached in files of a
few thousand rows, so a column whose values do not repeat in a folder (commit timestamps of
single-row transactions, keys) was hashed whole into a dictionary and then written again
without it; values that repeat (a transaction's timestamp, a table's column types) stay well
under the limit and keep theirs. Only the encoding changes: the values read back, the
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
#: The size a column chunk's dictionary may reach before the column falls back to plain encoding.
DICTIONARY_BYTES = 16 * 1024


def write_options() -> dict[str, str]:
    """Writer options of the changelog's Parquet files (no checksum files; no dictionary for
    :data:`DISTINCT_COLUMNS`, by parquet-mr's per-column ``parquet.enable.dictionary#<column>``;
    dictionaries of at most :data:`DICTIONARY_BYTES`)."""
    return {**NO_CHECKSUMS, "parquet.dictionary.page.size": str(DICTIONARY_BYTES),
            **{f"parquet.enable.dictionary#{column}": "false" for column in DISTINCT_COLUMNS}}


def append(rows: Any, uri: str) -> None:
    """Append ``rows`` (CHANGELOG_FIELDS) under ``uri``, partitioned by table and commit date."""
    rows.write.options(**write_options()).mode("append").partitionBy(*PARTITION_COLUMNS).parquet(uri)
