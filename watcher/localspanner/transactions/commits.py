"""Writing one commit into SQLite: mutations, pending commit timestamps, then COMMIT.

The caller holds the database's writer and its visibility lock and has chosen the commit
timestamp; a constraint that fails at COMMIT (deferred interleaving checks) becomes the
Spanner error that names the offending row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import nullcontext

from ..change_streams import capture as change_capture
from ..change_streams.capture import USER_TXN, TxnOrigin
from ..common.requests import Mutation
from ..datamodel import values
from ..schema.catalog import Catalog, Table
from ..sql import set_statement_time
from ..storage import constraint_storage, versions
from ..storage.mutations import PreparedMutations, apply_mutations
from ..storage.sequences import Counters
from ..storage.sqlite_errors import commit_interleaving_error, integrity_error
from ..storage.sqlite_names import quote
from .transactions import PendingCommitTimestamp


def write_commit(conn: sqlite3.Connection, catalog: Catalog, mutations: list[Mutation] | PreparedMutations,
                 pending: Sequence[PendingCommitTimestamp], ts: int, *, purge_before: int | None = None,
                 wall_nanos: int | None = None, tag: str = "", sequences: Counters | None = None,
                 origin: TxnOrigin = USER_TXN) -> int:
    """Apply ``mutations``, put ``ts`` where DML wrote PENDING_COMMIT_TIMESTAMP(), record the row
    versions and the change streams' data change records, and COMMIT; ``purge_before`` also drops
    versions that ended at or before it, and records older than their stream's retention at
    ``wall_nanos``; ``sequences`` gives the values of sequence DEFAULTs of inserted rows;
    ``origin`` says which streams leave the transaction out. Returns how many change records the commit wrote."""
    written = apply_commit(conn, catalog, mutations, pending, ts, tag=tag, sequences=sequences, origin=origin)
    purge_old(conn, catalog, purge_before, wall_nanos)
    finish_commit(conn, catalog, mutations)
    return written


def apply_commit(conn: sqlite3.Connection, catalog: Catalog, mutations: list[Mutation] | PreparedMutations,
                 pending: Sequence[PendingCommitTimestamp], ts: int, *, tag: str = "",
                 sequences: Counters | None = None, blind: bool = False, origin: TxnOrigin = USER_TXN) -> int:
    """The part of :func:`write_commit` before COMMIT: the writes, their versions and change records.

    ``blind``: only ``mutations`` were written in this SQLite transaction (no DML before it)."""
    streams = change_capture.tracks_anything(catalog)
    # Row versions, in this SQLite transaction.
    capture = versions.begin_commit(conn, catalog, ts, collect=streams, pending=not blind)
    try:
        set_statement_time(ts)  # DEFAULT (CURRENT_TIMESTAMP()) of inserted rows is the commit time
        try:
            with sequences.drawing(conn, catalog) if sequences is not None else nullcontext():
                apply_mutations(conn, catalog, mutations, commit_nanos=ts, rows_written=capture.rows_written)
        finally:
            set_statement_time(None)
        _fill_pending(conn, catalog, pending, ts)
    finally:
        changes = capture.finish()
    return change_capture.write_records(conn, catalog, changes, ts, tag, origin) if streams else 0


def purge_old(conn: sqlite3.Connection, catalog: Catalog, purge_before: int | None, wall_nanos: int | None) -> None:
    """Drop versions that ended at or before ``purge_before`` and change records past their retention."""
    if purge_before is not None:
        versions.purge(conn, catalog, purge_before)
        if catalog.change_streams and wall_nanos is not None:
            change_capture.purge_expired(conn, catalog, wall_nanos)


def finish_commit(conn: sqlite3.Connection, catalog: Catalog, mutations: list[Mutation] | PreparedMutations) -> None:
    """COMMIT; a deferred constraint that fails becomes the Spanner error naming the offending row."""
    try:
        conn.execute("COMMIT")
    except sqlite3.IntegrityError as exc:
        raw = _raw(mutations)
        deleted = {m.table.lower() for m in raw if m.op == "delete"}
        inserted = {m.table.lower() for m in raw if m.op != "delete"}
        found = None
        if "FOREIGN KEY" in str(exc):
            found = commit_interleaving_error(conn, catalog, deleted) or constraint_storage.violation(conn, catalog, inserted)
        raise found or integrity_error(exc, _first_child_table(catalog, raw), catalog) from None


def _raw(mutations: list[Mutation] | PreparedMutations) -> list[Mutation]:
    return mutations.mutations if isinstance(mutations, PreparedMutations) else mutations


def _first_child_table(catalog: Catalog, mutations: list[Mutation]) -> Table | None:
    for m in mutations:
        t = catalog.table(m.table)
        if t is not None and t.parent is not None:
            return t
    return catalog.table(mutations[0].table) if mutations else None


def _fill_pending(conn: sqlite3.Connection, catalog: Catalog, pending: Sequence[PendingCommitTimestamp], ts: int) -> None:
    stored = values.nanos_to_stored(ts)
    for p in pending:
        table = catalog.table(p.table)
        if table is None:
            continue
        sets = ", ".join(f"{quote(c)} = ?" for c in p.columns)
        where = " AND ".join(f"{quote(k)} IS ?" for k in table.key_names) or "1"
        conn.execute(f"UPDATE {quote(table.name)} SET {sets} WHERE {where}", [stored] * len(p.columns) + list(p.key))


#: Mutations whose rows are exactly the rows they name (a replace or delete may reach
#: other rows: interleaved children, key ranges).
_ROW_OPS = frozenset({"insert", "update", "insert_or_update"})


def written_rows(database: str, catalog: Catalog, mutations: Sequence[Mutation]) -> frozenset[tuple[str, str, str]] | None:
    """The rows a blind-write commit writes, as (database, table, key) identities; None when
    they are not known exactly (deletes, replaces, interleaved tables): such a commit never
    shares its commit timestamp with another (see :class:`~..common.clock.Clock`).

    >>> from ..schema.catalog import Catalog
    >>> written_rows("d", Catalog(), []) == frozenset()
    True
    """
    rows: set[tuple[str, str, str]] = set()
    for m in mutations:
        table = catalog.table(m.table)
        if m.op not in _ROW_OPS or table is None or table.parent is not None:
            return None
        position = {c.lower(): i for i, c in enumerate(m.columns)}
        try:
            where = [position[k.lower()] for k in table.key_names]
        except KeyError:
            return None  # the commit fails anyway
        rows.update((database, table.name.lower(), repr([row[i] for i in where])) for row in m.wire_rows())
    return frozenset(rows)
