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
from .session import side_by_side

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

    # SQL text, and no list of all the columns (pyspark hands a list to the JVM one call per item):
    # the views are built again after every run, and each call into the driver's JVM costs.
    frame = frame.withColumn("column_types", F.expr("from_json(column_types, 'map<string,string>')"))
    return frame.selectExpr("*", "from_json(new_values, 'map<string,string>') AS vals") if values else frame


def watermarks_frame(spark: Any, committed: Manifest, markers: dict[str, str]) -> Any:
    """The ``watermarks`` view's rows, from the manifest and the completeness markers.

    Built as one SQL text (``createDataFrame`` from Python rows costs ~70 calls into the JVM,
    which a small run and each streaming micro-batch would pay for a handful of rows).
    """
    rows = []
    for table in sorted(set(committed.tables) | set(markers)):
        info = committed.tables.get(table, {})
        rows.append(f"({_text_sql(table)}, {_text_sql(info.get('watermark'))}, {len(info.get('loops', {}))}, "
                    f"{_text_sql(markers.get(table))})")
    source = f"VALUES {', '.join(rows)} AS w(table_name, watermark, loops, complete_from)" if rows else \
        "(SELECT NULL AS table_name, NULL AS watermark, NULL AS loops, NULL AS complete_from WHERE false)"
    text = "CAST({} AS STRING)"  # the texts come as UTF-8 bytes (binary literals)
    return spark.sql(f"SELECT {text.format('table_name')} AS table_name, {text.format('watermark')} AS watermark, "
                     f"CAST({text.format('watermark')} AS TIMESTAMP) AS watermark_ts, CAST(loops AS INT) AS loops, "
                     f"{text.format('complete_from')} AS complete_from FROM {source}")


def _text_sql(value: str | None) -> str:
    """SQL for a text as a literal of its UTF-8 bytes (NULL for None): no character needs escaping,
    and an inline table takes it (it takes literals only).

    >>> _text_sql("T'1"), _text_sql(None)
    ("X'542731'", 'NULL')
    """
    return "NULL" if value is None else f"X'{value.encode().hex()}'"


def register_views(spark: Any, warehouse: str) -> Manifest:
    """Register the three views over ``warehouse``; returns the committed manifest they show."""
    fs = open_fs(spark, warehouse)
    committed = manifest.load(fs)

    def changelog_and_watermarks() -> None:
        with_maps(read_changelog(spark, fs, committed)).createOrReplaceTempView("changelog")
        watermarks_frame(spark, committed, completeness.read_markers(fs)).createOrReplaceTempView("watermarks")

    def state() -> None:  # the longest: its layers, and each key's newest row over them
        rows = with_maps(current_state.load(spark, fs, committed).where("NOT is_deleted"), values=True)
        rows.createOrReplaceTempView("current_state")

    # Building a view is work of the driver's JVM (listing the files, analysing the plan) that a
    # small run waits for after every commit: the views are built two at a time, on two cores.
    side_by_side(spark, changelog_and_watermarks, state)
    return committed
