"""Column DDL: Spanner column types, string literals, column definitions and commit-timestamp columns.

A commit-timestamp column (``allow_commit_timestamp=true``) is what polling reads: Spanner
writes each row's commit time into it. These helpers define one for a new table, add one to
an existing table, or turn an existing TIMESTAMP column into one (and back).

Example:
    >>> add_commit_timestamp_column("Singers")
    'ALTER TABLE `Singers` ADD COLUMN `LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ...errors import DdlError
from ...sqlnames import quote_identifier, validate_identifier

DEFAULT_COMMIT_TIMESTAMP_COLUMN = "LastUpdated"
DEFAULT_PROCESSED_COLUMN = "Processed"


# --- types and literals ----------------------------------------------------------------------------

_SCALAR = r"(?:BOOL|INT64|FLOAT32|FLOAT64|NUMERIC|JSON|DATE|TIMESTAMP|(?:STRING|BYTES)\(\s*(?:MAX|[1-9][0-9]{0,6})\s*\))"
_TYPE = re.compile(rf"^\s*(?:{_SCALAR}|ARRAY\s*<\s*{_SCALAR}\s*>)\s*$", re.IGNORECASE)


def column_type(text: str) -> str:
    """``text`` as a Spanner column type (upper case, no spaces), or DdlError.

    >>> column_type("string(200)"), column_type("ARRAY<INT64>")
    ('STRING(200)', 'ARRAY<INT64>')
    """
    if not isinstance(text, str) or not _TYPE.match(text):
        raise DdlError(f"invalid column type {text!r}: expected a Spanner type such as INT64, STRING(200), "
                       "BYTES(MAX), TIMESTAMP or ARRAY<STRING(MAX)>")
    return re.sub(r"\s+", "", text).upper()


def string_literal(text: str) -> str:
    """A GoogleSQL string literal holding exactly ``text``.

    >>> string_literal("it's")
    "'it\\\\'s'"
    """
    if not isinstance(text, str) or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise DdlError(f"invalid literal {text!r}: control characters are not allowed")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quoted_table(table: str) -> str:
    """``table`` as a quoted identifier, for a statement (names are checked, never spliced in raw)."""
    return quote_identifier(table, "table")


def quoted_column(name: str) -> str:
    """``name`` as a quoted column identifier."""
    return quote_identifier(name, "column")


# --- column definitions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnDef:
    """A plain column of a new table (``commit_timestamp=True`` adds allow_commit_timestamp).

    >>> ColumnDef("LastUpdated", "TIMESTAMP", commit_timestamp=True).sql
    '`LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
    """

    name: str
    type: str
    not_null: bool = False
    commit_timestamp: bool = False

    def __post_init__(self) -> None:
        validate_identifier(self.name, "column")
        object.__setattr__(self, "type", column_type(self.type))
        if self.commit_timestamp and self.type != "TIMESTAMP":
            raise DdlError(f"column {self.name} is {self.type}: only TIMESTAMP columns can hold commit timestamps")

    @property
    def sql(self) -> str:
        options = " OPTIONS (allow_commit_timestamp=true)" if self.commit_timestamp else ""
        return f"{quote_identifier(self.name)} {self.type}{' NOT NULL' if self.not_null else ''}{options}"


def commit_timestamp_column(name: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False) -> ColumnDef:
    """A TIMESTAMP column with ``allow_commit_timestamp=true``, for a new table."""
    return ColumnDef(name, "TIMESTAMP", not_null=not_null, commit_timestamp=True)


class ColumnSql(Protocol):
    """What ADD COLUMN needs of a column: its name and its definition (ColumnDef, ShardColumn)."""

    @property
    def name(self) -> str: ...

    @property
    def sql(self) -> str: ...


# --- statements on columns -------------------------------------------------------------------------

def add_column(table: str, column: ColumnSql, *, if_not_exists: bool = False) -> str:
    """``ALTER TABLE ... ADD COLUMN``; Spanner fills a computed column in for existing rows.

    >>> add_column("Singers", ColumnDef("Processed", "BOOL"))
    'ALTER TABLE `Singers` ADD COLUMN `Processed` BOOL'
    """
    exists = "IF NOT EXISTS " if if_not_exists else ""
    return f"ALTER TABLE {quoted_table(table)} ADD COLUMN {exists}{column.sql}"


def add_commit_timestamp_column(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False) -> str:
    """Add a new commit-timestamp column (NOT NULL only works on an empty table)."""
    return add_column(table, commit_timestamp_column(column, not_null=not_null))


def _set_commit_timestamp_option(table: str, column: str, value: str) -> str:
    return f"ALTER TABLE {quoted_table(table)} ALTER COLUMN {quoted_column(column)} SET OPTIONS (allow_commit_timestamp={value})"


def enable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN) -> str:
    """Turn an existing TIMESTAMP column into a commit-timestamp column (its values must lie in the past).

    >>> enable_commit_timestamp("Performances", "LastUpdateTime")
    'ALTER TABLE `Performances` ALTER COLUMN `LastUpdateTime` SET OPTIONS (allow_commit_timestamp=true)'
    """
    return _set_commit_timestamp_option(table, column, "true")


def disable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN) -> str:
    """Remove the option again (``=null``); the column stays a TIMESTAMP, with its values and nullability."""
    return _set_commit_timestamp_option(table, column, "null")
