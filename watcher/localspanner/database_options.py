"""Database options set with ``ALTER DATABASE db SET OPTIONS (...)``: which exist, their checks, where they are kept.

``version_retention_period`` (how long row versions are kept, 1h..7d, default 1h),
``default_leader`` (the region of the leader replicas; the local server has one region and
only records it) and ``default_sequence_kind`` (the kind of sequences and identity columns
that name none; once set it cannot be unset). ``= NULL`` resets an option to its default. Set values live in the
database file's metadata table and are printed back by GetDatabaseDdl as one statement.

Example:
    >>> check("default_leader", "us-central1"), check("version_retention_period", "2d")
    ('us-central1', '2d')
    >>> print_options("db-1", {"default_leader": "us-central1", "version_retention_period": "36h"})
    "ALTER DATABASE db-1 SET OPTIONS (\\n  default_leader = 'us-central1',\\n  version_retention_period = '36h'\\n)"
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from . import errors, retention
from .catalog import BIT_REVERSED_POSITIVE
from .ddl import nodes
from .ddl.printer import print_statement


def _leader(value: str) -> str:
    if not value.strip():
        raise errors.database_option_invalid("default_leader", value, errors.DEFAULT_LEADER_EXPECTED)
    return value


def _period(value: str) -> str:
    retention.retention_seconds(value)  # INVALID_ARGUMENT outside 1h..7d
    return value


def _sequence_kind(value: str) -> str:
    if value.lower() != BIT_REVERSED_POSITIVE:
        raise errors.sequence_kind_invalid(value)
    return BIT_REVERSED_POSITIVE


#: The options, in the order GetDatabaseDdl prints them, each with its check.
OPTIONS: dict[str, Callable[[str], str]] = {
    "default_leader": _leader,
    "default_sequence_kind": _sequence_kind,
    "version_retention_period": _period,
}


def check(name: str, value: str) -> str:
    """The option's value if it is valid; INVALID_ARGUMENT naming the option otherwise."""
    return OPTIONS[name](value)


def print_options(database: str, values: dict[str, str | None]) -> str | None:
    """The one ALTER DATABASE statement that sets ``values`` (options in :data:`OPTIONS` order); None if none is set."""
    options = tuple((name, values[name]) for name in OPTIONS if values.get(name) is not None)
    return print_statement(nodes.AlterDatabase(database, options)) if options else None


def load(conn: sqlite3.Connection, meta_table: str, name: str) -> str | None:
    row = conn.execute(f"SELECT value FROM {meta_table} WHERE key = ?", (name,)).fetchone()
    return row[0] if row else None


def save(conn: sqlite3.Connection, meta_table: str, name: str, value: str | None) -> None:
    if value is None:
        conn.execute(f"DELETE FROM {meta_table} WHERE key = ?", (name,))
    else:
        conn.execute(f"INSERT OR REPLACE INTO {meta_table} VALUES (?, ?)", (name, value))
