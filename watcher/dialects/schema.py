"""The INFORMATION_SCHEMA queries a watcher sends, in both dialects (one table, :data:`SCHEMA_SQL`).

What a watcher asks of a table: its columns and their types, its primary key, its commit-timestamp
columns; and of a database: the tables it can watch. GoogleSQL marks a commit-timestamp column by the
column option ``allow_commit_timestamp=true``; PostgreSQL by the column's type, ``spanner.commit_timestamp``.
PostgreSQL names are filtered by schema only (TABLE_CATALOG holds the database's name there).

Each function gives one statement, bound for its dialect.

Example:
    >>> print(columns_query(POSTGRESQL, TableId("singers")).sql)
    SELECT column_name, spanner_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
    >>> columns_query(POSTGRESQL, TableId("singers")).params
    {'p1': 'public', 'p2': 'singers'}
"""

from __future__ import annotations

from dataclasses import dataclass

from google.cloud.spanner_v1 import param_types

from ..model import TableId
from .base import GOOGLE_SQL, POSTGRESQL, Dialect, Statement


@dataclass(frozen=True)
class SchemaSql:
    """One dialect's INFORMATION_SCHEMA texts, written with ``@catalog``, ``@schema``, ``@table``."""

    #: Column name and SPANNER_TYPE, in table order.
    columns: str
    #: Column name, SPANNER_TYPE and IS_NULLABLE (``YES`` / ``NO``), in table order.
    nullable_columns: str
    #: Primary-key column names, in key order.
    key: str
    #: The columns that hold commit timestamps, by name.
    commit_timestamp_columns: str
    #: Tables of the default schema with a commit-timestamp column, by name.
    watchable_tables: str
    #: Every table of one schema, by name (to find a table named in another case).
    tables: str


SCHEMA_SQL: dict[str, SchemaSql] = {
    GOOGLE_SQL.name: SchemaSql(
        columns=("SELECT COLUMN_NAME, SPANNER_TYPE FROM INFORMATION_SCHEMA.COLUMNS "
                 "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema AND TABLE_NAME = @table "
                 "ORDER BY ORDINAL_POSITION"),
        nullable_columns=("SELECT COLUMN_NAME, SPANNER_TYPE, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS "
                          "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema AND TABLE_NAME = @table "
                          "ORDER BY ORDINAL_POSITION"),
        key=("SELECT INDEX_COLUMNS.COLUMN_NAME FROM INFORMATION_SCHEMA.INDEXES AS INDEXES "
             "JOIN INFORMATION_SCHEMA.INDEX_COLUMNS AS INDEX_COLUMNS "
             "ON INDEXES.TABLE_CATALOG = INDEX_COLUMNS.TABLE_CATALOG AND INDEXES.TABLE_SCHEMA = INDEX_COLUMNS.TABLE_SCHEMA "
             "AND INDEXES.TABLE_NAME = INDEX_COLUMNS.TABLE_NAME AND INDEXES.INDEX_NAME = INDEX_COLUMNS.INDEX_NAME "
             "WHERE INDEXES.TABLE_CATALOG = @catalog AND INDEXES.TABLE_SCHEMA = @schema AND INDEXES.TABLE_NAME = @table "
             "AND INDEXES.INDEX_TYPE = 'PRIMARY_KEY' ORDER BY INDEX_COLUMNS.ORDINAL_POSITION"),
        # Every option row is looked at: a column may carry other options besides allow_commit_timestamp.
        commit_timestamp_columns=(
            "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMN_OPTIONS "
            "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema AND TABLE_NAME = @table "
            "AND OPTION_NAME = 'allow_commit_timestamp' AND OPTION_VALUE = 'TRUE' ORDER BY COLUMN_NAME"),
        watchable_tables=(
            "SELECT DISTINCT TABLES.TABLE_NAME FROM INFORMATION_SCHEMA.TABLES AS TABLES "
            "JOIN INFORMATION_SCHEMA.COLUMN_OPTIONS AS OPTIONS "
            "ON TABLES.TABLE_CATALOG = OPTIONS.TABLE_CATALOG AND TABLES.TABLE_SCHEMA = OPTIONS.TABLE_SCHEMA "
            "AND TABLES.TABLE_NAME = OPTIONS.TABLE_NAME "
            "WHERE TABLES.TABLE_CATALOG = '' AND TABLES.TABLE_SCHEMA = '' "
            "AND OPTIONS.OPTION_NAME = 'allow_commit_timestamp' AND OPTIONS.OPTION_VALUE = 'TRUE' "
            "ORDER BY TABLES.TABLE_NAME"),
        tables=("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES "
                "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema ORDER BY TABLE_NAME"),
    ),
    POSTGRESQL.name: SchemaSql(
        columns=("SELECT column_name, spanner_type FROM information_schema.columns "
                 "WHERE table_schema = @schema AND table_name = @table ORDER BY ordinal_position"),
        nullable_columns=("SELECT column_name, spanner_type, is_nullable FROM information_schema.columns "
                          "WHERE table_schema = @schema AND table_name = @table ORDER BY ordinal_position"),
        key=("SELECT index_columns.column_name FROM information_schema.indexes AS indexes "
             "JOIN information_schema.index_columns AS index_columns "
             "ON indexes.table_schema = index_columns.table_schema "
             "AND indexes.table_name = index_columns.table_name AND indexes.index_name = index_columns.index_name "
             "WHERE indexes.table_schema = @schema AND indexes.table_name = @table "
             "AND indexes.index_type = 'PRIMARY_KEY' ORDER BY index_columns.ordinal_position"),
        commit_timestamp_columns=(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = @schema AND table_name = @table "
            "AND spanner_type = 'spanner.commit_timestamp' ORDER BY column_name"),
        watchable_tables=(
            "SELECT DISTINCT tables.table_name FROM information_schema.tables AS tables "
            "JOIN information_schema.columns AS columns "
            "ON tables.table_schema = columns.table_schema AND tables.table_name = columns.table_name "
            "WHERE tables.table_schema = 'public' AND tables.table_type = 'BASE TABLE' "
            "AND columns.spanner_type = 'spanner.commit_timestamp' ORDER BY tables.table_name"),
        tables=("SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = @schema AND table_type = 'BASE TABLE' ORDER BY table_name"),
    ),
}


def _about(dialect: Dialect, sql: str, table: TableId) -> Statement:
    params = {"catalog": table.catalog, "schema": dialect.schema_of(table), "table": table.table}
    return dialect.bind(sql, params, {name: param_types.STRING for name in params})


def columns_query(dialect: Dialect, table: TableId) -> Statement:
    """Column names and SPANNER_TYPE of ``table``, in table order.

    >>> columns_query(GOOGLE_SQL, TableId("Singers")).params
    {'catalog': '', 'schema': '', 'table': 'Singers'}
    """
    return _about(dialect, SCHEMA_SQL[dialect.name].columns, table)


def nullable_columns_query(dialect: Dialect, table: TableId) -> Statement:
    """Column names, SPANNER_TYPE and IS_NULLABLE of ``table``, in table order.

    >>> nullable_columns_query(POSTGRESQL, TableId("t")).sql.startswith("SELECT column_name, spanner_type, is_nullable")
    True
    """
    return _about(dialect, SCHEMA_SQL[dialect.name].nullable_columns, table)


def key_query(dialect: Dialect, table: TableId) -> Statement:
    """The primary-key column names of ``table``, in key order.

    >>> "indexes.index_type = 'PRIMARY_KEY'" in key_query(POSTGRESQL, TableId("t")).sql
    True
    """
    return _about(dialect, SCHEMA_SQL[dialect.name].key, table)


def commit_timestamp_columns_query(dialect: Dialect, table: TableId) -> Statement:
    """The columns of ``table`` that hold commit timestamps (the option in GoogleSQL, the type in PostgreSQL).

    >>> "allow_commit_timestamp" in commit_timestamp_columns_query(GOOGLE_SQL, TableId("T")).sql
    True
    >>> "spanner.commit_timestamp" in commit_timestamp_columns_query(POSTGRESQL, TableId("t")).sql
    True
    """
    return _about(dialect, SCHEMA_SQL[dialect.name].commit_timestamp_columns, table)


def watchable_tables_query(dialect: Dialect) -> Statement:
    """The tables of the default schema that have a commit-timestamp column, by name.

    >>> watchable_tables_query(POSTGRESQL).params
    {}
    """
    return dialect.bind(SCHEMA_SQL[dialect.name].watchable_tables, {}, {})


def tables_query(dialect: Dialect, schema: str = "") -> Statement:
    """Every table of ``schema`` (default: the default schema), by name.

    >>> tables_query(POSTGRESQL).params
    {'p1': 'public'}
    """
    return _about(dialect, SCHEMA_SQL[dialect.name].tables, TableId("", schema=schema))
