"""The index pruning's statements in both dialects (:mod:`watcher.schema_tools.pruning`), as data.

Pruning sends one partitioned UPDATE and, before its first run, asks INFORMATION_SCHEMA about the
commit-timestamp (and processed) column. What differs: how a timestamp literal is written, and how
a column shows that it holds commit timestamps (GoogleSQL: the column option
``allow_commit_timestamp``; PostgreSQL: the type ``spanner.commit_timestamp``).

Example:
    >>> timestamp_literal(POSTGRESQL, "2024-05-01T00:00:00Z")
    "CAST('2024-05-01T00:00:00Z' AS timestamptz)"
    >>> column_query(POSTGRESQL, TableId("Singers"), "LastUpdated").params
    {'p1': 'public', 'p2': 'Singers', 'p3': 'LastUpdated'}
"""

from __future__ import annotations

from dataclasses import dataclass

from google.cloud.spanner_v1 import param_types

from ..model import TableId
from .base import GOOGLE_SQL, POSTGRESQL, Dialect, Statement


@dataclass(frozen=True)
class PruningSql:
    """One dialect's texts."""

    #: A timestamp literal around ``{}`` (an RFC 3339 text).
    timestamp_literal: str
    #: One column's SPANNER_TYPE, IS_NULLABLE ('YES'/'NO') and 1 when it holds commit timestamps (else 0), by
    #: ``@catalog``, ``@schema``, ``@table``, ``@column``.
    column: str


PRUNING_SQL: dict[str, PruningSql] = {
    GOOGLE_SQL.name: PruningSql(
        timestamp_literal="TIMESTAMP '{}'",
        column=("SELECT C.SPANNER_TYPE, C.IS_NULLABLE, "
                "(SELECT COUNT(*) FROM INFORMATION_SCHEMA.COLUMN_OPTIONS AS O WHERE O.TABLE_CATALOG = C.TABLE_CATALOG "
                "AND O.TABLE_SCHEMA = C.TABLE_SCHEMA AND O.TABLE_NAME = C.TABLE_NAME AND O.COLUMN_NAME = C.COLUMN_NAME "
                "AND O.OPTION_NAME = 'allow_commit_timestamp' AND O.OPTION_VALUE = 'TRUE') "
                "FROM INFORMATION_SCHEMA.COLUMNS AS C WHERE C.TABLE_CATALOG = @catalog AND C.TABLE_SCHEMA = @schema "
                "AND C.TABLE_NAME = @table AND C.COLUMN_NAME = @column"),
    ),
    POSTGRESQL.name: PruningSql(
        timestamp_literal="CAST('{}' AS timestamptz)",
        column=("SELECT spanner_type, is_nullable, "
                "CASE WHEN spanner_type = 'spanner.commit_timestamp' THEN 1 ELSE 0 END "
                "FROM information_schema.columns WHERE table_schema = @schema AND table_name = @table "
                "AND column_name = @column"),
    ),
}


def timestamp_literal(dialect: Dialect, rfc3339: str) -> str:
    """A timestamp literal of ``dialect`` (``rfc3339`` is a formatted timestamp, never user text).

    >>> timestamp_literal(GOOGLE_SQL, "2024-05-01T00:00:00Z")
    "TIMESTAMP '2024-05-01T00:00:00Z'"
    """
    return PRUNING_SQL[dialect.name].timestamp_literal.format(rfc3339)


def column_query(dialect: Dialect, table: TableId, column: str) -> Statement:
    """What INFORMATION_SCHEMA says of ``column`` of ``table``: SPANNER_TYPE, IS_NULLABLE, holds commit timestamps.

    >>> column_query(GOOGLE_SQL, TableId("Singers"), "LastUpdated").params["table"]
    'Singers'
    """
    params = {"catalog": table.catalog, "schema": dialect.schema_of(table), "table": table.table, "column": column}
    return dialect.bind(PRUNING_SQL[dialect.name].column, params, {k: param_types.STRING for k in params})
