"""Database options set with ``ALTER DATABASE db SET OPTIONS (...)``: which exist, their checks, where they are kept.

``version_retention_period`` (how long row versions are kept, 1h..7d, default 1h),
``default_leader`` (the region of the leader replicas; the local server has one region and
only records it), ``optimizer_version`` (an integer 1..:data:`MAX_OPTIMIZER_VERSION`, written
bare; the local server has one planner and only records it) and ``default_sequence_kind`` (the kind of sequences and identity columns
that name none; once set it cannot be unset). ``= NULL`` resets an option to its default. Set values live in the
database file's metadata table and are printed back by GetDatabaseDdl as one statement.

Example:
    >>> check("default_leader", "us-central1"), check("version_retention_period", "2d")
    ('us-central1', '2d')
    >>> print_options("db-1", {"default_leader": "us-central1", "version_retention_period": "36h"})
    "ALTER DATABASE db-1 SET OPTIONS (\\n  default_leader = 'us-central1',\\n  version_retention_period = '36h'\\n)"
    >>> check("optimizer_version", 5), print_options("db-1", {"optimizer_version": "5"})
    ('5', 'ALTER DATABASE db-1 SET OPTIONS (\\n  optimizer_version = 5\\n)')
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .. import errors
from ..ddl import nodes
from ..ddl.printer import print_statement
from . import retention
from .catalog import BIT_REVERSED_POSITIVE

#: The newest query optimizer version Spanner offers; ``optimizer_version`` takes 1 up to it.
MAX_OPTIMIZER_VERSION = 8


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


def _optimizer_version(value: str) -> str:
    if not value.isdigit() or not 1 <= int(value) <= MAX_OPTIMIZER_VERSION:
        raise errors.database_option_invalid("optimizer_version", value,
                                             errors.optimizer_version_expected(MAX_OPTIMIZER_VERSION))
    return str(int(value))


#: The options, in the order GetDatabaseDdl prints them, each with its check (of the value as text).
OPTIONS: dict[str, Callable[[str], str]] = {
    "default_leader": _leader,
    "default_sequence_kind": _sequence_kind,
    "optimizer_version": _optimizer_version,
    "version_retention_period": _period,
}
#: Options whose value is an integer (written bare in DDL, INT64 in INFORMATION_SCHEMA.DATABASE_OPTIONS).
INTEGER_OPTIONS = frozenset({"optimizer_version"})
#: Options kept with the other database options (Catalog.database_options); default_sequence_kind has its own field.
CATALOG_OPTIONS = ("default_leader", "optimizer_version", "version_retention_period")


def check(name: str, value: str | int) -> str:
    """The option's value (as text) if it is valid; INVALID_ARGUMENT naming the option otherwise."""
    if isinstance(value, bool) or (isinstance(value, int) and name not in INTEGER_OPTIONS):
        raise errors.database_option_invalid(name, value, errors.STRING_OPTION_EXPECTED)
    return OPTIONS[name](str(value))


def option_type(name: str) -> str:
    """The OPTION_TYPE INFORMATION_SCHEMA.DATABASE_OPTIONS shows for an option.

    >>> option_type("optimizer_version"), option_type("default_leader")
    ('INT64', 'STRING')
    """
    return "INT64" if name in INTEGER_OPTIONS else "STRING"


def print_options(database: str, values: dict[str, str | None]) -> str | None:
    """The one ALTER DATABASE statement that sets ``values`` (options in :data:`OPTIONS` order); None if none is set."""
    options = tuple((name, int(v) if name in INTEGER_OPTIONS else v) for name in OPTIONS
                    if (v := values.get(name)) is not None)
    return print_statement(nodes.AlterDatabase(database, options)) if options else None  # type: ignore[arg-type]


def load_catalog_options(conn: sqlite3.Connection, meta_table: str) -> tuple[tuple[str, str], ...]:
    """The :data:`CATALOG_OPTIONS` that are set, as (name, value) pairs."""
    return tuple((name, value) for name in CATALOG_OPTIONS if (value := load(conn, meta_table, name)) is not None)


def load(conn: sqlite3.Connection, meta_table: str, name: str) -> str | None:
    row = conn.execute(f"SELECT value FROM {meta_table} WHERE key = ?", (name,)).fetchone()
    return row[0] if row else None


def save(conn: sqlite3.Connection, meta_table: str, name: str, value: str | None) -> None:
    if value is None:
        conn.execute(f"DELETE FROM {meta_table} WHERE key = ?", (name,))
    else:
        conn.execute(f"INSERT OR REPLACE INTO {meta_table} VALUES (?, ?)", (name, value))
