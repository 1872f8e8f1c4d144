"""Index DDL: CREATE INDEX, the NULL_FILTERED (shard, commit timestamp) index, and the hint that forces it.

A commit-timestamp column may not lead an index (every write would land at its end, a hot
spot) unless ``allow_hotspot=True``.

Example:
    >>> shard_index("Singers")
    'CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...errors import DdlError, HotspotError
from ...sqlnames import quote_identifier, validate_identifier
from .columns import DEFAULT_COMMIT_TIMESTAMP_COLUMN, quoted_column, quoted_table
from .sharding import DEFAULT_SHARD_COLUMN


def create_index(name: str, table: str, columns: Sequence[str], *, null_filtered: bool = False, storing: Sequence[str] = (),
                 commit_timestamp_columns: Iterable[str] = (), allow_hotspot: bool = False, if_not_exists: bool = False) -> str:
    """``CREATE [NULL_FILTERED] INDEX``; refuses a commit-timestamp column as the first column.

    >>> create_index("Idx", "T", ["Ts"], commit_timestamp_columns=["Ts"])
    Traceback (most recent call last):
    ...
    watcher.errors.HotspotError: Commit-timestamp column Ts would be the first column of index Idx...
    """
    if isinstance(columns, str):
        columns = [columns]
    if isinstance(storing, str):
        storing = [storing]
    if not columns:
        raise DdlError(f"index {name} needs at least one column")
    for column in (*columns, *storing):
        validate_identifier(column, "column")
    if columns[0].lower() in {c.lower() for c in commit_timestamp_columns} and not allow_hotspot:
        raise HotspotError(columns[0], f"index {name}")
    overlap = {c.lower() for c in storing} & {c.lower() for c in columns}
    if overlap:
        raise DdlError(f"index {name} cannot store its own key column(s) {sorted(overlap)}")
    kind = "NULL_FILTERED INDEX" if null_filtered else "INDEX"
    exists = "IF NOT EXISTS " if if_not_exists else ""
    sql = (f"CREATE {kind} {exists}{quote_identifier(name, 'index')} ON {quoted_table(table)} "
           f"({', '.join(quoted_column(c) for c in columns)})")
    if storing:
        sql += f" STORING ({', '.join(quoted_column(c) for c in storing)})"
    return sql


def shard_index_name(table: str, shard_column: str, commit_timestamp_column: str) -> str:
    """The default index name, ``Idx_<table>_<shard>_<commit timestamp>``."""
    name = f"Idx_{table}_{shard_column}_{commit_timestamp_column}"
    return validate_identifier(name, "index name (pass index_name= to choose a shorter one)")


def shard_index(table: str, shard_column: str = DEFAULT_SHARD_COLUMN,
                commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, name: str | None = None,
                storing: Sequence[str] = (), if_not_exists: bool = False) -> str:
    """The NULL_FILTERED index on (shard, commit timestamp) the poll query uses."""
    if shard_column.lower() == commit_timestamp_column.lower():
        raise HotspotError(commit_timestamp_column, f"the shard index of table {table}")
    return create_index(shard_index_name(table, shard_column, commit_timestamp_column) if name is None else name, table,
                        [shard_column, commit_timestamp_column], null_filtered=True, storing=storing,
                        commit_timestamp_columns=[commit_timestamp_column], if_not_exists=if_not_exists)


def force_index_hint(index: str) -> str:
    """The table hint that makes the poll use ``index`` (for ``TableWatcher(table_hint=...)``).

    >>> force_index_hint("Idx_Singers_ShardId_LastUpdated")
    '@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}'
    """
    return f"@{{FORCE_INDEX={validate_identifier(index, 'index')}}}"
