"""One database's engine: schema, snapshots, transactions and commits over its storage.

Two locks give Spanner's guarantees:

* the *writer* (``writer.py``, one holder at a time): a read/write transaction from its
  first read or DML to its end, a single-use commit, a schema change. This makes
  read/write transactions serializable.
* the *visibility* lock, held from choosing a commit timestamp to the SQLite COMMIT, and
  by a strong read while it chooses its read timestamp and pins its snapshot. So a read
  at R sees exactly the commits with timestamps below R, and every later commit gets a
  timestamp above R (external consistency: what makes commit-timestamp polling miss
  nothing). A strong read that
  finds a group commit applying pins beside it instead, at a read timestamp the group took
  before its own (``commit_floor.py``), which keeps the same guarantee.

Example (normally reached through ``service.LocalSpannerService``)::

    engine = DatabaseEngine("projects/p/instances/i/databases/d", storage, clock)
    engine.update_ddl(["CREATE TABLE T (K INT64) PRIMARY KEY (K)"])
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from .. import errors, sql
from ..change_streams import read_function
from ..change_streams.capture import EXCLUDED_TXN, TTL_DELETE, USER_TXN
from ..change_streams.reader import ChangeStreamReads
from ..common import deadlines, limits
from ..common.clock import Clock
from ..common.request_log import RequestLog
from ..common.requests import (
    BatchDmlResult,
    CommitResult,
    KeySet,
    Mutation,
    ReadOnlyOptions,
    ResultStream,
    Staleness,
    Statement,
    TransactionInfo,
    TransactionKind,
    TransactionOptions,
    TransactionSelector,
)
from ..datamodel import values
from ..errors import SpannerError
from ..information import spanner_sys
from ..schema import database_options, retention
from ..storage import versions
from ..storage.mutations import prepare_mutations
from ..storage.sequences import Counters
from ..storage.store import META_TABLE, Storage
from ..transactions import partitions
from ..transactions.commit_floor import InFlightGroup
from ..transactions.commits import write_commit, written_rows
from ..transactions.group_commit import GroupCommitter, GroupEntry, write_group
from ..transactions.parked_snapshots import ParkedSnapshots
from ..transactions.reads import read_rows
from ..transactions.transactions import PendingCommitTimestamp, ReadWriteTransaction, Snapshot, mutation_count
from ..transactions.writer import Writer
from .engine_schema import SchemaChanges
from .row_deletion import expired_delete
from .schema_changes import load_catalog

log = logging.getLogger(__name__)


class DatabaseEngine(ParkedSnapshots, SchemaChanges):
    """A database: schema changes (:class:`~.engine_schema.SchemaChanges`), snapshots, transactions, commits."""

    def __init__(self, name: str, storage: Storage, clock: Clock) -> None:
        self.name = name
        self.storage = storage
        self.clock = clock
        self._writer = Writer(storage.writer)
        storage.checkpointer.pause_writes = self._writer.paused  # lets it rewind the WAL between commits
        self._group = GroupCommitter(self._writer, self._write_group)
        self._visibility = threading.Lock()
        self._in_flight = InFlightGroup()  # lets strong reads pin beside a group commit (commit_floor.py)
        self._rw: dict[bytes, ReadWriteTransaction] = {}
        self._snapshots: OrderedDict[bytes, Snapshot] = OrderedDict()
        self._registry_lock = threading.Lock()
        self.latest_commit_nanos = 0
        self.catalog = load_catalog(storage)
        self.sequences = Counters(storage.writer)
        self.retention_period = retention.load(storage.writer, META_TABLE)
        self.default_leader = database_options.load(storage.writer, META_TABLE, "default_leader")
        self._commits_since_purge = 0
        self.change_streams = ChangeStreamReads(storage, clock, self._visibility, lambda: self.catalog, database=name)
        #: What its requests said about themselves; SPANNER_SYS's tables are computed from it.
        self.requests = RequestLog()
        # Reopened from disk: reads before the newest recorded commit must use its versions.
        self.latest_commit_nanos = versions.latest_commit(storage.writer, self.catalog)
        self.clock.advance_past(self.latest_commit_nanos)

    # --- snapshots -----------------------------------------------------------------------------------------

    def _pin(self, options: ReadOnlyOptions) -> Snapshot:
        """A snapshot for a read-only bound; a stale bound reads the row versions at its timestamp."""
        target = self._target_timestamp(options)
        if target is not None:
            if target < self.clock.wall_nanos() - self._retention_nanos():
                raise errors.read_timestamp_too_old(values.nanos_to_rfc3339(target))
            wait = (target - self.clock.wall_nanos()) / 1e9
            if wait > limits.MAX_FUTURE_READ_SECONDS:
                raise errors.read_timestamp_too_far_in_future(values.nanos_to_rfc3339(target))
            if wait > 0:
                time.sleep(wait)  # as Spanner does: a read in the future waits for that time to come
        conn = self.storage.reader()
        if target is None:
            snap = self._pin_beside_group(conn)
            if snap is not None:
                return snap
        try:
            with self._visibility:
                past = target is not None and target < self.latest_commit_nanos
                read_ts = self.clock.next() if target is None else target
                if target is not None:
                    self.clock.advance_past(target)
                self.storage.pin(conn)
                catalog = self.catalog
            if past:
                versions.enter_past(conn, catalog, read_ts)
        except BaseException:
            versions.leave_past(conn)
            self.storage.release(conn)
            raise
        return Snapshot(conn, read_ts, catalog)

    def _pin_beside_group(self, conn: Any) -> Snapshot | None:
        """A strong snapshot at the floor of the group commit in flight, without waiting for it
        (see commit_floor.py); None when that cannot be done (then the caller takes the lock)."""
        if self.clock.share_timestamps or not self._visibility.locked():
            return None
        seen = self._in_flight.floor()
        if seen is None:
            return None
        floor, epoch = seen
        try:
            self.storage.pin(conn)
            catalog = self.catalog
        except BaseException:
            self.storage.release(conn)
            raise
        if self._in_flight.still(epoch):
            return Snapshot(conn, floor, catalog)
        conn.execute("ROLLBACK")  # the group's COMMIT may have begun: this snapshot may hold it
        return None
        return None

    def _target_timestamp(self, options: ReadOnlyOptions) -> int | None:
        if options.bound == Staleness.READ_TIMESTAMP:
            return options.timestamp_nanos
        if options.bound == Staleness.EXACT_STALENESS:
            return self.clock.wall_nanos() - (options.staleness_nanos or 0)
        return None  # strong; min_read_timestamp and max_staleness are satisfied by a strong read

    def _unpin(self, snap: Snapshot) -> None:
        with snap.lock:
            if not snap.released:
                snap.released = True
                if not snap.parked:  # a parked one gave its connection back already
                    versions.leave_past(snap.conn)
                    self.storage.release(snap.conn)

    def _register_snapshot(self, snap: Snapshot) -> None:
        with self._registry_lock:
            self._snapshots[snap.id] = snap
            now = time.monotonic()
            stale = [s for s in self._snapshots.values() if now - s.last_used > limits.SNAPSHOT_IDLE_SECONDS]
            while len(self._snapshots) > limits.MAX_PINNED_SNAPSHOTS:
                stale.append(self._snapshots.popitem(last=False)[1])
            for s in stale:
                self._snapshots.pop(s.id, None)
        for s in stale:
            self._unpin(s)

    # --- transactions ----------------------------------------------------------------------------------------

    def begin(self, session: str, options: TransactionOptions) -> TransactionInfo:
        if options.kind == TransactionKind.READ_ONLY:
            if options.exclude_txn_from_change_streams:
                raise errors.exclusion_needs_read_write()
            snap = self._pin(options.read_only)
            self._register_snapshot(snap)
            return TransactionInfo(snap.id, snap.read_nanos)
        txn = ReadWriteTransaction(session=session, partitioned=options.kind == TransactionKind.PARTITIONED_DML,
                                   origin=EXCLUDED_TXN if options.exclude_txn_from_change_streams else USER_TXN)
        with self._registry_lock:
            self._rw[txn.id] = txn
        return TransactionInfo(txn.id)

    def _lookup(self, txn_id: bytes) -> ReadWriteTransaction | Snapshot:
        with self._registry_lock:
            found = self._rw.get(txn_id) or self._snapshots.get(txn_id)
        if found is None:
            raise errors.transaction_not_found(txn_id)
        return found

    def _resolve(self, session: str, selector: TransactionSelector | None) -> tuple[ReadWriteTransaction | Snapshot, TransactionInfo | None, bool]:
        """The transaction a request runs in, what to report of it, and whether it is single-use."""
        selector = selector or TransactionSelector.default()
        if selector.id is not None:
            return self._lookup(selector.id), None, False
        if selector.begin is not None:
            info = self.begin(session, selector.begin)
            return self._lookup(info.id), info, False
        options = selector.single_use or TransactionOptions()
        if options.kind != TransactionKind.READ_ONLY:
            raise errors.single_use_must_be_read_only()
        return self._pin(options.read_only), None, True

    def rollback(self, txn_id: bytes) -> None:
        with self._registry_lock:
            txn = self._rw.pop(txn_id, None)
            snap = self._snapshots.pop(txn_id, None)
        if snap is not None:
            self._unpin(snap)
            return
        if txn is None:
            return  # rolling back an unknown or finished transaction is harmless, as on Spanner
        with txn.lock:
            if txn.state == "active":
                txn.state = "rolled_back"
            self._writer.roll_back(txn)

    # --- queries and DML --------------------------------------------------------------------------------------

    def execute_sql(self, session: str, statement: Statement, selector: TransactionSelector | None, *,
                    seqno: int | None = None, plan: bool = False, partition_token: bytes = b"") -> ResultStream:
        """Run a query or DML; ``seqno`` replays a DML request already answered in its transaction,
        ``plan`` describes the result (fields, no rows) without running the statement,
        ``partition_token`` (from :meth:`partition`) keeps only that partition's rows."""
        if read_function.is_change_stream_read(statement.sql):
            return self.change_streams.execute(statement, selector, plan=plan)
        txn, info, single_use = self._resolve(session, selector)
        try:
            if plan:
                return self._plan(txn, info, single_use, statement)
            if partition_token:
                return self._partition_of(txn, single_use, partition_token, statement.sql,
                                          lambda: self._execute_in(txn, info, single_use, statement, seqno))
            return self._execute_in(txn, info, single_use, statement, seqno)
        except BaseException:
            self._discard_unreported(txn, info)
            raise

    # --- partitions (PartitionQuery, PartitionRead) -----------------------------------------------------------

    def partition(self, session: str, selector: TransactionSelector | None, request: str, max_partitions: int, *,
                  statement: Statement | None = None) -> tuple[list[bytes], TransactionInfo | None]:
        """Tokens for the partitions of ``request`` (the canonical text of a query or read) in a read-only
        transaction; each partition then runs in that transaction, at its timestamp."""
        txn, info, single_use = self._resolve(session, selector)
        try:
            if single_use or not isinstance(txn, Snapshot):
                raise errors.partition_needs_read_only_transaction("PartitionQuery" if statement else "PartitionRead")
            if statement is not None:
                if sql.is_dml(statement.sql):
                    raise errors.dml_needs_read_write()
                sql.describe(statement, txn.catalog)  # a query that cannot run fails here, not in every partition
        except BaseException:
            if single_use and isinstance(txn, Snapshot):
                self._unpin(txn)
            self._discard_unreported(txn, info)
            raise
        return partitions.make_tokens(txn.id, request, partitions.partition_count(max_partitions)), info

    def _partition_of(self, txn: ReadWriteTransaction | Snapshot, single_use: bool, token: bytes, request: str,
                      run: Any) -> ResultStream:
        if single_use or not isinstance(txn, Snapshot):
            if single_use and isinstance(txn, Snapshot):
                self._unpin(txn)
            raise errors.partition_token_invalid()
        index, count = partitions.decode(token, txn.id, request)
        result: ResultStream = run()
        result.rows = partitions.take_slice(result.rows, index, count)
        return result

    def _discard_unreported(self, txn: ReadWriteTransaction | Snapshot, info: TransactionInfo | None) -> None:
        """A transaction begun inline by a request that failed was never reported to the client,
        which cannot use or end it: end it here, so it does not keep the writer or a snapshot."""
        if info is not None:
            self.rollback(txn.id)

    def _plan(self, txn: ReadWriteTransaction | Snapshot, info: TransactionInfo | None, single_use: bool,
              statement: Statement) -> ResultStream:
        """query_mode PLAN: the statement's result fields and an (empty) plan; nothing runs."""
        if isinstance(txn, Snapshot):
            try:
                if sql.is_dml(statement.sql):
                    raise errors.dml_needs_read_write()
                fields = sql.describe(statement, txn.catalog)
            finally:
                if single_use:
                    self._unpin(txn)
            if info is None and single_use:
                info = TransactionInfo(b"", txn.read_nanos)
            return ResultStream(fields, iter(()), transaction=info, query_plan=True)
        with txn.lock:
            txn.touch()
            return ResultStream(sql.describe(statement, self.catalog), iter(()), transaction=info, query_plan=True)

    def _execute_in(self, txn: ReadWriteTransaction | Snapshot, info: TransactionInfo | None, single_use: bool,
                    statement: Statement, seqno: int | None) -> ResultStream:
        if isinstance(txn, Snapshot):
            if sql.is_dml(statement.sql):
                if single_use:
                    self._unpin(txn)
                raise errors.dml_needs_read_write()
            return self._query_snapshot(txn, statement, info, single_use)
        with txn.lock:
            txn.touch()
            if txn.partitioned:
                return self._partitioned_dml(txn, statement, info)
            self._writer.acquire(txn)
            try:
                conn = self.storage.writer
                now = self.clock.next()
                if sql.is_dml(statement.sql):
                    answer = txn.replay(seqno, statement)
                    if answer is None:
                        result = self._run_dml(txn, statement, now)
                        answer = (list(result.fields or []), list(result.rows or []), result.row_count)
                        txn.remember(seqno, statement, answer)
                    fields, rows, count = answer
                    return ResultStream(fields, iter(rows), transaction=info, row_count_exact=count)
                with self.sequences.drawing(conn, self.catalog):
                    fields, rows_iter = sql.execute_query(conn, statement, self.catalog, now_nanos=now,
                                                          system_rows=self.system_rows)
                    # Materialised: the writer connection must be free for the transaction's next statement.
                    rows = list(rows_iter)
                return ResultStream(fields, iter(rows), transaction=info)
            except SpannerError as exc:
                self._fail_statement(txn, exc)
                raise
            finally:
                txn.touch()

    def _run_dml(self, txn: ReadWriteTransaction, statement: Statement, now: int) -> Any:
        """One DML statement in ``txn``: all or nothing, and the transaction goes on after a failure."""
        conn = self.storage.writer
        conn.execute("SAVEPOINT ls_stmt")
        try:
            with self.sequences.drawing(conn, self.catalog):
                result = sql.execute_dml(conn, statement, self.catalog, now_nanos=now)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO ls_stmt")
                conn.execute("RELEASE ls_stmt")
            else:  # SQLite rolled the whole transaction back, as it does for a write stopped at its deadline
                self._writer.abort(txn, errors.DML_STOPPED_AT_DEADLINE)
            raise
        conn.execute("RELEASE ls_stmt")
        txn.pending.extend(PendingCommitTimestamp(*p) for p in result.pending_commit_timestamps)
        txn.dml_mutations += result.mutation_count
        return result

    def _fail_statement(self, txn: ReadWriteTransaction, exc: SpannerError) -> None:
        """A failed statement leaves the transaction usable, as on Spanner; an ABORTED one ends it."""
        if exc.code == errors.Code.ABORTED:
            self._writer.abort(txn, exc.message)

    def system_rows(self, view: str) -> list[tuple]:
        """The rows of a SPANNER_SYS table (``spanner_sys.VIEWS``), from the requests recorded so far."""
        return spanner_sys.rows(view, self.requests.records())

    def _query_snapshot(self, snap: Snapshot, statement: Statement, info: TransactionInfo | None, single_use: bool) -> ResultStream:
        try:
            with self._snapshot_conn(snap) as conn, self.sequences.reading(snap.catalog):
                fields, rows = sql.execute_query(conn, statement, snap.catalog, now_nanos=snap.read_nanos,
                                                 system_rows=self.system_rows)
        except BaseException:
            if single_use:
                self._unpin(snap)
            raise
        if info is None and single_use:
            info = TransactionInfo(b"", snap.read_nanos)
        return ResultStream(fields, self._stream(snap, rows, single_use), transaction=info)

    def _stream(self, snap: Snapshot, rows: Iterator[list[Any]], single_use: bool) -> Iterator[list[Any]]:
        try:
            yield from rows
        finally:
            if single_use:
                self._unpin(snap)
            else:
                self._snapshot_done(snap)

    def _partitioned_dml(self, txn: ReadWriteTransaction, statement: Statement, info: TransactionInfo | None) -> ResultStream:
        if not sql.is_dml(statement.sql):
            raise errors.partitioned_dml_not_allowed("A query")
        if txn.state != "active":
            raise errors.transaction_already_committed(txn.id)
        self._writer.acquire(txn)
        conn = self.storage.writer
        try:
            with self.sequences.drawing(conn, self.catalog):
                result = sql.execute_dml(conn, statement, self.catalog, now_nanos=self.clock.next(), partitioned=True)
            txn.pending.extend(PendingCommitTimestamp(*p) for p in result.pending_commit_timestamps)
            with deadlines.until(None):  # the statement ran in time: its commit is not cut short (the call ends after it)
                self._commit_locked(txn, [])
        except BaseException:
            txn.state = "aborted"
            self._writer.roll_back(txn)
            raise
        return ResultStream([], iter(()), transaction=info, row_count_lower_bound=result.row_count)

    def execute_batch_dml(self, session: str, statements: list[Statement], selector: TransactionSelector, *,
                          seqno: int | None = None) -> BatchDmlResult:
        """Run DML statements in order until one fails; ``seqno`` replays a batch already answered."""
        txn, info, _ = self._resolve(session, selector)
        if not isinstance(txn, ReadWriteTransaction) or txn.partitioned:
            self._discard_unreported(txn, info)
            raise errors.dml_needs_read_write()
        result = self._batch_dml_in(txn, info, statements, seqno)
        if result.error is not None and not result.row_counts:
            # No result set carries the inline-begun transaction back to the client.
            self._discard_unreported(txn, info)
        return result

    def _batch_dml_in(self, txn: ReadWriteTransaction, info: TransactionInfo | None, statements: list[Statement],
                      seqno: int | None) -> BatchDmlResult:
        with txn.lock:
            txn.touch()
            self._writer.acquire(txn)
            request = tuple(statements)
            answer = txn.replay(seqno, request)
            if answer is None:
                answer = self._run_batch(txn, statements)
                txn.remember(seqno, request, answer)
            txn.touch()
        counts, error = answer
        return BatchDmlResult(list(counts), info, error)

    def _run_batch(self, txn: ReadWriteTransaction, statements: list[Statement]) -> tuple[list[int], SpannerError | None]:
        """Row counts of the statements that ran, and the error that stopped the batch."""
        counts: list[int] = []
        for st in statements:
            try:  # a query among the statements is refused by sql.execute_dml, as any error, and ends the batch
                result = self._run_dml(txn, st, self.clock.next())
            except SpannerError as exc:
                self._fail_statement(txn, exc)
                return counts, exc
            counts.append(result.row_count)
        return counts, None

    # --- reads by key ---------------------------------------------------------------------------------------------

    def read(self, session: str, table: str, columns: list[str], key_set: KeySet, selector: TransactionSelector | None,
             index: str = "", limit: int = 0, partition_token: bytes = b"") -> ResultStream:
        txn, info, single_use = self._resolve(session, selector)
        if partition_token:
            request = read_request_text(table, index, columns, key_set)
            return self._partition_of(txn, single_use, partition_token, request,
                                      lambda: self._read_in(txn, info, single_use, table, columns, key_set, index, limit))
        return self._read_in(txn, info, single_use, table, columns, key_set, index, limit)

    def _read_in(self, txn: ReadWriteTransaction | Snapshot, info: TransactionInfo | None, single_use: bool, table: str,
                 columns: list[str], key_set: KeySet, index: str, limit: int) -> ResultStream:
        if isinstance(txn, Snapshot):
            try:
                with self._snapshot_conn(txn) as conn:
                    fields, rows = read_rows(conn, txn.catalog, table, columns, key_set, index=index, limit=limit)
            except BaseException:
                if single_use:
                    self._unpin(txn)
                raise
            if info is None and single_use:
                info = TransactionInfo(b"", txn.read_nanos)
            return ResultStream(fields, self._stream(txn, rows, single_use), transaction=info)
        with txn.lock:
            txn.touch()
            self._writer.acquire(txn)
            fields, rows = read_rows(self.storage.writer, self.catalog, table, columns, key_set, index=index, limit=limit)
            return ResultStream(fields, iter(list(rows)), transaction=info)

    # --- commits -------------------------------------------------------------------------------------------------------

    def commit(self, session: str, mutations: list[Mutation], *, transaction_id: bytes | None = None,
               single_use: TransactionOptions | None = None, tag: str = "") -> CommitResult:
        # Spanner's limit is on mutations as commit statistics count them, DML's included.
        count = mutation_count(mutations)
        if count > limits.MAX_MUTATIONS_PER_COMMIT:
            raise errors.too_many_mutations(count, limits.MAX_MUTATIONS_PER_COMMIT)
        if transaction_id is None:
            excluded = single_use is not None and single_use.exclude_txn_from_change_streams
            txn = ReadWriteTransaction(session=session, origin=EXCLUDED_TXN if excluded else USER_TXN)
        else:
            found = self._lookup(transaction_id)
            if isinstance(found, Snapshot):
                if mutations:
                    raise errors.read_only_transaction_write()
                self.rollback(transaction_id)
                return CommitResult(found.read_nanos)
            txn = found
        with txn.lock:
            if txn.state == "aborted":
                raise errors.transaction_aborted(txn.abort_reason or "the transaction was aborted")
            if txn.state != "active":
                raise errors.transaction_already_committed(txn.id)
            if txn.partitioned:
                raise errors.partitioned_dml_not_allowed("Commit")
            if count + txn.dml_mutations > limits.MAX_MUTATIONS_PER_COMMIT:
                txn.state = "rolled_back"
                self._writer.roll_back(txn)
                with self._registry_lock:
                    self._rw.pop(txn.id, None)
                raise errors.too_many_mutations(count + txn.dml_mutations, limits.MAX_MUTATIONS_PER_COMMIT)
            # A transaction that read or ran DML holds the writer already: its commit may depend on
            # the previous one, so only blind writes may share a commit timestamp (Clock.next_commit)
            # or join a group commit.
            try:
                if not txn.holds_writer and not txn.pending:
                    ts = self._commit_in_group(txn, mutations, tag)
                else:
                    self._writer.acquire(txn)
                    try:
                        ts = self._commit_locked(txn, mutations, tag=tag)
                    except SpannerError:
                        txn.state = "rolled_back"
                        self._writer.roll_back(txn)
                        raise
            finally:
                with self._registry_lock:
                    self._rw.pop(txn.id, None)
        return CommitResult(ts, count + txn.dml_mutations)

    def _commit_locked(self, txn: ReadWriteTransaction, mutations: list[Mutation], tag: str = "") -> int:
        """Commit ``txn`` (which holds the writer and has an open SQLite transaction); it read or ran
        DML, so its commit may depend on the previous one and never shares a timestamp."""
        with self._visibility:
            ts = self.clock.next_commit(None)
            self._commits_since_purge += 1
            purge_before = None
            if self._commits_since_purge >= versions.PURGE_EVERY_COMMITS:
                self._commits_since_purge = 0
                purge_before = self.clock.wall_nanos() - self._retention_nanos()
            written = write_commit(self.storage.writer, self.catalog, mutations, txn.pending, ts,
                                   purge_before=purge_before, wall_nanos=self.clock.wall_nanos(), tag=tag,
                                   sequences=self.sequences, origin=txn.origin)
            self.latest_commit_nanos = ts
        txn.state = "committed"
        self._after_commit(bool(written))
        self._writer.release(txn)
        return ts

    def _commit_in_group(self, txn: ReadWriteTransaction, mutations: list[Mutation], tag: str) -> int:
        """Commit blind writes with whatever else queues for the writer (group_commit.py); values are
        converted here, before the writer is taken."""
        try:
            prepared = prepare_mutations(self.catalog, mutations)
        except SpannerError:
            txn.state = "rolled_back"
            raise
        rows = written_rows(self.name, prepared.catalog, mutations) if self.clock.share_timestamps else None
        entry = self._group.commit(GroupEntry(prepared, rows, tag, txn.origin))
        if entry.error is not None:
            txn.state = "rolled_back"
            raise entry.error
        txn.state = "committed"
        return entry.ts

    def _write_group(self, batch: list[GroupEntry]) -> None:
        """Apply a group of commits (the writer is held): one SQLite transaction, one COMMIT."""
        with self._visibility:
            purge_before = None
            self._commits_since_purge += len(batch)
            if self._commits_since_purge >= versions.PURGE_EVERY_COMMITS:
                self._commits_since_purge = 0
                purge_before = self.clock.wall_nanos() - self._retention_nanos()
            if not self.clock.share_timestamps:
                # A read timestamp taken as the group begins: above every commit before it, below all of its own.
                self._in_flight.open(self.clock.next())
            try:
                committed = write_group(self.storage.writer, self.catalog, batch, self.clock, purge_before=purge_before,
                                        wall_nanos=self.clock.wall_nanos(), sequences=self.sequences,
                                        committing=self._in_flight.close)
            finally:
                self._in_flight.close()
            if committed:
                self.latest_commit_nanos = max(self.latest_commit_nanos, max(e.ts for e in committed))
        self._after_commit(any(e.written for e in committed))

    def _after_commit(self, wrote_change_records: bool) -> None:
        """Housekeeping once commits are durable: park idle snapshots (so that checkpoints copy the WAL
        past them) and wake open change stream queries. A failure here is logged, never returned:
        the commits are done, and a caller told otherwise sees a durable write fail (and a retry of
        it, its own or the client's for a retryable code, would commit it a second time)."""
        try:
            self._park_idle_snapshots()
        except Exception:  # noqa: BLE001 - a snapshot left pinned costs WAL growth, not correctness
            log.exception("parking idle snapshots after a commit failed; they stay pinned")
        if wrote_change_records:
            self.change_streams.notify()

    def sweep_expired_rows(self) -> int:
        """Delete the rows past their table's row deletion policy at the wall clock, one system
        transaction per table and batch (see :mod:`.row_deletion`); returns how many transactions.

        A table whose delete fails (e.g. a foreign key refuses it) is logged and retried at the
        next sweep; the other tables are still swept."""
        commits = 0
        for name in [t.name for t in self.catalog.tables if t.row_deletion_policy is not None]:
            try:
                while self._sweep_batch(name):
                    commits += 1
            except SpannerError:
                log.exception("the row deletion policy of table %s could not delete; retrying at the next sweep", name)
        return commits

    def _sweep_batch(self, table_name: str) -> bool:
        """Delete one batch of ``table_name``'s expired rows in a system transaction; False when none are left."""
        txn = ReadWriteTransaction(session="", origin=TTL_DELETE)
        self._writer.acquire(txn)
        try:
            table = self.catalog.table(table_name)
            found = expired_delete(self.storage.writer, table, self.clock.wall_nanos()) if table is not None else None
            if found is None:
                self._writer.roll_back(txn)
                return False
            self._commit_locked(txn, [found])
            return True
        except BaseException:
            self._writer.roll_back(txn)
            raise

    def close(self) -> None:
        with self._registry_lock:
            snaps = list(self._snapshots.values())
            self._snapshots.clear()
        for s in snaps:
            self._unpin(s)
        self.change_streams.close()
        self.storage.close()


def read_request_text(table: str, index: str, columns: list[str], key_set: KeySet) -> str:
    """What a PartitionRead partitions, as text its tokens are checked against."""
    return "\0".join([table.lower(), index.lower(), ",".join(c.lower() for c in columns), repr(key_set)])
