"""What a watcher needs to know about a table, read from INFORMATION_SCHEMA.

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

from ..errors import ColumnNotFoundError, TableNotFoundError, TableNotWatchableError
from ..model import TableId
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import find_name

_COLUMNS_SQL = (
    "SELECT COLUMN_NAME, SPANNER_TYPE FROM INFORMATION_SCHEMA.COLUMNS "
    "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema AND TABLE_NAME = @table ORDER BY ORDINAL_POSITION"
)
# Every option row is looked at: a column may carry other options besides allow_commit_timestamp.
_COMMIT_TS_SQL = (
    "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMN_OPTIONS "
    "WHERE TABLE_CATALOG = @catalog AND TABLE_SCHEMA = @schema AND TABLE_NAME = @table "
    "AND OPTION_NAME = 'allow_commit_timestamp' AND OPTION_VALUE = 'TRUE' ORDER BY COLUMN_NAME"
)
_KEY_SQL = (
    "SELECT INDEX_COLUMNS.COLUMN_NAME FROM INFORMATION_SCHEMA.INDEXES AS INDEXES "
    "JOIN INFORMATION_SCHEMA.INDEX_COLUMNS AS INDEX_COLUMNS "
    "ON INDEXES.TABLE_CATALOG = INDEX_COLUMNS.TABLE_CATALOG AND INDEXES.TABLE_SCHEMA = INDEX_COLUMNS.TABLE_SCHEMA "
    "AND INDEXES.TABLE_NAME = INDEX_COLUMNS.TABLE_NAME AND INDEXES.INDEX_NAME = INDEX_COLUMNS.INDEX_NAME "
    "WHERE INDEXES.TABLE_CATALOG = @catalog AND INDEXES.TABLE_SCHEMA = @schema AND INDEXES.TABLE_NAME = @table "
    "AND INDEXES.INDEX_TYPE = 'PRIMARY_KEY' ORDER BY INDEX_COLUMNS.ORDINAL_POSITION"
)
#: Tables of the default schema with a commit-timestamp column (also read with its read timestamp by table_set).
TABLES_SQL = (
    "SELECT DISTINCT TABLES.TABLE_NAME FROM INFORMATION_SCHEMA.TABLES AS TABLES "
    "JOIN INFORMATION_SCHEMA.COLUMN_OPTIONS AS OPTIONS "
    "ON TABLES.TABLE_CATALOG = OPTIONS.TABLE_CATALOG AND TABLES.TABLE_SCHEMA = OPTIONS.TABLE_SCHEMA "
    "AND TABLES.TABLE_NAME = OPTIONS.TABLE_NAME "
    "WHERE TABLES.TABLE_CATALOG = '' AND TABLES.TABLE_SCHEMA = '' "
    "AND OPTIONS.OPTION_NAME = 'allow_commit_timestamp' AND OPTIONS.OPTION_VALUE = 'TRUE' "
    "ORDER BY TABLES.TABLE_NAME"
)

# What Spanner (and the emulator) answer a query on a table that does not exist (was dropped):
# INVALID_ARGUMENT "Table not found: T"; some servers use NOT_FOUND.
_TABLE_NOT_FOUND = re.compile(r"table not found|table \S+ (was )?not found|no such table", re.IGNORECASE)


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
    may lack it)."""

    table: TableId
    commit_timestamp_column: str
    key_columns: tuple[str, ...]
    column_types: dict[str, str]
    commit_timestamp_option: bool = True

    def key_param_types(self) -> list[Any]:
        return [param_type_for(self.column_types[k]) for k in self.key_columns]


def _query(snapshot: Any, sql: str, table: TableId, settings: RequestSettings | None = None) -> list[list[Any]]:
    params = {"catalog": table.catalog, "schema": table.schema, "table": table.table}
    return list(snapshot.execute_sql(sql, params=params, param_types={k: param_types.STRING for k in params},
                                     request_options=settings_or_default(settings).request_options(with_priority=False)))


def discover(database: Any, table: TableId | str, commit_timestamp_column: str | None = None, *,
             request_settings: RequestSettings | None = None) -> TableInfo:
    """Columns, primary key and commit-timestamp column of ``table``, or a clear error.

    The schema queries carry ``request_settings``' request tag (no priority: they are not polls).
    """
    table = TableId(table) if isinstance(table, str) else table
    settings = request_settings
    with database.snapshot(multi_use=True) as snap:
        columns = {name: spanner_type for name, spanner_type in _query(snap, _COLUMNS_SQL, table, settings)}
        if not columns:
            raise TableNotFoundError(str(table))
        key = tuple(r[0] for r in _query(snap, _KEY_SQL, table, settings))
        candidates = [r[0] for r in _query(snap, _COMMIT_TS_SQL, table, settings)]
        if commit_timestamp_column is None:
            if not candidates:
                raise TableNotWatchableError(str(table), "it has no column with the option allow_commit_timestamp=true")
            commit_timestamp_column = candidates[0]
    if commit_timestamp_column not in columns:
        match = find_name({c: c for c in columns}, commit_timestamp_column)
        if match is None:
            raise ColumnNotFoundError(str(table), commit_timestamp_column, "it cannot be the commit-timestamp column")
        commit_timestamp_column = match
    if columns[commit_timestamp_column] != "TIMESTAMP":
        raise TableNotWatchableError(str(table), f"column {commit_timestamp_column} is {columns[commit_timestamp_column]}, not TIMESTAMP")
    has_option = find_name({c: c for c in candidates}, commit_timestamp_column) is not None
    return TableInfo(table, commit_timestamp_column, key, columns, has_option)


def recheck(database: Any, info: TableInfo, reason: str = "", *, request_settings: RequestSettings | None = None) -> TableInfo:
    """``info``'s table as it is now, or the error that makes it unwatchable now: the table
    dropped, its commit-timestamp column dropped or retyped, or that column's
    ``allow_commit_timestamp`` option removed while it was watched (writers could then store
    any past timestamp, and polling would miss those rows)."""
    now = discover(database, info.table, info.commit_timestamp_column, request_settings=request_settings)
    if info.commit_timestamp_option and not now.commit_timestamp_option:
        raise TableNotWatchableError(str(info.table), f"column {info.commit_timestamp_column} no longer has the option "
                                     "allow_commit_timestamp=true" + (f" ({reason})" if reason else ""))
    return now


def watchable_tables(database: Any, *, request_settings: RequestSettings | None = None) -> list[str]:
    """Tables of the default schema that have a commit-timestamp column, by name."""
    options = settings_or_default(request_settings).request_options(with_priority=False)
    with database.snapshot() as snap:
        return [r[0] for r in snap.execute_sql(TABLES_SQL, request_options=options)]


def describe(database: Any, table: TableId | str, *, request_settings: RequestSettings | None = None) -> TableInfo:
    """Columns and primary key of ``table``, watched without a commit-timestamp column (a change
    stream's table, say): ``commit_timestamp_column`` is ``""``."""
    table = TableId(table) if isinstance(table, str) else table
    with database.snapshot(multi_use=True) as snap:
        columns = {name: spanner_type for name, spanner_type in _query(snap, _COLUMNS_SQL, table, request_settings)}
        if not columns:
            raise TableNotFoundError(str(table))
        key = tuple(r[0] for r in _query(snap, _KEY_SQL, table, request_settings))
    return TableInfo(table, "", key, columns, commit_timestamp_option=False)
