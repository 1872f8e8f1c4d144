"""Column DDL: Spanner column types, string literals, column definitions and commit-timestamp columns.

A commit-timestamp column (``allow_commit_timestamp=true``) is what polling reads: Spanner
writes each row's commit time into it. These helpers define one for a new table, add one to
an existing table, or turn an existing TIMESTAMP column into one (and back).

Every helper writes GoogleSQL unless given ``dialect=POSTGRESQL`` (:mod:`watcher.dialects.ddl` holds what
the dialects spell differently); column types are given by their GoogleSQL names in both.

Example:
    >>> add_commit_timestamp_column("Singers")
    'ALTER TABLE `Singers` ADD COLUMN `LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
    >>> add_commit_timestamp_column("Singers", dialect=POSTGRESQL)
    'ALTER TABLE "Singers" ADD COLUMN "LastUpdated" spanner.commit_timestamp'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ...dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect  # noqa: F401 (POSTGRESQL: the doctests)
from ...dialects.ddl import DDL_SQL, column_definition_type, commit_timestamp_definition, google_type_name
from ...dialects.ddl import string_literal as dialect_literal
from ...errors import DdlError
from ...sqlnames import validate_identifier

DEFAULT_COMMIT_TIMESTAMP_COLUMN = "LastUpdated"
DEFAULT_PROCESSED_COLUMN = "Processed"


# --- types and literals ----------------------------------------------------------------------------

_SCALAR = r"(?:BOOL|INT64|FLOAT32|FLOAT64|NUMERIC|JSON|DATE|TIMESTAMP|(?:STRING|BYTES)\(\s*(?:MAX|[1-9][0-9]{0,6})\s*\))"
_TYPE = re.compile(rf"^\s*(?:{_SCALAR}|ARRAY\s*<\s*{_SCALAR}\s*>)\s*$", re.IGNORECASE)


def column_type(text: str) -> str:
    """``text`` as a Spanner column type by its GoogleSQL name (upper case, no spaces), or DdlError; a type
    written the PostgreSQL way (``bigint``, ``varchar(200)``) is taken by its GoogleSQL name.

    >>> column_type("string(200)"), column_type("ARRAY<INT64>"), column_type("varchar(200)")
    ('STRING(200)', 'ARRAY<INT64>', 'STRING(200)')
    """
    if isinstance(text, str) and not _TYPE.match(text):
        text = google_type_name(text) or text
    if not isinstance(text, str) or not _TYPE.match(text):
        raise DdlError(f"invalid column type {text!r}: expected a Spanner type such as INT64, STRING(200), "
                       "BYTES(MAX), TIMESTAMP or ARRAY<STRING(MAX)> (or bigint, varchar(200), ...)")
    return re.sub(r"\s+", "", text).upper()


def string_literal(text: str, dialect: Dialect = GOOGLE_SQL) -> str:
    """A string literal of ``dialect`` holding exactly ``text``.

    >>> string_literal("it's"), string_literal("it's", POSTGRESQL)
    ("'it\\\\'s'", "'it''s'")
    """
    return dialect_literal(dialect, text)


def quoted_table(table: str, dialect: Dialect = GOOGLE_SQL) -> str:
    """``table`` as a quoted identifier, for a statement (names are checked, never spliced in raw)."""
    return dialect.quote(table, "table")


def quoted_column(name: str, dialect: Dialect = GOOGLE_SQL) -> str:
    """``name`` as a quoted column identifier."""
    return dialect.quote(name, "column")


# --- column definitions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnDef:
    """A plain column of a new table (``commit_timestamp=True`` makes it hold commit timestamps).

    >>> ColumnDef("LastUpdated", "TIMESTAMP", commit_timestamp=True).sql
    '`LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
    >>> ColumnDef("Name", "STRING(200)", not_null=True).definition(POSTGRESQL)
    '"Name" varchar(200) NOT NULL'
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
        """The definition in GoogleSQL."""
        return self.definition(GOOGLE_SQL)

    def definition(self, dialect: Dialect) -> str:
        """The column's definition in ``dialect``, for CREATE TABLE or ADD COLUMN."""
        if self.commit_timestamp:
            return commit_timestamp_definition(dialect, self.name, not_null=self.not_null)
        not_null = " NOT NULL" if self.not_null else ""
        return f"{dialect.quote(self.name, 'column')} {column_definition_type(dialect, self.type)}{not_null}"


def commit_timestamp_column(name: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False) -> ColumnDef:
    """A TIMESTAMP column with ``allow_commit_timestamp=true``, for a new table."""
    return ColumnDef(name, "TIMESTAMP", not_null=not_null, commit_timestamp=True)


class ColumnSql(Protocol):
    """What ADD COLUMN needs of a column: its name and its definition in a dialect (ColumnDef, ShardColumn)."""

    @property
    def name(self) -> str: ...

    def definition(self, dialect: Dialect) -> str: ...


# --- statements on columns -------------------------------------------------------------------------

def add_column(table: str, column: ColumnSql, *, if_not_exists: bool = False, dialect: Dialect = GOOGLE_SQL) -> str:
    """``ALTER TABLE ... ADD COLUMN``; Spanner fills a computed column in for existing rows.

    >>> add_column("Singers", ColumnDef("Processed", "BOOL"))
    'ALTER TABLE `Singers` ADD COLUMN `Processed` BOOL'
    >>> add_column("Singers", ColumnDef("Processed", "BOOL"), dialect=POSTGRESQL)
    'ALTER TABLE "Singers" ADD COLUMN "Processed" boolean'
    """
    exists = "IF NOT EXISTS " if if_not_exists else ""
    return f"ALTER TABLE {quoted_table(table, dialect)} ADD COLUMN {exists}{column.definition(dialect)}"


def add_commit_timestamp_column(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False,
                                dialect: Dialect = GOOGLE_SQL) -> str:
    """Add a new commit-timestamp column (NOT NULL only works on an empty table)."""
    return add_column(table, commit_timestamp_column(column, not_null=not_null), dialect=dialect)


def _alter_commit_timestamp(template: str, table: str, column: str, dialect: Dialect) -> str:
    return template.format(table=quoted_table(table, dialect), column=quoted_column(column, dialect))


def enable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *,
                            dialect: Dialect = GOOGLE_SQL) -> str:
    """Turn an existing TIMESTAMP column into a commit-timestamp column (its values must lie in the past).

    >>> enable_commit_timestamp("Performances", "LastUpdateTime")
    'ALTER TABLE `Performances` ALTER COLUMN `LastUpdateTime` SET OPTIONS (allow_commit_timestamp=true)'
    >>> enable_commit_timestamp("Performances", "LastUpdateTime", dialect=POSTGRESQL)
    'ALTER TABLE "Performances" ALTER COLUMN "LastUpdateTime" TYPE spanner.commit_timestamp'
    """
    return _alter_commit_timestamp(DDL_SQL[dialect.name].set_commit_timestamp, table, column, dialect)


def disable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *,
                             dialect: Dialect = GOOGLE_SQL) -> str:
    """Make the column a plain timestamp again, with its values and nullability.

    >>> disable_commit_timestamp("T", "Ts", dialect=POSTGRESQL)
    'ALTER TABLE "T" ALTER COLUMN "Ts" TYPE timestamptz'
    """
    return _alter_commit_timestamp(DDL_SQL[dialect.name].clear_commit_timestamp, table, column, dialect)
