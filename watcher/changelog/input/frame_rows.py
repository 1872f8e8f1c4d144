"""Records of a DataFrame, brought to the driver as Arrow, as the driver engine's change rows.

A streaming micro-batch's records (:mod:`..streaming.partition_reader`) already hold the texts the
job keeps (``values``, ``types``, the key array, ``shard``) as text, and Spark's engine takes them
as they are (:func:`..engines.spark.pipeline.normalize`): so does a row here, nothing is rendered again. Only a
key of several columns is built from its array, as ``typed_json.staged_keys_sql`` builds it. A
record the engine does not take as Spark would (a history or change-stream record, a missing
field, a staging format it does not read, a key element that is not text) raises
:class:`~watcher.changelog.input.Ineligible`, as :mod:`.staged` does for a line.

Example:
    >>> import pyarrow as pa
    >>> rows = frame_rows(pa.table({"table": ["T"], "key_columns": [["Id"]], "keys": ['["7"]'],
    ...     "values": ['{"Id":"7","Name":"a"}'], "types": ['{"Id":"INT64","Name":"STRING"}'],
    ...     "commit_timestamp": ["2024-05-01T00:00:00.000000001Z"], "batch_id": ["b"], "seq": [0], "v": [1],
    ...     "batch": ["table=T/b.jsonl"]}))
    >>> rows[0].keys, rows[0].json, rows[0].commit_nanos
    ('{"Id":"7"}', '{"Id":"7","Name":"a"}', 1714521600000000001)
"""

from __future__ import annotations

import json
from typing import Any

from . import Ineligible
from .staged import (
    MUST_BE_NULL,
    StagedRow,
    check_format,
    input_mod_type,
    keys_json,
    lacks_required,
    not_text,
    sets_must_be_null,
    timestamps,
)
from .staging_reader import TEXT_FIELDS

#: The columns a row is built from (the staging fields as read, and ``batch``); absent ones are null.
COLUMNS = ("table", "key_columns", "keys", "values", "types", "commit_timestamp", "read_timestamp", "shard",
           "watcher_id", "read_method", "mod_type", "batch_id", "seq", "v", "batch", *MUST_BE_NULL)

_TEXTS = tuple(name for name in COLUMNS if name in TEXT_FIELDS)


def frame_rows(records: Any) -> list[StagedRow]:
    """The change rows of ``records``, a pyarrow Table of staging records (as :func:`.staging_reader.read_schema`
    has them, with ``batch``), in its order."""
    present = set(records.column_names)
    columns = {name: records.column(name).to_pylist() if name in present else [None] * records.num_rows
               for name in COLUMNS}
    return [_row(dict(zip(COLUMNS, values, strict=True))) for values in zip(*columns.values(), strict=True)]


def _row(record: dict[str, Any]) -> StagedRow:
    batch = record["batch"]
    where = f"{batch}, seq {record['seq']}"
    if batch is None or lacks_required(record):
        raise Ineligible("a record without a required field", where)
    if sets_must_be_null(record):
        raise Ineligible("a history or change-stream record", where)
    check_format(record["v"], record["seq"], where)
    if not_text(record, _TEXTS) is not None:
        raise Ineligible("a field read as other than text (records must have the staging schema as read)", where)
    key_columns, keys_text, types_text = record["key_columns"], record["keys"], record["types"]
    if any(not isinstance(c, str) for c in key_columns):
        raise Ineligible("a key column name that is not text", where)
    commit, read = record["commit_timestamp"], record["read_timestamp"]
    commit_nanos, read_nanos = timestamps(commit, read, where)
    return StagedRow(
        table=record["table"], key_columns=key_columns, keys=_keys(key_columns, keys_text, types_text, where),
        json=record["values"], types_json=types_text, commit_timestamp=commit, commit_nanos=commit_nanos,
        read_timestamp=read, read_nanos=read_nanos, shard=record["shard"], watcher_id=record["watcher_id"],
        read_method=record["read_method"], in_mod_type=input_mod_type(record["mod_type"], where),
        batch_id=record["batch_id"], seq=record["seq"], batch=batch, v=record["v"])


def _keys(key_columns: list[str], keys_text: str, types_text: str, where: str) -> str:
    """The key as a JSON object text (:func:`.staged.keys_json`); a single column's from the array's text."""
    if len(key_columns) == 1:
        return keys_json(key_columns, [], keys_text, {}, where)
    try:
        keys, types = json.loads(keys_text), json.loads(types_text)
    except ValueError as exc:
        raise Ineligible("a key array or types text that is not JSON", where) from exc
    if not (isinstance(keys, list) and all(k is None or isinstance(k, str) for k in keys) and isinstance(types, dict)):
        raise Ineligible("a key array of other than text, or types that are not an object", where)
    return keys_json(key_columns, keys, keys_text, types, where)
