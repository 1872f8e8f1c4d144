"""The current-state table: the latest row per key, versioned per table.

Each run that touches a table writes that table's whole new state under
``<warehouse>/current_state/v<N>/table_name=<T>/`` (Parquet); the manifest says which
version holds each table, so untouched tables are not rewritten and a crashed run
leaves the committed state untouched. Deleted keys stay, flagged ``is_deleted``: the
job needs them to tell a key that comes back (INSERT) from one never seen (the
``current_state`` view shows live rows only).

Example:
    >>> version_dir(7)
    'current_state/v000000000007'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import records
from .fs import HadoopFS
from .manifest import Manifest

STATE_DIR = "current_state"


def version_dir(version: int) -> str:
    return f"{STATE_DIR}/v{version:012d}"


def load(spark: Any, fs: HadoopFS, manifest: Manifest, tables: Iterable[str] | None = None) -> Any:
    """The committed state rows of ``tables`` (all tables when None)."""
    wanted = set(manifest.tables) if tables is None else set(tables) & set(manifest.tables)
    by_version: dict[int, list[str]] = {}
    for table in sorted(wanted):
        version = manifest.tables[table].get("state_version")
        if version:
            by_version.setdefault(int(version), []).append(table)
    frames = []
    for version, names in sorted(by_version.items()):
        base = fs.uri(version_dir(version))
        paths = [f"{base}/table_name={t}" for t in names if fs.exists(f"{version_dir(version)}/table_name={t}")]
        if paths:
            frames.append(spark.read.schema(records.schema(records.STATE_FIELDS)).option("basePath", base).parquet(*paths))
    if not frames:
        return spark.createDataFrame([], records.schema(records.STATE_FIELDS))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result.select(*records.names(records.STATE_FIELDS))


def write(state: Any, fs: HadoopFS, version: int) -> None:
    """Write the new state of the tables in ``state`` as version ``version``."""
    (state.select(*records.names(records.STATE_FIELDS))
     .write.mode("overwrite").partitionBy("table_name").parquet(fs.uri(version_dir(version))))


def prune(fs: HadoopFS, manifest: Manifest) -> list[str]:
    """Delete state versions the manifest no longer uses; returns what was deleted."""
    used = {version_dir(int(t["state_version"])).rsplit("/", 1)[-1] for t in manifest.tables.values()
            if t.get("state_version")}
    removed = []
    for name in fs.list_names(STATE_DIR):
        if name.startswith("v") and name not in used and name[1:].isdigit() and int(name[1:]) < manifest.version:
            fs.delete(f"{STATE_DIR}/{name}")
            removed.append(name)
    return removed
