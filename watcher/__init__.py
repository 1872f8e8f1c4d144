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
    "ALL": "capture.database_watcher", "DatabaseWatcher": "capture.database_watcher",
    "CommitTimestampRepository": "checkpoints", "InMemoryCommitTimestampRepository": "checkpoints",
    "SpannerCommitTimestampRepository": "checkpoints",
    "CallbackError": "errors", "CheckpointError": "errors", "ConfigurationError": "errors", "PollError": "errors",
    "SchemaError": "errors", "TableNotFoundError": "errors", "TableNotWatchableError": "errors", "WatcherError": "errors",
    "ColumnNotFoundError": "errors", "UnknownColumnTypeError": "errors",
    "MIN_TIMESTAMP": "model", "Change": "model", "Checkpoint": "model", "TableId": "model", "Watermark": "model",
    "RetryPolicy": "capture.retry",
    "FixedShardProvider": "capture.shards", "Interval": "capture.shards", "NotNullShardProvider": "capture.shards", "ShardIdCache": "capture.shards",
    "ShardProvider": "capture.shards", "TimebasedShardProvider": "capture.shards",
    "CallbackErrorPolicy": "capture.table_watcher", "State": "capture.base", "TableWatcher": "capture.table_watcher",
    "PollRecord": "capture.base", "Watcher": "capture.base", "WatcherGroup": "capture.group",
    "ChangeSetWatcher": "capture.helper_tables.change_sets", "run_in_change_set_transaction": "capture.helper_tables.change_sets", "change_set_batch": "capture.helper_tables.change_sets",
    "HistoryTable": "capture.helper_tables.history", "HistoryWatcher": "capture.helper_tables.history",
    "StagingSink": "staging.sink",
    "Sink": "sinks.base", "attach_sinks": "sinks.base", "KafkaSink": "sinks.kafka",
    "ChangeStreamWatcher": "capture.change_streams.watcher", "ProgressStore": "capture.change_streams.progress",
    "InMemoryProgressStore": "capture.change_streams.progress", "PartitionProgress": "capture.change_streams.progress",
    "SpannerProgressStore": "capture.change_streams.spanner_progress",
    "RequestSettings": "request_settings",
    "ChangeStreamNotFoundError": "errors", "ChangeStreamRetentionError": "errors",
    "connect": "connection", "ConnectionSettingError": "errors",
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
