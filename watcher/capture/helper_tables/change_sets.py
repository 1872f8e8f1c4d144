"""Change sets: watching tables that have no commit-timestamp column.

Every read/write transaction also inserts a row ``CHANGE_SETS(CHANGE_SET_ID,
COMMIT_TIMESTAMP)`` (the commit timestamp written by Spanner) and stores the same id in
a ``CHANGE_SET_ID`` column of each data row it changes. A :class:`ChangeSetWatcher`
tails ``CHANGE_SETS`` with an ordinary :class:`~watcher.capture.table_watcher.TableWatcher` (so
polling, retries and exact checkpoints are shared) and, for each new change set, reads
the data rows carrying its id and delivers them with the change set's commit timestamp.

A row overwritten by a later change set carries the later id, so it is delivered once,
with the later change set (versions coalesce, as with commit-timestamp polling). Deletes
are not seen.

The change-set row must be added to *every* attempt of a transaction: the client runs the
transaction function again when Spanner aborts it, and each attempt gets a fresh id.
:func:`run_in_change_set_transaction` does that.

Example::

    database.update_ddl([change_sets_table_ddl(), *change_set_column_ddl("Orders")]).result()

    def place_order(txn, change_set_id):
        txn.insert_or_update("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[7, 12.5, change_set_id]])
        txn.execute_update("UPDATE Stock SET Qty = Qty - 1, CHANGE_SET_ID = @cs WHERE Item = 3",
                           params={"cs": change_set_id}, param_types={"cs": param_types.STRING})

    run_in_change_set_transaction(database, place_order)

    with ChangeSetWatcher(database, ["Orders", "Stock"]) as w:
        for change in w.changes():
            ...
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, param_types

from ...checkpoints import CommitTimestampRepository, SpannerCommitTimestampRepository
from ...dialects import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of
from ...dialects.schema import columns_query, key_query
from ...dialects.types import column_type, ddl_type
from ...errors import ConfigurationError, TableNotFoundError, TableNotWatchableError
from ...model import Change, TableId
from ...request_settings import RequestSettings, settings_or_default
from ...sqlnames import find_name, has_name, validate_identifier
from ..acks import DEFAULT_MAX_BATCHES_IN_FLIGHT
from ..base import State
from ..database_watcher import ALL
from ..retry import is_transient
from ..row_values import bytes_decoder, column_types
from ..table_info import TableInfo, _query
from ..table_watcher import TableWatcher
from .translating import RenamedCheckpoints, TranslatingWatcher

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

CHANGE_SETS_TABLE = "CHANGE_SETS"
CHANGE_SET_ID_COLUMN = "CHANGE_SET_ID"
COMMIT_TIMESTAMP_COLUMN = "COMMIT_TIMESTAMP"
CHANGE_SETS_COLUMNS = (CHANGE_SET_ID_COLUMN, COMMIT_TIMESTAMP_COLUMN)

#: Tries of one data read before its error reaches the watcher's callback policy.
_READ_ATTEMPTS = 8

#: The tables that have the change-set id column, in each dialect.
_TABLES_WITH_COLUMN_SQL = {
    GOOGLE_SQL.name: ("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS "
                      "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' AND COLUMN_NAME = @column ORDER BY TABLE_NAME"),
    POSTGRESQL.name: ("SELECT table_name FROM information_schema.columns "
                      "WHERE table_schema = 'public' AND column_name = @column ORDER BY table_name"),
}
#: The change-set table in each dialect ({table}, {id}, {ts}: quoted names). PostgreSQL gets the names
#: double-quoted as given, so the same writers (mutations naming CHANGE_SETS, CHANGE_SET_ID) serve both.
_CHANGE_SETS_DDL = {
    GOOGLE_SQL.name: ("CREATE TABLE {table} (\n  {id} STRING(MAX) NOT NULL,\n"
                      "  {ts} TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)\n) PRIMARY KEY ({id})"),
    POSTGRESQL.name: ("CREATE TABLE {table} (\n  {id} varchar NOT NULL,\n  {ts} spanner.commit_timestamp NOT NULL,\n"
                      "  PRIMARY KEY ({id})\n)"),
}


# --- DDL -------------------------------------------------------------------------------------------------

def change_sets_table_ddl(table: str = CHANGE_SETS_TABLE, dialect: Dialect = GOOGLE_SQL) -> str:
    """The CREATE TABLE statement of the change-set table in ``dialect``.

    >>> print(change_sets_table_ddl())
    CREATE TABLE `CHANGE_SETS` (
      `CHANGE_SET_ID` STRING(MAX) NOT NULL,
      `COMMIT_TIMESTAMP` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)
    ) PRIMARY KEY (`CHANGE_SET_ID`)
    >>> print(change_sets_table_ddl(dialect=POSTGRESQL).splitlines()[2])
      "COMMIT_TIMESTAMP" spanner.commit_timestamp NOT NULL,
    """
    return _CHANGE_SETS_DDL[dialect.name].format(table=dialect.quote(table, "change-set table"),
                                                 id=dialect.quote(CHANGE_SET_ID_COLUMN), ts=dialect.quote(COMMIT_TIMESTAMP_COLUMN))


def change_set_column_ddl(table: str, *, column: str = CHANGE_SET_ID_COLUMN, index: bool = True,
                          dialect: Dialect = GOOGLE_SQL) -> list[str]:
    """Statements adding the change-set id column to a data table (and an index to find rows by id), in ``dialect``
    (names as given: in PostgreSQL, give a table created without quotes in lower case).

    >>> change_set_column_ddl("Orders")
    ['ALTER TABLE `Orders` ADD COLUMN `CHANGE_SET_ID` STRING(MAX)', 'CREATE INDEX `Idx_Orders_CHANGE_SET_ID` ON `Orders` (`CHANGE_SET_ID`)']
    >>> change_set_column_ddl("orders", dialect=POSTGRESQL, index=False)
    ['ALTER TABLE "orders" ADD COLUMN "CHANGE_SET_ID" varchar']
    """
    q = dialect.quote
    statements = [f"ALTER TABLE {q(table, 'table')} ADD COLUMN {q(column, 'column')} "
                  f"{ddl_type(dialect, 'STRING(MAX)')}"]
    if index:
        statements.append(f"CREATE INDEX {q(f'Idx_{table}_{column}', 'index')} ON {q(table)} ({q(column)})")
    return statements


# --- writers ---------------------------------------------------------------------------------------------

def new_change_set_id() -> str:
    """A fresh, random change-set id (a UUID: spreads CHANGE_SETS writes over the key space)."""
    return str(uuid.uuid4())


def add_change_set(writer: Any, *, change_sets_table: str = CHANGE_SETS_TABLE) -> str:
    """Insert a new change-set row through ``writer`` (a transaction or a batch); returns its id.

    Call it once per transaction *attempt*, inside the transaction function.

    >>> class Recorder:
    ...     def insert(self, table, columns, values): self.args = (table, columns, values)
    >>> r = Recorder(); cs = add_change_set(r)
    >>> r.args[0], r.args[2][0][0] == cs
    ('CHANGE_SETS', True)
    """
    change_set_id = new_change_set_id()
    writer.insert(validate_identifier(change_sets_table, "change-set table"), CHANGE_SETS_COLUMNS,
                  [[change_set_id, COMMIT_TIMESTAMP]])
    return change_set_id


def run_in_change_set_transaction(database: Database, fn: Callable[..., Any], *args: Any,
                                  change_sets_table: str = CHANGE_SETS_TABLE, **kwargs: Any) -> Any:
    """Run ``fn(transaction, change_set_id, *args, **kwargs)`` in a read/write transaction.

    Every attempt (the client re-runs ``fn`` when Spanner aborts the transaction) inserts
    its own CHANGE_SETS row with a fresh id, so exactly one row exists per committed
    transaction. ``fn`` writes the id into the CHANGE_SET_ID column of every row it
    changes, with mutations or DML. Keyword arguments the client's ``run_in_transaction``
    knows (``timeout_secs``, ``default_retry_delay``, ...) go to it; the rest go to ``fn``.
    Returns what ``fn`` returns.

    Example::

        run_in_change_set_transaction(database, lambda txn, cs: txn.insert(
            "Orders", ["OrderId", "CHANGE_SET_ID"], [[1, cs]]))
    """

    def attempt(transaction: Any, *a: Any, **kw: Any) -> Any:
        change_set_id = add_change_set(transaction, change_sets_table=change_sets_table)
        return fn(transaction, change_set_id, *a, **kw)

    return database.run_in_transaction(attempt, *args, **kwargs)


class ChangeSetBatch(NamedTuple):
    """A mutation batch and the id of the change set it writes."""

    batch: Any
    change_set_id: str


@contextlib.contextmanager
def change_set_batch(database: Database, *, change_sets_table: str = CHANGE_SETS_TABLE) -> Iterator[ChangeSetBatch]:
    """A mutation batch (committed on exit, as ``database.batch()``) that carries a change-set row.

    Example::

        with change_set_batch(database) as (batch, change_set_id):
            batch.insert("Orders", ["OrderId", "CHANGE_SET_ID"], [[1, change_set_id]])
    """
    with database.batch() as batch:
        yield ChangeSetBatch(batch, add_change_set(batch, change_sets_table=change_sets_table))


# --- the poller ------------------------------------------------------------------------------------------

def _describe(snap: Any, dialect: Dialect, table: str, column: str, settings: RequestSettings) -> TableInfo:
    """A data table's schema; it has no commit-timestamp column of its own (``""``): its
    changes carry their change set's commit timestamp."""
    tid = TableId(table)
    columns = {name: column_type(dialect, t) for name, t in _query(snap, columns_query(dialect, tid), settings)}
    if not columns:
        raise TableNotFoundError(table)
    if find_name(columns, column) is None:
        raise TableNotWatchableError(table, f"it has no {column} column for change sets")
    key = tuple(r[0] for r in _query(snap, key_query(dialect, tid), settings))
    return TableInfo(tid, "", key, columns, dialect=dialect)


class ChangeSetWatcher(TranslatingWatcher):
    """Watches tables without a commit-timestamp column through the change-set table.

    Args:
        database: the database to watch.
        tables: one table name, several, or ``ALL`` (every table with a change-set id column).
        exclude: with ``ALL``, tables to skip.
        change_sets_table: the change-set table (default ``CHANGE_SETS``).
        change_set_column: the id column in the data tables (default ``CHANGE_SET_ID``).
        checkpoint_name: the name the poller's position is stored under (default: the
            change-set table and the watched tables, so pollers of different tables do not share
            a place).
        checkpoints: the checkpoint store (default: LAST_SEEN_COMMIT_TIMESTAMPS in ``database``).
        request_settings: the priority of its polls and data-row reads, the request tag of every
            statement and the transaction tag of the default store's writes (None: the defaults).
        max_batches_in_flight: polls of the change-set table handed to sinks that acknowledge later before
            the next poll waits for the oldest (:mod:`watcher.capture.acks`).
        **options: passed to the TableWatcher on the change-set table (poll_interval, limit,
            initial_timestamp, scheduler, executor, callback_error_policy, retry_policy, clock, name).

    Changes come per change set in commit-timestamp order; within one change set, table by
    table in the order given, rows in primary-key order. ``Change.commit_timestamp`` is the
    change set's; ``Change.row`` holds every column (CHANGE_SET_ID included).
    """

    def __init__(self, database: Database, tables: str | Iterable[str] | Any = ALL, *, exclude: Iterable[str] = (),
                 change_sets_table: str = CHANGE_SETS_TABLE, change_set_column: str = CHANGE_SET_ID_COLUMN,
                 checkpoint_name: str | None = None, checkpoints: CommitTimestampRepository | None = None,
                 request_settings: RequestSettings | None = None,
                 max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT, **options: Any) -> None:
        super().__init__()
        if "commit_timestamp_column" in options or "shard_provider" in options:
            raise ConfigurationError("a ChangeSetWatcher polls the change-set table's COMMIT_TIMESTAMP column; "
                                     "commit_timestamp_column and shard_provider do not apply")
        self.database = database
        self.include: list[str] | None = None
        if tables is not ALL:
            self.include = [tables] if isinstance(tables, str) else list(tables)
            if not self.include:
                raise ConfigurationError("tables=[] watches nothing; give at least one table, or tables=ALL")
            if exclude:
                raise ConfigurationError("exclude only applies to tables=ALL")
            for t in self.include:
                validate_identifier(t, "table")
        self.exclude = list(exclude)
        self.change_sets_table = validate_identifier(change_sets_table, "change-set table")
        self.change_set_column = validate_identifier(change_set_column, "change-set column")
        if checkpoint_name is None:
            checkpoint_name = self.change_sets_table + (":" + ",".join(sorted(self.include)) if self.include else "")
        self.request_settings = settings_or_default(request_settings)
        store = checkpoints or SpannerCommitTimestampRepository(database, request_settings=self.request_settings)
        helper = TableId(self.change_sets_table)
        self.checkpoints = RenamedCheckpoints(store, helper, TableId(checkpoint_name))
        self.inner = TableWatcher(database, helper, commit_timestamp_column=COMMIT_TIMESTAMP_COLUMN,
                                  checkpoints=self.checkpoints, request_settings=self.request_settings,
                                  max_batches_in_flight=max_batches_in_flight, **options)
        self.data_tables: list[TableInfo] = []
        self._prefetched: dict[str, list[Change]] = {}

    def tables(self) -> list[str]:
        """The data tables watched (resolved against the schema for ``ALL``)."""
        if self.include is not None:
            return list(self.include)
        dialect = dialect_of(self.database)
        statement = dialect.bind(_TABLES_WITH_COLUMN_SQL[dialect.name], {"column": self.change_set_column},
                                 {"column": param_types.STRING})
        with self.database.snapshot() as snap:
            rows = snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                    request_options=self.request_settings.request_options(with_priority=False))
            found = [r[0] for r in rows]
        skip = [self.change_sets_table, *self.exclude]
        found = [t for t in found if not has_name(skip, t)]
        if not found:
            raise TableNotFoundError(self.database.name, f"no table with a {self.change_set_column} column to watch")
        return found

    def describe_tables(self) -> list[TableInfo]:
        """Find the data tables in the schema (as :meth:`start` does); raises naming a table that cannot be watched."""
        self._prepare()
        return self.table_infos()

    def _prepare(self) -> None:
        names = self.tables()
        dialect = dialect_of(self.database)
        with self.database.snapshot(multi_use=True) as snap:
            self.data_tables = [_describe(snap, dialect, t, self.change_set_column, self.request_settings) for t in names]

    def table_infos(self) -> list[TableInfo]:
        """The data tables, as discovered at the last start."""
        return list(self.data_tables)

    def _select(self, snap: Any, table: TableInfo, ids: Sequence[str]) -> Iterator[tuple[str, Change]]:
        d = table.dialect
        column = find_name({c: c for c in table.column_types}, self.change_set_column) or self.change_set_column
        order = ", ".join(d.order_key(d.quote(k)) for k in table.key_columns)
        sql = (f"SELECT * FROM {d.table(table.table)} WHERE {d.in_array(d.quote(column), 'ids')}"
               + (f" ORDER BY {order}" if order else ""))
        statement = d.bind(sql, {"ids": list(ids)}, {"ids": param_types.Array(param_types.STRING)})
        results = snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                   request_options=self.request_settings.request_options())  # part of the poll
        rows = list(results)
        if not rows:
            return
        fields = list(results.fields)
        names = [f.name for f in fields]
        id_index = [n.upper() for n in names].index(self.change_set_column.upper())
        key_index = [names.index(k) for k in table.key_columns]
        types = MappingProxyType(column_types(fields))  # typed by this read, not by the schema found at start
        decode = bytes_decoder(fields)  # the fields' types read once per read, not per row
        for row in rows:
            row = decode(row)
            # The commit timestamp is filled in per change set by _translate.
            yield row[id_index], Change(str(table.table), tuple(row[i] for i in key_index), dict(zip(names, row, strict=True)), None,  # type: ignore[arg-type]
                                        column_types=types)

    def _read(self, ids: Sequence[str]) -> dict[str, list[Change]]:
        """The data rows of change sets ``ids``, grouped by id, tables in order, keys in order.

        These reads are part of polling, so transient errors are retried here with the
        watcher's backoff (they would otherwise count as a failed callback).
        """
        backoff = self.inner.retry_policy.backoff()
        while True:
            try:
                return self._read_once(ids)
            except Exception as exc:
                if not is_transient(exc) or backoff.attempts >= _READ_ATTEMPTS or self.inner.state != State.RUNNING:
                    raise
                time.sleep(backoff.next_delay())

    def _read_once(self, ids: Sequence[str]) -> dict[str, list[Change]]:
        found: dict[str, list[Change]] = {i: [] for i in ids}
        with self.database.snapshot(multi_use=True) as snap:
            for table in self.data_tables:
                for change_set_id, change in self._select(snap, table, ids):
                    found.setdefault(change_set_id, []).append(change)
        return found

    def _prepare_batch(self, helper_changes: list[Change]) -> None:
        # One query per table for the whole poll instead of one per change set.
        self._prefetched = self._read([c.keys[0] for c in helper_changes])

    def _translate(self, change: Change) -> Iterable[Change]:
        change_set_id = change.keys[0]
        rows = self._prefetched.pop(change_set_id, None)
        if rows is None:
            rows = self._read([change_set_id])[change_set_id]
        return [Change(c.table, c.keys, c.row, change.commit_timestamp, None, change.read_timestamp,
                       column_types=c.column_types) for c in rows]
