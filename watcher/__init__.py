"""spanner-watcher: watch Cloud Spanner tables for changes and build a changelog.

Example::

    from watcher import TableWatcher, FixedShardProvider
    with TableWatcher(database, "Singers", shard_provider=FixedShardProvider("ShardId", range(-18, 19))) as w:
        for change in w.changes():
            ...

The public names are loaded on first use, so that ``spanner-watcher --help`` and the
commands that do not need the Spanner client start quickly. Type checkers read the
``TYPE_CHECKING`` imports below instead, so each name has its real type there.

>>> import watcher
>>> watcher.TableId("Singers").sql
'`Singers`'
>>> sorted(watcher._EXPORTS) == watcher.__all__
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it (the same pairs as the TYPE_CHECKING imports below)
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

if TYPE_CHECKING:  # never run: a literal import per name, as type checkers need (tests/test_typing.py keeps it equal to _EXPORTS)
    from .capture.base import PollRecord, State, Watcher
    from .capture.change_streams.progress import InMemoryProgressStore, PartitionProgress, ProgressStore
    from .capture.change_streams.spanner_progress import SpannerProgressStore
    from .capture.change_streams.watcher import ChangeStreamWatcher
    from .capture.database_watcher import ALL, DatabaseWatcher
    from .capture.group import WatcherGroup
    from .capture.helper_tables.change_sets import ChangeSetWatcher, change_set_batch, run_in_change_set_transaction
    from .capture.helper_tables.history import HistoryTable, HistoryWatcher
    from .capture.retry import RetryPolicy
    from .capture.shards import (
        FixedShardProvider,
        Interval,
        NotNullShardProvider,
        ShardIdCache,
        ShardProvider,
        TimebasedShardProvider,
    )
    from .capture.table_watcher import CallbackErrorPolicy, TableWatcher
    from .checkpoints import CommitTimestampRepository, InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
    from .connection import connect
    from .errors import (
        CallbackError,
        ChangeStreamNotFoundError,
        ChangeStreamRetentionError,
        CheckpointError,
        ColumnNotFoundError,
        ConfigurationError,
        ConnectionSettingError,
        PollError,
        SchemaError,
        TableNotFoundError,
        TableNotWatchableError,
        UnknownColumnTypeError,
        WatcherError,
    )
    from .model import MIN_TIMESTAMP, Change, Checkpoint, TableId, Watermark
    from .request_settings import RequestSettings
    from .sinks.base import Sink, attach_sinks
    from .sinks.kafka import KafkaSink
    from .staging.sink import StagingSink

# A literal list: type checkers read only that form as the package's public names.
__all__ = [
    "ALL", "CallbackError", "CallbackErrorPolicy", "Change", "ChangeSetWatcher", "ChangeStreamNotFoundError",
    "ChangeStreamRetentionError", "ChangeStreamWatcher", "Checkpoint", "CheckpointError", "ColumnNotFoundError",
    "CommitTimestampRepository", "ConfigurationError", "ConnectionSettingError", "DatabaseWatcher",
    "FixedShardProvider", "HistoryTable", "HistoryWatcher", "InMemoryCommitTimestampRepository",
    "InMemoryProgressStore", "Interval", "KafkaSink", "MIN_TIMESTAMP", "NotNullShardProvider", "PartitionProgress",
    "PollError", "PollRecord", "ProgressStore", "RequestSettings", "RetryPolicy", "SchemaError", "ShardIdCache",
    "ShardProvider", "Sink", "SpannerCommitTimestampRepository", "SpannerProgressStore", "StagingSink", "State",
    "TableId", "TableNotFoundError", "TableNotWatchableError", "TableWatcher", "TimebasedShardProvider",
    "UnknownColumnTypeError", "Watcher", "WatcherError", "WatcherGroup", "Watermark", "attach_sinks",
    "change_set_batch", "connect", "run_in_change_set_transaction",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'watcher' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
