"""Row versions: what each commit changed, kept so reads in the past see the data of then.

Capture happens inside the SQLite transaction of the change, so a version exists exactly
when its change committed:

* the writer connection carries TEMP triggers on every user table that copy the row as it
  was before each insert, update or delete (``OLD``; an insert has no old row) into a TEMP
  pending table. Every write path goes through them: mutations, DML, batch and
  partitioned DML, batch writes, and the deletes an ``ON DELETE CASCADE`` makes. A rolled
  back statement or transaction takes its pending rows with it.
* :func:`record_commit`, called by the commit path once the commit timestamp is chosen,
  moves the first pending image of each key into the table's versions table
  ``_ls_v_<table>`` with ``_ls_to_ts`` = the commit timestamp (the image was valid until
  then) and ``_ls_present`` = whether the row existed. It can also hand the commit's
  changes back as :class:`RowChange` records (table, key, INSERT/UPDATE/DELETE, old and
  new image, commit timestamp) for a consumer such as change streams.

A read at T sees, per key, the old image of the earliest change after T if there is
one, else the live row (:func:`past_view_sql`). Live rows carry no timestamp, so strong
reads and the watcher's poll read the tables exactly as before. Rows are appended in
commit order, so purging what is older than the retention deletes a rowid prefix.

Example:
    >>> from watcher.localspanner import types as T
    >>> from watcher.localspanner.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("V", T.STRING)), (KeyPart("K"),))
    >>> print(versions_table_sql(t))
    CREATE TABLE IF NOT EXISTS "_ls_v_T" ("K", "V", "_ls_to_ts", "_ls_present")
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .catalog import Catalog, Table
from .sqlite_names import quote

VERSIONS_PREFIX = "_ls_v_"
PENDING_PREFIX = "_ls_pending_"
TRIGGER_PREFIX = "_ls_capture_"
TO_TS = "_ls_to_ts"
PRESENT = "_ls_present"
#: Commits between two purges of versions older than the retention period.
PURGE_EVERY_COMMITS = 256

_HINT = re.compile(r' (?:INDEXED BY "(?:[^"]|"")*"|NOT INDEXED)')


@dataclass(frozen=True)
class RowChange:
    """One row changed by one commit: ``old`` / ``new`` are column -> stored value (None: no row)."""

    table: str
    key: tuple[Any, ...]
    mod_type: str  # INSERT, UPDATE or DELETE
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    commit_nanos: int


def versions_table(table: Table) -> str:
    return VERSIONS_PREFIX + table.name


def _pending(table: Table) -> str:
    return PENDING_PREFIX + table.name


def _cols(table: Table) -> list[str]:
    return [quote(c.name) for c in table.columns]


def versions_table_sql(table: Table) -> str:
    """The versions table of ``table``: its columns, then until when the image was valid and whether the row existed."""
    return f"CREATE TABLE IF NOT EXISTS {quote(versions_table(table))} ({', '.join(_cols(table) + [quote(TO_TS), quote(PRESENT)])})"


def _key_match(table: Table, a: str, b: str) -> str:
    # IS: Spanner keys may hold NULL, and a NULL key part matches a NULL one.
    return " AND ".join(f"{a}.{quote(k)} IS {b}.{quote(k)}" for k in table.key_names) or "1"


# --- storage (inside a schema change's SQLite transaction) -------------------------------------------------

def sync_storage(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Give every table of ``catalog`` a versions table with all its columns; drop those of dropped tables."""
    wanted = {versions_table(t).lower(): t for t in catalog.tables}
    existing = [r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
                if r[0].lower().startswith(VERSIONS_PREFIX.lower())]
    for name in existing:
        if name.lower() not in wanted:
            conn.execute(f"DROP TABLE {quote(name)}")
    for t in catalog.tables:
        conn.execute(versions_table_sql(t))
        have = {r[1].lower() for r in conn.execute(f"PRAGMA main.table_info({quote(versions_table(t))})")}
        for c in t.columns:
            if c.name.lower() not in have:
                conn.execute(f"ALTER TABLE {quote(versions_table(t))} ADD COLUMN {quote(c.name)}")
        keys = ", ".join([quote(k) for k in t.key_names] + [quote(TO_TS)])
        conn.execute(f"CREATE INDEX IF NOT EXISTS {quote(versions_table(t) + '_by_key')} ON {quote(versions_table(t))} ({keys})")


# --- capture (the writer connection) ------------------------------------------------------------------------

def remove_capture(conn: sqlite3.Connection) -> None:
    """Drop the capture triggers and pending tables of the writer connection (before a schema change)."""
    for kind, name in conn.execute("SELECT type, name FROM temp.sqlite_master WHERE type IN ('trigger', 'table')").fetchall():
        if kind == "trigger" and name.startswith(TRIGGER_PREFIX):
            conn.execute(f"DROP TRIGGER temp.{quote(name)}")
        elif kind == "table" and name.startswith(PENDING_PREFIX):
            conn.execute(f"DROP TABLE temp.{quote(name)}")


def install_capture(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Create the pending tables and capture triggers of the writer connection for ``catalog``."""
    remove_capture(conn)
    for t in catalog.tables:
        cols = _cols(t)
        pending = quote(_pending(t))
        conn.execute(f"CREATE TEMP TABLE {pending} ({', '.join(cols + [quote(PRESENT)])})")
        old = ", ".join(f"OLD.{c}" for c in cols)
        keyset = {k.lower() for k in t.key_names}
        new_key = ", ".join(f"NEW.{quote(c.name)}" if c.name.lower() in keyset else "NULL" for c in t.columns)
        target = quote(t.name)
        for event, values in (("INSERT", f"{new_key}, 0"), ("UPDATE", f"{old}, 1"), ("DELETE", f"{old}, 1")):
            trigger = quote(f"{TRIGGER_PREFIX}{event.lower()}_{t.name}")
            conn.execute(f"CREATE TEMP TRIGGER {trigger} AFTER {event} ON main.{target} "
                         f"BEGIN INSERT INTO {pending} VALUES ({values}); END")


def record_commit(conn: sqlite3.Connection, catalog: Catalog, ts: int, *, collect: bool = False) -> list[RowChange]:
    """Stamp the commit's pending images with ``ts`` into the versions tables (before COMMIT).

    With ``collect``, also return what the commit changed, one :class:`RowChange` per key
    (a row inserted and deleted again in one transaction changed nothing).
    """
    changes: list[RowChange] = []
    for t in catalog.tables:
        pending = quote(_pending(t))
        if conn.execute(f"SELECT 1 FROM temp.{pending} LIMIT 1").fetchone() is None:
            continue
        cols = _cols(t)
        keys = ", ".join(quote(k) for k in t.key_names)
        # The first image of a key in this transaction is the row as it was before it.
        first = f"SELECT {', '.join(cols + [quote(PRESENT)])}, min(rowid) FROM temp.{pending}" + (f" GROUP BY {keys}" if keys else "")
        if collect:
            changes.extend(_changes(conn, t, conn.execute(first).fetchall(), ts))
        conn.execute(f"INSERT INTO main.{quote(versions_table(t))} ({', '.join(cols + [quote(TO_TS), quote(PRESENT)])}) "
                     f"SELECT {', '.join(cols)}, ?, {quote(PRESENT)} FROM ({first})", (ts,))
        conn.execute(f"DELETE FROM temp.{pending}")
    return changes


def _changes(conn: sqlite3.Connection, t: Table, firsts: Iterable[tuple], ts: int) -> list[RowChange]:
    names = [c.name for c in t.columns]
    key_at = [names.index(k) for k in t.key_names]
    where = " AND ".join(f"{quote(k)} IS ?" for k in t.key_names) or "1"
    lookup = f"SELECT {', '.join(_cols(t))} FROM main.{quote(t.name)} WHERE {where}"
    out: list[RowChange] = []
    for row in firsts:
        key = tuple(row[i] for i in key_at)
        old = dict(zip(names, row[:len(names)], strict=True)) if row[len(names)] else None
        now = conn.execute(lookup, key).fetchone()
        new = dict(zip(names, now, strict=True)) if now is not None else None
        if old is None and new is None:
            continue
        mod = "INSERT" if old is None else "DELETE" if new is None else "UPDATE"
        out.append(RowChange(t.name, key, mod, old, new, ts))
    return out


def purge(conn: sqlite3.Connection, catalog: Catalog, cutoff: int) -> int:
    """Delete versions that ended at or before ``cutoff`` (no read at or after it needs them); returns how many."""
    removed = 0
    for t in catalog.tables:
        table = quote(versions_table(t))
        # Rows are appended in commit order: what is purgeable is a rowid prefix, found
        # by reading exactly that prefix.
        first_kept = conn.execute(f"SELECT rowid FROM main.{table} WHERE {quote(TO_TS)} > ? ORDER BY rowid LIMIT 1", (cutoff,)).fetchone()
        if first_kept is None:
            removed += conn.execute(f"DELETE FROM main.{table}").rowcount
        else:
            removed += conn.execute(f"DELETE FROM main.{table} WHERE rowid < ?", (first_kept[0],)).rowcount
    return removed


def latest_commit(conn: sqlite3.Connection, catalog: Catalog) -> int:
    """The newest commit timestamp recorded in the versions tables (0: none), for a database reopened from disk."""
    newest = 0
    for t in catalog.tables:
        row = conn.execute(f"SELECT {quote(TO_TS)} FROM main.{quote(versions_table(t))} ORDER BY rowid DESC LIMIT 1").fetchone()
        if row is not None:
            newest = max(newest, row[0])
    return newest


# --- reads in the past (a reader connection) ----------------------------------------------------------------

class ReaderConnection(sqlite3.Connection):
    """A SQLite connection that, while ``as_of`` is set, reads tables as TEMP views at that time.

    Index hints of translated statements (``INDEXED BY``) name tables' indexes, which the
    views do not have; they are dropped from statements while reading in the past.
    """

    as_of: int | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        if self.as_of is not None:
            sql = _HINT.sub("", sql)
        return super().execute(sql, parameters)


def past_view_sql(table: Table, ts: int) -> str:
    """A TEMP view named like ``table`` showing its rows as of commit timestamp ``ts``.

    >>> from watcher.localspanner import types as T
    >>> from watcher.localspanner.catalog import Column, KeyPart, Table
    >>> print(past_view_sql(Table("T", (Column("K", T.INT64),), (KeyPart("K"),)), 7))  # doctest: +NORMALIZE_WHITESPACE
    CREATE TEMP VIEW "T" AS SELECT l."K" FROM main."T" AS l WHERE NOT EXISTS
    (SELECT 1 FROM main."_ls_v_T" AS v WHERE l."K" IS v."K" AND v."_ls_to_ts" > 7)
    UNION ALL SELECT v."K" FROM main."_ls_v_T" AS v WHERE v."_ls_present" AND v."_ls_to_ts" > 7 AND NOT EXISTS
    (SELECT 1 FROM main."_ls_v_T" AS w WHERE v."K" IS w."K" AND w."_ls_to_ts" > 7 AND w."_ls_to_ts" < v."_ls_to_ts")
    """
    vt = f"main.{quote(versions_table(table))}"
    to = quote(TO_TS)
    live = ", ".join(f"l.{c}" for c in _cols(table))
    old = ", ".join(f"v.{c}" for c in _cols(table))
    changed_after = f"SELECT 1 FROM {vt} AS v WHERE {_key_match(table, 'l', 'v')} AND v.{to} > {int(ts)}"
    earlier = (f"SELECT 1 FROM {vt} AS w WHERE {_key_match(table, 'v', 'w')} AND w.{to} > {int(ts)} AND w.{to} < v.{to}")
    return (f"CREATE TEMP VIEW {quote(table.name)} AS SELECT {live} FROM main.{quote(table.name)} AS l WHERE NOT EXISTS "
            f"({changed_after}) UNION ALL SELECT {old} FROM {vt} AS v WHERE v.{quote(PRESENT)} AND v.{to} > {int(ts)} "
            f"AND NOT EXISTS ({earlier})")


def enter_past(conn: sqlite3.Connection, catalog: Catalog, ts: int) -> None:
    """Make ``conn`` (a :class:`ReaderConnection` in a read transaction) read every table as of ``ts``."""
    for t in catalog.tables:
        conn.execute(f"DROP VIEW IF EXISTS temp.{quote(t.name)}")
        conn.execute(past_view_sql(t, ts))
    conn.as_of = ts  # type: ignore[attr-defined]


def leave_past(conn: sqlite3.Connection) -> None:
    """Undo :func:`enter_past`: ``conn`` reads the live tables again."""
    if getattr(conn, "as_of", None) is None:
        return
    for (name,) in conn.execute("SELECT name FROM temp.sqlite_master WHERE type = 'view'").fetchall():
        conn.execute(f"DROP VIEW temp.{quote(name)}")
    conn.as_of = None  # type: ignore[attr-defined]
