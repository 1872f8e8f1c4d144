"""The recent-versions log: where commits append row images, merged into the by-key versions now and then.

A commit's old row images (see :mod:`.versions`) go first to the table's log
``_ls_vl_<table>``: the same columns as the versions table, appended in commit order
(rowid order is commit order). Its one index, by (key, commit timestamp), stays small
because the log does: every :data:`COMPACT_EVERY_COMMITS` commits :func:`compact` moves
the whole log into the versions table ``_ls_v_<table>`` in key order and empties it. So
a commit touches a few hot pages of a small index instead of up to one page per row of
the large by-key index, and the large index takes its entries in sorted batches.

Generations keep that batch's cost from growing with the versions table: compaction
stamps the images it moves with the table's current generation ``_ls_gen``, a new one
every :data:`GENERATION_IMAGES` images, and the by-key index leads with it (generation,
key, commit timestamp). A batch then lands in the current generation's part of the index,
whose size is bounded, instead of spreading over one page per key of every version kept
(so a write's cost does not grow with the versions kept). The small
table ``_ls_vg_<table>`` lists each generation with its newest commit timestamp and its
number of images: a read at T probes, per key, only the generations with images after T
(usually the newest one or two), and a purge drops the rows of generations entirely older
than the retention.

Compaction runs on the writer connection inside a commit's SQLite transaction, so the log
and the versions table always hold each image exactly once; a killed server loses
neither (both are ordinary tables of the database file). Every image in the versions
table is older than every image in the log, and within a key both keep commit order in
their rowids (a batch is inserted ordered by key, then log rowid), which is what a read
in the past relies on.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> t = Table("T", (Column("K", T.INT64, not_null=True), Column("V", T.STRING)), (KeyPart("K"),))
    >>> log_table(t)
    '_ls_vl_T'
"""

from __future__ import annotations

import sqlite3

from ..schema.catalog import Catalog, Table
from .sqlite_names import quote

LOG_PREFIX = "_ls_vl_"
VERSIONS_PREFIX = "_ls_v_"
GENERATIONS_PREFIX = "_ls_vg_"
TO_TS = "_ls_to_ts"
PRESENT = "_ls_present"
GEN = "_ls_gen"
#: Images per generation of the by-key versions index: a compaction's sorted batch (16
#: commits of 100 rows: 1,600 keys) touches at most the ~100-150 leaf pages of one generation.
GENERATION_IMAGES = 16_384
#: Commits between two compactions: the log holds at most this many commits' images (a
#: 100-row commit adds 100), so its index keeps to a few pages a commit finds in cache.
COMPACT_EVERY_COMMITS = 16


def log_table(table: Table) -> str:
    return LOG_PREFIX + table.name


def versions_table(table: Table) -> str:
    return VERSIONS_PREFIX + table.name


def generations_table(table: Table) -> str:
    return GENERATIONS_PREFIX + table.name


#: The generation column of a versions table (images of a data directory from before generations are generation 0).
GEN_COLUMN = f"{quote(GEN)} INTEGER NOT NULL DEFAULT 0"


def sync_generations(conn: sqlite3.Connection, t: Table, *, has_generations: bool) -> None:
    """Give ``t``'s versions table (which exists) its generation column, by-key index and generations table.

    ``has_generations``: the table has the column already; else it was written before
    generations, and its images become generation 0 (its old by-key index goes).
    """
    vt = quote(versions_table(t))
    if not has_generations:
        conn.execute(f"ALTER TABLE {vt} ADD COLUMN {GEN_COLUMN}")
        conn.execute(f"DROP INDEX IF EXISTS {quote(versions_table(t) + '_by_key')}")
    # By generation, key, then commit time: a read in the past finds a key's first change
    # after its timestamp in a few probes per generation since, so its cost follows the rows
    # it reads, not the changes since; compaction inserts into the newest generation only.
    by_key = ", ".join([quote(GEN)] + [quote(k) for k in t.key_names] + [quote(TO_TS)])
    conn.execute(f"CREATE INDEX IF NOT EXISTS {quote(versions_table(t) + '_by_gen_key')} ON {vt} ({by_key})")
    gens = quote(generations_table(t))
    if conn.execute("SELECT 1 FROM main.sqlite_master WHERE name = ?", (generations_table(t),)).fetchone() is None:
        conn.execute(f"CREATE TABLE main.{gens} (gen INTEGER PRIMARY KEY, max_ts INTEGER NOT NULL, images INTEGER NOT NULL)")
        conn.execute(f"INSERT INTO main.{gens} SELECT {quote(GEN)}, max({quote(TO_TS)}), count(*) FROM {vt} GROUP BY {quote(GEN)}")


def _table_columns(conn: sqlite3.Connection, name: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA main.table_info({quote(name)})")]


def sync_storage(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Give every table of ``catalog`` an empty log with its columns (after moving what a log
    held into the versions table, which already has every column the log had); drop the
    logs of dropped tables. Call after the versions tables are in place."""
    tables = {log_table(t).lower(): t for t in catalog.tables}
    existing = [r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
                if r[0].lower().startswith(LOG_PREFIX.lower())]
    for name in existing:
        t = tables.get(name.lower())
        if t is not None:  # by the log's own columns: a column dropped since keeps its images
            _move(conn, t, name, [quote(c) for c in _table_columns(conn, name)])
        conn.execute(f"DROP TABLE main.{quote(name)}")
    for t in catalog.tables:
        cols = ", ".join([quote(c.name) for c in t.columns] + [quote(TO_TS), quote(PRESENT)])
        conn.execute(f"CREATE TABLE main.{quote(log_table(t))} ({cols})")
        by_key = ", ".join([quote(k) for k in t.key_names] + [quote(TO_TS)])
        conn.execute(f"CREATE INDEX main.{quote(log_table(t) + '_by_key')} ON {quote(log_table(t))} ({by_key})")


def compact(conn: sqlite3.Connection, catalog: Catalog) -> int:
    """Move every image of the logs into the versions tables, in key order; returns how many moved."""
    moved = 0
    for t in catalog.tables:
        log = f"main.{quote(log_table(t))}"
        if conn.execute(f"SELECT 1 FROM {log} LIMIT 1").fetchone() is None:
            continue
        moved += _move(conn, t, log_table(t), [quote(c.name) for c in t.columns] + [quote(TO_TS), quote(PRESENT)])
        conn.execute(f"DELETE FROM {log}")
    return moved


def _move(conn: sqlite3.Connection, t: Table, log: str, cols: list[str]) -> int:
    """Copy the images of the log ``log`` (columns ``cols``) into the current generation of ``t``'s versions."""
    gens = f"main.{quote(generations_table(t))}"
    last = conn.execute(f"SELECT gen, images FROM {gens} ORDER BY gen DESC LIMIT 1").fetchone()
    gen = 0 if last is None else last[0] + (last[1] >= GENERATION_IMAGES)
    named = ", ".join(cols)
    # Key order: the by-key index takes the batch page by page; then log rowid, so a key's
    # images keep their commit order in the versions rowids.
    order = ", ".join([quote(k) for k in t.key_names] + [quote(TO_TS), "rowid"])
    moved: int = conn.execute(f"INSERT INTO main.{quote(versions_table(t))} ({named}, {quote(GEN)}) "
                              f"SELECT {named}, ? FROM main.{quote(log)} ORDER BY {order}", (gen,)).rowcount
    if not moved:
        return 0
    conn.execute(f"INSERT INTO {gens} (gen, max_ts, images) SELECT ?, max({quote(TO_TS)}), count(*) FROM main.{quote(log)} "
                 f"WHERE 1 ON CONFLICT (gen) DO UPDATE SET max_ts = max(max_ts, excluded.max_ts), "
                 f"images = images + excluded.images", (gen,))
    return moved


def commit_done(conn: sqlite3.Connection, catalog: Catalog) -> None:
    """Count a commit on the writer ``conn``; every :data:`COMPACT_EVERY_COMMITS` commits, :func:`compact`.

    The count lives on the connection (not in the database): a rolled back commit may
    count, which only moves the next compaction a commit earlier.
    """
    count = getattr(conn, "commits_since_compaction", 0) + 1
    if count >= COMPACT_EVERY_COMMITS:
        compact(conn, catalog)
        count = 0
    conn.commits_since_compaction = count  # type: ignore[attr-defined]
