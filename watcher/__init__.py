"""spanner-watcher: watch Cloud Spanner tables for changes and build a changelog.

Example::

    from watcher import TableWatcher, FixedShardProvider
    with TableWatcher(database, "Singers", shard_provider=FixedShardProvider("ShardId", range(-18, 19))) as w:
        for change in w.changes():
            ...
"""

from .checkpoints import CommitTimestampRepository, InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
from .database_watcher import ALL, DatabaseWatcher
from .errors import (
    CallbackError,
    CheckpointError,
    ConfigurationError,
    PollError,
    SchemaError,
    TableNotFoundError,
    TableNotWatchableError,
    WatcherError,
)
from .model import MIN_TIMESTAMP, Change, Checkpoint, TableId, Watermark
from .retry import RetryPolicy
from .shards import (
    FixedShardProvider,
    Interval,
    NotNullShardProvider,
    ShardIdCache,
    ShardProvider,
    TimebasedShardProvider,
)
from .table_watcher import CallbackErrorPolicy, State, TableWatcher

__version__ = "0.1.0"

__all__ = [
    "ALL", "CallbackError", "CallbackErrorPolicy", "Change", "Checkpoint", "CheckpointError", "CommitTimestampRepository",
    "ConfigurationError", "DatabaseWatcher", "FixedShardProvider", "InMemoryCommitTimestampRepository", "Interval",
    "MIN_TIMESTAMP", "NotNullShardProvider", "PollError", "RetryPolicy", "SchemaError", "ShardIdCache", "ShardProvider",
    "SpannerCommitTimestampRepository", "State", "TableId", "TableNotFoundError", "TableNotWatchableError", "TableWatcher",
    "TimebasedShardProvider", "Watermark", "WatcherError",
]
