"""What a watcher needs to know about a table, read from INFORMATION_SCHEMA in the database's dialect.

The queries are :mod:`watcher.dialects.schema`'s; column types are kept in GoogleSQL's names in both
dialects (:func:`watcher.dialects.types.google_type`). A table named in another case than the database
spells it (``Singers`` for PostgreSQL's folded ``singers``) is found under its real name, which the poll
queries then use; Spanner allows no two tables whose names differ only in case.

Example::

    info = discover(database, "Singers")
    info.commit_timestamp_column, info.key_columns    # ('LastUpdated', ('SingerId',))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeGuard

from google.api_core import exceptions as gexc
from google.cloud.spanner_v1 import param_types

from ..dialects import GOOGLE_SQL, POSTGRESQL, Dialect, Statement, dialect_of
from ..dialects.schema import (
    SCHEMA_SQL,
    columns_query,
    commit_timestamp_columns_query,
    key_query,
    tables_query,
    watchable_tables_query,
)
from ..dialects.types import column_type, dialect_param_type
from ..errors import ColumnNotFoundError, TableNotFoundError, TableNotWatchableError
from ..model import TableId
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import find_name

#: Tables of the default schema with a commit-timestamp column in a GoogleSQL database (the texts of
#: both dialects are :data:`watcher.dialects.schema.SCHEMA_SQL`).
TABLES_SQL = SCHEMA_SQL[GOOGLE_SQL.name].watchable_tables

# What Spanner (and the emulator) answer a query on a table that does not exist (was dropped):
# INVALID_ARGUMENT "Table not found: T"; some servers use NOT_FOUND. PostgreSQL databases say
# 'relation "t" does not exist'.
_TABLE_NOT_FOUND = re.compile(r'table not found|table \S+ (was )?not found|no such table|relation "?[\w.]+"? does not exist',
                              re.IGNORECASE)


def is_table_not_found(exc: BaseException) -> TypeGuard[gexc.GoogleAPICallError]:
    """Whether a query's error says that a table it reads does not exist (it was dropped).

    >>> is_table_not_found(gexc.InvalidArgument("Table not found: Items")), is_table_not_found(gexc.Aborted("x"))
    (True, False)
    """
    return isinstance(exc, (gexc.NotFound, gexc.InvalidArgument)) and bool(_TABLE_NOT_FOUND.search(str(exc)))


#: Spanner type names (as INFORMATION_SCHEMA.COLUMNS.SPANNER_TYPE prints them) to client parameter types.
_PARAM_TYPES = {
    "BOOL": param_types.BOOL, "INT64": param_types.INT64, "FLOAT64": param_types.FLOAT64,
    "STRING": param_types.STRING, "BYTES": param_types.BYTES, "DATE": param_types.DATE,
    "TIMESTAMP": param_types.TIMESTAMP, "NUMERIC": param_types.NUMERIC, "JSON": param_types.JSON,
    "FLOAT32": param_types.FLOAT32, "UUID": param_types.UUID, "INTERVAL": param_types.INTERVAL,
}


def param_type_for(spanner_type: str) -> Any:
    """The client parameter type of a SPANNER_TYPE such as 'STRING(MAX)' (None for arrays and others).

    >>> param_type_for("STRING(200)") == param_types.STRING
    True
    """
    return _PARAM_TYPES.get(spanner_type.split("(", 1)[0].strip().upper())


@dataclass(frozen=True)
class TableInfo:
    """A watched table: its name, key columns in order, column types (as SPANNER_TYPE prints
    them) and the commit-timestamp column polled (``""`` for a table watched through a helper
    table, whose changes carry the helper row's commit timestamp). ``commit_timestamp_option``
    says whether that column has ``allow_commit_timestamp=true`` (a column given explicitly
    may lack it; in a PostgreSQL database: whether its type is ``spanner.commit_timestamp``).
    ``dialect`` is the database's: the poll queries are written in it."""

    table: TableId
    commit_timestamp_column: str
    key_columns: tuple[str, ...]
    column_types: dict[str, str]
    commit_timestamp_option: bool = True
    dialect: Dialect = GOOGLE_SQL

    def key_param_types(self) -> list[Any]:
        return [dialect_param_type(self.dialect, self.column_types[k], param_type_for(self.column_types[k]))
                for k in self.key_columns]


#: What makes a column a commit-timestamp column, in each dialect's words (for the errors).
COMMIT_TIMESTAMP_MARK = {
    GOOGLE_SQL.name: "the option allow_commit_timestamp=true",
    POSTGRESQL.name: "the type spanner.commit_timestamp",
}


def _query(snapshot: Any, statement: Statement, settings: RequestSettings | None = None) -> list[list[Any]]:
    return list(snapshot.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                     request_options=settings_or_default(settings).request_options(with_priority=False)))


def _columns(snap: Any, dialect: Dialect, table: TableId, settings: RequestSettings | None) -> tuple[TableId, dict[str, str]]:
    """The table under its real name and its columns (GoogleSQL type names); no columns: no such table."""
    columns = {name: column_type(dialect, t) for name, t in _query(snap, columns_query(dialect, table), settings)}
    if columns:
        return table, columns
    real = find_name({r[0]: r[0] for r in _query(snap, tables_query(dialect, table.schema), settings)}, table.table)
    if real is None or real == table.table:
        return table, {}
    return _columns(snap, dialect, TableId(real, table.catalog, table.schema), settings)


def discover(database: Any, table: TableId | str, commit_timestamp_column: str | None = None, *,
             request_settings: RequestSettings | None = None, dialect: Dialect | None = None) -> TableInfo:
    """Columns, primary key and commit-timestamp column of ``table``, or a clear error.

    ``dialect`` None: the database's (:func:`~watcher.dialects.dialect_of`). The schema queries carry
    ``request_settings``' request tag (no priority: they are not polls).
    """
    table = TableId(table) if isinstance(table, str) else table
    dialect = dialect or dialect_of(database)
    settings = request_settings
    with database.snapshot(multi_use=True) as snap:
        table, columns = _columns(snap, dialect, table, settings)
        if not columns:
            raise TableNotFoundError(str(table))
        key = tuple(r[0] for r in _query(snap, key_query(dialect, table), settings))
        candidates = [r[0] for r in _query(snap, commit_timestamp_columns_query(dialect, table), settings)]
        if commit_timestamp_column is None:
            if not candidates:
                raise TableNotWatchableError(str(table), f"it has no column with {COMMIT_TIMESTAMP_MARK[dialect.name]}")
            commit_timestamp_column = candidates[0]
    if commit_timestamp_column not in columns:
        match = find_name({c: c for c in columns}, commit_timestamp_column)
        if match is None:
            raise ColumnNotFoundError(str(table), commit_timestamp_column, "it cannot be the commit-timestamp column")
        commit_timestamp_column = match
    if columns[commit_timestamp_column] != "TIMESTAMP":
        raise TableNotWatchableError(str(table), f"column {commit_timestamp_column} is {columns[commit_timestamp_column]}, not TIMESTAMP")
    has_option = find_name({c: c for c in candidates}, commit_timestamp_column) is not None
    return TableInfo(table, commit_timestamp_column, key, columns, has_option, dialect)


def recheck(database: Any, info: TableInfo, reason: str = "", *, request_settings: RequestSettings | None = None) -> TableInfo:
    """``info``'s table as it is now, or the error that makes it unwatchable now: the table
    dropped, its commit-timestamp column dropped or retyped, or that column's
    ``allow_commit_timestamp`` option removed while it was watched (writers could then store
    any past timestamp, and polling would miss those rows)."""
    now = discover(database, info.table, info.commit_timestamp_column, request_settings=request_settings,
                   dialect=info.dialect)
    if info.commit_timestamp_option and not now.commit_timestamp_option:
        raise TableNotWatchableError(str(info.table), f"column {info.commit_timestamp_column} no longer has "
                                     f"{COMMIT_TIMESTAMP_MARK[info.dialect.name]}" + (f" ({reason})" if reason else ""))
    return now


def watchable_tables(database: Any, *, request_settings: RequestSettings | None = None,
                     dialect: Dialect | None = None) -> list[str]:
    """Tables of the default schema that have a commit-timestamp column, by name."""
    statement = watchable_tables_query(dialect or dialect_of(database))
    with database.snapshot() as snap:
        return [r[0] for r in _query(snap, statement, request_settings)]


def describe(database: Any, table: TableId | str, *, request_settings: RequestSettings | None = None,
             dialect: Dialect | None = None) -> TableInfo:
    """Columns and primary key of ``table``, watched without a commit-timestamp column (a change
    stream's table, say): ``commit_timestamp_column`` is ``""``."""
    table = TableId(table) if isinstance(table, str) else table
    dialect = dialect or dialect_of(database)
    with database.snapshot(multi_use=True) as snap:
        table, columns = _columns(snap, dialect, table, request_settings)
        if not columns:
            raise TableNotFoundError(str(table))
        key = tuple(r[0] for r in _query(snap, key_query(dialect, table), request_settings))
    return TableInfo(table, "", key, columns, commit_timestamp_option=False, dialect=dialect)
