"""spanner-watcher: watch Cloud Spanner tables for changes and build a changelog.

Example::

    from watcher import TableWatcher, FixedShardProvider
    with TableWatcher(database, "Singers", shard_provider=FixedShardProvider("ShardId", range(-18, 19))) as w:
        for change in w.changes():
            ...

The public names are loaded on first use, so that ``spanner-watcher --help`` and the
commands that do not need the Spanner client start quickly.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    "ALL": "database_watcher", "DatabaseWatcher": "database_watcher",
    "CommitTimestampRepository": "checkpoints", "InMemoryCommitTimestampRepository": "checkpoints",
    "SpannerCommitTimestampRepository": "checkpoints",
    "CallbackError": "errors", "CheckpointError": "errors", "ConfigurationError": "errors", "PollError": "errors",
    "SchemaError": "errors", "TableNotFoundError": "errors", "TableNotWatchableError": "errors", "WatcherError": "errors",
    "MIN_TIMESTAMP": "model", "Change": "model", "Checkpoint": "model", "TableId": "model", "Watermark": "model",
    "RetryPolicy": "retry",
    "FixedShardProvider": "shards", "Interval": "shards", "NotNullShardProvider": "shards", "ShardIdCache": "shards",
    "ShardProvider": "shards", "TimebasedShardProvider": "shards",
    "CallbackErrorPolicy": "table_watcher", "State": "table_watcher", "TableWatcher": "table_watcher",
    "ChangeSetWatcher": "changesets", "run_in_change_set_transaction": "changesets", "change_set_batch": "changesets",
    "HistoryTable": "history", "HistoryWatcher": "history",
    "StagingSink": "sinks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'watcher' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
