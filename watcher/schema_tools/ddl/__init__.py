"""DDL helpers: the schema that makes commit-timestamp polling scale, as GoogleSQL or PostgreSQL statements.

Three pieces make a poll cost what it returns instead of what the table holds, as the Java
library's sharding samples set it up: a commit-timestamp column; a computed shard column
``INT64 AS (MOD(FARM_FINGERPRINT(<columns>), N)) STORED`` that Spanner fills in for every
writer, old or new, without the writers mentioning it; and a NULL_FILTERED index on
(shard column, commit timestamp), which stays small when old rows are nulled out of it
(see :mod:`watcher.schema_tools.pruning`). :func:`sharded_polling` builds all of them for an
existing table and hands back the matching watcher settings (a
:class:`~watcher.capture.shards.FixedShardProvider` over all 2N-1 shard values and the
``FORCE_INDEX`` hint), so one call sets up both the schema and the watcher.

Every name passes through :func:`~watcher.sqlnames.quote_identifier`, types are checked
against Spanner's type grammar and literals are escaped, so no argument can change the
shape of a statement. A commit-timestamp column may not lead a primary key or an index
(every write would land at its end: a hot spot) unless ``allow_hotspot=True``.

The helpers live in one module per concept: :mod:`.columns` (types, literals, column
definitions, commit-timestamp columns), :mod:`.sharding` (the computed shard column and its
values), :mod:`.indexes` (indexes and the FORCE_INDEX hint), :mod:`.tables` (CREATE TABLE
and whole-table setup) and :mod:`.change_streams` (the change stream the change-stream mode reads); every public name is importable from here.

Every helper writes GoogleSQL unless given ``dialect=POSTGRESQL`` (from :mod:`watcher.dialects`): then
the commit-timestamp column is ``spanner.commit_timestamp``, the shard column ``bigint GENERATED ALWAYS AS
(MOD(spanner.farm_fingerprint(...), N)) STORED``, the index ``CREATE INDEX ... WHERE ... IS NOT NULL``
and the hint ``/*@ FORCE_INDEX=... */``; :mod:`watcher.dialects.ddl` holds these spellings.

Example:
    >>> setup = sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)],
    ...                         commit_timestamp="existing")
    >>> print(";\\n".join(setup.statements))
    ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') || `LastName`), 19)) STORED;
    CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)
    >>> setup.table_hint
    '@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}'
    >>> setup.shard_provider
    FixedShardProvider('ShardId', [-18, -17, ..., 17, 18])
"""

from __future__ import annotations

from .change_streams import ALL, alter_change_stream_tracking, create_change_stream, drop_change_stream
from .columns import (
    DEFAULT_COMMIT_TIMESTAMP_COLUMN,
    DEFAULT_PROCESSED_COLUMN,
    ColumnDef,
    add_column,
    add_commit_timestamp_column,
    column_type,
    commit_timestamp_column,
    disable_commit_timestamp,
    enable_commit_timestamp,
    string_literal,
)
from .indexes import create_index, force_index_hint, shard_index, shard_index_name
from .sharding import (
    DEFAULT_SHARD_COLUMN,
    DEFAULT_SHARDS,
    MAX_SHARDS,
    RECOMMENDED_SHARDS,
    ShardColumn,
    ShardCountWarning,
    ShardSource,
    check_shard_count,
    fingerprint,
    shard_column,
    shard_provider,
)
from .tables import ShardedPolling, create_table, sharded_polling, sharded_table

__all__ = [
    "ALL", "alter_change_stream_tracking", "create_change_stream", "drop_change_stream",
    "DEFAULT_COMMIT_TIMESTAMP_COLUMN", "DEFAULT_PROCESSED_COLUMN", "DEFAULT_SHARDS", "DEFAULT_SHARD_COLUMN", "MAX_SHARDS",
    "RECOMMENDED_SHARDS", "ColumnDef", "ShardColumn", "ShardCountWarning", "ShardSource", "ShardedPolling", "add_column",
    "add_commit_timestamp_column", "check_shard_count", "column_type", "commit_timestamp_column", "create_index",
    "create_table", "disable_commit_timestamp", "enable_commit_timestamp", "fingerprint", "force_index_hint", "shard_column",
    "shard_index", "shard_index_name", "shard_provider", "sharded_polling", "sharded_table", "string_literal",
]
