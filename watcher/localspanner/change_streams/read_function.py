"""``SELECT ChangeRecord FROM READ_<stream>(...)`` (or ``SELECT *``): recognised before SQL translation, arguments checked.

Arguments go by position (start_timestamp, end_timestamp, partition_token,
heartbeat_milliseconds, read_options) or by name (``name => value``); a value is a query
parameter (``@p``), ``NULL``, an integer, a string, or ``TIMESTAMP '...'``.

Example:
    >>> from watcher.localspanner.common.requests import Statement
    >>> sql = "SELECT ChangeRecord FROM READ_S(start_timestamp => '2024-01-01T00:00:00Z', heartbeat_milliseconds => 1000)"
    >>> is_change_stream_read(sql), is_change_stream_read("SELECT * FROM READ_S(NULL)")
    (True, True)
    >>> r = parse(Statement(sql)); (r.stream, r.start, r.end, r.token, r.heartbeat_ms)
    ('S', 1704067200000000000, None, None, 1000)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import errors
from ..common.requests import Statement
from ..datamodel import values

ARGUMENTS = ("start_timestamp", "end_timestamp", "partition_token", "heartbeat_milliseconds", "read_options")
MIN_HEARTBEAT_MS = 1_000
MAX_HEARTBEAT_MS = 300_000

_HEAD = re.compile(r"\s*SELECT\s+(?:ChangeRecord|\*)\s+FROM\s+READ_", re.IGNORECASE)
_WHOLE = re.compile(r"\s*SELECT\s+(?:ChangeRecord|\*)\s+FROM\s+READ_([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*;?\s*", re.IGNORECASE | re.DOTALL)
_NAMED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(.*)", re.DOTALL)
_TIMESTAMP_LITERAL = re.compile(r"TIMESTAMP\s*('(?:[^']|'')*'|\"[^\"]*\")", re.IGNORECASE)


@dataclass(frozen=True)
class ReadRequest:
    """A change stream query's arguments (timestamps in nanoseconds)."""

    stream: str
    start: int
    end: int | None
    token: str | None
    heartbeat_ms: int


def is_change_stream_read(sql: str) -> bool:
    """True when ``sql`` calls a change stream's read function (cheap: every query is asked)."""
    return _HEAD.match(sql) is not None


def _split(args: str) -> list[str]:
    """Top-level comma-separated arguments (commas inside quotes and parentheses stay)."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in args:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current))
    return parts


def _value(text: str, statement: Statement, argument: str) -> tuple[Any, str]:
    """(wire value, kind) of an argument: kind is 'param:<TYPE>', 'timestamp', 'string', 'int' or 'null'."""
    text = text.strip()
    if text.startswith("@"):
        name = text[1:]
        if name not in statement.params:
            raise errors.change_stream_read_bad_argument(argument, f"no value for the query parameter @{name}")
        t = statement.param_types.get(name)
        return statement.params[name], f"param:{t.code.name if t is not None else ''}"
    if text.upper() == "NULL":
        return None, "null"
    m = _TIMESTAMP_LITERAL.fullmatch(text)
    if m:
        return m.group(1)[1:-1], "timestamp"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1], "string"
    if re.fullmatch(r"[+-]?\d+", text):
        return text, "int"
    raise errors.change_stream_read_bad_argument(argument, f"{text!r} is not a parameter or a literal")


def _timestamp(argument: str, wire: Any, kind: str) -> int | None:
    if wire is None:
        return None
    if kind in ("int", "param:INT64", "param:BOOL", "param:FLOAT64"):
        raise errors.change_stream_read_bad_argument(argument, "expected a TIMESTAMP")
    try:
        return values.parse_timestamp(str(wire))
    except Exception:  # any unparsable text is the caller's error, named by argument
        raise errors.change_stream_read_bad_argument(argument, f"{wire!r} is not a timestamp") from None


def _int(argument: str, wire: Any, kind: str) -> int | None:
    if wire is None:
        return None
    if kind in ("timestamp", "param:TIMESTAMP", "param:BOOL"):
        raise errors.change_stream_read_bad_argument(argument, "expected an INT64")
    try:
        return int(str(wire))
    except ValueError:
        raise errors.change_stream_read_bad_argument(argument, f"{wire!r} is not an INT64") from None


def parse(statement: Statement) -> ReadRequest:
    """The stream and checked arguments of a change stream query (errors name the argument)."""
    m = _WHOLE.fullmatch(statement.sql)
    if m is None:
        raise errors.change_stream_read_syntax("expected SELECT ChangeRecord FROM READ_<stream>(arguments) or SELECT * FROM READ_<stream>(arguments)")
    given: dict[str, tuple[Any, str]] = {}
    for i, part in enumerate(_split(m.group(2))):
        named = _NAMED.fullmatch(part)
        if named:
            name, text = named.group(1).lower(), named.group(2)
            if name not in ARGUMENTS:
                raise errors.change_stream_read_syntax(f"unknown argument {named.group(1)}")
        elif i < len(ARGUMENTS):
            name, text = ARGUMENTS[i], part
        else:
            raise errors.change_stream_read_syntax(f"at most {len(ARGUMENTS)} arguments")
        if name in given:
            raise errors.change_stream_read_syntax(f"argument {name} given twice")
        given[name] = _value(text, statement, name)
    start = _timestamp("start_timestamp", *given.get("start_timestamp", (None, "null")))
    if start is None:
        raise errors.change_stream_read_missing_argument("start_timestamp")
    end = _timestamp("end_timestamp", *given.get("end_timestamp", (None, "null")))
    if end is not None and end < start:
        raise errors.change_stream_end_before_start(values.nanos_to_rfc3339(start), values.nanos_to_rfc3339(end))
    token_wire, token_kind = given.get("partition_token", (None, "null"))
    if token_wire is not None and token_kind not in ("string", "param:STRING", "param:"):
        raise errors.change_stream_read_bad_argument("partition_token", "expected a STRING")
    heartbeat = _int("heartbeat_milliseconds", *given.get("heartbeat_milliseconds", (None, "null")))
    if heartbeat is None:
        raise errors.change_stream_read_missing_argument("heartbeat_milliseconds")
    if not MIN_HEARTBEAT_MS <= heartbeat <= MAX_HEARTBEAT_MS:
        raise errors.heartbeat_out_of_range(heartbeat)
    if given.get("read_options", (None, "null"))[0] is not None:
        raise errors.read_options_not_null()
    return ReadRequest(m.group(1), start, end, None if token_wire is None else str(token_wire), heartbeat)
