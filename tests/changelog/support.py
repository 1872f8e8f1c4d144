"""Helpers of the changelog tests: stage batches directly with the real StagingSink."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from watcher.model import Change, from_nanos
from watcher.staging.sink import StagingSink

#: 2024-05-01T10:00:00Z in nanoseconds: test commit timestamps count from here.
T0 = 1_714_557_600_000_000_000


def ts(offset_nanos: int) -> Any:
    """A commit timestamp ``offset_nanos`` after T0 (full nanosecond precision)."""
    return from_nanos(T0 + offset_nanos)


class Stager:
    """Stages batches of one table's changes under ``root`` with the real sink."""

    def __init__(self, root: Any) -> None:
        self.sink = StagingSink(root, watcher_id="test-watcher", fsync=False)

    def stage(self, table: str, rows: Sequence[Mapping[str, Any]], *, types: Mapping[str, str],
              key_columns: Sequence[str], commits: Sequence[int], shard: Any = None,
              read_offset: int | None = None, mod_types: Sequence[str | None] | None = None,
              read_method: str = "cdc") -> Any:
        read_ts = ts(read_offset if read_offset is not None else max(commits) + 1_000)
        changes = [Change(table, tuple(row[k] for k in key_columns), dict(row), ts(c), shard, read_ts)
                   for row, c in zip(rows, commits, strict=True)]
        return self.sink.write(changes, types, key_columns, read_method=read_method, mod_types=mod_types)



SINGERS_TYPES = {"SingerId": "INT64", "Name": "STRING(MAX)", "Deleted": "BOOL", "LastUpdated": "TIMESTAMP"}


def singer(singer_id: int, name: str, deleted: bool = False) -> dict[str, Any]:
    return {"SingerId": singer_id, "Name": name, "Deleted": deleted,
            "LastUpdated": dt.datetime(2024, 5, 1, tzinfo=dt.UTC)}


def parquet_types(spark: Any, folder: Path, fields: tuple[tuple[str, str, str], ...], partitions: tuple[str, ...],
                  *, whole: bool = True) -> None:
    """Each file on its own, and (``whole``) the folder read with no schema, have the layout's types."""
    from pyspark.sql.types import _parse_datatype_string

    types = {name: _parse_datatype_string(kind) for name, kind, _ in fields}
    expected = {name: kind for name, kind in types.items() if name not in partitions}
    files = sorted(folder.rglob("*.parquet"))
    assert files
    for file in files:  # a partition column is in the folder names, not the file (state deltas are not partitioned)
        in_file = {k: v for k, v in types.items() if not any(part.startswith(f"{k}=") for part in file.parts)}
        assert {f.name: f.dataType for f in spark.read.parquet(str(file)).schema.fields} == in_file, file
    if whole:
        read = {f.name: f.dataType for f in spark.read.parquet(str(folder)).schema.fields}
        assert {k: v for k, v in read.items() if k in expected} == expected
