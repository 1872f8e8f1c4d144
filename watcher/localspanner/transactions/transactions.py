"""Transaction records of one database: read/write, partitioned DML, read-only snapshots.

A read/write transaction takes the database's writer at its first read or DML and keeps
it until it commits or rolls back; it is therefore serializable, and its reads see its
own DML. Mutations wait in the transaction until commit. A read-only transaction holds a
pinned SQLite snapshot taken at its read timestamp.

Example:
    >>> t = ReadWriteTransaction(session="s")
    >>> len(t.id), t.state
    (16, 'active')
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..change_streams.capture import USER_TXN, TxnOrigin
from ..common.requests import Mutation
from ..schema.catalog import Catalog


@dataclass
class PendingCommitTimestamp:
    """Rows that DML wrote with PENDING_COMMIT_TIMESTAMP(), to fill in at commit, by key."""

    table: str
    columns: tuple[str, ...]
    key: tuple[Any, ...]


@dataclass(eq=False)
class ReadWriteTransaction:
    session: str
    partitioned: bool = False
    #: Which change streams leave it out (sent with ``exclude_txn_from_change_streams``, or a system transaction).
    origin: TxnOrigin = USER_TXN
    id: bytes = field(default_factory=lambda: os.urandom(16))
    state: str = "active"  # active, committed, rolled_back, aborted
    holds_writer: bool = False
    last_used: float = field(default_factory=time.monotonic)
    pending: list[PendingCommitTimestamp] = field(default_factory=list)
    #: What its DML wrote so far, counted as :func:`mutation_count` counts mutations.
    dml_mutations: int = 0
    abort_reason: str = ""
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    #: seqno -> (request, answer) of the DML requests that ran, for replays.
    replies: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def replay(self, seqno: int | None, request: Any) -> Any | None:
        """The answer to an earlier ``request`` sent with the same ``seqno``, else None.

        Spanner makes DML requests idempotent within a transaction by their sequence number:
        a request received again (a client retrying after a lost answer) is answered as the
        first time, not run twice. A different request under a used number runs normally.

        >>> t = ReadWriteTransaction(session="s")
        >>> t.remember(3, "UPDATE ...", 1); t.replay(3, "UPDATE ..."), t.replay(3, "DELETE ..."), t.replay(None, "UPDATE ...")
        (1, None, None)
        """
        if seqno is None:
            return None
        found = self.replies.get(seqno)
        return found[1] if found is not None and found[0] == request else None

    def remember(self, seqno: int | None, request: Any, answer: Any) -> None:
        """Keep the answer to ``request`` for a replay of ``seqno`` (None: the caller sent none)."""
        if seqno is not None:
            self.replies[seqno] = (request, answer)


@dataclass(eq=False)
class Snapshot:
    """A consistent view at ``read_nanos``: a SQLite read transaction on a reader connection."""

    conn: sqlite3.Connection
    read_nanos: int
    catalog: Catalog
    id: bytes = field(default_factory=lambda: os.urandom(16))
    last_used: float = field(default_factory=time.monotonic)
    released: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    users: int = 0  # requests reading in it now
    parked: bool = False  # its read transaction was given back (see parked_snapshots.py)


Transaction = ReadWriteTransaction | Snapshot


def mutation_count(mutations: list[Mutation]) -> int:
    """Mutations as Spanner counts them for commit statistics.

    An insert, update, insert-or-update or replace counts each column of each row it writes
    (key columns included); a delete counts one per key and one per key range, whatever the
    columns or the interleaved rows it removes (all rows of a table: one). DML counts the same
    way (``DmlTranslation.cells_per_row``: an UPDATE's key and SET columns, a DELETE one per row).
    Secondary index entries, which Spanner adds on top (one per index per deleted row, for
    instance), are not counted: the count is the table writes only.

    >>> from watcher.localspanner.common.requests import KeySet
    >>> mutation_count([Mutation("insert", "T", ("K", "V"), [[1, "a"], [2, "b"]]),
    ...                 Mutation("delete", "T", key_set=KeySet(keys=[[3], [4]]))])
    6
    """
    total = 0
    for m in mutations:
        if m.op == "delete":
            ks = m.key_set
            total += (len(ks.keys) + len(ks.ranges)) if ks and not ks.all else 1
        else:
            total += len(m.columns) * max(len(m.rows), 1)
    return total
