"""The library's exceptions: one root, one subclass per stage, messages built from data.

Example:
    >>> raise TableNotWatchableError("Singers", "it has no column with allow_commit_timestamp=true")
    Traceback (most recent call last):
    ...
    watcher.errors.TableNotWatchableError: Table Singers cannot be watched: it has no column with allow_commit_timestamp=true
"""

from __future__ import annotations


class WatcherError(Exception):
    """Root of every error spanner-watcher raises."""


class ConfigurationError(WatcherError, ValueError):
    """An argument or option that cannot work; the message names it."""


class InvalidIdentifierError(ConfigurationError):
    """A table, column or index name that is not a valid Spanner identifier."""


class SchemaError(WatcherError):
    """The database schema does not allow what was asked (missing table, column, index)."""


class TableNotWatchableError(SchemaError):
    def __init__(self, table: str, reason: str) -> None:
        super().__init__(f"Table {table} cannot be watched: {reason}")
        self.table = table
        self.reason = reason


class PollError(WatcherError):
    """A poll failed for good (not a transient error, which is retried)."""


class CallbackError(WatcherError):
    """A change callback raised; the watcher failed as its callback policy says."""


class CheckpointError(WatcherError):
    """The checkpoint store is missing, malformed or unreachable."""


class DdlError(WatcherError):
    """Generated DDL cannot be built from the given names and options."""


class MigrationError(WatcherError):
    """A migration file could not be applied; the message names the file and line."""


class ChangelogError(WatcherError):
    """The Spark changelog job met input it cannot process; the message names the batch or file."""


class TableNotFoundError(SchemaError):
    """The table does not exist (or was dropped while being watched)."""

    def __init__(self, table: str, detail: str = "") -> None:
        super().__init__(f"Table not found: {table}" + (f" ({detail})" if detail else ""))
        self.table = table


class ColumnNotFoundError(SchemaError):
    def __init__(self, table: str, column: str, detail: str = "") -> None:
        super().__init__(f"Column {column} not found in table {table}" + (f": {detail}" if detail else ""))
        self.table = table
        self.column = column
