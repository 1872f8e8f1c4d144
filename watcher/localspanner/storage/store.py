"""The SQLite file of one database: connections, and the schema kept inside it.

One writer connection (used only by whoever holds the database's writer, see
``engine.py``) and a pool of reader connections. WAL mode lets readers keep a snapshot
while the writer commits. The catalog is stored in the file as its DDL, so a database
reopened from a data directory has its schema back.

Example:
    >>> import tempfile, os
    >>> s = Storage(os.path.join(tempfile.mkdtemp(), "db.sqlite"))
    >>> s.load_ddl()
    []
    >>> s.close()
"""

from __future__ import annotations

import base64
import json
import sqlite3
import threading

from ..common import deadlines
from ..information import information_schema as info
from ..schema.catalog import Catalog
from ..sql import register_functions
from . import constraint_storage
from .checkpointer import Checkpointer
from .sqlite_names import quote
from .versions import ReaderConnection

META_TABLE = "_ls_meta"
#: Persisted state carries a format version, so a later server can tell what it reads.
FORMAT_VERSION = 1
#: WAL pages (4 KiB) after which a commit checkpoints itself, holding the database's writer.
#: Checkpoints normally run beside the writer (:mod:`.checkpointer`); this is the backstop
#: for when that thread falls behind (SQLite's default, 1,000, made every few commits of
#: random-key rows copy pages back and fsync twice while holding the writer).
WAL_AUTOCHECKPOINT_PAGES = 40_000
#: Bytes of the database file each connection maps into memory: a page read is then a memory
#: access instead of a read() into the page cache. Random-key writes touch a random page per row of
#: a table far larger than the cache, and cost less CPU so. Address space only; a larger file
#: reads the rest as before.
MMAP_BYTES = 1 << 30


class Storage:
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        self.writer = self._connect()
        self.writer.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        # The row-version capture keeps each transaction's pending images in TEMP tables (versions.py).
        self.writer.execute("PRAGMA temp_store=MEMORY")
        self.writer.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT PRIMARY KEY, value TEXT)")
        self.writer.execute(f"INSERT OR IGNORE INTO {META_TABLE} VALUES ('format_version', ?)", (str(FORMAT_VERSION),))
        self.checkpointer = Checkpointer(path)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0, factory=ReaderConnection)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a process crash (not a power cut) and keeps commits fast.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        register_functions(conn)
        constraint_storage.register(conn)
        deadlines.install(conn)
        return conn

    def reader(self) -> sqlite3.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def release(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()  # the storage closed while this reader was out: it is the last user

    @staticmethod
    def pin(conn: sqlite3.Connection) -> None:
        """Begin a read transaction on ``conn`` and take its snapshot now (SQLite takes it at the
        first read, not at BEGIN), so that what it reads is fixed from this moment."""
        conn.execute("BEGIN")
        conn.execute(f"SELECT 1 FROM {quote(META_TABLE)} LIMIT 1").fetchall()

    def load_ddl(self) -> list[str]:
        row = self.writer.execute(f"SELECT value FROM {META_TABLE} WHERE key = 'ddl'").fetchone()
        return json.loads(row[0]) if row else []

    def save_ddl(self, conn: sqlite3.Connection, statements: list[str]) -> None:
        conn.execute(f"INSERT OR REPLACE INTO {META_TABLE} VALUES ('ddl', ?)", (json.dumps(statements),))

    def load_proto_descriptors(self) -> bytes:
        """The FileDescriptorSet of the proto bundle (the DDL names its types; this holds their descriptors)."""
        row = self.writer.execute(f"SELECT value FROM {META_TABLE} WHERE key = 'proto_descriptors'").fetchone()
        return base64.b64decode(row[0]) if row else b""

    def save_proto_descriptors(self, conn: sqlite3.Connection, descriptors: bytes) -> None:
        conn.execute(f"INSERT OR REPLACE INTO {META_TABLE} VALUES ('proto_descriptors', ?)",
                     (base64.b64encode(descriptors).decode("ascii"),))

    def load_change_stream_times(self) -> dict[str, int]:
        """Creation commit timestamps of change streams by name (DDL text does not carry them)."""
        row = self.writer.execute(f"SELECT value FROM {META_TABLE} WHERE key = 'change_stream_created'").fetchone()
        return json.loads(row[0]) if row else {}

    def save_change_stream_times(self, conn: sqlite3.Connection, created: dict[str, int]) -> None:
        conn.execute(f"INSERT OR REPLACE INTO {META_TABLE} VALUES ('change_stream_created', ?)", (json.dumps(created),))

    def refresh_information_schema(self, conn: sqlite3.Connection, catalog: Catalog) -> None:
        """Rewrite the tables behind the INFORMATION_SCHEMA views for ``catalog``."""
        all_rows = info.rows(catalog)
        for view, table in info.stored_views(catalog).items():
            name = quote(info.sqlite_table_name(view))
            cols = ", ".join(quote(c.name) for c in table.columns)
            if len(conn.execute(f"PRAGMA table_info({name})").fetchall()) not in (0, len(table.columns)):
                conn.execute(f"DROP TABLE {name}")  # made before the dialect was set: PostgreSQL's columns differ
            conn.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
            conn.execute(f"DELETE FROM {name}")
            rows = all_rows.get(view, [])
            if rows:
                marks = ", ".join("?" * len(table.columns))
                conn.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)

    def close(self) -> None:
        """Close the writer and the idle readers; readers still in use close when released.

        A reader may be in the middle of a statement on another thread (an open change
        stream query while its database is dropped): closing its connection under it can
        crash the process, so it is left to :meth:`release`.
        """
        self.checkpointer.close()
        with self._lock:
            self._closed = True
            conns = [self.writer, *self._idle]
            self._idle = []
        for c in conns:
            try:
                c.close()
            except sqlite3.Error:
                pass
