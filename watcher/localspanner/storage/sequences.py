"""The values sequences hand out: one counter per sequence, bit-reversed into positive INT64 values.

A ``bit_reversed_positive`` sequence keeps an internal counter (starting at
``start_with_counter``, default 1) and returns the counter's lower 63 bits reversed, so
consecutive values spread over the key space and are always positive; values inside the
sequence's skipped range are passed over. ``GET_INTERNAL_SEQUENCE_STATE`` shows the
counter (NULL before the first value).

Counters live in memory under a lock and are saved in the database file
(:data:`STATE_TABLE`) inside the writer's SQLite transaction, by :meth:`Counters.save`
(called after each statement and before each commit). A value is never handed out twice
by a running server, whatever happens to the transaction that drew it (as on Spanner,
sequences are not transactional: a rolled-back transaction leaves a gap); after a restart
the saved counters of committed transactions are where counting resumes, so no
committed value comes again. ``ALTER SEQUENCE ... SET OPTIONS (start_with_counter = n)``
with a new ``n`` restarts the counter at ``n``; DROP SEQUENCE forgets it.

Example:
    >>> bit_reverse(1), bit_reverse(2), bit_reverse(3)
    (4611686018427387904, 2305843009213693952, 6917529027641081856)
    >>> bit_reverse(bit_reverse(12345))
    12345
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .. import errors
from ..schema.catalog import Catalog, Sequence

STATE_TABLE = "_ls_sequence_state"
DEFAULT_START_WITH_COUNTER = 1
INT64_MAX = 2**63 - 1
#: How many skipped values one draw may pass over before the sequence counts as exhausted.
MAX_SKIPPED_DRAWS = 2**20

_BITS = 63


def bit_reverse(value: int, preserve_sign: bool = True) -> int:
    """GoogleSQL's BIT_REVERSE: the bits of an INT64 reversed; with ``preserve_sign`` the sign bit stays
    and the other 63 are reversed.

    >>> bit_reverse(1, False), bit_reverse(-1, True)
    (-9223372036854775808, -1)
    """
    unsigned = value & (2**64 - 1)
    if preserve_sign:
        sign = unsigned & (1 << 63)
        low = int(format(unsigned & ((1 << _BITS) - 1), f"0{_BITS}b")[::-1], 2)
        out = sign | low
    else:
        out = int(format(unsigned, "064b")[::-1], 2)
    return out - 2**64 if out >= 2**63 else out


class Counters:
    """The counters of one database's sequences (thread-safe)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (name TEXT PRIMARY KEY, counter INTEGER NOT NULL,"
                     " start_with INTEGER)")
        self._lock = threading.Lock()
        # name (lower case) -> [next counter, start_with_counter it was started with]
        self._counters: dict[str, list[int | None]] = {
            name: [counter, start] for name, counter, start in conn.execute(f"SELECT name, counter, start_with FROM {STATE_TABLE}")
        }
        self._dirty: set[str] = set()
        self._forgotten: set[str] = set()

    def next_value(self, seq: Sequence) -> int:
        """The next value of ``seq``; FAILED_PRECONDITION when its counter is used up."""
        key = seq.name.lower()
        with self._lock:
            entry = self._counters.get(key)
            if entry is None:
                entry = [seq.start_with_counter or DEFAULT_START_WITH_COUNTER, seq.start_with_counter]
                self._counters[key] = entry
            self._dirty.add(key)
            for _ in range(MAX_SKIPPED_DRAWS):
                counter = entry[0]
                assert counter is not None
                if counter >= INT64_MAX:
                    raise errors.sequence_exhausted(seq.name)
                entry[0] = counter + 1
                value = bit_reverse(counter)
                if not _skipped(seq, value):
                    return value
            raise errors.sequence_exhausted(seq.name)

    def state(self, seq: Sequence) -> int | None:
        """GET_INTERNAL_SEQUENCE_STATE: the counter, None before the first value."""
        with self._lock:
            entry = self._counters.get(seq.name.lower())
            return None if entry is None else entry[0]

    def follow(self, catalog: Catalog) -> None:
        """Adjust to a new schema: forget dropped sequences, restart those whose start_with_counter changed."""
        current = {s.name.lower(): s for s in catalog.all_sequences()}
        with self._lock:
            for key in list(self._counters):
                seq = current.get(key)
                if seq is None:
                    del self._counters[key]
                    self._forgotten.add(key)
                    self._dirty.discard(key)
                elif seq.start_with_counter is not None and seq.start_with_counter != self._counters[key][1]:
                    self._counters[key] = [seq.start_with_counter, seq.start_with_counter]
                    self._dirty.add(key)

    def save(self, conn: sqlite3.Connection) -> None:
        """Write the counters changed since the last save (call inside the writer's SQLite transaction)."""
        with self._lock:
            if not self._dirty and not self._forgotten:
                return
            rows = [(k, *self._counters[k]) for k in self._dirty]
            gone = [(k,) for k in self._forgotten]
            self._dirty.clear()
            self._forgotten.clear()
        if rows:
            conn.executemany(f"INSERT OR REPLACE INTO {STATE_TABLE} (name, counter, start_with) VALUES (?, ?, ?)", rows)
        if gone:
            conn.executemany(f"DELETE FROM {STATE_TABLE} WHERE name = ?", gone)

    @contextmanager
    def drawing(self, conn: sqlite3.Connection, catalog: Catalog) -> Iterator[None]:
        """Let SQL on this thread draw values (GET_NEXT_SEQUENCE_VALUE, sequence DEFAULTs) from these
        counters, and save what was drawn to ``conn`` afterwards (still inside its transaction)."""
        previous = getattr(_active, "value", None)
        _active.value = Use(self, catalog, can_draw=True)
        try:
            yield
        finally:
            _active.value = previous
            if conn.in_transaction:
                self.save(conn)

    @contextmanager
    def reading(self, catalog: Catalog) -> Iterator[None]:
        """Let SQL on this thread read the counters (GET_INTERNAL_SEQUENCE_STATE) but draw none
        (a read-only transaction)."""
        previous = getattr(_active, "value", None)
        _active.value = Use(self, catalog, can_draw=False)
        try:
            yield
        finally:
            _active.value = previous


def _skipped(seq: Sequence, value: int) -> bool:
    return (seq.skip_range_min is not None and seq.skip_range_max is not None
            and seq.skip_range_min <= value <= seq.skip_range_max)


@dataclass(frozen=True)
class Use:
    """What SQL running on this thread may do with sequences: whose counters, which schema, draw or only read."""

    counters: Counters
    catalog: Catalog
    can_draw: bool


_active = threading.local()


def active() -> Use | None:
    """How SQL on this thread may use sequences; None outside the engine's statements."""
    return getattr(_active, "value", None)
