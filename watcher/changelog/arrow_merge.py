"""A table's current-state layers merged on the driver with pyarrow, when they hold few rows.

A merge in Spark (:func:`.compaction.merge_layers`) costs a few Spark jobs whatever it holds:
planning, tasks, a write and a count, seconds of both cores of a small machine, taken
from the streaming micro-batches running beside it (the freshness's tail). The merges a streaming
query needs most often are of its newest deltas, some thousands of rows each: pyarrow reads,
merges and writes those on the driver in a fraction of a second, without Spark, on the merging thread alone (:func:`.compaction.background_priority`).

The rows written are the ones Spark's merge writes (:func:`.current_state.latest`: each key's newest
row by commit timestamp, then the later layer), in Spark's Parquet types (INT96 timestamps, a
list of strings as Spark writes it, INT and BIGINT as in :data:`.records.STATE_FIELDS`), so that
readers, with or without the warehouse's schema, cannot tell which engine wrote a layer. Above
:data:`MAX_ROWS` rows, or where pyarrow cannot reach the warehouse (``hdfs://`` without libhdfs),
Spark merges.

Example:
    >>> import pyarrow as pa
    >>> rows = pa.table({"keys": ['{"Id":"1"}', '{"Id":"2"}', '{"Id":"1"}'], "commit_timestamp": ["t1", "t1", "t2"],
    ...                  LAYER: [3, 3, 4]})
    >>> newest_per_key(rows).to_pydict()["commit_timestamp"]
    ['t2', 't1']
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from . import current_state, records
from .arrow_fs import ArrowFS
from .files import FileStore

#: Rows (as the manifest counts them over the merged layers) up to which the driver merges a table's
#: layers: a few hundred bytes each, so at most some hundred megabytes of driver memory.
MAX_ROWS = 500_000
#: The merged layer a row came from, while merging (dropped before the write).
LAYER = "_layer"
_ARROW_TYPES = {"STRING": "string", "ARRAY<STRING>": "list<string>", "TIMESTAMP": "timestamp", "BOOLEAN": "bool",
                "INT": "int32", "BIGINT": "int64"}


def arrow_schema(fields: Sequence[records.Field], leave_out: Sequence[str] = (), *, unit: str = "ns") -> Any:
    """The Arrow schema of a record layout (:mod:`.records`) in Spark's Parquet types, without the
    ``leave_out`` fields (partition columns); timestamps in ``unit`` (pyarrow reads Spark's INT96 as "ns").

    Example:
        >>> str(arrow_schema(records.STATE_FIELDS, unit="us").field("commit_ts").type)
        'timestamp[us]'
    """
    import pyarrow as pa

    kinds = {"string": pa.string(), "list<string>": pa.list_(pa.string()), "timestamp": pa.timestamp(unit),
             "bool": pa.bool_(), "int32": pa.int32(), "int64": pa.int64()}
    return pa.schema([(name, kinds[_ARROW_TYPES[kind]]) for name, kind, _ in fields if name not in leave_out])


def state_schema() -> Any:
    """The Arrow schema of a state row (:data:`.records.STATE_FIELDS`), as pyarrow reads Spark's files.

    Example:
        >>> str(state_schema().field("commit_ts").type), str(state_schema().field("run_version").type)
        ('timestamp[ns]', 'int32')
    """
    return arrow_schema(records.STATE_FIELDS)


def store_for(fs: FileStore) -> ArrowFS | None:
    """The warehouse as pyarrow reaches it (None when it cannot: then Spark merges)."""
    from ..errors import StorageURLError

    if isinstance(fs, ArrowFS):
        return fs
    try:
        return ArrowFS(fs.root)
    except StorageURLError:
        return None


def newest_per_key(rows: Any) -> Any:
    """Each key's newest row of one table's ``rows``: by commit timestamp, then the later layer."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if rows.num_rows == 0:
        return rows
    ordered = rows.sort_by([("keys", "ascending"), ("commit_timestamp", "descending"), (LAYER, "descending")])
    keys = ordered.column("keys").combine_chunks()
    first = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    return ordered.filter(pa.concat_arrays([pa.array([True]), first.fill_null(True)]))


def merge(store: ArrowFS, table: str, layers: Sequence[tuple[int, bool]], version: int, *, base: bool) -> int:
    """Write the newest row per key of ``table``'s ``layers`` ((version, is its base), oldest first)
    as run ``version``'s base of the table (``base``) or its delta folder; returns the rows written."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = state_schema()
    parts = []
    for layer, is_base in layers:
        folder = f"{current_state.version_dir(layer)}/table_name={table}" if is_base else current_state.deltas_dir(layer)
        read = store.read_parquet(folder)
        if read is None or read.num_rows == 0:
            continue
        if is_base:  # a base's folder names its table (Spark's partition column)
            read = read.append_column("table_name", pa.array([table] * read.num_rows, pa.string()))
        else:
            read = read.filter(pc.equal(read.column("table_name"), table))
        columns = [read.column(f.name).cast(f.type) if f.name in read.column_names else pa.nulls(read.num_rows, f.type)
                   for f in schema]
        parts.append(pa.table(columns + [pa.array([layer] * read.num_rows, pa.int64())],
                              names=[*schema.names, LAYER]))
    merged = newest_per_key(pa.concat_tables(parts)) if parts else schema.empty_table().append_column(
        LAYER, pa.array([], pa.int64()))
    out = merged.drop_columns([LAYER, "table_name"] if base else [LAYER])
    folder = f"{current_state.version_dir(version)}/table_name={table}" if base else current_state.deltas_dir(version)
    store.write_parquet(out, f"{folder}/part-00000-{uuid.uuid4()}-c000.snappy.parquet")
    return merged.num_rows
