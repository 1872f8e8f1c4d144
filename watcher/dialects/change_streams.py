"""A change stream's statements in both dialects: its read function and what INFORMATION_SCHEMA says of it.

GoogleSQL reads ``READ_<stream>(...)`` with named arguments and gets ChangeRecord structs;
PostgreSQL reads ``spanner.read_json_<stream>($1, $2, $3, $4, NULL)`` and gets one jsonb record per row
(:mod:`watcher.capture.change_streams.json_records`), or for a ``MUTABLE_KEY_RANGE`` stream
``spanner.read_proto_bytes_<stream>(...)`` and one serialized ChangeStreamRecord per row, as GoogleSQL's
``READ_<stream>`` gives it in that mode. The read function's name holds the stream's name
as the schema spells it; in PostgreSQL a name that keeps upper case (created double-quoted) needs the
whole function name double-quoted (``spanner."read_json_Everything"``), a lower-case one is written bare.

Example:
    >>> print(read_query(POSTGRESQL, "everything").sql)
    SELECT * FROM spanner.read_json_everything($1, $2, $3, $4, NULL)
    >>> print(read_query(POSTGRESQL, "Everything").sql.split("(")[0])
    SELECT * FROM spanner."read_json_Everything"
    >>> read_query(POSTGRESQL, "everything").params == {"p1": None, "p2": None, "p3": None, "p4": 1000}
    True
    >>> print(read_query(POSTGRESQL, "everything", mutable_key_range=True).sql.split("(")[0])
    SELECT * FROM spanner.read_proto_bytes_everything
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.cloud.spanner_v1 import param_types

from ..sqlnames import validate_identifier
from .base import GOOGLE_SQL, POSTGRESQL, Dialect, Statement

#: The read function's parameters and their types (the same in both dialects).
READ_PARAM_TYPES = {"start": param_types.TIMESTAMP, "end": param_types.TIMESTAMP, "token": param_types.STRING,
                    "heartbeat": param_types.INT64}


@dataclass(frozen=True)
class ChangeStreamSql:
    """One dialect's change-stream texts; ``{stream}`` is the validated stream name."""

    #: The read function, with ``@start``, ``@end``, ``@token``, ``@heartbeat``.
    read: str
    #: The stream's name as the schema spells it and whether it is FOR ALL, by ``@name`` in any case.
    stream: str
    #: Its options (retention period, value capture type, partition mode).
    options: str
    #: The tables it tracks (not FOR ALL).
    tables: str
    #: Every table of the default schema (FOR ALL).
    all_tables: str


CHANGE_STREAM_SQL: dict[str, ChangeStreamSql] = {
    GOOGLE_SQL.name: ChangeStreamSql(
        read=("SELECT ChangeRecord FROM READ_{stream}(start_timestamp => @start, end_timestamp => @end, "
              "partition_token => @token, heartbeat_milliseconds => @heartbeat)"),
        stream=("SELECT CHANGE_STREAM_NAME, ALL FROM INFORMATION_SCHEMA.CHANGE_STREAMS "
                "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' "
                "AND UPPER(CHANGE_STREAM_NAME) = UPPER(@name)"),
        options=("SELECT OPTION_NAME, OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS "
                 "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' AND CHANGE_STREAM_NAME = @name"),
        tables=("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.CHANGE_STREAM_TABLES "
                "WHERE CHANGE_STREAM_CATALOG = '' AND CHANGE_STREAM_SCHEMA = '' AND CHANGE_STREAM_NAME = @name "
                "ORDER BY TABLE_NAME"),
        all_tables=("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' "
                    "ORDER BY TABLE_NAME"),
    ),
    POSTGRESQL.name: ChangeStreamSql(
        read="SELECT * FROM spanner.{function}(@start, @end, @token, @heartbeat, NULL)",
        stream=("SELECT change_stream_name, \"all\" FROM information_schema.change_streams "
                "WHERE change_stream_schema = 'public' AND upper(change_stream_name) = upper(@name)"),
        options=("SELECT option_name, option_value FROM information_schema.change_stream_options "
                 "WHERE change_stream_schema = 'public' AND change_stream_name = @name"),
        tables=("SELECT table_name FROM information_schema.change_stream_tables "
                "WHERE change_stream_schema = 'public' AND change_stream_name = @name ORDER BY table_name"),
        all_tables=("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                    "AND table_type = 'BASE TABLE' ORDER BY table_name"),
    ),
}


def _postgresql_function(prefix: str) -> Any:
    def name_of(stream: str) -> str:
        name = prefix + stream
        return name if name == name.lower() else f'"{name}"'

    return name_of


#: The read function's name of a stream, by (dialect, MUTABLE_KEY_RANGE) (GoogleSQL's text needs none:
#: READ_{stream} in both partition modes).
_FUNCTION = {(GOOGLE_SQL.name, False): lambda stream: f"READ_{stream}",
             (GOOGLE_SQL.name, True): lambda stream: f"READ_{stream}",
             (POSTGRESQL.name, False): _postgresql_function("read_json_"),
             (POSTGRESQL.name, True): _postgresql_function("read_proto_bytes_")}


def read_query(dialect: Dialect, stream: str, start: Any = None, end: Any = None, token: str | None = None,
               heartbeat_ms: int = 1000, *, mutable_key_range: bool = False) -> Statement:
    """The read function of ``stream`` from ``start`` to ``end`` (None: no end) in partition ``token``
    (None: the first query); ``mutable_key_range``: the stream is in that partition mode.

    >>> read_query(GOOGLE_SQL, "S").sql[:48]
    'SELECT ChangeRecord FROM READ_S(start_timestamp '
    """
    stream = validate_identifier(stream, "change stream")
    function = _FUNCTION[dialect.name, mutable_key_range](stream)
    sql = CHANGE_STREAM_SQL[dialect.name].read.format(stream=stream, function=function)
    return dialect.bind(sql, {"start": start, "end": end, "token": token, "heartbeat": heartbeat_ms}, READ_PARAM_TYPES)


def stream_query(dialect: Dialect, kind: str, name: str = "") -> Statement:
    """One of the INFORMATION_SCHEMA texts (``kind``: stream, options, tables, all_tables) about stream ``name``.

    >>> stream_query(POSTGRESQL, "options", "S").params
    {'p1': 'S'}
    """
    sql = getattr(CHANGE_STREAM_SQL[dialect.name], kind)
    return dialect.bind(sql, {"name": name}, {"name": param_types.STRING})


#: How INFORMATION_SCHEMA.CHANGE_STREAMS.ALL reads in each dialect (BOOL in GoogleSQL, 'YES'/'NO' in PostgreSQL).
_ALL_TRUE = {GOOGLE_SQL.name: lambda value: bool(value), POSTGRESQL.name: lambda value: str(value).upper() == "YES"}


def is_for_all(dialect: Dialect, value: Any) -> bool:
    """Whether the ALL column of CHANGE_STREAMS says the stream tracks every table.

    >>> is_for_all(GOOGLE_SQL, True), is_for_all(POSTGRESQL, "NO"), is_for_all(POSTGRESQL, "YES")
    (True, False, True)
    """
    return _ALL_TRUE[dialect.name](value)
