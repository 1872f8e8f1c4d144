"""The warehouse as Spark SQL views: ``changelog``, ``current_state``, ``watermarks``.

Only committed rows are visible (see :mod:`.manifest`), so a query never sees a run that
died half way.

Example:
    >>> register_views(spark, "/data/warehouse")          # doctest: +SKIP
    >>> spark.sql("SELECT mod_type, count(*) FROM changelog GROUP BY mod_type").show()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from . import completeness, current_state, manifest, records, supersede
from .files import FileStore, open_fs
from .manifest import Manifest

CHANGELOG_DIR = "changelog"
WATERMARK_SCHEMA = "table_name STRING, watermark STRING, watermark_ts TIMESTAMP, loops INT, complete_from STRING"


def read_changelog(spark: Any, fs: FileStore, committed: Manifest, partitions: list[str] | None = None) -> Any:
    """Committed changelog rows (without those a change stream's row replaced, :mod:`.supersede`);
    ``partitions`` (folder URIs) limits the read to those partitions."""
    if partitions is not None and not partitions or not fs.exists(CHANGELOG_DIR):
        return spark.createDataFrame([], records.schema(records.CHANGELOG_FIELDS))
    reader = spark.read.schema(records.schema_ddl(records.CHANGELOG_FIELDS)).option("basePath", fs.uri(CHANGELOG_DIR))
    frame = reader.parquet(*partitions) if partitions is not None else reader.parquet(fs.uri(CHANGELOG_DIR))
    return supersede.hide_superseded(spark, fs, committed, frame.where(committed.visible_sql()))


def with_maps(frame: Any, *, values: bool = False) -> Any:
    """``frame`` as users query it: ``column_types`` (stored as JSON text) as a map, and with
    ``values``, the row as a ``vals`` map next to ``new_values`` (parsed only when a query uses it).
    """
    from pyspark.sql import functions as F

    maps = {"column_types": F.from_json("column_types", "map<string,string>")}
    if values:
        maps["vals"] = F.from_json("new_values", "map<string,string>")
    return frame.withColumns(maps)  # one step: each would make Spark analyse the plan again


def watermarks_frame(spark: Any, committed: Manifest, markers: dict[str, str]) -> Any:
    from pyspark.sql import functions as F

    rows = []
    for table in sorted(set(committed.tables) | set(markers)):
        info = committed.tables.get(table, {})
        rows.append((table, info.get("watermark"), len(info.get("loops", {})), markers.get(table)))
    frame = spark.createDataFrame(rows, "table_name STRING, watermark STRING, loops INT, complete_from STRING")
    return frame.select("table_name", "watermark", F.expr("cast(watermark AS timestamp)").alias("watermark_ts"),
                        "loops", "complete_from")


def register_views(spark: Any, warehouse: str) -> Manifest:
    """Register the three views over ``warehouse``; returns the committed manifest they show."""
    fs = open_fs(spark, warehouse)
    committed = manifest.load(fs)
    with_maps(read_changelog(spark, fs, committed)).createOrReplaceTempView("changelog")
    state = with_maps(current_state.load(spark, fs, committed).where("NOT is_deleted"), values=True)
    state.createOrReplaceTempView("current_state")
    watermarks_frame(spark, committed, completeness.read_markers(fs)).createOrReplaceTempView("watermarks")
    return committed
