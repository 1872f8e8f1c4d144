"""The hidden table of data change records, one row per record, and its queries.

A record belongs to one stream, one transaction (``txn``, with its ``seq`` within the
transaction) and one key *bucket* (the half of the key space its keys hash to: the
partitions of a split stream each read one bucket, see :mod:`.partitions`). The record's
content (table, column types, mods, mod type, capture type, tag) is in ``body``
(:func:`encode_body`: ``marshal`` bytes, several times cheaper at commit than JSON text
with base64 BYTES, which older data directories hold and :func:`decode_body` still
reads); the read function turns it into the result's STRUCT. Rows are appended in
commit order, so purging what is older than a stream's retention deletes old rows by
the ``(stream, commit_ts)`` index.

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> ensure_table(conn)
    >>> insert(conn, [Record("S", 5, "t1", 0, 1, 1, 1, "{}")])
    >>> [r.txn for r in fetch(conn, "S", 0, 10, 3)]
    ['t1']
    >>> bucket_counts(conn, "S", 4, 5), bucket_counts(conn, "S", 5, 10)
    ({1: 1}, {})
"""

from __future__ import annotations

import json
import marshal
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

RECORDS_TABLE = "_ls_cs_records"


@dataclass(frozen=True)
class Record:
    """One stored data change record (``body``: the parts the read function shows, see :func:`encode_body`)."""

    stream: str
    commit_nanos: int
    txn: str
    seq: int
    bucket: int
    records_in_txn: int
    buckets_in_txn: int
    body: str | bytes


#: marshal's format version for bodies (fixed, so a newer Python still reads what an older one wrote).
BODY_FORMAT = 4


def encode_body(content: dict[str, Any]) -> bytes:
    """A record's content (dicts, lists, tuples of None, bool, int, float, str, bytes) as stored.

    >>> decode_body(encode_body({"mods": [[{"K": 1}, {"P": b"\\x00"}, {}]]}))
    {'mods': [[{'K': 1}, {'P': b'\\x00'}, {}]]}
    """
    return marshal.dumps(content, BODY_FORMAT)


def decode_body(body: str | bytes) -> dict[str, Any]:
    """What :func:`encode_body` stored; a text body is the JSON of older data directories (BYTES as base64).

    >>> decode_body('{"mods": [[{"K": 1}, {"P": "AA=="}, {}]]}')
    {'mods': [[{'K': 1}, {'P': 'AA=='}, {}]]}
    """
    return json.loads(body) if isinstance(body, str) else marshal.loads(body)


_COLUMNS = "stream, commit_ts, txn, seq, bucket, n_records, n_buckets, body"


def ensure_table(conn: sqlite3.Connection) -> None:
    """Create the records table and its index if missing (inside the caller's transaction, if any)."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {RECORDS_TABLE} (stream TEXT NOT NULL, commit_ts INTEGER NOT NULL, "
                 "txn TEXT NOT NULL, seq INTEGER NOT NULL, bucket INTEGER NOT NULL, n_records INTEGER NOT NULL, "
                 "n_buckets INTEGER NOT NULL, body TEXT NOT NULL)")
    conn.execute(f"CREATE INDEX IF NOT EXISTS {RECORDS_TABLE}_by_ts ON {RECORDS_TABLE} (stream, commit_ts)")


def insert(conn: sqlite3.Connection, records: Iterable[Record]) -> None:
    conn.executemany(f"INSERT INTO {RECORDS_TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     [(r.stream.lower(), r.commit_nanos, r.txn, r.seq, r.bucket, r.records_in_txn, r.buckets_in_txn, r.body)
                      for r in records])


def fetch(conn: sqlite3.Connection, stream: str, start: int, end: int, bucket_mask: int) -> list[Record]:
    """The records of ``stream`` committed in ``[start, end]`` whose bucket is in ``bucket_mask``, in commit order."""
    try:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM {RECORDS_TABLE} WHERE stream = ? AND commit_ts >= ? AND commit_ts <= ? "
                            "AND ((1 << bucket) & ?) != 0 ORDER BY commit_ts, rowid",
                            (stream.lower(), start, end, bucket_mask)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []  # no stream has captured anything in this database yet
        raise
    return [Record(*r) for r in rows]


def purge(conn: sqlite3.Connection, stream: str, cutoff: int) -> int:
    """Delete the records of ``stream`` committed before ``cutoff``; returns how many."""
    return conn.execute(f"DELETE FROM {RECORDS_TABLE} WHERE stream = ? AND commit_ts < ?", (stream.lower(), cutoff)).rowcount


def drop_stream(conn: sqlite3.Connection, stream: str) -> None:
    """Forget the records of a dropped stream."""
    conn.execute(f"DELETE FROM {RECORDS_TABLE} WHERE stream = ?", (stream.lower(),))


def bucket_counts(conn: sqlite3.Connection, stream: str, after: int, upto: int) -> dict[int, int]:
    """How many records of ``stream`` each key bucket holds with ``after < commit_ts <= upto``."""
    try:
        rows = conn.execute(f"SELECT bucket, COUNT(*) FROM {RECORDS_TABLE} WHERE stream = ? AND commit_ts > ? "
                            "AND commit_ts <= ? GROUP BY bucket", (stream.lower(), after, upto)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise
    return dict(rows)
