"""Index DDL: CREATE INDEX, the NULL_FILTERED (shard, commit timestamp) index, and the hint that forces it.

A commit-timestamp column may not lead an index (every write would land at its end, a hot
spot) unless ``allow_hotspot=True``. In a PostgreSQL database the NULL-filtered index is
``CREATE INDEX ... WHERE <each column> IS NOT NULL`` and the hint is ``/*@ FORCE_INDEX=... */``.

Example:
    >>> shard_index("Singers")
    'CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)'
    >>> print(shard_index("Singers", dialect=POSTGRESQL))
    CREATE INDEX "Idx_Singers_ShardId_LastUpdated" ON "Singers" ("ShardId", "LastUpdated") WHERE "ShardId" IS NOT NULL AND "LastUpdated" IS NOT NULL
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...dialects import ddl as dialect_ddl
from ...dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect  # noqa: F401 (POSTGRESQL: the doctests)
from ...dialects.hints import table_hint
from ...errors import DdlError, HotspotError
from ...sqlnames import validate_identifier
from .columns import DEFAULT_COMMIT_TIMESTAMP_COLUMN, quoted_column, quoted_table
from .sharding import DEFAULT_SHARD_COLUMN


def create_index(name: str, table: str, columns: Sequence[str], *, null_filtered: bool = False, storing: Sequence[str] = (),
                 commit_timestamp_columns: Iterable[str] = (), allow_hotspot: bool = False, if_not_exists: bool = False,
                 dialect: Dialect = GOOGLE_SQL) -> str:
    """``CREATE [NULL_FILTERED] INDEX`` (its PostgreSQL form with ``dialect``); refuses a commit-timestamp column
    as the first column.

    >>> create_index("ByName", "Singers", ["Name"], storing=["Id"], dialect=POSTGRESQL)
    'CREATE INDEX "ByName" ON "Singers" ("Name") INCLUDE ("Id")'

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
    build = dialect_ddl.null_filtered_index if null_filtered else dialect_ddl.index
    return build(dialect, exists="IF NOT EXISTS " if if_not_exists else "", name=dialect.quote(name, "index"),
                 table=quoted_table(table, dialect), columns=[quoted_column(c, dialect) for c in columns],
                 storing=[quoted_column(c, dialect) for c in storing])


def shard_index_name(table: str, shard_column: str, commit_timestamp_column: str) -> str:
    """The default index name, ``Idx_<table>_<shard>_<commit timestamp>``."""
    name = f"Idx_{table}_{shard_column}_{commit_timestamp_column}"
    return validate_identifier(name, "index name (pass index_name= to choose a shorter one)")


def shard_index(table: str, shard_column: str = DEFAULT_SHARD_COLUMN,
                commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, name: str | None = None,
                storing: Sequence[str] = (), if_not_exists: bool = False, dialect: Dialect = GOOGLE_SQL) -> str:
    """The NULL-filtered index on (shard, commit timestamp) the poll query uses."""
    if shard_column.lower() == commit_timestamp_column.lower():
        raise HotspotError(commit_timestamp_column, f"the shard index of table {table}")
    return create_index(shard_index_name(table, shard_column, commit_timestamp_column) if name is None else name, table,
                        [shard_column, commit_timestamp_column], null_filtered=True, storing=storing,
                        commit_timestamp_columns=[commit_timestamp_column], if_not_exists=if_not_exists, dialect=dialect)


def force_index_hint(index: str, dialect: Dialect = GOOGLE_SQL) -> str:
    """The table hint that makes the poll use ``index`` (for ``TableWatcher(table_hint=...)``), in ``dialect``'s form.

    >>> force_index_hint("Idx_Singers_ShardId_LastUpdated")
    '@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}'
    >>> force_index_hint("Idx_Singers_ShardId_LastUpdated", POSTGRESQL)
    '/*@ FORCE_INDEX=Idx_Singers_ShardId_LastUpdated */'
    """
    return table_hint(dialect, f"@{{FORCE_INDEX={validate_identifier(index, 'index')}}}")
