"""Checkpoint stores (see :mod:`watcher.checkpoints.base` for the contract)."""

from .base import CommitTimestampRepository
from .java_table import DEFAULT_TABLE, create_table_ddl
from .memory import InMemoryCommitTimestampRepository
from .spanner import SpannerCommitTimestampRepository

__all__ = [
    "CommitTimestampRepository",
    "InMemoryCommitTimestampRepository",
    "SpannerCommitTimestampRepository",
    "DEFAULT_TABLE",
    "create_table_ddl",
]
