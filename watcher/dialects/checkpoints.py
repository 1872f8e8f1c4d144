"""The statements of the watcher's own tables in both dialects (the checkpoint table, the change-stream
progress table): create them, add the position column, read rows by query.

A GoogleSQL database keeps the Java library's names (``LAST_SEEN_COMMIT_TIMESTAMPS``, ``DATABASE_NAME``,
``SHARD_ID_INT64``, ...). A PostgreSQL database gets the same names in lower case, as PostgreSQL folds
unquoted names (``last_seen_commit_timestamps.database_name``), so the table reads naturally there;
:func:`checkpoint_name` gives each name in each dialect, for mutations and reads too. Its types are
PostgreSQL's (``varchar``, ``bigint``, ``timestamptz``, ...; :func:`watcher.dialects.types.postgresql_type`).

Example:
    >>> print(create_table_sql(POSTGRESQL, "CP", [("K", "STRING(MAX)", True), ("Ts", "TIMESTAMP", True), ("P", "STRING(MAX)", False)], ["K"]))
    CREATE TABLE "cp" (
      "k" varchar NOT NULL,
      "ts" timestamptz NOT NULL,
      "p" varchar,
      PRIMARY KEY ("k")
    )
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.cloud.spanner_v1 import param_types

from .base import GOOGLE_SQL, POSTGRESQL, Dialect, Statement, dialect_of
from .ddl import DDL_SQL, column_definition_type
from .types import ddl_type

#: How each dialect spells the checkpoint table's names: as the Java library does, or folded as PostgreSQL folds.
_NAMES: dict[str, Callable[[str], str]] = {GOOGLE_SQL.name: str, POSTGRESQL.name: str.lower}


def checkpoint_name(dialect: Dialect, name: str) -> str:
    """The checkpoint table's (or one of its columns') name in ``dialect``.

    >>> checkpoint_name(GOOGLE_SQL, "DATABASE_NAME"), checkpoint_name(POSTGRESQL, "DATABASE_NAME")
    ('DATABASE_NAME', 'database_name')
    """
    return _NAMES[dialect.name](name)


class InDatabaseDialect:
    """What a store of a table in ``self.database`` needs of its dialect: the dialect (found once, from
    the database) and the table's and columns' names in it. The checkpoint and progress stores share it.

    >>> class Store(InDatabaseDialect):
    ...     database_dialect = 2
    ...     def __init__(self):
    ...         self.database = self
    >>> Store().dialect.name, Store()._name("DATABASE_NAME")
    ('PostgreSQL', 'database_name')
    """

    database: Any
    _dialect: Dialect | None = None

    @property
    def dialect(self) -> Dialect:
        """The dialect of the database holding the table."""
        if self._dialect is None:
            self._dialect = dialect_of(self.database)
        return self._dialect

    def _name(self, name: str) -> str:
        """The table's or a column's name in the database's dialect."""
        return checkpoint_name(self.dialect, name)


def _quote(dialect: Dialect, name: str, what: str = "identifier") -> str:
    return dialect.quote(checkpoint_name(dialect, name), what)


def create_table_sql(dialect: Dialect, table: str, columns: Sequence[tuple[str, str, bool]], key: Sequence[str],
                     commit_timestamps: Sequence[str] = ()) -> str:
    """CREATE TABLE for ``columns`` (name, GoogleSQL type, NOT NULL) with primary key ``key``; the columns
    named in ``commit_timestamps`` (TIMESTAMP) hold commit timestamps.

    >>> create_table_sql(POSTGRESQL, "P", [("K", "STRING(MAX)", True), ("At", "TIMESTAMP", True)], ["K"], ["At"]).splitlines()[2]
    '  "at" spanner.commit_timestamp NOT NULL,'
    >>> create_table_sql(GOOGLE_SQL, "P", [("At", "TIMESTAMP", True)], [], ["At"]).splitlines()[1]
    '  `At` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),'

    >>> print(create_table_sql(GOOGLE_SQL, "CP", [("K", "STRING(MAX)", True)], ["K"]))
    CREATE TABLE `CP` (
      `K` STRING(MAX) NOT NULL,
    ) PRIMARY KEY (`K`)
    """
    spelled = DDL_SQL[dialect.name]  # the schema helpers' spellings: one source for every CREATE TABLE

    def column(name: str, google: str, not_null: bool) -> str:
        quoted, null = _quote(dialect, name), " NOT NULL" if not_null else ""
        if name in commit_timestamps:
            return f"  {spelled.commit_timestamp_column.format(name=quoted, not_null=null)},\n"
        return f"  {quoted} {column_definition_type(dialect, google)}{null},\n"  # lengths as the migrations have them

    return spelled.create_table.format(exists="", table=_quote(dialect, table, "checkpoint table"),
                                       columns="".join(column(n, t, not_null) for n, t, not_null in columns),
                                       key=", ".join(_quote(dialect, k) for k in key))


def add_column_sql(dialect: Dialect, table: str, column: str, google_type: str) -> str:
    """ALTER TABLE ... ADD COLUMN, the column's type given by its GoogleSQL name.

    >>> add_column_sql(POSTGRESQL, "CP", "LAST_SEEN_POSITION", "STRING(MAX)")
    'ALTER TABLE "cp" ADD COLUMN "last_seen_position" varchar'
    """
    return (f"ALTER TABLE {_quote(dialect, table, 'checkpoint table')} ADD COLUMN {_quote(dialect, column)} "
            f"{ddl_type(dialect, google_type)}")


#: A watched table's rows: each key column and the parameter it is compared with.
_ROW_FILTER = (("DATABASE_NAME", "db"), ("TABLE_CATALOG", "catalog"), ("TABLE_SCHEMA", "schema"), ("TABLE_NAME", "table"))


def _filter(dialect: Dialect) -> str:
    return " AND ".join(f"{_quote(dialect, column)} = @{param}" for column, param in _ROW_FILTER)


def _bind(dialect: Dialect, sql: str, database: str, catalog: str, schema: str, table: str) -> Statement:
    params = {"db": database, "catalog": catalog, "schema": schema, "table": table}
    return dialect.bind(sql, params, {k: param_types.STRING for k in params})


def oldest_sql(dialect: Dialect, table: str, database: str, catalog: str, schema: str, watched: str) -> Statement:
    """The oldest LAST_SEEN_COMMIT_TIMESTAMP stored for any shard of one watched table.

    >>> print(oldest_sql(POSTGRESQL, "CP", "db", "", "", "T").sql)
    SELECT MIN("last_seen_commit_timestamp") FROM "cp" WHERE "database_name" = $1 AND "table_catalog" = $2 AND "table_schema" = $3 AND "table_name" = $4
    """
    sql = (f"SELECT MIN({_quote(dialect, 'LAST_SEEN_COMMIT_TIMESTAMP')}) FROM {_quote(dialect, table, 'checkpoint table')} "
           f"WHERE {_filter(dialect)}")
    return _bind(dialect, sql, database, catalog, schema, watched)


def text_rows_sql(dialect: Dialect, table: str, text_column: str, null_columns: Sequence[str], select: Sequence[str],
                  database: str, catalog: str, schema: str, watched: str) -> Statement:
    """The rows of one watched table whose ``text_column`` is set and ``null_columns`` are NULL
    (its array shards' rows), with the ``select`` columns.

    >>> print(text_rows_sql(GOOGLE_SQL, "CP", "S", ["I"], ["S", "P"], "db", "", "", "T").sql)
    SELECT `S`, `P` FROM `CP` WHERE `DATABASE_NAME` = @db AND `TABLE_CATALOG` = @catalog AND `TABLE_SCHEMA` = @schema AND `TABLE_NAME` = @table AND `S` IS NOT NULL AND `I` IS NULL
    """
    nulls = "".join(f" AND {_quote(dialect, c)} IS NULL" for c in null_columns)
    sql = (f"SELECT {', '.join(_quote(dialect, c) for c in select)} FROM {_quote(dialect, table, 'checkpoint table')} "
           f"WHERE {_filter(dialect)} AND {_quote(dialect, text_column)} IS NOT NULL{nulls}")
    return _bind(dialect, sql, database, catalog, schema, watched)


