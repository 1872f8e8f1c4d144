"""Applying migrations to Spanner: see what is pending, apply it, remember it.

The schema statements (CREATE, ALTER, DROP, ...) of a file go to Spanner in one
schema-change request (each request can take minutes on Spanner); when one fails, the
operation's metadata says how many completed, so the error still names the failing
statement's file and line. DML (INSERT, UPDATE, DELETE) runs in a read-write transaction.
One run at a time applies files to a database: a run takes the migration lock
(:mod:`~watcher.schema_tools.migration_lock`) and re-reads what is applied once it has it.

Each applied file is recorded in :data:`MIGRATIONS_TABLE` as (folder id, version, name,
checksum, applied_at). Folders are tracked on their own: the folder id is part of the key, so
``ddl/watcher`` and ``ddl/samples/singers`` can both have a ``V001``. Running again applies
nothing; a file edited after it was applied is refused
(:class:`~watcher.errors.MigrationChangedError`), as is a new file whose version is below one
already applied. The files themselves: :mod:`~watcher.schema_tools.migration_files` (its
names are re-exported here).

Both dialects: in a PostgreSQL database the tracking and lock tables have lower-case names
(``spanner_watcher_migrations``; :mod:`watcher.dialects.migrations`), and the files are applied
as written, so a pending file written in the other dialect than the database's is refused
before anything runs, naming the file. The packaged default set is the exception: it ships in both
dialects (``ddl/watcher``, ``ddl/watcher-postgresql``, one folder id) and the runner applies the
one of the database's dialect.

Example:
    >>> MIGRATIONS_TABLE
    'SPANNER_WATCHER_MIGRATIONS'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dialects import Dialect, dialect_of
from ..dialects.migrations import applied_sql, name_in, tracking_table_sql, written_in
from ..dialects.schema import tables_query
from ..errors import MigrationChangedError, MigrationError, MigrationStatementError
from ..sqlnames import validate_identifier
from .migration_files import (
    DEFAULT_FOLDER_ID,
    MigrationFile,
    MigrationSet,
    Statement,
    checksum,
    default_migrations,
    migrations_root,
    sample_migrations,
    split_statements,
)
from .migration_lock import DEFAULT_LOCK_TIMEOUT, MigrationLock, create_lock_table_sql, lock_table_name

# The files' names are part of this module's API (callers import them from here).
__all__ = ["DDL_TIMEOUT", "DEFAULT_FOLDER_ID", "MIGRATIONS_TABLE", "AppliedMigration", "MigrationFile", "MigrationPlan",
           "MigrationReport", "MigrationSet", "Migrator", "Statement", "checksum", "default_migrations",
           "migrations_root", "sample_migrations", "split_statements"]

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = "SPANNER_WATCHER_MIGRATIONS"
#: Seconds a schema change may take before the runner gives up waiting.
DDL_TIMEOUT = 1800.0


@dataclass(frozen=True)
class AppliedMigration:
    """A row of the migrations table."""

    folder_id: str
    version: int
    name: str
    checksum: str
    applied_at: Any


@dataclass(frozen=True)
class MigrationPlan:
    """What :meth:`Migrator.migrate` would do for one folder."""

    migrations: MigrationSet
    applied: tuple[AppliedMigration, ...]
    pending: tuple[MigrationFile, ...]
    #: Applied versions whose file is no longer in the folder (reported, not an error).
    missing: tuple[AppliedMigration, ...] = ()

    def describe(self, *, statements: bool = False) -> list[str]:
        """Lines saying what is applied, what is pending (with the statements, if asked)."""
        m = self.migrations
        lines = [f"{m.folder_id} ({m.location}): {len(self.applied)} applied, {len(self.pending)} pending"]
        for gone in self.missing:
            lines.append(f"  note: V{gone.version} {gone.name} was applied but its file is no longer in the folder")
        for f in self.pending:
            lines.append(f"  pending {f.filename} ({len(f.statements)} statement(s))")
            if statements:
                for st in f.statements:
                    lines.append(f"    -- {f.location}:{st.line}")
                    lines.extend("    " + text for text in (st.sql + ";").splitlines())
        return lines


@dataclass
class MigrationReport:
    """What a run did: per folder, the plan and the files applied (with seconds each)."""

    plans: list[MigrationPlan] = field(default_factory=list)
    applied: list[tuple[str, MigrationFile, float]] = field(default_factory=list)
    dry_run: bool = False


class Migrator:
    """Applies migration sets to ``database`` (a google.cloud.spanner_v1 Database).

    Safe to run at once from several processes: a run applies files only while it holds
    the migration lock (``<table>_LOCK``). ``lock_timeout`` is how long a lock lasts
    without renewal (a crashed run blocks others that long); ``lock_wait`` how long to
    wait for a live holder (None: until it finishes; 0: stop at once with
    :class:`~watcher.errors.MigrationLockedError`).
    """

    def __init__(self, database: Any, *, table: str = MIGRATIONS_TABLE, ddl_timeout: float = DDL_TIMEOUT,
                 progress: Callable[[str], None] | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
                 lock_wait: float | None = None) -> None:
        self.database = database
        self.table = validate_identifier(table, "migrations table")
        self.lock_table = lock_table_name(self.table)
        self.ddl_timeout = ddl_timeout
        self.progress = progress or (lambda message: log.info("%s", message))
        self.lock_timeout = lock_timeout
        self.lock_wait = lock_wait
        self._dialect: Dialect | None = None

    @property
    def dialect(self) -> Dialect:
        """The dialect of the database (found once, from the database)."""
        if self._dialect is None:
            self._dialect = dialect_of(self.database)
        return self._dialect

    # --- the migrations table ----------------------------------------------------------------------

    def table_exists(self, table: str | None = None) -> bool:
        """Whether the tracking table (or ``table``, named as for GoogleSQL) exists."""
        statement = tables_query(self.dialect)
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types))
        return name_in(self.dialect, table or self.table) in {row[0] for row in rows}

    def ensure_table(self) -> None:
        """Create the tracking table and the lock table, where missing (safe to race with another run)."""
        missing = [sql for name, sql in ((self.table, tracking_table_sql(self.dialect, self.table)),
                                         (self.lock_table, create_lock_table_sql(self.lock_table, self.dialect)))
                   if not self.table_exists(name)]
        if not missing:
            return
        try:
            self.database.update_ddl(missing).result(self.ddl_timeout)
        except Exception:
            if not (self.table_exists() and self.table_exists(self.lock_table)):  # not created by a concurrent run either
                raise

    def lock(self) -> MigrationLock:
        """A new (not yet taken) hold on this database's migration lock."""
        return MigrationLock(self.database, self.lock_table, timeout=self.lock_timeout, progress=self.progress,
                             dialect=self.dialect)

    def applied(self, folder_id: str) -> list[AppliedMigration]:
        """The recorded migrations of ``folder_id`` (none when the table does not exist yet)."""
        if not self.table_exists():
            return []
        statement = applied_sql(self.dialect, self.table, folder_id)
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types))
        return [AppliedMigration(folder_id, int(v), n, c, at) for v, n, c, at in rows]

    # --- planning --------------------------------------------------------------------------------------

    def plan(self, migrations: MigrationSet) -> MigrationPlan:
        """What is pending (of ``migrations`` in the database's dialect); raises when an applied file changed
        or a new file is out of order."""
        migrations = migrations.for_dialect(self.dialect)
        applied = self.applied(migrations.folder_id)
        files = {f.version: f for f in migrations.files}
        done = {a.version: a for a in applied}
        for version, record in done.items():
            current = files.get(version)
            if current is not None and current.checksum != record.checksum:
                raise MigrationChangedError(migrations.folder_id, current.location, record.checksum, current.checksum)
        pending = tuple(f for f in migrations.files if f.version not in done)
        if pending and done and pending[0].version < max(done):
            late = pending[0]
            raise MigrationError(f"{late.location} is new, but version {max(done)} of folder {migrations.folder_id!r} "
                                 f"is already applied; give the new file a version above {max(done)}")
        missing = tuple(a for a in applied if a.version not in files)
        for migration in pending:
            self._check_dialect(migration)
        return MigrationPlan(migrations, tuple(applied), pending, missing)

    def _check_dialect(self, migration: MigrationFile) -> None:
        """Raise MigrationError when a statement of ``migration`` is written in the other dialect than the database's."""
        for statement in migration.statements:
            written = written_in(statement.sql)
            if written is not None and written is not self.dialect:
                raise MigrationError(f"{migration.location}:{statement.line}: written in {written.name}, but the database "
                                     f"is {self.dialect.name}; give it migration files in {self.dialect.name}")

    # --- applying --------------------------------------------------------------------------------------

    def migrate(self, sets: MigrationSet | Sequence[MigrationSet], *, dry_run: bool = False) -> MigrationReport:
        """Apply every pending file of ``sets``, in order; with ``dry_run``, only plan.

        All folders are checked before anything runs. Files are applied under the migration
        lock, after reading again what is applied (another run may have applied some while
        this one waited). Raises MigrationChangedError, MigrationStatementError (file, line,
        statement, reason), MigrationLockedError or MigrationError.
        """
        sets = [s.for_dialect(self.dialect) for s in ([sets] if isinstance(sets, MigrationSet) else sets)]
        ids = [s.folder_id for s in sets]
        if len(set(ids)) != len(ids):
            raise MigrationError(f"two migration folders share a folder id: {ids}; give one of them another id")
        report = MigrationReport(plans=[self.plan(s) for s in sets], dry_run=dry_run)
        if dry_run or not any(p.pending for p in report.plans):
            return report
        self.ensure_table()
        with self.lock() as lock:
            lock.acquire(self.lock_wait)
            report.plans = [self.plan(s) for s in sets]  # what is applied may have changed while waiting
            for plan in report.plans:
                for migration in plan.pending:
                    self._apply_one(plan, migration, lock, report)
        return report

    def _apply_one(self, plan: MigrationPlan, migration: MigrationFile, lock: MigrationLock,
                   report: MigrationReport) -> None:
        lock.check()
        started = time.monotonic()
        self._apply(migration)
        self._record(plan.migrations.folder_id, migration, lock)
        seconds = time.monotonic() - started
        report.applied.append((plan.migrations.folder_id, migration, seconds))
        self.progress(f"{plan.migrations.folder_id}: applied {migration.filename} "
                      f"({len(migration.statements)} statement(s), {seconds:.2f} s)")

    def _apply(self, migration: MigrationFile) -> None:
        """Each run of consecutive schema statements as one request; each DML statement in its own transaction."""
        done = 0
        for group in _runs_of_one_kind(migration.statements):
            if group[0].kind == "ddl":
                self._apply_ddl(migration, group, done)
            else:
                for offset, statement in enumerate(group):
                    try:
                        self.database.run_in_transaction(lambda tx, sql=statement.sql: tx.execute_update(sql))
                    except Exception as exc:  # noqa: BLE001 - every failure becomes the file-and-line error
                        raise MigrationStatementError(migration.location, statement.line, statement.sql,
                                                      _reason(exc), done + offset) from exc
            done += len(group)

    def _apply_ddl(self, migration: MigrationFile, group: Sequence[Statement], done: int) -> None:
        operation = None
        try:
            operation = self.database.update_ddl([st.sql for st in group])
            operation.result(self.ddl_timeout)
        except Exception as exc:  # noqa: BLE001 - every failure becomes the file-and-line error
            completed = _completed_statements(operation)
            if operation is None:  # rejected before it started: nothing ran, find the statement by its text
                failed = _statement_named_in(str(exc), group) or group[0]
                reason = _reason(exc) if len(group) == 1 or failed is not group[0] else \
                    f"the request of {len(group)} schema statements was rejected before any ran: {_reason(exc)}"
            else:  # Spanner ran the statements in order: the ones it lists as completed stay applied
                failed, reason = group[min(completed, len(group) - 1)], _reason(exc)
            raise MigrationStatementError(migration.location, failed.line, failed.sql, reason,
                                          done + group.index(failed)) from exc

    def _record(self, folder_id: str, migration: MigrationFile, lock: MigrationLock) -> None:
        from google.cloud import spanner

        def record(tx: Any) -> None:
            lock.check(tx)  # the record commits only while this run holds the lock
            tx.insert(name_in(self.dialect, self.table),
                      tuple(name_in(self.dialect, c) for c in ("FOLDER_ID", "VERSION", "NAME", "CHECKSUM", "APPLIED_AT")),
                      [(folder_id, migration.version, migration.name, migration.checksum, spanner.COMMIT_TIMESTAMP)])

        try:
            self.database.run_in_transaction(record)
        except Exception as exc:
            raise MigrationError(f"{migration.location} was applied but could not be recorded in {self.table}: "
                                 f"{exc}") from exc


def _runs_of_one_kind(statements: Sequence[Statement]) -> list[list[Statement]]:
    """Consecutive statements of the same kind, grouped.

    >>> [[s.line for s in g] for g in _runs_of_one_kind(split_statements("CREATE A;\\nCREATE B;\\nINSERT C;\\nDROP D"))]
    [[1, 2], [3], [4]]
    """
    groups: list[list[Statement]] = []
    for statement in statements:
        if groups and groups[-1][0].kind == statement.kind:
            groups[-1].append(statement)
        else:
            groups.append([statement])
    return groups


def _completed_statements(operation: Any) -> int:
    """How many statements of a schema-change operation completed: one commit timestamp each."""
    try:
        metadata = operation.metadata if operation is not None else None
    except Exception:  # noqa: BLE001 - unreadable metadata: nothing is known to have completed
        return 0
    return len(getattr(metadata, "commit_timestamps", None) or ())


def _statement_named_in(message: str, group: Sequence[Statement]) -> Statement | None:
    """The statement whose text an error message quotes, if exactly one does."""
    text = " ".join(message.split())
    named = [st for st in group if " ".join(st.sql.split()) in text]
    return named[0] if len(named) == 1 else None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__
