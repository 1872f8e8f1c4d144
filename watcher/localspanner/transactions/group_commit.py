"""Group commit: blind-write commits that queue for a database's writer share one SQLite transaction.

A commit that only carries mutations (a single-use commit, or a read/write transaction
that neither read nor ran DML) does not need the writer until it applies them. Its values
are converted before it queues (:func:`~..storage.mutations.prepare_mutations`); then the first
waiter to find no leader becomes the leader, takes the writer, and applies every commit
queued by then (at most :data:`~..common.limits.MAX_GROUP_COMMITS`) in one SQLite transaction
(or a few, see the deferred constraints below):

* each gets its own commit timestamp, in queue order, from the clock (so timestamps
  increase in commit order, and ``--shared-commit-timestamps`` still decides sharing);
* each applies inside its own SAVEPOINT: one that fails is rolled back alone and gets
  its own error, the others go on;
* versions and change records are written per commit inside the same transaction;
* the visibility lock is held from the first timestamp to the last COMMIT, so a strong
  read sees all of the group or none of it, and every commit of the group has a
  timestamp above any read that returned before (external consistency);
* a deferred constraint (interleaving, foreign key) is checked by SQLite only at COMMIT,
  against the state then: a later commit of the same transaction could mend what an earlier
  one broke (insert the parent of a child written without it), and the earlier one would be
  accepted at a timestamp at which its parent did not exist (a read at that timestamp then
  shows the orphan). So a commit that may break one (:func:`may_break_deferred`: a write to
  an interleaved table, for one) ends its run: the group is applied in runs, one SQLite
  transaction each, and only a run's last commit can leave one broken at the run's COMMIT;
* a run whose COMMIT fails that way cannot pin the failure on one commit by SQLite: the run
  is rolled back and its commits are applied again one transaction each, with the
  timestamps they had, so only the offender fails.

The committing threads wait until their commit is done; only after COMMIT returns is any
of them acknowledged, so an acknowledged commit is durable (WAL, see ``storage/store.py``).

Example (with an engine's writer ``w`` and a function ``apply`` writing a group)::

    committer = GroupCommitter(w, apply)
    done = committer.commit(GroupEntry(prepared, rows=None, tag=""))
    done.ts, done.error
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ..change_streams.capture import USER_TXN, TxnOrigin
from ..common import limits
from ..common.clock import Clock
from ..common.requests import Mutation
from ..schema.catalog import Catalog
from ..storage.constraint_storage import deleted_by_cascade
from ..storage.mutations import PreparedMutations, prepare_mutations
from ..storage.sequences import Counters
from .commits import apply_commit, finish_commit, purge_old
from .writer import Writer


@dataclass(eq=False)
class GroupEntry:
    """One commit waiting for its group: what it writes, and then its timestamp or its error."""

    prepared: PreparedMutations
    rows: frozenset[Hashable] | None  # rows it writes, for shared commit timestamps (None: not shareable)
    tag: str = ""
    origin: TxnOrigin = USER_TXN  # which change streams leave it out
    ts: int = 0
    written: int = 0  # change records it wrote
    error: BaseException | None = None
    done: bool = field(default=False, repr=False)


class GroupCommitter:
    """Queues commits and lets one waiter at a time apply the queue as a group (thread-safe)."""

    def __init__(self, writer: Writer, apply: Callable[[list[GroupEntry]], None],
                 max_group: int = limits.MAX_GROUP_COMMITS) -> None:
        self._writer = writer
        self._apply = apply
        self._max_group = max_group
        self._cond = threading.Condition()
        self._queue: list[GroupEntry] = []
        self._leading = False

    def commit(self, entry: GroupEntry) -> GroupEntry:
        """Queue ``entry`` and return once it is committed or failed (``entry.error``)."""
        with self._cond:
            self._queue.append(entry)
        while True:
            with self._cond:
                while self._leading and not entry.done:
                    self._cond.wait()
                if entry.done:
                    return entry
                self._leading = True
            self._lead()

    def _lead(self) -> None:
        batch: list[GroupEntry] = []
        try:
            self._writer.acquire(None)  # waits for a read/write transaction or a schema change
            try:
                with self._cond:
                    batch = self._queue[:self._max_group]
                    del self._queue[:len(batch)]
                self._apply(batch)
            finally:
                self._writer.release(None)
        except BaseException as exc:  # the writer timed out, or a fault below the commits: all of them fail
            with self._cond:
                if not batch:
                    batch = self._queue[:self._max_group]
                    del self._queue[:len(batch)]
            for e in batch:
                if e.error is None:
                    e.error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            with self._cond:
                for e in batch:
                    e.done = True
                self._leading = False
                self._cond.notify_all()


def write_group(conn: sqlite3.Connection, catalog: Catalog, batch: list[GroupEntry], clock: Clock, *,
                purge_before: int | None, wall_nanos: int, sequences: Counters,
                committing: Callable[[], None] | None = None) -> list[GroupEntry]:
    """Apply ``batch`` in SQLite transactions on ``conn`` (the writer is held, the visibility lock too):
    one, or one per run ended by a commit that may break a deferred constraint; each entry gets its
    timestamp or its error. Returns the entries that committed. ``committing`` is called just before
    the first COMMIT begins (strong reads beside the group stop there, commit_floor.py)."""
    for e in batch:
        if e.prepared.catalog is not catalog:  # a schema change came between preparing and applying
            try:
                e.prepared = prepare_mutations(catalog, e.prepared.mutations)
            except Exception as exc:
                e.error = exc
    announce = [committing] if committing is not None else []

    def first_commit() -> None:  # ``committing`` once, before whichever run's COMMIT comes first
        while announce:
            announce.pop()()

    runs = _runs(catalog, [e for e in batch if e.error is None])
    committed: list[GroupEntry] = []
    for i, run in enumerate(runs):
        last = i == len(runs) - 1
        try:
            committed += _write_run(conn, catalog, run, clock, purge_before=purge_before if last else None,
                                    wall_nanos=wall_nanos, sequences=sequences, committing=first_commit)
        except Exception as exc:
            if not committed:
                raise
            # Earlier runs are durable and stay acknowledged; this run and the rest fail.
            for e in (e for rest in runs[i:] for e in rest):
                e.error = e.error or exc
            break
    return committed


def _runs(catalog: Catalog, entries: list[GroupEntry]) -> list[list[GroupEntry]]:
    """``entries`` cut after each one that may break a deferred constraint (at least one run, maybe empty)."""
    runs: list[list[GroupEntry]] = [[]]
    for e in entries:
        if not runs[-1] or not may_break_deferred(catalog, runs[-1][-1].prepared.mutations):
            runs[-1].append(e)
        else:
            runs.append([e])
    return runs


def may_break_deferred(catalog: Catalog, mutations: list[Mutation]) -> bool:
    """Whether ``mutations`` may leave a deferred constraint (interleaving, foreign key) broken:
    a row written into an interleaved table or one with foreign keys (its parent or referenced
    row may be missing), a change to a table foreign keys reference, or a delete whose cascades
    reach a table with NO ACTION children or rows that foreign keys without CASCADE reference.

    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart, Table
    >>> key = (Column("K", T.INT64, not_null=True),)
    >>> p = Table("P", key, (KeyPart("K"),))
    >>> c = Table("C", key, (KeyPart("K"),), parent="P", on_delete_cascade=True)
    >>> cat = Catalog(tables=(p, c))
    >>> [may_break_deferred(cat, [Mutation(op, t)]) for op, t in [("insert", "C"), ("delete", "C"), ("insert_or_update", "P"), ("delete", "P")]]
    [True, False, False, False]
    """
    for m in mutations:
        t = catalog.table(m.table)
        if t is None:
            return True  # the commit fails anyway
        if m.op != "delete" and (t.parent is not None or any(fk.enforced for fk in t.foreign_keys)):
            return True
        if m.op != "insert" and any(fk.enforced for _, fk in catalog.foreign_keys_to(t.name)):
            return True
        if m.op in ("delete", "replace"):
            for d in deleted_by_cascade(catalog, t):
                if any(not child.on_delete_cascade for child in catalog.children_of(d.name)) or any(
                        fk.enforced and not fk.on_delete_cascade for _, fk in catalog.foreign_keys_to(d.name)):
                    return True
    return False


def _write_run(conn: sqlite3.Connection, catalog: Catalog, live: list[GroupEntry], clock: Clock, *,
               purge_before: int | None, wall_nanos: int, sequences: Counters,
               committing: Callable[[], None]) -> list[GroupEntry]:
    """Apply ``live`` in one SQLite transaction; only its last entry may break a deferred constraint."""
    # A run of one needs no savepoint: its failure rolls the whole transaction back (the common
    # case with few writers, where the savepoint's statements would be pure overhead).
    alone = len(live) == 1
    conn.execute("BEGIN")
    try:
        for e in live:
            e.ts = clock.next_commit(e.rows)
            if not alone:
                conn.execute("SAVEPOINT ls_group_commit")
            try:
                e.written = apply_commit(conn, catalog, e.prepared, (), e.ts, tag=e.tag, sequences=sequences, blind=True,
                                     origin=e.origin)
            except Exception as exc:
                e.error = exc
                if alone:
                    conn.execute("ROLLBACK")
                    return []
                conn.execute("ROLLBACK TO ls_group_commit")
            if not alone:
                conn.execute("RELEASE ls_group_commit")
        purge_old(conn, catalog, purge_before, wall_nanos)
        committed = [e for e in live if e.error is None]
        committing()
        conn.execute("COMMIT")
        return committed
    except sqlite3.IntegrityError:
        # A deferred constraint failed at COMMIT: find the offender by committing one at a time.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        return _one_by_one(conn, catalog, [e for e in live if e.error is None], sequences)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _one_by_one(conn: sqlite3.Connection, catalog: Catalog, entries: list[GroupEntry], sequences: Counters) -> list[GroupEntry]:
    committed = []
    for e in entries:
        e.written = 0
        conn.execute("BEGIN")
        try:
            e.written = apply_commit(conn, catalog, e.prepared, (), e.ts, tag=e.tag, sequences=sequences, blind=True,
                                     origin=e.origin)
            finish_commit(conn, catalog, e.prepared)
            committed.append(e)
        except Exception as exc:
            e.error = exc
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    return committed
