"""What SQLite itself spends on the benchmark's upserts: the yardstick for the server's CPU per mutation.

The rows the writers send (same generator, same shape), already in the server's stored
form, upserted into a copy of the server's own ``Singers`` table (its DDL read from the
server's database file: its layout, a rowid table since the key is one NOT NULL INT64;
the generated ``ShardId`` with the server's FARM_FINGERPRINT function; the shard index)
with the server's statement (``INSERT ... ON CONFLICT DO UPDATE``), 100 rows per
transaction, WAL, ``synchronous=NORMAL`` and the memory map as the server runs them.
Only ``executemany`` and ``COMMIT`` are timed (this process's CPU); making the rows is not.

``prefill`` grows the table first (untimed) to that many rows of the same generator, with
distinct keys of the same key space, so the upserts land in a table as large as the
server's: an upsert into a table of 300,000 rows dirties a page per row and costs more
than one into an empty table, and comparing the server's grown table with an empty
replay would compare unlike things.

Example:
    >>> replay_cpu_us_per_mutation(path_of_server_db, workdir, mutations=20_000)  # doctest: +SKIP
    21.7
"""

from __future__ import annotations

import glob
import os
import random
import sqlite3
import time

from watcher.localspanner.datamodel import types as T
from watcher.localspanner.datamodel import values
from watcher.localspanner.sql import register_functions
from watcher.localspanner.storage import store as storage

from .localspanner_server import SINGERS_COLUMNS, RowMaker, RowShape

#: Column types of SINGERS_COLUMNS, to turn the client's values into the stored form.
_TYPES = (T.INT64, T.STRING, T.STRING, T.DATE, T.BYTES, T.TIMESTAMP, T.BOOL)


def server_database_file(data_dir: str, database_id: str) -> str:
    """The SQLite file the server keeps ``database_id`` in."""
    found = glob.glob(os.path.join(data_dir, "databases", "*", f"{database_id}.sqlite"))
    if not found:
        raise FileNotFoundError(f"no file of database {database_id} under {data_dir}")
    return found[0]


def _singers_ddl(server_file: str) -> list[str]:
    conn = sqlite3.connect(f"file:{server_file}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'Singers' AND sql IS NOT NULL ORDER BY type DESC")]
    finally:
        conn.close()


def _stored_rows(count: int, seed: int, shape: RowShape, key_space: int) -> list[list[object]]:
    maker = RowMaker(seed, shape)
    rng = random.Random(seed)
    now = values.nanos_to_stored(time.time_ns() // 1000 * 1000)
    out = []
    for _ in range(count):
        wire = maker.row(rng.randrange(key_space))
        row = [values.wire_to_stored(t, str(v) if t.code == T.INT64.code else (v.decode() if isinstance(v, bytes) else v))
               if v != values.COMMIT_TIMESTAMP_SENTINEL else now for t, v in zip(_TYPES, _wire(wire), strict=True)]
        out.append(row)
    return out


def _wire(row: tuple) -> list[object]:
    """The client's values as they arrive on the wire (the commit timestamp as its sentinel)."""
    singer_id, first, last, birth, picture, ts, processed = row
    return [singer_id, first, last, birth.isoformat(), picture, values.COMMIT_TIMESTAMP_SENTINEL, processed]


def _prefill(conn: sqlite3.Connection, insert: str, rows: int, seed: int, shape: RowShape, key_space: int) -> None:
    """Grow the table to ``rows`` rows (distinct random keys of ``key_space``) and checkpoint the WAL."""
    keys = random.Random(seed + 1_000_003).sample(range(key_space), rows)
    for first in range(0, rows, 20_000):
        chunk = _stored_rows(min(20_000, rows - first), seed + first, shape, key_space)
        for row, key in zip(chunk, keys[first:first + 20_000], strict=False):
            row[0] = key
        conn.execute("BEGIN")
        conn.executemany(insert, chunk)
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def replay_cpu_us_per_mutation(server_file: str, workdir: str, *, mutations: int, per_commit: int = 100,
                               seed: int = 7, shape: RowShape | None = None, key_space: int = 1_000_000,
                               prefill: int = 0) -> float:
    """CPU microseconds per upserted row when SQLite alone writes ``mutations`` rows, ``per_commit`` a transaction,
    into a table of ``prefill`` rows."""
    path = os.path.join(workdir, f"sqlite-replay-{seed}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute(f"PRAGMA mmap_size={storage.MMAP_BYTES}")  # as the server's connections (storage/store.py)
        conn.execute("PRAGMA wal_autocheckpoint=10000")
        register_functions(conn)
        for statement in _singers_ddl(server_file):
            conn.execute(statement)
        cols = ", ".join(f'"{c}"' for c in SINGERS_COLUMNS)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in SINGERS_COLUMNS[1:])
        upsert = f'INSERT INTO "Singers" ({cols}) VALUES ({", ".join("?" * len(SINGERS_COLUMNS))}) ON CONFLICT ("SingerId") DO UPDATE SET {sets}'
        insert = f'INSERT INTO "Singers" ({cols}) VALUES ({", ".join("?" * len(SINGERS_COLUMNS))})'
        if prefill:
            _prefill(conn, insert, prefill, seed, shape or RowShape(), key_space)
        rows = _stored_rows(mutations, seed, shape or RowShape(), key_space)
        started = time.process_time()
        for first in range(0, len(rows), per_commit):
            conn.execute("BEGIN")
            conn.executemany(upsert, rows[first:first + per_commit])
            conn.execute("COMMIT")
        return (time.process_time() - started) / len(rows) * 1e6
    finally:
        conn.close()
