"""A PostgreSQL database's change stream query: ``SELECT * FROM spanner.read_json_<stream>(...)``.

The query takes the GoogleSQL read function's arguments by position (start timestamp, end
timestamp, partition token, heartbeat milliseconds, read options). A stream in the original
partition mode is read with ``read_json_<stream>``, one JSONB column a row per ChangeRecord: an
object holding the one record it is (``data_change_record``, ``heartbeat_record`` or
``child_partitions_record``), its fields named as in the GoogleSQL STRUCT, INT64 fields as
numbers, and keys, values and column types as JSON objects. A ``MUTABLE_KEY_RANGE`` stream is
read with ``read_proto_bytes_<stream>``, one BYTES column a row: the serialized
``google.spanner.v1.ChangeStreamRecord``. Either runs as ``SELECT * FROM READ_<stream>(...)``
(:func:`as_google_sql`) and its rows are reshaped (:func:`json_rows`); ``::type`` casts of the
arguments are dropped. The function's name is written bare (folded to lower case) or
double-quoted whole (``spanner."read_json_Everything"``, for a stream named with upper case).

Example:
    >>> as_google_sql("SELECT * FROM spanner.read_json_Singers($1::timestamptz, NULL, $2, 1000, null)")
    'SELECT * FROM READ_singers(@p1, NULL, @p2, 1000, null)'
    >>> as_google_sql('SELECT * FROM "spanner"."read_proto_bytes_Singers"($1, $2, $3, $4, null)')
    'SELECT * FROM READ_Singers(@p1, @p2, @p3, @p4, null)'
    >>> read_function('SELECT * FROM spanner.read_proto_bytes_s($1, $2, $3, $4, null)')
    ReadFunction(prefix='read_proto_bytes_', stream='s')
    >>> as_google_sql("SELECT * FROM singers") is None
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from .. import errors
from ..common.requests import Field, ResultStream
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode

#: The read functions' prefixes: the original partition mode's and MUTABLE_KEY_RANGE's.
JSON, PROTO_BYTES = "read_json_", "read_proto_bytes_"
_READ = re.compile(r'\s*SELECT\s+\*\s+FROM\s+(?:spanner|"spanner")\s*\.\s*'
                   r'(?:"(?P<qprefix>read_json_|read_proto_bytes_)(?P<quoted>[^"]+)"'
                   r'|(?P<prefix>(?i:read_json_|read_proto_bytes_))(?P<bare>\w+))'
                   r'\s*\((?P<arguments>.*)\)\s*;?\s*\Z', re.IGNORECASE | re.DOTALL)
_PARAMETER = re.compile(r"\$(\d+)")
_CAST = re.compile(r"::\s*[A-Za-z_][\w ]*?(?=\s*(?:,|\)|$))")


class ReadFunction(NamedTuple):
    """Which read function a query calls, and of which stream (as the schema's names are matched)."""

    prefix: str
    stream: str

    @property
    def name(self) -> str:
        return self.prefix + self.stream


def read_function(sql: str) -> ReadFunction | None:
    """The read function ``sql`` calls (None: not a change stream query)."""
    m = _READ.fullmatch(sql)
    if m is None:
        return None
    if m.group("quoted") is not None:
        return ReadFunction(m.group("qprefix"), m.group("quoted"))
    return ReadFunction(m.group("prefix").lower(), m.group("bare").lower())


def as_google_sql(sql: str) -> str | None:
    """The GoogleSQL change stream query a ``spanner.read_json_<stream>`` or ``read_proto_bytes_<stream>``
    query stands for (None: not one)."""
    m = _READ.fullmatch(sql)
    function = read_function(sql)
    if m is None or function is None:
        return None
    arguments = _PARAMETER.sub(lambda p: f"@p{p.group(1)}", _CAST.sub("", m.group("arguments")))
    return f"SELECT * FROM READ_{function.stream}({arguments})"


def check_mode(function: ReadFunction, mutable: bool) -> None:
    """INVALID_ARGUMENT when ``function`` is not the read function of a stream in that partition mode.

    >>> check_mode(ReadFunction(JSON, "s"), mutable=True)
    Traceback (most recent call last):
    ...
    watcher.localspanner.errors.base.SpannerError: Table-valued function not found: spanner.read_json_s (change stream s is in MUTABLE_KEY_RANGE partition mode: read it with spanner.read_proto_bytes_s).
    """
    right = PROTO_BYTES if mutable else JSON
    if function.prefix != right:
        raise errors.change_stream_read_wrong_function(function.name, function.stream,
                                                       "MUTABLE_KEY_RANGE" if mutable else "IMMUTABLE_KEY_RANGE",
                                                       right + function.stream)


def column_name(sql: str) -> str:
    """The result column's name: the read function's, as written (folded to lower case unless quoted)."""
    function = read_function(sql)
    assert function is not None
    return function.name


def json_rows(result: ResultStream, sql: str) -> ResultStream:
    """``result`` of the GoogleSQL read function as the PostgreSQL one answers it: one JSONB column, or for
    ``read_proto_bytes_<stream>`` one BYTES column of the same serialized records."""
    (field,) = result.fields
    function = read_function(sql)
    assert function is not None
    if function.prefix == PROTO_BYTES:
        result.fields = [Field(function.name, T.BYTES)]  # a PROTO value's wire form is its bytes' base64, as BYTES'
        return result
    result.fields = [Field(function.name, T.JSON)]
    result.rows = _records(result.rows, field.type)
    return result


def _records(rows: Iterator[list[Any]], record_type: SpannerType) -> Iterator[list[Any]]:
    assert record_type.element is not None
    for row in rows:
        for element in _plain(row[0], record_type):
            kind, records = next(((k, v) for k, v in element.items() if v), (None, []))
            if kind is not None:
                yield [json.dumps({kind: records[0]}, separators=(",", ":"), ensure_ascii=False)]


def _plain(wire: Any, t: SpannerType) -> Any:
    """A wire value of ``t`` as JSON data: STRUCTs as objects, INT64 as numbers, JSON text parsed."""
    if wire is None:
        return None
    if t.code == TypeCode.ARRAY:
        assert t.element is not None
        return [_plain(v, t.element) for v in wire]
    if t.code == TypeCode.STRUCT:
        return {name: _plain(v, ft) for (name, ft), v in zip(t.fields, wire, strict=True)}
    if t.code == TypeCode.INT64:
        return int(wire)
    if t.code == TypeCode.JSON:
        return json.loads(wire)
    return wire
