"""Row deletion policies at work: finding expired rows and the sweeper that deletes them.

A row of a table with ``ROW DELETION POLICY (OLDER_THAN(col, INTERVAL n DAY))`` expires
once ``col`` plus ``n`` days is before the server's wall clock (a NULL never expires).
As on Spanner, the deletes run in the background as system transactions, one per table
and batch: their change stream records have ``is_system_transaction`` true and the tag
``RowDeletionPolicy``, and streams with ``exclude_ttl_deletes`` leave them out
(:data:`~..change_streams.capture.TTL_DELETE`). Deleting a row deletes its interleaved
children (the schema requires them to be ON DELETE CASCADE). Expired rows stay
readable until a sweep deletes them, and inserting an expired row is allowed.

:class:`Sweeper` runs ``sweep()`` every ``period`` seconds on a thread; tests call the
service's ``sweep_expired_rows()`` themselves.

Example:
    >>> import sqlite3
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE T (K INT64, Ts TIMESTAMP) PRIMARY KEY (K), ROW DELETION POLICY (OLDER_THAN(Ts, INTERVAL 1 DAY))"])
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE T (K INTEGER, Ts TEXT)")
    >>> _ = conn.executemany("INSERT INTO T VALUES (?, ?)", [(1, "1970-01-01T00:00:00.000000000Z"), (2, None)])
    >>> expired_delete(conn, cat.table("T"), 2 * DAY_NANOS).key_set.keys
    [['1']]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..common.requests import KeySet, Mutation
from ..datamodel import values
from ..schema.catalog import Table
from ..storage.sqlite_names import quote

log = logging.getLogger(__name__)

DAY_NANOS = 86_400 * 1_000_000_000
#: 0001-01-01T00:00:00Z, the earliest TIMESTAMP.
EARLIEST_NANOS = -62_135_596_800 * 1_000_000_000
#: Rows one system transaction deletes at most (Spanner's sweeper also deletes in batches).
BATCH_ROWS = 1_000


def expired_delete(conn: Any, table: Table, now_nanos: int, limit: int = BATCH_ROWS) -> Mutation | None:
    """A delete mutation of up to ``limit`` expired rows of ``table`` (wire keys); None when it has none."""
    policy = table.row_deletion_policy
    if policy is None:
        return None
    cutoff_nanos = now_nanos - policy.days * DAY_NANOS
    if cutoff_nanos < EARLIEST_NANOS:
        return None  # nothing is that old (a policy of more days than since year 1)
    keys = table.key_columns
    rows = conn.execute(f"SELECT {', '.join(quote(c.name) for c in keys)} FROM {quote(table.name)} "
                        f"WHERE {quote(policy.column)} < ? LIMIT ?", (values.nanos_to_stored(cutoff_nanos), limit)).fetchall()
    if not rows:
        return None
    wire = [[values.stored_to_wire(c.type, v) for c, v in zip(keys, row, strict=True)] for row in rows]
    return Mutation("delete", table.name, key_set=KeySet(keys=wire))


class Sweeper:
    """Calls ``sweep`` every ``period`` seconds on a daemon thread until :meth:`stop`."""

    def __init__(self, sweep: Callable[[], int], period: float) -> None:
        self._sweep = sweep
        self._period = period
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="local-spanner-row-deletion", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(self._period):
            try:
                self._sweep()
            except Exception:  # noqa: BLE001 - a failed sweep is retried at the next period, as Spanner's sweeper retries
                log.exception("deleting rows past their row deletion policy failed; retrying next period")
