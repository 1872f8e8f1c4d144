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


class ConnectionSettingError(ConfigurationError):
    """A connection setting (credentials file, endpoint, database role, a name) that cannot work.

    ``setting`` is the argument's name, so a command line can name its own option instead.
    """

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting, self.problem = setting, problem


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


class HotspotError(DdlError):
    """A commit-timestamp column would lead a primary key or an index: every write lands on one split."""

    def __init__(self, column: str, place: str) -> None:
        super().__init__(
            f"Commit-timestamp column {column} would be the first column of {place}: its values only grow, "
            "so every write would go to the same split (a hot spot). Put another column first (e.g. a shard "
            "column), or pass allow_hotspot=True if that is what you want."
        )
        self.column = column
        self.place = place


class MigrationError(WatcherError):
    """A migration file could not be applied; the message names the file and line."""


class MigrationChangedError(MigrationError):
    """A migration file was edited after it had been applied."""

    def __init__(self, folder: str, file: str, recorded: str, current: str) -> None:
        super().__init__(
            f"Migration {file} of folder {folder!r} was changed after it was applied (checksum {current[:12]}..., "
            f"applied as {recorded[:12]}...). Applied migrations must not change: undo the edit and put the change "
            "in a new file with a higher version."
        )
        self.folder, self.file, self.recorded, self.current = folder, file, recorded, current


class MigrationStatementError(MigrationError):
    """A statement of a migration file failed; earlier files (and earlier statements of it) stay applied."""

    def __init__(self, path: str, line: int, statement: str, reason: str, applied_before: int = 0) -> None:
        first = " ".join(statement.split())
        first = first if len(first) <= 120 else first[:117] + "..."
        kept = (f" The {applied_before} statement(s) before it in this file stay applied (schema changes cannot be "
                "rolled back): make the file re-runnable (IF NOT EXISTS) or undo them before running migrate again."
                if applied_before else "")
        super().__init__(f"{path}:{line}: statement failed: {reason}\n  statement: {first}\n{kept.strip()}".rstrip())
        self.path, self.line, self.statement, self.reason, self.applied_before = path, line, statement, reason, applied_before


class MigrationLockedError(MigrationError):
    """Another migrate run holds the migration lock, and this run stopped waiting for it."""

    def __init__(self, table: str, owner: str, expires_at: object, waited: float) -> None:
        when = expires_at.isoformat() if hasattr(expires_at, "isoformat") else str(expires_at)
        super().__init__(
            f"another migrate run holds the migration lock ({table}): {owner}, until {when} unless it renews it; "
            f"stopped after waiting {waited:.0f} s. Nothing was applied by this run: run it again when the other "
            "one has finished (a crashed run's lock is taken over once it expires, see --lock-timeout)."
        )
        self.table, self.owner, self.expires_at, self.waited = table, owner, expires_at, waited


class StagingError(WatcherError):
    """A change cannot be written as a staging record; the message names table and column."""


class UnknownColumnTypeError(StagingError, TypeError):
    """A value whose Spanner type is unknown, or has no typed-JSON form: never staged as a guess."""

    def __init__(self, table: str, column: str, detail: str = "") -> None:
        super().__init__(f"Cannot stage column {column} of table {table}: "
                         + (detail or "its type is unknown (the change does not say what it was read as)"))
        self.table = table
        self.column = column


class StorageURLError(ConfigurationError):
    """A folder's path or URL names no filesystem this process can open; the message says what is missing."""

    def __init__(self, url: str, scheme: str | None, missing: str) -> None:
        where = f"no filesystem for scheme {scheme!r}: " if scheme else ""
        super().__init__(f"{url!r}: {where}{missing}")
        self.url, self.scheme, self.missing = url, scheme, missing


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


class ChangeStreamNotFoundError(SchemaError):
    """The change stream does not exist in the database."""

    def __init__(self, stream: str, detail: str = "") -> None:
        super().__init__(f"Change stream not found: {stream}" + (f" ({detail})" if detail else ""))
        self.stream = stream


class ChangeStreamRetentionError(SchemaError):
    """A read would start before the stream's retention period (or before the stream existed)."""

    def __init__(self, stream: str, retention: str, start: object, detail: str) -> None:
        super().__init__(f"Change stream {stream} cannot be read from {start}: that is outside its retention period "
                         f"({retention}) or before the stream was created. Start later (start=None reads from now), "
                         f"or for a watcher that was stopped longer than the retention, use a new watcher_id. "
                         f"Server said: {detail}")
        self.stream, self.retention, self.start = stream, retention, start


class MissingExtraError(WatcherError, ImportError):
    """A command or class needs a package of an extra the install left out; the message names the extra."""

    def __init__(self, extra: str, needed_by: str, module: str) -> None:
        super().__init__(f"{needed_by} needs {module}, which the core install leaves out: "
                         f"pip install 'spanner-watcher[{extra}]'")
        self.extra, self.needed_by, self.module = extra, needed_by, module
