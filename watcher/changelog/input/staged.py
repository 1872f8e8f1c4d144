"""Batch files read on the driver into change rows, as the job's Spark reader and ``normalize`` make them.

Each line is parsed by Python's JSON parser and checked by the rules of the job's
``staging_reader.bad_record_sql``; the texts the job keeps (``values``, ``types``, the key) are
rendered as Spark's reader renders them (:mod:`.spark_json`). Anything the job would treat as a
bad line or a bad batch, or hold in a form the engine does not reproduce, raises
:class:`~watcher.changelog.input.Ineligible`, so that Spark runs it (and sets bad batches aside).

Example:
    >>> line = ('{"v":1,"batch_id":"b","seq":0,"table":"T","key_columns":["Id"],"keys":["7"],'
    ...         '"commit_timestamp":"2024-05-01T00:00:00.000000001Z","values":{"Id":"7","Score":1.50},'
    ...         '"types":{"Id":"INT64","Score":"FLOAT64"}}')
    >>> row = parse_batch(line + "\\n", "table=T/b.jsonl")[0]
    >>> row.keys, row.json, row.commit_nanos
    ('{"Id":"7"}', '{"Id":"7","Score":1.5}', 1714521600000000001)
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from watcher.staging.contract import READ_FORMAT, REQUIRED_FIELDS, STREAM_FORMAT, TIMESTAMP_PATTERN, batch_name

from ..rules import typed_json
from ..rules.classify import INPUT_MOD_TYPES
from . import Ineligible
from .spark_json import copied, fast_copied, number, plain_float

if TYPE_CHECKING:
    from ..io.arrow_fs import ArrowFS
    from ..io.files import FileEntry

_TIMESTAMP = re.compile(TIMESTAMP_PATTERN, re.ASCII)  # as Java's: ASCII digits only
#: Batch names the engine takes: Spark's file name function would give them unchanged.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.=/-]+$")
_INT32, _INT64 = 2**31, 2**63
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: The fields a record must hold, the staging contract's (the job's ``staging_reader.bad_record_sql`` reads the same).
REQUIRED = REQUIRED_FIELDS
#: Fields the engine does not take when set (history tables' versions, partial rows): Spark runs them.
MUST_BE_NULL = ("version_seq", "value_capture_type")


@dataclass(slots=True)
class StagedRow:
    """One staged change, in the fields the driver engine's window reads."""

    table: str
    key_columns: list[str]
    keys: str
    json: str
    types_json: str
    commit_timestamp: str
    commit_nanos: int
    read_timestamp: str | None
    read_nanos: int | None
    shard: str | None
    watcher_id: str | None
    read_method: str | None
    in_mod_type: str | None
    batch_id: str
    seq: int
    batch: str
    v: int


class _Duplicate(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):  # Spark's copy would keep both; a dict cannot
        raise _Duplicate
    return found


def _refuse(token: str) -> Any:
    raise ValueError(f"{token} (Spark writes it differently)")


#: Spark's JSON reader refuses longer number tokens (Jackson's default stream limit), Python takes them.
MAX_NUMBER_LENGTH = 1000


def _number_token(text: str) -> str:
    if len(text) >= MAX_NUMBER_LENGTH:
        raise ValueError(f"a number of {len(text)} characters (Spark's reader refuses it)")
    return text


def _plain_int(text: str) -> int:
    return int(_number_token(text))


def _float(text: str) -> float:
    return plain_float(_number_token(text))


_EPOCH = dt.datetime(1970, 1, 1)
_SECOND = dt.timedelta(seconds=1)


@functools.lru_cache(maxsize=4096)  # a poll's rows share their read timestamp
def nanos(text: str) -> int | None:
    """Nanoseconds since the epoch of a timestamp text with nine fractional digits (None: not one).

    >>> nanos("1970-01-01T00:00:01.000000002Z"), nanos("2024-02-30T00:00:00.000000000Z")
    (1000000002, None)
    """
    if not _TIMESTAMP.match(text):
        return None
    try:
        when = dt.datetime.fromisoformat(text[:19])  # a real date and time
    except ValueError:
        return None
    return (when - _EPOCH) // _SECOND * 1_000_000_000 + int(text[20:29])


#: The line parser, built once (``json.loads`` with options builds one per call).
PARSER = json.JSONDecoder(object_pairs_hook=_object, parse_float=_float, parse_int=_plain_int, parse_constant=_refuse)


#: The record's fields the job reads as texts (null or a JSON string).
_TEXT_FIELDS = ("batch_id", "table", "commit_timestamp", "read_timestamp", "watcher_id", "read_method", "mod_type")
# The checks of a record's fields below, shared with frame_rows, are each a call or two into C:
# a Python loop over the fields costs a few us a record.
_required = operator.itemgetter(*REQUIRED)
_TEXT_TYPES = {str, type(None)}


def lacks_required(record: Mapping[str, Any]) -> bool:
    """Whether a field of :data:`REQUIRED` is absent or null.

    >>> lacks_required(dict.fromkeys(REQUIRED, 1)), lacks_required({**dict.fromkeys(REQUIRED, 1), "v": None})
    (False, True)
    """
    try:
        return None in _required(record)
    except KeyError:
        return True


def sets_must_be_null(record: Mapping[str, Any]) -> bool:
    """Whether a field of :data:`MUST_BE_NULL` is set (a history table's version, a change stream's capture type)."""
    return set(map(record.get, MUST_BE_NULL)) != {None}


def not_text(record: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` whose value in ``record`` is neither null nor a text; None when none is.

    >>> not_text({"a": "x", "b": None, "c": 1}, ("a", "b", "c")), not_text({"a": "x"}, ("a", "b"))
    ('c', None)
    """
    values = tuple(map(record.get, names))
    if set(map(type, values)) <= _TEXT_TYPES:
        return None
    return next(name for name, value in zip(names, values, strict=True) if type(value) not in _TEXT_TYPES)


#: The texts of types objects seen, by their (column, type) pairs: a table's rows repeat one.
#: Only objects of plain texts are kept, so a hit is an object of the same texts (a text never
#: equals a number or a bool, which would otherwise share an entry: 1 == True).
_TYPES_TEXTS: dict[tuple[tuple[str, Any], ...], str | None] = {}
_TYPES_KEPT = 4096


def _types_text(types: dict[str, Any]) -> str | None:
    """``fast_copied(types)``, remembered for types objects of texts.

    >>> _types_text({"Id": "INT64", "Tags": ["x"]}), _types_text({"Id": "INT64"}) is _types_text({"Id": "INT64"})
    ('{"Id":"INT64","Tags":["x"]}', True)
    """
    pairs = tuple(types.items())
    try:
        return _TYPES_TEXTS[pairs]
    except (KeyError, TypeError):  # not seen, or not hashable (a list): not one to keep
        pass
    text = fast_copied(types)
    if len(_TYPES_TEXTS) < _TYPES_KEPT and set(map(type, types.values())) == {str}:
        _TYPES_TEXTS[pairs] = text
    return text


def _element(value: Any, where: str) -> str | None:
    """An element of the staged key array as Spark's ``from_json(..., 'array<string>')`` gives it."""
    if value is None or isinstance(value, str):
        return value
    text = "true" if value is True else "false" if value is False else (
        number(value) if isinstance(value, (int, float)) else copied(value))
    if text is None:
        raise Ineligible("a key value Spark may render differently", where)
    return text


def keys_json(key_columns: list[str], keys: list[Any], keys_text: str, types: dict[str, Any], where: str) -> str:
    """The key as a JSON object text (:func:`...rules.typed_json.keys_json`), refused where Spark may render it
    differently."""
    if len(key_columns) == 1:
        return typed_json.keys_json(key_columns, (), keys_text, {})
    kinds = {}
    for column in key_columns:
        kind = types.get(column)
        if kind is not None and (not isinstance(kind, str) or not kind.isascii()):
            raise Ineligible(f"the type of key column {column!r} is not plain text", where)
        kinds[column] = kind
    return typed_json.keys_json(key_columns, [_element(k, where) for k in keys[:len(key_columns)]], keys_text, kinds)


def check_format(v: Any, seq: Any, where: str) -> None:
    """Refuse a record of a staging format the engine does not read, or whose seq Spark would not hold."""
    if not (type(v) is int and -_INT32 <= v < _INT32 and v <= READ_FORMAT and v < STREAM_FORMAT):
        raise Ineligible("a staging format the engine does not read", where)
    if not (type(seq) is int and -_INT64 <= seq < _INT64):
        raise Ineligible("a seq that is not a 64-bit integer", where)


def input_mod_type(mod_type: str | None, where: str) -> str | None:
    """A record's ``mod_type`` as the job reads it (upper case), refused where the job does not take it."""
    if mod_type is None:
        return None
    upper = mod_type.upper()
    if not mod_type.isascii() or upper not in INPUT_MOD_TYPES:
        raise Ineligible("a mod_type the job does not take", where)
    return upper


def timestamps(commit: str, read: str | None, where: str) -> tuple[int, int | None]:
    """The commit and read timestamps' nanoseconds since the epoch (refused: a text the engine does not read)."""
    commit_nanos = nanos(commit)
    read_nanos = nanos(read) if read is not None else None
    if commit_nanos is None or (read is not None and read_nanos is None):
        raise Ineligible("a timestamp the engine does not read", where)
    return commit_nanos, read_nanos


def parse_line(line: str, batch: str, where: str) -> StagedRow:
    """One line of batch ``batch`` as a change row (``where`` names it in a refusal)."""
    if _SURROGATE_ESCAPE.search(line):  # a lone surrogate would reach the texts; Spark escapes them its own way
        raise Ineligible("an escaped UTF-16 surrogate", where)
    try:
        record = PARSER.decode(line)
    except (ValueError, RecursionError) as exc:  # _Duplicate and plain_float's refusals are ValueErrors
        raise Ineligible(f"a line Python's JSON parser does not read as Spark would ({exc})", where) from exc
    if not isinstance(record, dict):
        raise Ineligible("a line that is not a JSON object", where)
    if lacks_required(record):
        raise Ineligible("a record without a required field", where)
    if sets_must_be_null(record):
        raise Ineligible("a history or change-stream record", where)
    v, seq = record["v"], record["seq"]
    check_format(v, seq, where)
    key_columns, keys, values, types = record["key_columns"], record["keys"], record["values"], record["types"]
    if not (isinstance(key_columns, list) and all(isinstance(c, str) for c in key_columns)
            and isinstance(keys, list) and isinstance(values, dict) and isinstance(types, dict)):
        raise Ineligible("key_columns, keys, values or types of an unexpected kind", where)
    name = not_text(record, _TEXT_FIELDS)
    if name is not None:
        raise Ineligible(f"field {name!r} is not a string", where)
    texts = {name: record.get(name) for name in _TEXT_FIELDS}
    in_mod_type = input_mod_type(texts["mod_type"], where)
    commit, read = str(texts["commit_timestamp"]), texts["read_timestamp"]  # the commit is required: not None
    commit_nanos, read_nanos = timestamps(commit, read, where)
    shard = record.get("shard")
    shard_text = shard if shard is None or isinstance(shard, str) else copied(shard)
    try:
        keys_text, json_text, types_text = fast_copied(keys), fast_copied(values), _types_text(types)
    except RecursionError as exc:
        raise Ineligible("values nested too deep", where) from exc
    if shard_text is None and shard is not None or keys_text is None or json_text is None or types_text is None:
        raise Ineligible("a value Spark may render differently", where)
    return StagedRow(
        table=str(texts["table"]), key_columns=key_columns, keys=keys_json(key_columns, keys, keys_text, types, where),
        json=json_text, types_json=types_text, commit_timestamp=commit, commit_nanos=commit_nanos,
        read_timestamp=read, read_nanos=read_nanos, shard=shard_text, watcher_id=texts["watcher_id"],
        read_method=texts["read_method"], in_mod_type=in_mod_type, batch_id=str(texts["batch_id"]), seq=seq,
        batch=batch, v=v)


def read_files(staging: ArrowFS, files: list[FileEntry]) -> list[StagedRow]:
    """The change rows of batch ``files`` read from ``staging``, in the files' order."""
    rows: list[StagedRow] = []
    for entry in files:
        name = batch_name(entry.uri)
        try:
            text = staging.read_bytes(entry.uri).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Ineligible("a batch file that is not UTF-8", name) from exc
        rows += parse_batch(text, name)
    return rows


def parse_batch(text: str, batch: str) -> list[StagedRow]:
    """The change rows of one batch file's text (``batch``: its name, ``table=<T>/<file>``)."""
    if not _SAFE_NAME.match(batch):
        raise Ineligible("a batch file name Spark may spell differently", batch)
    if "\r" in text:  # Spark's line reader also ends lines there
        raise Ineligible("a carriage return in a batch file", batch)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Ineligible("an empty batch file", batch)
    return [parse_line(line, batch, f"{batch}, line {n + 1}") for n, line in enumerate(lines)]
