"""The database option ``version_retention_period``: how long row versions are kept.

Set with ``ALTER DATABASE db SET OPTIONS (version_retention_period = '2h')`` (``NULL``
restores the default, one hour), in Spanner's range of one hour to seven days. The value
is kept in the database's file, and printed back by GetDatabaseDdl when set.

The statement is parsed as a DDL node (``ddl/nodes.AlterDatabase``) and its options are
checked by ``database_options``; this module holds the period's rules and its storage.

Example:
    >>> retention_seconds("36h"), retention_seconds(None)
    (129600, 3600)
"""

from __future__ import annotations

import re
import sqlite3

from .. import errors
from ..common import limits

_ALTER = re.compile(r"\s*ALTER\s+DATABASE\b", re.IGNORECASE)
_DURATION = re.compile(r"([0-9]+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
META_KEY = "version_retention_period"


def is_alter_database(statement: str) -> bool:
    """Whether ``statement`` is an ALTER DATABASE (handled here, not by the schema updater)."""
    return _ALTER.match(statement) is not None


def retention_seconds(period: str | None) -> int:
    """Seconds of a period like ``'2h'`` (None: the default); outside 1h..7d is INVALID_ARGUMENT."""
    if period is None:
        return limits.DEFAULT_VERSION_RETENTION_SECONDS
    m = _DURATION.fullmatch(period.strip())
    if m is None:
        raise errors.version_retention_out_of_range(period)
    seconds = int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    if not limits.MIN_VERSION_RETENTION_SECONDS <= seconds <= limits.MAX_VERSION_RETENTION_SECONDS:
        raise errors.version_retention_out_of_range(period)
    return seconds


def load(conn: sqlite3.Connection, meta_table: str) -> str | None:
    row = conn.execute(f"SELECT value FROM {meta_table} WHERE key = ?", (META_KEY,)).fetchone()
    return row[0] if row else None


def save(conn: sqlite3.Connection, meta_table: str, period: str | None) -> None:
    if period is None:
        conn.execute(f"DELETE FROM {meta_table} WHERE key = ?", (META_KEY,))
    else:
        conn.execute(f"INSERT OR REPLACE INTO {meta_table} VALUES (?, ?)", (META_KEY, period))
