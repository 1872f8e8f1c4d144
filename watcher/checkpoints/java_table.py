"""The Java library's LAST_SEEN_COMMIT_TIMESTAMPS table: its schema and how shard values are stored.

Example:
    >>> shard_columns([1, 2, 3])
    [None, None, None, None, None, '1,2,3', None]
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

DEFAULT_TABLE = "LAST_SEEN_COMMIT_TIMESTAMPS"
#: Our one addition to the Java table: the exact position inside a commit timestamp's group of
#: rows (Checkpoint.to_text). Nullable, so the Java library ignores it and keeps working.
POSITION_COLUMN = "LAST_SEEN_POSITION"

#: The Java table's columns and types, in order; the key is all of them but the last.
JAVA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("DATABASE_NAME", "STRING(MAX)"),
    ("TABLE_CATALOG", "STRING(MAX)"),
    ("TABLE_SCHEMA", "STRING(MAX)"),
    ("TABLE_NAME", "STRING(MAX)"),
    ("SHARD_ID_BOOL", "BOOL"),
    ("SHARD_ID_BYTES", "BYTES(MAX)"),
    ("SHARD_ID_DATE", "DATE"),
    ("SHARD_ID_FLOAT64", "FLOAT64"),
    ("SHARD_ID_INT64", "INT64"),
    ("SHARD_ID_STRING", "STRING(MAX)"),
    ("SHARD_ID_TIMESTAMP", "TIMESTAMP"),
    ("LAST_SEEN_COMMIT_TIMESTAMP", "TIMESTAMP"),
)
KEY_COLUMNS = tuple(name for name, _ in JAVA_COLUMNS[:-1])
_NOT_NULL = {"DATABASE_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "LAST_SEEN_COMMIT_TIMESTAMP"}


def create_table_ddl(table: str = DEFAULT_TABLE) -> str:
    """The CREATE TABLE statement of the checkpoint table (the Java schema plus the position column)."""
    from ..sqlnames import quote_identifier

    cols = [f"  {quote_identifier(n)} {t}{' NOT NULL' if n in _NOT_NULL else ''}," for n, t in JAVA_COLUMNS]
    cols.append(f"  {quote_identifier(POSITION_COLUMN)} STRING(MAX),")
    key = ", ".join(quote_identifier(k) for k in KEY_COLUMNS)
    return f"CREATE TABLE {quote_identifier(table, 'checkpoint table')} (\n" + "\n".join(cols) + f"\n) PRIMARY KEY ({key})"


def shard_columns(shard: Any) -> list[Any]:
    """The values of the seven SHARD_ID_* columns for a shard value, as the Java library stores them."""
    bool_, bytes_, date_, float_, int_, str_, ts_ = (None,) * 7
    if shard is None:
        pass
    elif isinstance(shard, bool):
        bool_ = shard
    elif isinstance(shard, bytes):
        bytes_ = base64.b64encode(shard)
    elif isinstance(shard, dt.datetime):
        ts_ = shard
    elif isinstance(shard, dt.date):
        date_ = shard
    elif isinstance(shard, float):
        float_ = shard
    elif isinstance(shard, int):
        int_ = shard
    elif isinstance(shard, str):
        str_ = shard
    elif isinstance(shard, decimal.Decimal):
        str_ = str(shard)
    elif isinstance(shard, (list, tuple)):
        str_ = ",".join(_array_element_text(v) for v in shard)
    elif isinstance(shard, dict):
        str_ = json.dumps(shard, separators=(",", ":"))
    else:
        raise TypeError(f"cannot store shard value {shard!r} of type {type(shard).__name__}")
    return [bool_, bytes_, date_, float_, int_, str_, ts_]


def _array_element_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return str(v)
