"""The warehouse's Delta tables: names, columns, partitioning and properties, as data.

Four tables under the warehouse folder, each a Delta table in a folder of its name:

- ``runs``: one row per job run, written first: the staged batches the run consumes (:mod:`.ledger`).
- ``changelog``: one row per change, partitioned by table and commit date, with file statistics
  on the columns readers filter on only (:data:`CHANGELOG_STATS_COLUMNS`).
- ``current_state``: one row per key, maintained with MERGE, with Delta's change data feed on.
- ``watermarks``: per source table, up to which commit timestamp changelog and state are complete.

The changelog and state columns are the changelog record's (:mod:`..rules.records`) with the types a
reader of another engine wants: ``commit_timestamp`` a TIMESTAMP (microseconds, as Delta keeps
them) with the nanoseconds of its second in ``commit_nanos``, ``commit_date`` a DATE, and the
source database (project, instance, database) in front, so watched databases with same-named
tables share one warehouse. Row values stay typed JSON text (strings, INT64 as decimal text, BYTES
base64, timestamps RFC 3339 with nine digits): one table holds rows of many Spanner tables.

Example:
    >>> CHANGELOG.partition_by
    ('table_name', 'commit_date')
    >>> [name for name, _, _ in CHANGELOG.fields][:4]
    ['source_project', 'source_instance', 'source_database', 'change_id']
    >>> dict((n, k) for n, k, _ in CHANGELOG.fields)["commit_timestamp"]
    'TIMESTAMP'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..rules import records
from ..rules.records import Field

#: The source database of every changelog, state and watermark row.
SOURCE_FIELDS: tuple[Field, ...] = (
    ("source_project", "STRING", "Google Cloud project of the watched database"),
    ("source_instance", "STRING", "Spanner instance of the watched database"),
    ("source_database", "STRING", "the watched database"),
)

#: How the Delta tables type the record's fields that the staging layout keeps as text.
_RETYPED: dict[str, tuple[str, str]] = {
    "commit_timestamp": ("TIMESTAMP", "commit timestamp (microseconds; the nanoseconds of its second are in commit_nanos)"),
    "commit_date": ("DATE", "UTC date of the commit (partition column)"),
    "run_version": ("BIGINT", "the job run that wrote the row (the runs table's run_version)"),
}
#: Fields added right after the named one.
_ADDED_AFTER: dict[str, Field] = {
    "commit_timestamp": ("commit_nanos", "INT", "nanoseconds of the commit's second, 0 to 999,999,999: with "
                                                "commit_timestamp, the exact commit timestamp"),
}
#: Fields the Delta tables do not need (commit_ts: commit_timestamp is the TIMESTAMP now).
_DROPPED = frozenset({"commit_ts"})


def delta_fields(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """A record layout as the Delta tables hold it: source fields first, then ``fields`` retyped.

    >>> [f[:2] for f in delta_fields((("commit_timestamp", "STRING", ""), ("commit_ts", "TIMESTAMP", "")))][3:]
    [('commit_timestamp', 'TIMESTAMP'), ('commit_nanos', 'INT')]
    """
    out: list[Field] = list(SOURCE_FIELDS)
    for name, kind, meaning in fields:
        if name in _DROPPED:
            continue
        kind, meaning = _RETYPED.get(name, (kind, meaning))
        out.append((name, kind, meaning))
        if name in _ADDED_AFTER:
            out.append(_ADDED_AFTER[name])
    return tuple(out)


@dataclass(frozen=True)
class TableSpec:
    """One Delta table of the warehouse."""

    name: str
    fields: tuple[Field, ...]
    partition_by: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()

    def arrow_schema(self) -> Any:
        """The table's schema as a pyarrow schema (what delta-rs creates and writes)."""
        import pyarrow as pa

        return pa.schema([pa.field(name, arrow_type(kind)) for name, kind, _ in self.fields])


RUNS = TableSpec("runs", (
    ("run_version", "BIGINT", "the run's number, from 1; every table's commit of the run carries it"),
    ("batches", "ARRAY<STRING>", "the staged batches the run consumes"),
    ("started_at", "TIMESTAMP", "when the run began"),
))
#: The changelog columns whose file statistics readers skip files by: the source database (a
#: reader of one), the commit time (:func:`..engines.base.all_newer` reads ``max.commit_timestamp``)
#: and the run (an export reads ``max.run_version``, :mod:`..exports.rows`). Partition columns skip
#: by their folders; the wide text columns (rows, old values, types) would only cost the writers.
CHANGELOG_STATS_COLUMNS = (*(name for name, _, _ in SOURCE_FIELDS), "commit_timestamp", "commit_nanos", "run_version")
CHANGELOG = TableSpec("changelog", delta_fields(records.CHANGELOG_FIELDS), ("table_name", "commit_date"),
                      (("delta.dataSkippingStatsColumns", ",".join(CHANGELOG_STATS_COLUMNS)),))
CURRENT_STATE = TableSpec("current_state", delta_fields(records.STATE_FIELDS), ("table_name",),
                          (("delta.enableChangeDataFeed", "true"),))
WATERMARKS = TableSpec("watermarks", (*SOURCE_FIELDS,
    ("table_name", "STRING", "the watched table"),
    ("watermark", "TIMESTAMP", "changelog and current_state hold every change of the table committed up to here"),
    ("watermark_nanos", "INT", "nanoseconds of the watermark's second"),
    ("loops", "INT", "poll loops (shards) the watermark is the minimum of"),
    ("loop_watermarks", "STRING", "per poll loop (shard, or change_stream), the commit timestamp it is complete "
                                  "up to: a JSON object of exact timestamp texts"),
    ("complete_from", "STRING", "the changelog is complete from this commit timestamp on (a backfill's start)"),
    ("run_version", "BIGINT", "the run that wrote the row"),
))

#: The tables in the order a run commits to them: its intent first, watermarks last.
COMMIT_ORDER: tuple[TableSpec, ...] = (RUNS, CHANGELOG, CURRENT_STATE, WATERMARKS)


def arrow_type(kind: str) -> Any:
    """The pyarrow type of a Spark SQL type of the layouts.

    >>> str(arrow_type("ARRAY<STRING>")), str(arrow_type("TIMESTAMP"))
    ('list<item: string>', 'timestamp[us, tz=UTC]')
    """
    import pyarrow as pa

    scalars = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "BOOLEAN": pa.bool_(),
               "TIMESTAMP": pa.timestamp("us", tz="UTC"), "DATE": pa.date32()}
    if kind.startswith("ARRAY<") and kind.endswith(">"):
        return pa.list_(arrow_type(kind[6:-1]))
    if kind.startswith("MAP<"):
        inner = kind[4:-1].split(",", 1)
        return pa.map_(arrow_type(inner[0].strip()), arrow_type(inner[1].strip()))
    return scalars[kind]
