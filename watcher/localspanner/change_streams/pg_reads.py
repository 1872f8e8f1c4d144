"""A PostgreSQL database's change stream query: ``SELECT * FROM spanner.read_json_<stream>(...)``.

The query takes the GoogleSQL read function's arguments by position (start timestamp, end
timestamp, partition token, heartbeat milliseconds, read options) and answers one JSONB
column, ``read_json_<stream>``, a row per ChangeRecord: an object holding the one record it
is (``data_change_record``, ``heartbeat_record`` or ``child_partitions_record``), its fields
named as in the GoogleSQL STRUCT, INT64 fields as numbers, and keys, values and column types
as JSON objects. It runs as ``SELECT * FROM READ_<stream>(...)`` (:func:`as_google_sql`) and
its rows are reshaped (:func:`json_rows`); ``::type`` casts of the arguments are dropped.

Example:
    >>> as_google_sql("SELECT * FROM spanner.read_json_Singers($1::timestamptz, NULL, $2, 1000, null)")
    'SELECT * FROM READ_singers(@p1, NULL, @p2, 1000, null)'
    >>> as_google_sql("SELECT * FROM singers") is None
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from .. import types as T
from ..requests import Field, ResultStream
from ..types import SpannerType, TypeCode

_READ_JSON = re.compile(r"\s*SELECT\s+\*\s+FROM\s+spanner\s*\.\s*read_json_(\"[^\"]+\"|\w+)\s*\((.*)\)\s*;?\s*\Z",
                        re.IGNORECASE | re.DOTALL)
_PARAMETER = re.compile(r"\$(\d+)")
_CAST = re.compile(r"::\s*[A-Za-z_][\w ]*?(?=\s*(?:,|\)|$))")


def as_google_sql(sql: str) -> str | None:
    """The GoogleSQL change stream query a ``spanner.read_json_<stream>`` query stands for (None: not one)."""
    m = _READ_JSON.fullmatch(sql)
    if m is None:
        return None
    name = m.group(1)
    name = name[1:-1] if name.startswith('"') else name.lower()
    arguments = _PARAMETER.sub(lambda p: f"@p{p.group(1)}", _CAST.sub("", m.group(2)))
    return f"SELECT * FROM READ_{name}({arguments})"


def column_name(sql: str) -> str:
    """The result column's name: ``read_json_<stream>`` as written (folded to lower case unless quoted)."""
    m = _READ_JSON.fullmatch(sql)
    assert m is not None
    name = m.group(1)
    return "read_json_" + (name[1:-1] if name.startswith('"') else name.lower())


def json_rows(result: ResultStream, sql: str) -> ResultStream:
    """``result`` of the GoogleSQL read function as the PostgreSQL one answers it: one JSONB column."""
    (field,) = result.fields
    result.fields = [Field(column_name(sql), T.JSON)]
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
