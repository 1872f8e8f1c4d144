"""Row versions: what each commit changed, kept so reads in the past see the data of then.

Capture happens inside the SQLite transaction of the change, so a version exists exactly
when its change committed. The writer connection carries TEMP triggers on every user
table that copy the row as it was before each insert, update or delete (``OLD``; an
insert has no old row) into the table's versions table ``_ls_v_<table>``, with
``_ls_to_ts`` = the commit timestamp (the image was valid until then) and
``_ls_present`` = whether the row existed. Every write path goes through them:
mutations, DML, batch and partitioned DML, batch writes, and the deletes an ``ON DELETE
CASCADE`` makes; a rolled back statement or transaction takes its images with it. The
commonest write, a batch of inserts or updates by mutation, skips the per-row triggers:
its keys are known, so :meth:`CommitCapture.rows_written` copies their images in one
``executemany`` before the write and keeps the triggers quiet while it runs (cheaper
per row than a trigger program; deletes and replaces, which may cascade, keep them).

The commit path calls :func:`begin_commit` once the commit timestamp is chosen and
:meth:`CommitCapture.finish` before COMMIT. Images written before the timestamp was
known (DML in a read/write transaction) wait in a TEMP pending table and are stamped
by ``begin_commit``; the commit's own writes are stamped as they happen. ``finish`` can
also hand the commit's changes back as :class:`RowChange` records (table, key,
INSERT/UPDATE/DELETE, old and new image, commit timestamp) for a consumer such as
change streams.

A read at T sees, per key, the old image of the earliest change after T if there is
one, else the live row (:func:`past_view_sql`); an index by (generation, key, commit
timestamp) makes that a few probes per key read and generation since T (generations:
:mod:`.version_log`). Live rows carry no timestamp, so strong
reads and the watcher's poll read the tables exactly as before. Rows are appended in
commit order, so purging what is older than the retention deletes a rowid prefix.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("V", T.STRING)), (KeyPart("K"),))
    >>> print(versions_table_sql(t))
    CREATE TABLE IF NOT EXISTS "_ls_v_T" ("K", "V", "_ls_to_ts", "_ls_present", "_ls_gen" INTEGER NOT NULL DEFAULT 0)
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..schema.catalog import Catalog, Table
from . import version_log
from .sqlite_names import has_nullable_key, quote
from .version_log import GEN, GENERATIONS_PREFIX, PRESENT, TO_TS, VERSIONS_PREFIX, generations_table, log_table, versions_table

PENDING_PREFIX = "_ls_pending_"
TRIGGER_PREFIX = "_ls_capture_"
#: Commits between two purges of versions older than the retention period.
PURGE_EVERY_COMMITS = 256
#: The writer connection's TEMP table of one row (ts, mode): the commit being applied (0: none yet) and
#: what the triggers do: keep images pending (no timestamp yet), stamp them, or nothing (a bulk write copied them).
STATE_TABLE = "_ls_capture_state"
PENDING, STAMP, BULK = 0, 1, 2

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


def _pending(table: Table) -> str:
    return PENDING_PREFIX + table.name


def _cols(table: Table) -> list[str]:
    return [quote(c.name) for c in table.columns]


def versions_table_sql(table: Table) -> str:
    """The versions table of ``table``: its columns, then until when the image was valid, whether the row
    existed, and the generation (:mod:`.version_log`) the image was compacted into."""
    return (f"CREATE TABLE IF NOT EXISTS {quote(versions_table(table))} "
            f"({', '.join(_cols(table) + [quote(TO_TS), quote(PRESENT), version_log.GEN_COLUMN])})")


# --- storage (inside a schema change's SQLite transaction) -------------------------------------------------

def sync_storage(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Give every table of ``catalog`` a versions table with all its columns; drop those of dropped tables."""
    wanted = {name(t).lower() for t in catalog.tables for name in (versions_table, generations_table)}
    existing = [r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
                if r[0].lower().startswith((VERSIONS_PREFIX.lower(), GENERATIONS_PREFIX.lower()))]
    for name in existing:
        if name.lower() not in wanted:
            conn.execute(f"DROP TABLE {quote(name)}")
    for t in catalog.tables:
        conn.execute(versions_table_sql(t))
        have = {r[1].lower() for r in conn.execute(f"PRAGMA main.table_info({quote(versions_table(t))})")}
        for c in t.columns:
            if c.name.lower() not in have:
                conn.execute(f"ALTER TABLE {quote(versions_table(t))} ADD COLUMN {quote(c.name)}")
        # By commit time: versions are appended in commit order, so this index only grows at its
        # end; a read in the past scans the versions newer than its timestamp, a purge those
        # older than the retention.
        conn.execute(f"CREATE INDEX IF NOT EXISTS {quote(versions_table(t) + '_by_ts')} ON {quote(versions_table(t))} ({quote(TO_TS)})")
        version_log.sync_generations(conn, t, has_generations=GEN.lower() in have)
    version_log.sync_storage(conn, catalog)


# --- capture (the writer connection) ------------------------------------------------------------------------

def remove_capture(conn: sqlite3.Connection) -> None:
    """Drop the capture triggers and pending tables of the writer connection (before a schema change)."""
    for kind, name in conn.execute("SELECT type, name FROM temp.sqlite_master WHERE type IN ('trigger', 'table')").fetchall():
        if kind == "trigger" and name.startswith(TRIGGER_PREFIX):
            conn.execute(f"DROP TRIGGER temp.{quote(name)}")
        elif kind == "table" and (name.startswith(PENDING_PREFIX) or name == STATE_TABLE):
            conn.execute(f"DROP TABLE temp.{quote(name)}")


def _set_state(conn: sqlite3.Connection, ts: int, mode: int) -> None:
    conn.execute(f"UPDATE temp.{quote(STATE_TABLE)} SET ts = ?, mode = ?", (ts, mode))


def install_capture(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Create the pending tables and capture triggers of the writer connection for ``catalog``.

    While a commit applies its mutations its timestamp is known (:class:`CommitCapture`),
    and the triggers append images straight to the versions tables; before that (DML in a
    read/write transaction) they keep them in the pending tables. The state the triggers
    follow (:data:`PENDING`, :data:`STAMP`, :data:`BULK`, and the commit timestamp) is a
    one-row TEMP table: a trigger reads it without calling back into Python.
    """
    remove_capture(conn)
    state = f"temp.{quote(STATE_TABLE)}"
    conn.execute(f"CREATE TEMP TABLE {quote(STATE_TABLE)} (ts INTEGER, mode INTEGER)")
    conn.execute(f"INSERT INTO {state} VALUES (0, {PENDING})")
    mode, ts = f"(SELECT mode FROM {state})", f"(SELECT ts FROM {state})"
    for t in catalog.tables:
        cols = _cols(t)
        pending = quote(_pending(t))
        conn.execute(f"CREATE TEMP TABLE {pending} ({', '.join(cols + [quote(PRESENT)])})")
        old = ", ".join(f"OLD.{c}" for c in cols)
        keyset = {k.lower() for k in t.key_names}
        new_key = ", ".join(f"NEW.{quote(c.name)}" if c.name.lower() in keyset else "NULL" for c in t.columns)
        target, versions = quote(t.name), quote(log_table(t))
        # By name: a versions table keeps the columns of older schemas (a dropped column's old images).
        named = ", ".join(cols + [quote(TO_TS), quote(PRESENT)])
        for event, image, present in (("INSERT", new_key, 0), ("UPDATE", old, 1), ("DELETE", old, 1)):
            # One trigger per event (a trigger program per row costs more than its statements' WHERE).
            name = quote(f"{TRIGGER_PREFIX}{event.lower()}_{t.name}")
            conn.execute(f"CREATE TEMP TRIGGER {name} AFTER {event} ON main.{target} WHEN {mode} <> {BULK} BEGIN "
                         f"INSERT INTO {versions} ({named}) SELECT {image}, {ts}, {present} WHERE {mode} = {STAMP}; "
                         f"INSERT INTO {pending} SELECT {image}, {present} WHERE {mode} = {PENDING}; END")


#: Keys per statement of the bulk image copy (one statement for a typical commit's rows).
IMAGE_BATCH = 128


def _image_sql(table: Table, rows: int) -> str:
    """Copies the rows with the keys given after the commit timestamp (``rows`` keys, as they are
    now; a key-only image with present 0 where there is none) into the log, stamped with the
    commit timestamp: the images a write of those keys replaces, in the order given. One
    statement for many keys: cheaper than a statement per key."""
    n = len(table.key_names)
    at = {k.lower(): i + 1 for i, k in enumerate(table.key_names)}
    image = ", ".join(f"k.column{at[c.name.lower()]}" if c.name.lower() in at else f"l.{quote(c.name)}" for c in table.columns)
    on = " AND ".join(f"l.{quote(k)} = k.column{i + 1}" for i, k in enumerate(table.key_names))
    named = ", ".join(_cols(table) + [quote(TO_TS), quote(PRESENT)])
    keys = ", ".join(["(" + ", ".join("?" * n) + ")"] * rows)
    return (f"INSERT INTO main.{quote(log_table(table))} ({named}) SELECT {image}, ?, "
            f"l.{quote(table.key_names[0])} IS NOT NULL FROM (VALUES {keys}) AS k LEFT JOIN main.{quote(table.name)} AS l ON {on}")


class CommitCapture:
    """The versions of one commit: made by :func:`begin_commit`, ended by :meth:`finish` (before COMMIT)."""

    def __init__(self, conn: sqlite3.Connection, catalog: Catalog, ts: int, marks: dict[str, int] | None) -> None:
        self.conn, self.catalog, self.ts, self._marks = conn, catalog, ts, marks

    @contextmanager
    def rows_written(self, table: Table, keys: Sequence[Sequence[Any]]) -> Iterator[None]:
        """Around a write that changes exactly the rows ``keys`` of ``table`` (inserts and updates,
        never deletes, which may cascade): their images are copied in one ``executemany`` and
        the triggers stay quiet while the write runs. Tables with no key or a nullable key
        part keep the triggers."""
        if not keys or not table.key_names or has_nullable_key(table):
            yield
            return
        for i in range(0, len(keys), IMAGE_BATCH):
            chunk = keys[i:i + IMAGE_BATCH]
            self.conn.execute(_image_sql(table, len(chunk)), [self.ts, *(part for k in chunk for part in k)])
        _set_state(self.conn, self.ts, BULK)
        try:
            yield
        finally:
            _set_state(self.conn, self.ts, STAMP)

    def finish(self) -> list[RowChange]:
        """Stop stamping with this commit's timestamp; the commit's changes if they were asked for, else [].

        Every :data:`~.version_log.COMPACT_EVERY_COMMITS` commits this also moves the recent
        images of the log into the by-key versions tables (after reading this commit's own).
        """
        _set_state(self.conn, 0, PENDING)
        changes = self._changes() if self._marks is not None else []
        version_log.commit_done(self.conn, self.catalog)
        return changes

    def _changes(self) -> list[RowChange]:
        assert self._marks is not None
        changes: list[RowChange] = []
        for t in self.catalog.tables:
            keys = ", ".join(quote(k) for k in t.key_names)
            # The first image of a key in this commit is the row as it was before it; the live row
            # (joined in one statement, not looked up key by key) is the row after it.
            # NOT INDEXED: read this commit's rows by rowid; grouping along the by-key index would scan every version.
            first = (f"SELECT {', '.join(_cols(t) + [quote(PRESENT)])}, min(rowid) FROM main.{quote(log_table(t))} "
                     f"NOT INDEXED WHERE rowid > ?" + (f" GROUP BY {keys}" if keys else ""))
            same = " AND ".join(f"l.{quote(k)} IS f.{quote(k)}" for k in t.key_names) or "1"
            exists = " AND ".join(f"x.{quote(k)} IS f.{quote(k)}" for k in t.key_names) or "1"
            # With no NULL key part the join itself says whether the row exists now.
            live = (f"l.{quote(t.key_names[0])} IS NOT NULL" if t.key_names and not has_nullable_key(t)
                    else f"EXISTS (SELECT 1 FROM main.{quote(t.name)} AS x WHERE {exists})")
            both = (f"SELECT {', '.join(f'f.{c}' for c in _cols(t))}, f.{quote(PRESENT)}, "
                    f"{', '.join(f'l.{c}' for c in _cols(t))}, {live} "
                    f"FROM ({first}) AS f LEFT JOIN main.{quote(t.name)} AS l ON {same}")
            changes.extend(_changes(t, self.conn.execute(both, (self._marks[t.name],)).fetchall(), self.ts))
        return changes


def begin_commit(conn: sqlite3.Connection, catalog: Catalog, ts: int, *, collect: bool = False,
                 pending: bool = True) -> CommitCapture:
    """Start capturing the commit at ``ts``: images kept pending by earlier DML are stamped with it, and
    the writes that follow are stamped as they happen. Call :meth:`CommitCapture.finish` before COMMIT,
    also when the commit fails. With ``collect``, ``finish`` returns what the commit changed, one
    :class:`RowChange` per key (a row inserted and deleted again in one transaction changed nothing).
    ``pending=False`` says nothing ran in this SQLite transaction before (a blind-write commit): no
    table's pending images are looked for, a statement per table of the catalog saved per commit.
    """
    marks = None
    if collect:
        marks = {t.name: conn.execute(f"SELECT IFNULL(max(rowid), 0) FROM main.{quote(log_table(t))}").fetchone()[0]
                 for t in catalog.tables}
    for t in catalog.tables if pending else ():
        waiting = quote(_pending(t))
        if conn.execute(f"SELECT 1 FROM temp.{waiting} LIMIT 1").fetchone() is None:
            continue
        cols = _cols(t)
        keys = ", ".join(quote(k) for k in t.key_names)
        first = f"SELECT {', '.join(cols + [quote(PRESENT)])}, min(rowid) FROM temp.{waiting}" + (f" GROUP BY {keys}" if keys else "")
        conn.execute(f"INSERT INTO main.{quote(log_table(t))} ({', '.join(cols + [quote(TO_TS), quote(PRESENT)])}) "
                     f"SELECT {', '.join(cols)}, ?, {quote(PRESENT)} FROM ({first})", (ts,))
        conn.execute(f"DELETE FROM temp.{waiting}")
    _set_state(conn, ts, STAMP)
    return CommitCapture(conn, catalog, ts, marks)


def record_commit(conn: sqlite3.Connection, catalog: Catalog, ts: int, *, collect: bool = False) -> list[RowChange]:
    """Stamp what is pending with ``ts`` (a commit whose writes all came before its timestamp was known)."""
    return begin_commit(conn, catalog, ts, collect=collect).finish()


def _changes(t: Table, rows: Iterable[tuple], ts: int) -> list[RowChange]:
    """RowChanges from rows of (old image, old present, live row, live present)."""
    names = [c.name for c in t.columns]
    n = len(names)
    key_at = [names.index(k) for k in t.key_names]
    out: list[RowChange] = []
    for row in rows:
        key = tuple(row[i] for i in key_at)
        old = dict(zip(names, row[:n], strict=True)) if row[n] else None
        new = dict(zip(names, row[n + 1:2 * n + 1], strict=True)) if row[2 * n + 1] else None
        if old is None and new is None:
            continue
        mod = "INSERT" if old is None else "DELETE" if new is None else "UPDATE"
        out.append(RowChange(t.name, key, mod, old, new, ts))
    return out


def purge(conn: sqlite3.Connection, catalog: Catalog, cutoff: int) -> int:
    """Delete versions that ended at or before ``cutoff`` (no read at or after it needs them); returns how many."""
    version_log.compact(conn, catalog)  # the log is then empty: only the versions tables hold images
    removed = 0
    for t in catalog.tables:
        table = quote(versions_table(t))
        removed += conn.execute(f"DELETE FROM main.{table} WHERE {quote(TO_TS)} <= ?", (cutoff,)).rowcount
        conn.execute(f"DELETE FROM main.{quote(generations_table(t))} WHERE max_ts <= ?", (cutoff,))
    return removed


def latest_commit(conn: sqlite3.Connection, catalog: Catalog) -> int:
    """The newest commit timestamp recorded in the versions tables (0: none), for a database reopened from disk."""
    newest = 0
    for t in catalog.tables:
        for name in (versions_table(t), log_table(t)):
            row = conn.execute(f"SELECT max({quote(TO_TS)}) FROM main.{quote(name)}").fetchone()
            if row[0] is not None:
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


def _same_key(table: Table, left: str, right: str) -> str:
    """``left``'s key is ``right``'s (IS: NULL key parts match, and the by-key index serves it).

    ``+`` takes the affinity off ``right``: a rowid table's key has INTEGER affinity, the
    images' columns none, and SQLite uses an index only when the comparison keeps the
    indexed column's affinity (without it, every live row scanned a whole generation).

    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> _same_key(Table("T", (Column("K", T.INT64),), (KeyPart("K"),)), "c", "l")
    'c."K" IS +l."K"'
    """
    return " AND ".join(f"{left}.{quote(k)} IS +{right}.{quote(k)}" for k in table.key_names) or "1"


def past_view_sql(table: Table, ts: int) -> str:
    """A TEMP view named like ``table`` showing its rows as of commit timestamp ``ts``.

    A live row is as it was at ``ts`` unless its key changed since; a key that changed
    since shows the image its first change after ``ts`` replaced (if the row existed).
    Images are in the versions table and, the newest, in the recent-versions log
    (:mod:`.version_log`; all older than the versions table's). Every half looks a key's
    changes up in the by-key indexes (in the versions table, in each generation with an
    image after ``ts``), so a read by key costs a few index probes and a
    scan costs the rows it reads plus the versions newer than ``ts``, never a set of
    every key changed since.

    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> print(past_view_sql(Table("T", (Column("K", T.INT64),), (KeyPart("K"),)), 7))  # doctest: +NORMALIZE_WHITESPACE
    CREATE TEMP VIEW "T" AS SELECT l."K" FROM main."T" AS l WHERE NOT EXISTS
    (SELECT 1 FROM main."_ls_v_T" AS c WHERE c."_ls_gen" IN (SELECT gen FROM main."_ls_vg_T" WHERE max_ts > 7)
    AND c."K" IS +l."K" AND +c."_ls_to_ts" > 7) AND NOT EXISTS
    (SELECT 1 FROM main."_ls_vl_T" AS c WHERE c."K" IS +l."K" AND +c."_ls_to_ts" > 7)
    UNION ALL SELECT v."K" FROM main."_ls_v_T" AS v WHERE v."_ls_gen" IN (SELECT gen FROM main."_ls_vg_T" WHERE max_ts > 7)
    AND v."_ls_to_ts" > 7 AND v."_ls_present" AND NOT EXISTS
    (SELECT 1 FROM main."_ls_v_T" AS e WHERE e."_ls_gen" IN (SELECT gen FROM main."_ls_vg_T" WHERE max_ts > 7)
    AND e."K" IS +v."K" AND +e."_ls_to_ts" > 7 AND e.rowid < v.rowid)
    UNION ALL SELECT v."K" FROM main."_ls_vl_T" AS v WHERE v."_ls_to_ts" > 7 AND v."_ls_present" AND NOT EXISTS
    (SELECT 1 FROM main."_ls_v_T" AS e WHERE e."_ls_gen" IN (SELECT gen FROM main."_ls_vg_T" WHERE max_ts > 7)
    AND e."K" IS +v."K" AND +e."_ls_to_ts" > 7) AND NOT EXISTS
    (SELECT 1 FROM main."_ls_vl_T" AS e WHERE e."K" IS +v."K" AND +e."_ls_to_ts" > 7 AND e.rowid < v.rowid)
    """
    vt, log = f"main.{quote(versions_table(table))}", f"main.{quote(log_table(table))}"
    # Only generations with an image after ``ts`` can hold a key's first change since (one list per
    # statement); naming them also lets a read by key find its images by (generation, key).
    gens = f"(SELECT gen FROM main.{quote(generations_table(table))} WHERE max_ts > {int(ts)})"
    live = ", ".join(f"l.{c}" for c in _cols(table))
    old = ", ".join(f"v.{c}" for c in _cols(table))
    since = f"{quote(TO_TS)} > {int(ts)}"

    def changed(images: str, alias: str, of: str, earlier: bool = False) -> str:
        # ``+`` keeps the probe on the by-key index: by commit time it would scan every change since.
        # Images are appended in commit order: a key's image with no lower rowid after ``ts`` is its first change since.
        in_gens = f"{alias}.{quote(GEN)} IN {gens} AND " if images == vt else ""
        return (f"EXISTS (SELECT 1 FROM {images} AS {alias} WHERE {in_gens}{_same_key(table, alias, of)} AND +{alias}.{since}"
                + (f" AND {alias}.rowid < {of}.rowid)" if earlier else ")"))

    return (f"CREATE TEMP VIEW {quote(table.name)} AS SELECT {live} FROM main.{quote(table.name)} AS l "
            f"WHERE NOT {changed(vt, 'c', 'l')} AND NOT {changed(log, 'c', 'l')} "
            f"UNION ALL SELECT {old} FROM {vt} AS v WHERE v.{quote(GEN)} IN {gens} AND v.{since} AND v.{quote(PRESENT)} AND NOT {changed(vt, 'e', 'v', True)} "
            f"UNION ALL SELECT {old} FROM {log} AS v WHERE v.{since} AND v.{quote(PRESENT)} "
            f"AND NOT {changed(vt, 'e', 'v')} AND NOT {changed(log, 'e', 'v', True)}")


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
