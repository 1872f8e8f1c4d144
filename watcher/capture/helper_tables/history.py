"""History-table mode: every version of every row, deletes included, in commit order.

Polling a data table sees rows, not a log: versions overwritten between two polls
coalesce and deletes are invisible. In history-table mode (the changelog pattern of the
Spanner commit-timestamp guide, with a ``DocumentHistory`` table next to ``Documents``)
the application appends one history row per changed row *inside its own read/write
transaction*, and a :class:`HistoryWatcher` tails that append-only table.

The history table of ``T``, ``THistory`` by default::

    <key columns of T>, CommitTimestamp TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
    Seq INT64 NOT NULL, Operation STRING(6) NOT NULL, NewValues JSON
    PRIMARY KEY (<key columns>, CommitTimestamp, Seq)

and in a PostgreSQL database the same columns as ``"CommitTimestamp" spanner.commit_timestamp NOT NULL,
"Seq" bigint NOT NULL, "Operation" varchar(6) NOT NULL, "NewValues" jsonb``, the key inside the column list.

The key starts with the data table's key, so appends spread over the key space like the
data writes do (a key starting with the commit timestamp would send every append to one
split). ``Seq`` numbers the history rows of one transaction, so several changes of one
key in one transaction stay distinct and ordered; two transactions that change the same
key conflict, so they get distinct commit timestamps and appends never collide. The
watcher polls in (CommitTimestamp, key, CommitTimestamp, Seq) order: per key, commit order
and then the order of the writes within the transaction. The table is not interleaved,
so history survives deletes of the data rows.

``NewValues`` holds the columns the mutation wrote, as JSON (INT64 as numbers, BYTES as
base64, TIMESTAMP as RFC 3339, NUMERIC as text; the commit-timestamp placeholder is kept
and resolved to the change's commit timestamp when read back); NULL for a DELETE. A
``replace`` records the columns it leaves out as NULL (that is what it does to them), so an
UPDATE that lacks some of the data table's columns was a partial write (``update``, or
``insert_or_update`` of an existing row): the watcher marks it ``NEW_VALUES`` and the
changelog fills the other columns from the key's previous version. DML goes through
:meth:`HistoryWriter.execute_update`, which records the full rows the statement left.

Example::

    docs = HistoryTable.discover(database, "Documents")
    docs.create(database)                        # CREATE TABLE DocumentsHistory, if missing

    def edit(txn):
        h = docs.writer(txn)                     # one writer per transaction attempt
        h.insert_or_update(["UserId", "DocumentId", "Contents"], [[1, 7, "hello"]])
        h.delete([(1, 8)])
        h.execute_update("UPDATE Documents SET Contents = 'x' WHERE UserId = 1", keys=[(1, 7)])
    database.run_in_transaction(edit)

    with HistoryWatcher(database, "Documents") as w:
        for change in w.changes():
            print(change.mod_type, change.keys, change.row)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, KeySet
from google.cloud.spanner_v1.data_types import JsonObject

from ...checkpoints import CommitTimestampRepository
from ...dialects import GOOGLE_SQL, Dialect, dialect_of
from ...dialects.schema import key_query, nullable_columns_query
from ...dialects.types import column_type
from ...errors import ConfigurationError, TableNotFoundError
from ...model import NEW_ROW as NEW_ROW_CAPTURE
from ...model import NEW_VALUES as NEW_VALUES_CAPTURE
from ...model import Change, TableId, as_mod_type
from ...request_settings import RequestSettings, settings_or_default
from ...sqlnames import validate_identifier
from ..acks import DEFAULT_MAX_BATCHES_IN_FLIGHT
from ..table_info import TableInfo, _query
from ..table_watcher import TableWatcher
from .history_ddl import (
    COMMIT_TIMESTAMP_COLUMN,
    HISTORY_COLUMNS,
    NEW_VALUES_COLUMN,
    OPERATION_COLUMN,
    SEQUENCE_COLUMN,
    history_table_ddl,
    history_table_name,
)
from .history_values import decode_values, encode_values
from .translating import TranslatingWatcher

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

INSERT, UPDATE, DELETE = "INSERT", "UPDATE", "DELETE"

def _describe(database: Database, table: str, settings: RequestSettings | None = None,
              ) -> tuple[dict[str, tuple[str, bool]], tuple[str, ...], Dialect]:
    """``table``'s columns (GoogleSQL type names, nullability), its key and the database's dialect."""
    dialect = dialect_of(database)
    tid = TableId(table)
    with database.snapshot(multi_use=True) as snap:
        rows = _query(snap, nullable_columns_query(dialect, tid), settings)
        key = tuple(r[0] for r in _query(snap, key_query(dialect, tid), settings))
    if not rows:
        raise TableNotFoundError(table)
    return ({name: (column_type(dialect, spanner_type), nullable == "YES") for name, spanner_type, nullable in rows},
            key, dialect)


@dataclass(frozen=True)
class HistoryTable:
    """A data table and its history table: what the writer and the DDL need to know.

    >>> h = HistoryTable("Documents", ("UserId",), {"UserId": "INT64", "Contents": "STRING(MAX)"})
    >>> h.history_table, h.key_of({"UserId": 3, "Contents": "x"})
    ('DocumentsHistory', (3,))
    """

    table: str
    key_columns: tuple[str, ...]
    column_types: Mapping[str, str]
    history_table: str = ""
    nullable_keys: frozenset[str] = frozenset()
    #: The dialect of the database the tables are in (what :meth:`ddl` writes).
    dialect: Dialect = GOOGLE_SQL

    def __post_init__(self) -> None:
        validate_identifier(self.table, "table")
        if not self.history_table:
            object.__setattr__(self, "history_table", history_table_name(self.table))
        validate_identifier(self.history_table, "history table")

    @classmethod
    def discover(cls, database: Database, table: str, *, history_table: str | None = None,
                 request_settings: RequestSettings | None = None) -> HistoryTable:
        """Read the key and column types of ``table`` from INFORMATION_SCHEMA (queries tagged by ``request_settings``)."""
        columns, key, dialect = _describe(database, table, request_settings)
        return cls(table, key, {c: t for c, (t, _) in columns.items()}, history_table or "",
                   frozenset(k for k in key if columns[k][1]), dialect)

    def ddl(self, dialect: Dialect | None = None) -> str:
        """The history table's CREATE TABLE, in ``dialect`` (default: the data table's)."""
        return history_table_ddl(self.table, [(k, self.column_types[k], k in self.nullable_keys) for k in self.key_columns],
                                 history_table=self.history_table, dialect=dialect or self.dialect)

    def create(self, database: Database, timeout: float = 120.0) -> bool:
        """Create the history table unless it exists, in the database's dialect; True when it was created."""
        try:
            _describe(database, self.history_table)
            return False
        except TableNotFoundError:
            database.update_ddl([self.ddl(dialect_of(database))]).result(timeout)
            return True

    def key_of(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.key_columns)

    def writer(self, transaction: Any) -> HistoryWriter:
        """The writer of this history table in ``transaction`` (the same one on every call)."""
        with _WRITERS_LOCK:
            per_txn = _WRITERS.setdefault(transaction, {})
            found = per_txn.get(self.history_table)
            if found is None:
                found = per_txn[self.history_table] = HistoryWriter(transaction, self)
            return found


# One writer per (transaction attempt, history table): sequence numbers must not repeat
# within a transaction even when the application asks for the writer several times.
_WRITERS: weakref.WeakKeyDictionary[Any, dict[str, HistoryWriter]] = weakref.WeakKeyDictionary()
_WRITERS_LOCK = threading.Lock()


class HistoryWriter:
    """Writes data mutations and their history rows inside one read/write transaction.

    Use it for every write to the table in the transaction (mixing in DML or bare
    mutations on the same keys would make it misjudge INSERT against UPDATE). Reads it
    makes to tell an insert from an update take the transaction's usual locks.

    The methods mirror the transaction's mutation methods: ``columns`` must include every
    key column; ``values`` is a list of rows.
    """

    def __init__(self, transaction: Any, history: HistoryTable) -> None:
        self.transaction = transaction
        self.history = history
        self._sequence = 0
        # Key -> does the row exist after this transaction's writes so far? (Reads in a
        # transaction do not see its own buffered mutations, so we keep track ourselves.)
        self._exists: dict[tuple[Any, ...], bool] = {}
        self._canonical = {c.upper(): c for c in history.column_types} or None

    def insert(self, columns: Sequence[str], values: Sequence[Sequence[Any]]) -> None:
        self._write("insert", columns, values, lambda existed: INSERT)

    def update(self, columns: Sequence[str], values: Sequence[Sequence[Any]]) -> None:
        self._write("update", columns, values, lambda existed: UPDATE)

    def insert_or_update(self, columns: Sequence[str], values: Sequence[Sequence[Any]]) -> None:
        self._write("insert_or_update", columns, values, lambda existed: UPDATE if existed else INSERT, check=True)

    def replace(self, columns: Sequence[str], values: Sequence[Sequence[Any]]) -> None:
        self._write("replace", columns, values, lambda existed: UPDATE if existed else INSERT, check=True,
                    full=True)

    def execute_update(self, dml: str, *, keys: Iterable[Sequence[Any]], params: Mapping[str, Any] | None = None,
                       param_types: Mapping[str, Any] | None = None,
                       commit_timestamp_columns: Sequence[str] = ()) -> int:
        """Run a DML statement and record the history of the rows ``keys`` it may change; returns its row count.

        DML cannot report the keys it touched on every Spanner (``THEN RETURN`` is missing from
        the emulator), so the caller names them (read them first, e.g. with a SELECT in this
        transaction, for an UPDATE or DELETE by condition). The writer reads whether they exist
        before the statement and their whole rows after it (reads in a transaction see its DML),
        and appends INSERT, UPDATE (the full row) or DELETE for each key whose existence or row
        the statement may have changed. ``commit_timestamp_columns``: the columns the statement
        sets to ``PENDING_COMMIT_TIMESTAMP()`` (Spanner cannot read them back before the commit;
        they are recorded as the commit timestamp). In a PostgreSQL database ``dml`` is PostgreSQL
        text with ``$1``, ``$2``, ... parameters, given in ``params`` as ``p1``, ``p2``, ...

        Raises:
            ConfigurationError: the statement changed more rows than ``keys`` names (the
                transaction is then rolled back by the client, as for any error in it).
        """
        wanted = list(dict.fromkeys(tuple(k) for k in keys))
        before = self._existing(wanted) if wanted else {}
        count = self.transaction.execute_update(dml, params=dict(params) if params else None,
                                                param_types=dict(param_types) if param_types else None)
        if count > len(wanted):
            raise ConfigurationError(f"The statement changed {count} row(s) of {self.history.table} but only "
                                     f"{len(wanted)} key(s) were given to record its history: {dml}")
        pending = {c.upper() for c in commit_timestamp_columns}
        columns = [c for c in self.history.column_types if c.upper() not in pending]
        after = {}
        if wanted:
            for row in self.transaction.read(self.history.table, columns, KeySet(keys=[list(k) for k in wanted])):
                values = dict(zip(columns, row, strict=True))
                values.update((c, COMMIT_TIMESTAMP) for c in self.history.column_types if c.upper() in pending)
                after[self.history.key_of(values)] = values
        for key in wanted:
            row = after.get(key)
            if row is not None:
                self._append(key, UPDATE if before[key] else INSERT, row)
            elif before[key]:
                self._append(key, DELETE, None)
            self._exists[key] = row is not None
        return int(count)

    def delete(self, keys: Iterable[Sequence[Any]]) -> None:
        """Delete rows by primary key; a DELETE is recorded only for rows that existed."""
        wanted = [tuple(k) for k in keys]
        if not wanted:
            return
        existing = self._existing(wanted)
        self.transaction.delete(self.history.table, KeySet(keys=[list(k) for k in wanted]))
        for key in wanted:
            if existing[key]:
                self._append(key, DELETE, None)
            self._exists[key] = False

    # --- internals ------------------------------------------------------------------------------------

    def _columns(self, columns: Sequence[str]) -> list[str]:
        if self._canonical is None:
            return list(columns)
        names = []
        for c in columns:
            name = self._canonical.get(c.upper())
            if name is None:
                raise ConfigurationError(f"Table {self.history.table} has no column {c}")
            names.append(name)
        missing = [k for k in self.history.key_columns if k not in names]
        if missing:
            raise ConfigurationError(f"Writes to {self.history.table} through its history writer must give the key "
                                     f"column(s) {', '.join(missing)}")
        return names

    def _write(self, method: str, columns: Sequence[str], values: Sequence[Sequence[Any]], operation: Any,
               check: bool = False, full: bool = False) -> None:
        names = self._columns(columns)
        rows = [dict(zip(names, row, strict=True)) for row in values]
        if full:  # the columns a replace leaves out become NULL: recorded so, the row is whole
            rows = [{**{c: None for c in self.history.column_types}, **row} for row in rows]
        if not rows:
            return
        keys = [self.history.key_of(r) for r in rows]
        existing = self._existing(keys) if check else {}
        getattr(self.transaction, method)(self.history.table, names, [list(v) for v in values])
        for key, row in zip(keys, rows, strict=True):
            self._append(key, operation(existing.get(key, True) if check else None), row)
            self._exists[key] = True
            existing[key] = True  # a later row with the same key in this call updates it

    def _existing(self, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], bool]:
        unknown = list(dict.fromkeys(k for k in keys if k not in self._exists))
        if unknown:
            found = {tuple(r) for r in self.transaction.read(self.history.table, self.history.key_columns,
                                                              KeySet(keys=[list(k) for k in unknown]))}
            for key in unknown:
                self._exists[key] = key in found
        return {k: self._exists[k] for k in keys}

    def _append(self, key: tuple[Any, ...], operation: str, row: Mapping[str, Any] | None) -> None:
        new_values = None
        if row is not None:
            new_values = JsonObject(encode_values({c: v for c, v in row.items() if c not in self.history.key_columns}))
        self._sequence += 1
        self.transaction.insert(self.history.history_table, [*self.history.key_columns, *HISTORY_COLUMNS],
                                [[*key, COMMIT_TIMESTAMP, self._sequence, operation, new_values]])


class HistoryWatcher(TranslatingWatcher):
    """Watches a history table and delivers the data table's changes: every version and delete.

    Args:
        database: the database.
        table: the data table.
        history_table: its history table (default ``<table>History``).
        checkpoints: the checkpoint store (positions are stored under the history table's name).
        request_settings: the priority of its polls, the request tag of every statement and the
            transaction tag of the default store's writes (None: the default tags, no priority).
        max_batches_in_flight: polls of the history table handed to sinks that acknowledge later before the
            next poll waits for the oldest (:mod:`watcher.capture.acks`).
        **options: passed to the TableWatcher on the history table (poll_interval, limit,
            shard_provider, table_hint, initial_timestamp, scheduler, executor,
            callback_error_policy, retry_policy, clock, name).

    Each :class:`~watcher.model.Change` has ``table`` = the data table, ``mod_type`` INSERT,
    UPDATE or DELETE, ``row`` = the key columns plus the written columns (key columns only
    for a DELETE), typed as the data table's columns, ``version_seq`` = the history row's
    Seq (several versions of a key at one commit timestamp stay distinct), and
    ``value_capture_type`` = NEW_VALUES for an UPDATE that wrote only some of the data
    table's columns (NEW_ROW otherwise).
    """

    def __init__(self, database: Database, table: str, *, history_table: str | None = None,
                 checkpoints: CommitTimestampRepository | None = None,
                 request_settings: RequestSettings | None = None,
                 max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT, **options: Any) -> None:
        super().__init__()
        if "commit_timestamp_column" in options:
            raise ConfigurationError(f"a HistoryWatcher polls the {COMMIT_TIMESTAMP_COLUMN} column of the history table")
        self.database = database
        self.table = validate_identifier(table, "table")
        self.history_table = validate_identifier(history_table or history_table_name(table), "history table")
        self.request_settings = settings_or_default(request_settings)
        self.inner = TableWatcher(database, self.history_table, commit_timestamp_column=COMMIT_TIMESTAMP_COLUMN,
                                  checkpoints=checkpoints, request_settings=self.request_settings,
                                  max_batches_in_flight=max_batches_in_flight, **options)
        self._types: Mapping[str, str] = {}
        self._untyped: set[str] = set()
        self._key_columns: tuple[str, ...] = ()
        self._info: TableInfo | None = None
        self._data_gone = False

    def table_infos(self) -> list[TableInfo]:
        """The data table (key columns and column types as found at the last start; its
        changes carry the history rows' commit timestamps, so no commit-timestamp column)."""
        return [self._info] if self._info is not None else []

    def _prepare(self) -> None:
        history_columns, history_key, _ = _describe(self.database, self.history_table, self.request_settings)
        self._key_columns = history_key[:-2]
        if history_key[-2:] != (COMMIT_TIMESTAMP_COLUMN, SEQUENCE_COLUMN) or not self._key_columns:
            raise ConfigurationError(f"{self.history_table} is not a history table: its primary key must be the key "
                                     f"columns followed by {COMMIT_TIMESTAMP_COLUMN}, {SEQUENCE_COLUMN}")
        self._data_gone = False
        try:
            self._types = HistoryTable.discover(self.database, self.table,
                                                request_settings=self.request_settings).column_types
        except TableNotFoundError:
            self._data_gone = True
            # The data table may be gone while its history remains: values keep their JSON form.
            self._types = {c: t for c, (t, _) in history_columns.items() if c in self._key_columns}
        self._info = TableInfo(TableId(self.table), "", self._key_columns, dict(self._types))

    def _translate(self, change: Change) -> Iterable[Change]:
        row = change.row
        keys = tuple(row[k] for k in self._key_columns)
        values: dict[str, Any] = dict(zip(self._key_columns, keys, strict=True))
        new_values = row.get(NEW_VALUES_COLUMN)
        if new_values is not None and not _json_null(new_values):
            new_values = dict(new_values)
            unknown = [c for c in new_values if c not in self._types]
            if unknown and not set(unknown) <= self._untyped:
                self._refresh_types()
                self._untyped.update(c for c in unknown if c not in self._types)  # asked once, not per change
            values.update(decode_values(new_values, self._types, change.commit_timestamp))
        # A column still without a type (its data table is gone) stays untyped: staging names it, never guesses.
        types = {c: self._types[c] for c in values if c in self._types}
        operation = as_mod_type(row[OPERATION_COLUMN], f"history table {self.history_table}, column {OPERATION_COLUMN}")
        # Without the data table (dropped) its columns are unknown: an update is taken as partial,
        # so the changelog keeps the columns it does not name rather than losing them.
        partial = operation == UPDATE and (self._data_gone or not set(self._types) <= set(values))
        return [Change(self.table, keys, values, change.commit_timestamp, change.shard, change.read_timestamp,
                       mod_type=operation, column_types=types, version_seq=row[SEQUENCE_COLUMN],
                       value_capture_type=NEW_VALUES_CAPTURE if partial else NEW_ROW_CAPTURE)]

    def _refresh_types(self) -> None:
        """A column added to the data table while watching: its type as the data table has it now."""
        try:
            found = HistoryTable.discover(self.database, self.table, request_settings=self.request_settings)
            self._types = {**self._types, **found.column_types}
        except TableNotFoundError:
            pass


def _json_null(value: Any) -> bool:
    """Whether a JSON value the client returned is JSON's null (its JsonObject serializes to None then).

    >>> from google.cloud.spanner_v1.data_types import JsonObject
    >>> _json_null(JsonObject(None)), _json_null(JsonObject({"a": 1})), _json_null({})
    (True, False, False)
    """
    serialize = getattr(value, "serialize", None)
    return callable(serialize) and serialize() is None
