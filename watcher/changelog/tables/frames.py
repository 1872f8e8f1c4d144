"""The warehouse's Delta tables as Spark frames: record rows in, record rows out.

The job computes rows in the changelog record's layout (:mod:`..rules.records`: the exact commit
timestamp as RFC 3339 text with nine digits, ``commit_ts`` a TIMESTAMP, ``commit_date`` text);
the Delta tables hold them typed for any reader (:mod:`.layout`: ``commit_timestamp`` a
TIMESTAMP, the nanoseconds of its second in ``commit_nanos``, ``commit_date`` a DATE, the source
database in front). :func:`to_delta` and :func:`from_delta` turn one into the other, as SQL text
(one call into the JVM each); :func:`read` gives a table's rows in the record's layout, of one
source database or all.

Example:
    >>> delta_sql(layout.CURRENT_STATE, DEFAULT_SOURCE)["commit_nanos"]
    'CAST(substring(commit_timestamp, 21, 9) AS INT)'
    >>> record_sql(records.STATE_FIELDS)["commit_ts"]
    'commit_timestamp'
"""

from __future__ import annotations

from typing import Any

from ..rules import records
from ..rules.records import Field
from . import layout
from .source import COLUMNS as SOURCE_COLUMNS
from .source import DEFAULT_SOURCE, Source

#: SQL of the exact timestamp text of a Delta TIMESTAMP and its second's nanoseconds (in UTC
#: whatever the session's time zone).
EXACT_TEXT_SQL = ("concat(date_format(to_utc_timestamp({ts}, current_timezone()), \"yyyy-MM-dd'T'HH:mm:ss\"), '.', "
                  "lpad(CAST({nanos} AS STRING), 9, '0'), 'Z')")


def delta_sql(spec: layout.TableSpec, source: Source) -> dict[str, str]:
    """Column -> SQL over a record-layout frame giving the Delta table's column."""
    literals = source.literals()
    special = {"commit_timestamp": "CAST(commit_timestamp AS TIMESTAMP)",
               "commit_nanos": "CAST(substring(commit_timestamp, 21, 9) AS INT)"}
    return {name: literals.get(name) or special.get(name) or f"CAST(`{name}` AS {kind})" for name, kind, _ in spec.fields}


def to_delta(frame: Any, spec: layout.TableSpec, source: Source) -> Any:
    """``frame`` (record layout) as rows of the Delta table ``spec`` of ``source``."""
    return frame.selectExpr(*[f"{sql} AS `{name}`" for name, sql in delta_sql(spec, source).items()])


def record_sql(fields: tuple[Field, ...]) -> dict[str, str]:
    """Column -> SQL over a Delta table's frame giving the record layout's column."""
    special = {"commit_timestamp": EXACT_TEXT_SQL.format(ts="commit_timestamp", nanos="commit_nanos"),
               "commit_ts": "commit_timestamp"}
    return {name: special.get(name) or f"CAST(`{name}` AS {kind})" for name, kind, _ in fields}


def from_delta(frame: Any, fields: tuple[Field, ...], *, with_source: bool = True) -> Any:
    """A Delta table's ``frame`` in the record layout ``fields`` (the source columns first, with ``with_source``)."""
    columns = [f"`{name}`" for name in SOURCE_COLUMNS] if with_source else []
    return frame.selectExpr(*columns, *[f"{sql} AS `{name}`" for name, sql in record_sql(fields).items()])


#: The record layout of each table a reader asks for by name.
RECORD_FIELDS: dict[str, tuple[Field, ...]] = {layout.CHANGELOG.name: records.CHANGELOG_FIELDS,
                                               layout.CURRENT_STATE.name: records.STATE_FIELDS}


def delta_frame(spark: Any, warehouse: str, table: str, *, source: Source | None = None,
                version: int | None = None) -> Any:
    """The Delta table ``table`` of ``warehouse`` as Spark reads it (of ``source`` only, when given;
    its ``version`` by time travel, when given)."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    frame = reader.load(f"{str(warehouse).rstrip('/')}/{table}")
    return frame.where(source.where_sql()) if source is not None else frame


def read(spark: Any, warehouse: str, table: str, *, source: Source | None = None, where: str | None = None,
         version: int | None = None) -> Any:
    """The rows of ``changelog`` or ``current_state`` in the record's layout, with the source columns
    (of ``source`` only, when given; ``where``: SQL over the Delta columns, applied first; ``version``:
    the table's Delta version, by time travel)."""
    frame = delta_frame(spark, warehouse, table, source=source, version=version)
    if where:
        frame = frame.where(where)
    return from_delta(frame, RECORD_FIELDS[table])


def state_tables(warehouse: str, storage_options: dict[str, str] | None = None) -> frozenset[str]:
    """The tables ``current_state`` holds rows of, any source's (its ``table_name`` partitions, from the
    Delta log: no read of the rows; none when the table does not exist yet)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        held = DeltaTable(f"{str(warehouse).rstrip('/')}/{layout.CURRENT_STATE.name}",
                          storage_options=storage_options or None).partitions()
    except TableNotFoundError:
        return frozenset()
    return frozenset(p["table_name"] for p in held if p.get("table_name") is not None)


def table_state(spark: Any, warehouse: str, table: str, source: Source) -> Any | None:
    """The current state of ``table`` of ``source`` in the record's layout, deleted keys included
    (None: no run wrote state of the table yet)."""
    if table not in state_tables(warehouse):
        return None
    from .source import sql_text

    return read(spark, warehouse, layout.CURRENT_STATE.name, source=source,
                where=f"table_name = {sql_text(table)}").drop(*SOURCE_COLUMNS)


def empty_state(spark: Any) -> Any:
    """A state frame without rows, in the record's layout."""
    return spark.createDataFrame([], records.schema(records.STATE_FIELDS))


__all__ = ["empty_state", "state_tables", "table_state", "DEFAULT_SOURCE", "Source", "delta_frame", "delta_sql", "from_delta", "read", "record_sql", "to_delta"]
