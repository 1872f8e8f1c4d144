"""Whole-table setup: CREATE TABLE, and everything polling needs for one table at once.

:func:`sharded_polling` makes an existing table poll-friendly, :func:`sharded_table` creates a
new one; both return a :class:`ShardedPolling` with the statements to run and the matching
watcher settings.

Example:
    >>> setup = sharded_polling("Albums", ["Title"], shards=5, commit_timestamp="add")
    >>> setup.statements[0]
    'ALTER TABLE `Albums` ADD COLUMN `LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
    >>> setup.watcher_options()["table_hint"]
    '@{FORCE_INDEX=Idx_Albums_ShardId_LastUpdated}'
    >>> postgres = sharded_polling("Albums", ["Title"], shards=5, commit_timestamp="add", dialect=POSTGRESQL)
    >>> postgres.statements[0], postgres.table_hint
    ('ALTER TABLE "Albums" ADD COLUMN "LastUpdated" spanner.commit_timestamp', '/*@ FORCE_INDEX=Idx_Albums_ShardId_LastUpdated */')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...capture.shards import FixedShardProvider
from ...dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect  # noqa: F401 (POSTGRESQL: the doctests)
from ...dialects.ddl import DDL_SQL
from ...errors import DdlError, HotspotError
from ...sqlnames import validate_identifier
from .columns import (
    DEFAULT_COMMIT_TIMESTAMP_COLUMN,
    ColumnDef,
    add_column,
    add_commit_timestamp_column,
    enable_commit_timestamp,
    quoted_column,
    quoted_table,
)
from .indexes import force_index_hint, shard_index, shard_index_name
from .sharding import DEFAULT_SHARD_COLUMN, DEFAULT_SHARDS, ShardColumn, ShardSource, shard_column, shard_provider


def create_table(table: str, columns: Sequence[ColumnDef | ShardColumn], primary_key: Sequence[str], *,
                 allow_hotspot: bool = False, if_not_exists: bool = False, dialect: Dialect = GOOGLE_SQL) -> str:
    """``CREATE TABLE`` with the given columns; refuses a commit-timestamp column leading the key.

    >>> create_table("T", [ColumnDef("Id", "INT64", not_null=True), ColumnDef("Ts", "TIMESTAMP", commit_timestamp=True)], ["Id"])
    'CREATE TABLE `T` (\\n  `Id` INT64 NOT NULL,\\n  `Ts` TIMESTAMP OPTIONS (allow_commit_timestamp=true),\\n) PRIMARY KEY (`Id`)'
    >>> print(create_table("T", [ColumnDef("Id", "INT64", not_null=True)], ["Id"], dialect=POSTGRESQL))
    CREATE TABLE "T" (
      "Id" bigint NOT NULL,
      PRIMARY KEY ("Id")
    )
    """
    if not columns:
        raise DdlError(f"table {table} needs at least one column")
    if isinstance(primary_key, str):
        primary_key = [primary_key]
    names = {c.name.lower(): c for c in columns}
    if len(names) != len(columns):
        raise DdlError(f"table {table} has two columns with the same name")
    for key in primary_key:
        if key.lower() not in names:
            raise DdlError(f"primary key column {key} is not a column of table {table}")
    first = names[primary_key[0].lower()] if primary_key else None
    if isinstance(first, ColumnDef) and first.commit_timestamp and not allow_hotspot:
        raise HotspotError(first.name, f"the primary key of table {table}")
    body = "".join(f"  {c.definition(dialect)},\n" for c in columns)
    key = ", ".join(quoted_column(k, dialect) for k in primary_key)
    return DDL_SQL[dialect.name].create_table.format(exists="IF NOT EXISTS " if if_not_exists else "",
                                                     table=quoted_table(table, dialect), columns=body, key=key)


# --- everything at once ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardedPolling:
    """The statements to run (in order) and the watcher settings that go with them."""

    table: str
    statements: tuple[str, ...]
    shard_column: ShardColumn
    commit_timestamp_column: str
    index: str
    #: The dialect the statements are written in (the hint takes its form).
    dialect: Dialect = GOOGLE_SQL

    @property
    def shard_provider(self) -> FixedShardProvider:
        return shard_provider(self.shard_column.name, self.shard_column.shards)

    @property
    def table_hint(self) -> str:
        return force_index_hint(self.index, self.dialect)

    def watcher_options(self) -> dict[str, Any]:
        """Keyword arguments for ``TableWatcher(database, table, **options)``."""
        return {"shard_provider": self.shard_provider, "table_hint": self.table_hint,
                "commit_timestamp_column": self.commit_timestamp_column}


#: What to do about the commit-timestamp column of an existing table.
_COMMIT_TIMESTAMP_STEPS: dict[str, Callable[[str, str, Dialect], str | None]] = {
    "existing": lambda table, column, dialect: None,
    "add": lambda table, column, dialect: add_commit_timestamp_column(table, column, dialect=dialect),
    "convert": lambda table, column, dialect: enable_commit_timestamp(table, column, dialect=dialect),
}


def sharded_polling(table: str, sources: Iterable[str | ShardSource], *, shards: int = DEFAULT_SHARDS,
                    commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, commit_timestamp: str = "existing",
                    shard_column_name: str = DEFAULT_SHARD_COLUMN, processed_column: str | None = None,
                    add_processed_column: bool = True, storing: Sequence[str] = (), index_name: str | None = None,
                    separator: str = " ", dialect: Dialect = GOOGLE_SQL) -> ShardedPolling:
    """Make an existing table poll-friendly: commit timestamp, shard column, NULL-filtered index.

    Args:
        table: the table to change.
        sources: the columns the shard is computed from (names, or :class:`ShardSource` for
            NOT NULL or non-STRING columns).
        shards: N of ``MOD(..., N)``; the column takes the 2N-1 values -(N-1)..N-1.
        commit_timestamp_column: the commit-timestamp column of the table.
        commit_timestamp: ``"existing"`` (it is one already), ``"add"`` (add it) or
            ``"convert"`` (set allow_commit_timestamp on an existing TIMESTAMP column).
        shard_column_name: the computed column's name.
        processed_column: with a name, the shard is NULL while this BOOL column is true, and
            pruning marks rows processed instead of nulling their commit timestamp.
        add_processed_column: add ``processed_column`` (False when the table has it already).
        storing: columns the index stores (a poll reading only these never touches the table).
        index_name: the index name (default ``Idx_<table>_<shard column>_<commit timestamp column>``).
        separator: the text between source values in the fingerprinted string.
        dialect: the database's dialect, which the statements and the hint are written in.
    """
    if commit_timestamp not in _COMMIT_TIMESTAMP_STEPS:
        raise DdlError(f"commit_timestamp must be one of {sorted(_COMMIT_TIMESTAMP_STEPS)}, got {commit_timestamp!r}")
    validate_identifier(table, "table")
    validate_identifier(commit_timestamp_column, "commit-timestamp column")
    shard = shard_column(shard_column_name, sources, shards, processed_column=processed_column, separator=separator)
    if commit_timestamp_column.lower() in {s.name.lower() for s in shard.sources}:
        raise DdlError(f"the shard cannot be computed from the commit-timestamp column {commit_timestamp_column}")
    index = shard_index_name(table, shard.name, commit_timestamp_column) if index_name is None else index_name
    steps = [_COMMIT_TIMESTAMP_STEPS[commit_timestamp](table, commit_timestamp_column, dialect)]
    if processed_column is not None and add_processed_column:
        steps.append(add_column(table, ColumnDef(processed_column, "BOOL"), dialect=dialect))
    steps.append(add_column(table, shard, dialect=dialect))
    steps.append(shard_index(table, shard.name, commit_timestamp_column, name=index, storing=storing, dialect=dialect))
    return ShardedPolling(table, tuple(s for s in steps if s), shard, commit_timestamp_column, index, dialect)


def sharded_table(table: str, columns: Sequence[ColumnDef], primary_key: Sequence[str], sources: Iterable[str | ShardSource],
                  *, shards: int = DEFAULT_SHARDS, commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN,
                  shard_column_name: str = DEFAULT_SHARD_COLUMN, processed_column: str | None = None,
                  storing: Sequence[str] = (), index_name: str | None = None, separator: str = " ",
                  allow_hotspot: bool = False, dialect: Dialect = GOOGLE_SQL) -> ShardedPolling:
    """A new table with a commit-timestamp column, a shard column and the shard index.

    ``columns`` are the table's own columns; the commit-timestamp column (and the
    processed column) are added when ``columns`` does not declare them.
    """
    columns = list(columns)
    declared = {c.name.lower(): c for c in columns}
    ts = declared.get(commit_timestamp_column.lower())
    if ts is None:
        ts = ColumnDef(commit_timestamp_column, "TIMESTAMP", commit_timestamp=True)
        columns.append(ts)
    if not ts.commit_timestamp:
        raise DdlError(f"column {ts.name} of table {table} must be a commit-timestamp column (commit_timestamp=True)")
    if processed_column is not None and processed_column.lower() not in declared:
        columns.append(ColumnDef(processed_column, "BOOL"))
    shard = shard_column(shard_column_name, sources, shards, processed_column=processed_column, separator=separator)
    missing = [s.name for s in shard.sources if s.name.lower() not in declared]
    if missing:
        raise DdlError(f"shard source column(s) {missing} are not columns of table {table}")
    index = shard_index_name(table, shard.name, ts.name) if index_name is None else index_name
    statements = (create_table(table, [*columns, shard], primary_key, allow_hotspot=allow_hotspot, dialect=dialect),
                  shard_index(table, shard.name, ts.name, name=index, storing=storing, dialect=dialect))
    return ShardedPolling(table, statements, shard, ts.name, index, dialect)
