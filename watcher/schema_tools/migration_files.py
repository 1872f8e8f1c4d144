"""Versioned migration files: a folder of ``V<version>__<name>.sql`` files, split into statements.

A migration folder holds files named ``V<version>__<name>.sql`` (``V001__watcher_checkpoints.sql``);
each file holds statements in the database's dialect (GoogleSQL or PostgreSQL) separated by ``;``
(``--``, ``#`` and ``/* */`` comments allowed). A :class:`MigrationSet` is one folder's files, with a folder id (by default the folder's
name) under which the runner (:mod:`~watcher.schema_tools.migrations`) tracks them. The default set
(the watcher's own tables) ships inside the package in both dialects: :func:`default_migrations` (see
:func:`migrations_root` for where the files are found).

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
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Protocol

from ..dialects import POSTGRESQL, Dialect
from ..errors import MigrationError

#: The default set's folder (``ddl/watcher``) and its id in the runner's migrations table.
DEFAULT_FOLDER_ID = "watcher"
#: The default set's folder for a PostgreSQL database (``ddl/watcher-postgresql``); tracked as :data:`DEFAULT_FOLDER_ID`
#: too, so a database has one history of the watcher's tables whichever dialect it is.
POSTGRESQL_FOLDER = "watcher-postgresql"
#: The sample schemas' folder (``ddl/samples/<name>``).
SAMPLES_FOLDER = "samples"
#: Where a built wheel holds ``ddl/`` inside this package (setup.py copies it there).
PACKAGED_DATA = "migrations_data"
#: ``ddl/`` of a source checkout or an editable install: the project root is two levels above this package.
SOURCE_DDL = Path(__file__).resolve().parents[2] / "ddl"
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
    #: The same set written for other dialects, by dialect name: what :meth:`for_dialect` picks.
    dialects: tuple[tuple[str, MigrationSet], ...] = field(default=(), compare=False, repr=False)

    def for_dialect(self, dialect: Dialect) -> MigrationSet:
        """The set to apply to a database of ``dialect``: its version for that dialect, else itself.

        >>> default_migrations().for_dialect(POSTGRESQL).location
        'spanner-watcher:watcher-postgresql'
        """
        return next((s for name, s in self.dialects if name == dialect.name), self)

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


def default_migrations(dialect: Dialect | None = None) -> MigrationSet:
    """The watcher's own tables (checkpoints, change sets, changelog), shipped in the package: ``ddl/watcher``
    in GoogleSQL, ``ddl/watcher-postgresql`` in PostgreSQL, both tracked as :data:`DEFAULT_FOLDER_ID`.

    Without ``dialect``, the GoogleSQL set that carries the PostgreSQL one: the runner applies the one of
    its database's dialect (:meth:`MigrationSet.for_dialect`).

    >>> [f.location.split(":")[1] for f in default_migrations(POSTGRESQL).files][:1]
    ['watcher-postgresql/V001__watcher_checkpoints.sql']
    """
    root = migrations_root()

    def load(folder: str) -> MigrationSet:
        return MigrationSet.from_entries(DEFAULT_FOLDER_ID, f"spanner-watcher:{folder}", root.joinpath(folder).iterdir())

    postgresql = load(POSTGRESQL_FOLDER)
    if dialect is POSTGRESQL:
        return postgresql
    google = load(DEFAULT_FOLDER_ID)
    return google if dialect is not None else MigrationSet(google.folder_id, google.location, google.files,
                                                          ((POSTGRESQL.name, postgresql),))


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
