"""Versioned migration files for Spanner: load a folder, see what is pending, apply it, remember it.

A migration folder holds files named ``V<version>__<name>.sql`` (``V001__watcher_checkpoints.sql``);
each file holds GoogleSQL statements separated by ``;`` (``--``, ``#`` and ``/* */`` comments
allowed). The schema statements (CREATE, ALTER, DROP, ...) of a file go to Spanner in one
schema-change request (each request can take minutes on Spanner); when one fails, the
operation's metadata says how many completed, so the error still names the failing
statement's file and line. DML (INSERT, UPDATE, DELETE) runs in a read-write transaction.
One run at a time applies files to a database: a run takes the migration lock
(:mod:`~watcher.schema_tools.migration_lock`) and re-reads what is applied once it has it.

Each applied file is recorded in :data:`MIGRATIONS_TABLE` as (folder id, version, name,
checksum, applied_at). Folders are tracked on their own: the folder id (by default the
folder's name) is part of the key, so ``ddl/watcher`` and ``ddl/samples/singers`` can both
have a ``V001``. Running again applies nothing; a file edited after it was applied is
refused (:class:`~watcher.errors.MigrationChangedError`), as is a new file whose version is
below one already applied. The default set (the watcher's own tables) ships inside the
package: :func:`default_migrations` (see :func:`migrations_root` for where the files are found).

Example:
    >>> statements = split_statements("CREATE TABLE A (K INT64) PRIMARY KEY (K);\\n-- a comment\\nDROP TABLE A;")
    >>> [(s.line, s.sql) for s in statements]
    [(1, 'CREATE TABLE A (K INT64) PRIMARY KEY (K)'), (3, 'DROP TABLE A')]
    >>> default_migrations().folder_id, [f.filename for f in default_migrations().files][:1]
    ('watcher', ['V001__watcher_checkpoints.sql'])
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol

from ..errors import MigrationChangedError, MigrationError, MigrationStatementError
from ..sqlnames import quote_identifier, validate_identifier
from .migration_lock import DEFAULT_LOCK_TIMEOUT, MigrationLock, create_lock_table_sql, lock_table_name

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = "SPANNER_WATCHER_MIGRATIONS"
#: The default set's folder (``ddl/watcher``) and its id in :data:`MIGRATIONS_TABLE`.
DEFAULT_FOLDER_ID = "watcher"
#: The sample schemas' folder (``ddl/samples/<name>``).
SAMPLES_FOLDER = "samples"
#: Where a built wheel holds ``ddl/`` inside this package (setup.py copies it there).
PACKAGED_DATA = "migrations_data"
#: ``ddl/`` of a source checkout or an editable install: the project root is two levels above this package.
SOURCE_DDL = Path(__file__).resolve().parents[2] / "ddl"
#: Seconds a schema change may take before the runner gives up waiting.
DDL_TIMEOUT = 1800.0
#: Checksums name their algorithm, so a later change of algorithm can be recognised.
CHECKSUM_PREFIX = "sha256:"

_FILE_NAME = re.compile(r"^V(\d{1,9})__([A-Za-z0-9_]+)\.sql$")
_DDL_WORDS = frozenset({"CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "RENAME", "ANALYZE"})
_DML_WORDS = frozenset({"INSERT", "UPDATE", "DELETE"})


# --- statements -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Statement:
    """One statement of a file: its text (comments removed) and the line it starts on."""

    sql: str
    line: int

    @property
    def kind(self) -> str:
        """``"ddl"`` or ``"dml"`` (by the first keyword)."""
        word = re.match(r"[A-Za-z]*", self.sql).group(0).upper()  # type: ignore[union-attr]
        return "ddl" if word in _DDL_WORDS else "dml" if word in _DML_WORDS else "other"


_QUOTES = ("'''", '"""', "'", '"', "`")


def split_statements(text: str, source: str = "<text>") -> list[Statement]:
    """Split ``text`` at the semicolons that are outside strings, quoted names and comments.

    Comments are dropped (a comment becomes one space, its line breaks are kept). Raises
    MigrationError for an unterminated string or comment, naming ``source`` and the line.

    >>> [s.sql for s in split_statements("INSERT INTO T (S) VALUES ('a;b') /* ; */; # tail")]
    ["INSERT INTO T (S) VALUES ('a;b')"]
    """
    statements: list[Statement] = []
    current: list[str] = []
    start_line: int | None = None
    line, i, n = 1, 0, len(text)

    def flush() -> None:
        nonlocal current, start_line
        sql = "".join(current).strip()
        if sql:
            assert start_line is not None
            statements.append(Statement(sql, start_line))
        current, start_line = [], None

    while i < n:
        ch = text[i]
        if ch == ";":
            flush()
            i += 1
            continue
        if text.startswith("--", i) or ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            current.append(" ")
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise MigrationError(f"{source}:{line}: unterminated /* comment")
            breaks = text.count("\n", i, end)
            current.append(" " + "\n" * breaks)
            line += breaks
            i = end + 2
            continue
        quote = next((q for q in _QUOTES if text.startswith(q, i)), None)
        if quote is not None:
            end = _end_of_quoted(text, i, quote)
            if end < 0:
                what = "quoted name" if quote == "`" else "string"
                raise MigrationError(f"{source}:{line}: unterminated {what} starting with {quote}")
            if start_line is None:
                start_line = line
            current.append(text[i:end])
            line += text.count("\n", i, end)
            i = end
            continue
        if ch == "\n":
            line += 1
        elif not ch.isspace() and start_line is None:
            start_line = line
        current.append(ch)
        i += 1
    flush()
    return statements


def _end_of_quoted(text: str, start: int, quote: str) -> int:
    """Index just past the closing ``quote`` of the literal starting at ``start``, or -1."""
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if len(quote) == 1 and text[i] == "\n":
            return -1  # single-quoted literals end on their line
        i += 1
    return -1


# --- files and folders ------------------------------------------------------------------------------

class _Entry(Protocol):
    """What a folder entry offers: pathlib.Path and importlib.resources Traversable both do."""

    @property
    def name(self) -> str: ...

    def is_file(self) -> bool: ...
    def read_bytes(self) -> bytes: ...


def checksum(data: bytes) -> str:
    """The checksum of a file's text (BOM and CRLF line ends do not count).

    >>> checksum(b"A;\\r\\n") == checksum(b"A;\\n")
    True
    """
    text = data.decode("utf-8-sig").replace("\r\n", "\n")
    return CHECKSUM_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class MigrationFile:
    """One parsed migration file."""

    version: int
    name: str
    filename: str
    location: str
    checksum: str
    statements: tuple[Statement, ...]

    @staticmethod
    def parse(filename: str, data: bytes, location: str) -> MigrationFile:
        match = _FILE_NAME.match(filename)
        if not match:
            raise MigrationError(f"{location}: migration files are named V<version>__<name>.sql "
                                 "(e.g. V001__create_singers.sql); rename this file or move it out of the folder")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise MigrationError(f"{location}: not UTF-8 text ({exc})") from None
        statements = tuple(split_statements(text, location))
        if not statements:
            raise MigrationError(f"{location}: the file holds no statement")
        for st in statements:
            if st.kind == "other":
                raise MigrationError(f"{location}:{st.line}: only schema statements (CREATE, ALTER, DROP, ...) and DML "
                                     f"(INSERT, UPDATE, DELETE) can be migrations, not: {st.sql.split()[0]} ...")
        return MigrationFile(int(match.group(1)), match.group(2), filename, location, checksum(data), statements)


@dataclass(frozen=True)
class MigrationSet:
    """The migration files of one folder, in version order, tracked under ``folder_id``."""

    folder_id: str
    location: str
    files: tuple[MigrationFile, ...]

    @staticmethod
    def from_entries(folder_id: str, location: str, entries: Iterable[_Entry]) -> MigrationSet:
        files: dict[int, MigrationFile] = {}
        for entry in sorted(entries, key=lambda e: e.name):
            if not entry.is_file() or not entry.name.lower().endswith(".sql"):
                continue
            parsed = MigrationFile.parse(entry.name, entry.read_bytes(), f"{location}/{entry.name}")
            if parsed.version in files:
                raise MigrationError(f"{location}: {files[parsed.version].filename} and {parsed.filename} "
                                     f"have the same version {parsed.version}")
            files[parsed.version] = parsed
        return MigrationSet(_folder_id(folder_id), location, tuple(files[v] for v in sorted(files)))

    def statements(self) -> list[str]:
        """Every statement of the set's files, in order (for a database created with its schema).

        Example:
            >>> sample_migrations("singers").statements()[1]
            'CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)'
        """
        return [st.sql for migration in self.files for st in migration.statements]

    @staticmethod
    def from_directory(path: str | os.PathLike[str], folder_id: str | None = None) -> MigrationSet:
        """The files of folder ``path``; the folder id defaults to the folder's name."""
        from pathlib import Path

        folder = Path(path)
        if not folder.is_dir():
            raise MigrationError(f"migration folder {str(path)!r} does not exist or is not a folder")
        loaded = MigrationSet.from_entries(folder_id or folder.resolve().name, str(path).rstrip("/"), folder.iterdir())
        if not loaded.files:
            # A parent such as ddl/ holds migration folders, not migrations: name them rather than do nothing.
            inside = sorted(str(d) for d in folder.rglob("*") if d.is_dir() and any(d.glob("V*__*.sql")))
            hint = f"; the folders in it with migrations: {', '.join(inside)} (pass each with --dir)" if inside else ""
            raise MigrationError(f"migration folder {str(path)!r} holds no V<version>__<name>.sql file{hint}")
        return loaded


def migrations_root() -> Traversable:
    """The folder holding the project's ``ddl/`` tree (``watcher/``, ``samples/<name>/``).

    An installed wheel carries it inside the package (:data:`PACKAGED_DATA`, copied from
    ``ddl/`` when the wheel is built); a source checkout or an editable install has no copy
    and reads ``ddl/`` beside the package (:data:`SOURCE_DDL`).

    >>> migrations_root().joinpath(DEFAULT_FOLDER_ID, "V001__watcher_checkpoints.sql").is_file()
    True
    """
    packaged = importlib.resources.files("watcher.schema_tools").joinpath(PACKAGED_DATA)
    if packaged.is_dir():
        return packaged
    if SOURCE_DDL.is_dir():
        return SOURCE_DDL
    raise MigrationError(f"the packaged migrations are missing: neither {packaged} nor {SOURCE_DDL} is a folder "
                         "(reinstall spanner-watcher)")


def default_migrations() -> MigrationSet:
    """The watcher's own tables (checkpoints, change sets, changelog): ``ddl/watcher``, shipped in the package."""
    folder = migrations_root().joinpath(DEFAULT_FOLDER_ID)
    return MigrationSet.from_entries(DEFAULT_FOLDER_ID, f"spanner-watcher:{DEFAULT_FOLDER_ID}", folder.iterdir())


def sample_migrations(name: str = "singers") -> MigrationSet:
    """A sample schema shipped in the package (``ddl/samples/<name>``), e.g. the benchmark's Singers table."""
    folder = migrations_root().joinpath(SAMPLES_FOLDER, name)
    if not folder.is_dir():
        raise MigrationError(f"no sample schema {name!r} in the package")
    return MigrationSet.from_entries(name, f"spanner-watcher:{SAMPLES_FOLDER}/{name}", folder.iterdir())


def _folder_id(value: str) -> str:
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$", value or ""):
        raise MigrationError(f"invalid migration folder id {value!r}: use letters, digits, '_', '.' and '-' "
                             "(at most 100 characters)")
    return value


# --- the runner -------------------------------------------------------------------------------------

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


def _create_table_sql(table: str) -> str:
    return (f"CREATE TABLE {quote_identifier(table, 'migrations table')} (\n"
            "  FOLDER_ID STRING(MAX) NOT NULL,\n"
            "  VERSION INT64 NOT NULL,\n"
            "  NAME STRING(MAX) NOT NULL,\n"
            "  CHECKSUM STRING(MAX) NOT NULL,\n"
            "  APPLIED_AT TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),\n"
            ") PRIMARY KEY (FOLDER_ID, VERSION)")


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

    # --- the migrations table ----------------------------------------------------------------------

    def table_exists(self, table: str | None = None) -> bool:
        """Whether the tracking table (or ``table``) exists."""
        from google.cloud.spanner_v1 import param_types

        sql = ("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES "
               "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' AND TABLE_NAME = @table")
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(sql, params={"table": table or self.table},
                                         param_types={"table": param_types.STRING}))
        return bool(rows and rows[0][0])

    def ensure_table(self) -> None:
        """Create the tracking table and the lock table, where missing (safe to race with another run)."""
        missing = [sql for name, sql in ((self.table, _create_table_sql(self.table)),
                                         (self.lock_table, create_lock_table_sql(self.lock_table)))
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
        return MigrationLock(self.database, self.lock_table, timeout=self.lock_timeout, progress=self.progress)

    def applied(self, folder_id: str) -> list[AppliedMigration]:
        """The recorded migrations of ``folder_id`` (none when the table does not exist yet)."""
        from google.cloud.spanner_v1 import param_types

        if not self.table_exists():
            return []
        sql = (f"SELECT VERSION, NAME, CHECKSUM, APPLIED_AT FROM {quote_identifier(self.table)} "
               "WHERE FOLDER_ID = @folder ORDER BY VERSION")
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(sql, params={"folder": folder_id}, param_types={"folder": param_types.STRING}))
        return [AppliedMigration(folder_id, int(v), n, c, at) for v, n, c, at in rows]

    # --- planning --------------------------------------------------------------------------------------

    def plan(self, migrations: MigrationSet) -> MigrationPlan:
        """What is pending; raises when an applied file changed or a new file is out of order."""
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
        return MigrationPlan(migrations, tuple(applied), pending, missing)

    # --- applying --------------------------------------------------------------------------------------

    def migrate(self, sets: MigrationSet | Sequence[MigrationSet], *, dry_run: bool = False) -> MigrationReport:
        """Apply every pending file of ``sets``, in order; with ``dry_run``, only plan.

        All folders are checked before anything runs. Files are applied under the migration
        lock, after reading again what is applied (another run may have applied some while
        this one waited). Raises MigrationChangedError, MigrationStatementError (file, line,
        statement, reason), MigrationLockedError or MigrationError.
        """
        sets = [sets] if isinstance(sets, MigrationSet) else list(sets)
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
            tx.insert(self.table, ("FOLDER_ID", "VERSION", "NAME", "CHECKSUM", "APPLIED_AT"),
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
