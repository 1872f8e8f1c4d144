"""The warehouse as Spark SQL views: ``changelog``, ``current_state``, ``watermarks``.

Each view reads the warehouse's Delta table (``spark.read.format("delta")``, so only committed
rows are visible) and shows the changelog record's layout (:mod:`.rules.records`: ``commit_timestamp``
the exact RFC 3339 text with nine digits, ``commit_ts`` the TIMESTAMP, ``column_types`` a map;
``current_state`` also the row as a ``vals`` map, and only live keys: a deleted key's tombstone
row is hidden), with the source database's columns in front. ``source`` limits every view to one
watched database (:class:`.tables.source.Source`); without it, all the warehouse holds.

A table ``X`` of the warehouse is also readable by any Delta reader at ``<warehouse>/X``
(:mod:`.tables.readers`: delta-rs, DuckDB).

Example:
    >>> register_views(spark, "/data/warehouse")          # doctest: +SKIP
    >>> spark.sql("SELECT mod_type, count(*) FROM changelog GROUP BY mod_type").show()  # doctest: +SKIP
    >>> _text_sql("T'1"), _text_sql(None)
    ("X'542731'", 'NULL')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .io.files import open_fs
from .rules import completeness
from .tables import frames, layout, watermark_table
from .tables.convert import refuse_old_layout
from .tables.ledger import Ledger
from .tables.source import COLUMNS as SOURCE_COLUMNS
from .tables.source import Source

WATERMARK_SCHEMA = ("source_project STRING, source_instance STRING, source_database STRING, table_name STRING, "
                    "watermark STRING, watermark_ts TIMESTAMP, loops INT, complete_from STRING")


@dataclass(frozen=True)
class Registered:
    """What the views show: the newest complete run (0: none yet), and the tables with watermarks."""

    version: int
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)


def with_maps(frame: Any, *, values: bool = False) -> Any:
    """``frame`` as users query it: ``column_types`` (stored as JSON text) as a map, and with
    ``values``, the row as a ``vals`` map next to ``new_values`` (parsed only when a query uses it).
    """
    from pyspark.sql import functions as F

    frame = frame.withColumn("column_types", F.expr("from_json(column_types, 'map<string,string>')"))
    return frame.selectExpr("*", "from_json(new_values, 'map<string,string>') AS vals") if values else frame


def changelog_frame(spark: Any, warehouse: str, source: Source | None = None) -> Any:
    """The ``changelog`` view's rows."""
    return with_maps(frames.read(spark, warehouse, layout.CHANGELOG.name, source=source))


def state_frame(spark: Any, warehouse: str, source: Source | None = None) -> Any:
    """The ``current_state`` view's rows: live keys only."""
    return with_maps(frames.read(spark, warehouse, layout.CURRENT_STATE.name, source=source, where="NOT is_deleted"),
                     values=True)


def watermark_rows(ledger: Ledger, markers: dict[str, str], source: Source | None = None) -> list[dict[str, Any]]:
    """The ``watermarks`` view's rows: the table's (exact texts), and the tables only a marker names."""
    out = []
    for r in watermark_table.read_rows(ledger, source):
        mark = watermark_table.text_of(r["watermark"], r["watermark_nanos"]) if r["watermark"] else None
        out.append({**{c: r[c] for c in SOURCE_COLUMNS}, "table_name": r["table_name"], "watermark": mark,
                    "loops": r["loops"], "complete_from": markers.get(r["table_name"], r["complete_from"])})
    named = {r["table_name"] for r in out}
    for table in sorted(set(markers) - named):
        out.append({**dict.fromkeys(SOURCE_COLUMNS), **(source.row() if source else {}), "table_name": table,
                    "watermark": None, "loops": 0, "complete_from": markers[table]})
    return sorted(out, key=lambda r: (tuple(r[c] or "" for c in SOURCE_COLUMNS), r["table_name"]))


def watermarks_frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    """The ``watermarks`` view from its rows, as one SQL text (``createDataFrame`` from Python rows
    costs ~70 calls into the JVM, which each run would pay for a handful of rows)."""
    names = [*SOURCE_COLUMNS, "table_name", "watermark", "loops", "complete_from"]
    values = [f"({', '.join(str(int(r[n] or 0)) if n == 'loops' else _text_sql(r[n]) for n in names)})" for r in rows]
    source = (f"VALUES {', '.join(values)} AS w({', '.join(names)})" if values else
              f"(SELECT {', '.join(f'NULL AS {n}' for n in names)} WHERE false)")
    text = "CAST({} AS STRING)"  # the texts come as UTF-8 bytes (binary literals)
    columns = [f"{text.format(n)} AS {n}" for n in (*SOURCE_COLUMNS, "table_name", "watermark")]
    return spark.sql(f"SELECT {', '.join(columns)}, CAST({text.format('watermark')} AS TIMESTAMP) AS watermark_ts, "
                     f"CAST(loops AS INT) AS loops, {text.format('complete_from')} AS complete_from FROM {source}")


def _text_sql(value: str | None) -> str:
    """SQL for a text as a literal of its UTF-8 bytes (NULL for None): no character needs escaping,
    and an inline table takes it (it takes literals only)."""
    return "NULL" if value is None else f"X'{value.encode().hex()}'"


def register_views(spark: Any, warehouse: str, source: Source | None = None) -> Registered:
    """Register the three views over ``warehouse`` (of ``source`` only, when given); returns what they show."""
    refuse_old_layout(warehouse)
    fs = open_fs(spark, warehouse)
    ledger = Ledger(warehouse)
    ledger.create_tables()  # an empty warehouse shows empty views
    rows = watermark_rows(ledger, completeness.read_markers(fs), source)
    changelog_frame(spark, warehouse, source).createOrReplaceTempView("changelog")
    state_frame(spark, warehouse, source).createOrReplaceTempView("current_state")
    watermarks_frame(spark, rows).createOrReplaceTempView("watermarks")
    marks = {r["table_name"]: r for r in rows}
    return Registered(ledger.held_version(layout.WATERMARKS.name),
                      {t: marks.get(t, {}) for t in sorted(set(marks) | changelog_tables(ledger))})


def changelog_tables(ledger: Ledger) -> set[str]:
    """The tables the changelog holds rows of (its partitions, from the Delta log: no Spark job)."""
    found = ledger._open(layout.CHANGELOG.name)
    return {p["table_name"] for p in found.partitions()} if found is not None else set()


__all__ = ["Registered", "changelog_frame", "register_views", "state_frame", "watermark_rows", "watermarks_frame",
           "with_maps"]
