"""Checkpoints in a Spanner table, compatible with the Java library's LAST_SEEN_COMMIT_TIMESTAMPS.

The table is created when missing; an existing one (perhaps written by the Java library)
is verified column by column and key by key, with errors that say what is wrong. We add
one nullable column, ``LAST_SEEN_POSITION``, holding the exact position inside a group of
rows sharing a commit timestamp; the Java library ignores it, and we only trust it when it
belongs to the stored LAST_SEEN_COMMIT_TIMESTAMP (so a Java write in between cannot
mislead us).

In a PostgreSQL database the table and its columns have the same names in lower case
(``last_seen_commit_timestamps.database_name``), as PostgreSQL folds unquoted names; its statements
are :mod:`watcher.dialects.checkpoints`' and the schema queries :mod:`watcher.dialects.schema`'s, in
the dialect of the database holding it.

Example::

    repo = SpannerCommitTimestampRepository(database)      # LAST_SEEN_COMMIT_TIMESTAMPS
    repo.initialize()
    repo.set(TableId("Singers"), Checkpoint(ts), shard=[-1, 0, 1])
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as gexc
from google.cloud.spanner_v1 import KeySet

from ..dialects import Dialect, Statement, dialect_of
from ..dialects.checkpoints import InDatabaseDialect, add_column_sql, oldest_sql, text_rows_sql
from ..dialects.schema import columns_query, key_query
from ..dialects.types import column_type
from ..errors import CheckpointError
from ..model import Checkpoint, TableId
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import validate_identifier
from .base import CommitTimestampRepository, shard_key
from .java_table import (
    DEFAULT_TABLE,
    JAVA_COLUMNS,
    KEY_COLUMNS,
    POSITION_COLUMN,
    TEXT_COLUMN,
    create_table_ddl,
    decode_array_text,
    is_legacy_array_text,
    legacy_shard_columns,
    same_array,
    shard_columns,
)

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

log = logging.getLogger(__name__)

_READ_COLUMNS = ("LAST_SEEN_COMMIT_TIMESTAMP", POSITION_COLUMN)
_TEXT_INDEX = KEY_COLUMNS.index(TEXT_COLUMN) - 4  # among the seven SHARD_ID_* columns


class SpannerCommitTimestampRepository(InDatabaseDialect, CommitTimestampRepository):
    """Checkpoints in ``table`` of ``database``.

    Args:
        database: the database holding the checkpoint table (may differ from the watched one).
        table: the table name (default LAST_SEEN_COMMIT_TIMESTAMPS).
        create_if_missing: create the table at :meth:`initialize` when it does not exist.
        watched_database_name: the DATABASE_NAME written in each row (default: ``database.name``).
        request_settings: the request tag of its reads and the transaction tag of its writes
            (default: :data:`~watcher.request_settings.DEFAULT_SETTINGS`); never a priority.
    """

    def __init__(self, database: Database, *, table: str = DEFAULT_TABLE, create_if_missing: bool = True,
                 watched_database_name: str | None = None, request_settings: RequestSettings | None = None) -> None:
        self.database = database
        self.request_settings = settings_or_default(request_settings)
        self.table = validate_identifier(table, "checkpoint table")
        self.create_if_missing = create_if_missing
        self.watched_database_name = watched_database_name or database.name
        self._initialized = False
        self._dialect: Dialect | None = None
        # (table, shard) -> (the SHARD_ID_* values its row is stored under, whether the next set rewrites it in the Java form)
        self._stored_keys: dict[tuple[TableId, Any], tuple[list[Any], bool]] = {}

    # --- schema -------------------------------------------------------------------------------------

    def initialize(self) -> None:
        if self._initialized:
            return
        self._dialect = dialect_of(self.database)
        columns = self._columns()
        if not columns:
            if not self.create_if_missing:
                raise CheckpointError(f"Checkpoint table {self.table} does not exist in {self.database.name} "
                                      "and create_if_missing is off; create it with `spanner-watcher migrate`.")
            self._create()
            columns = self._columns()
        self._verify(columns)
        if POSITION_COLUMN.upper() not in columns:
            log.info("adding column %s to checkpoint table %s", POSITION_COLUMN, self.table)
            self._update_ddl(add_column_sql(self.dialect, self.table, POSITION_COLUMN, "STRING(MAX)"))
        self._initialized = True

    def _names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self._name(n) for n in names)

    def _rows(self, statement: Statement) -> list[list[Any]]:
        with self.database.snapshot() as snap:
            return [list(r) for r in snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                                      request_options=self._read_options())]

    def _columns(self) -> dict[str, str]:
        rows = self._rows(columns_query(self.dialect, TableId(self._name(self.table))))
        return {name.upper(): column_type(self.dialect, spanner_type) for name, spanner_type in rows}

    def _create(self) -> None:
        try:
            self._update_ddl(create_table_ddl(self.table, self.dialect))
        except (gexc.AlreadyExists, gexc.FailedPrecondition) as exc:
            # Another watcher created it at the same moment: verify what is there instead.
            if "uplicate" not in str(exc) and "exists" not in str(exc):
                raise CheckpointError(f"Could not create checkpoint table {self.table}: {exc.message}") from exc

    def _update_ddl(self, statement: str) -> None:
        try:
            self.database.update_ddl([statement]).result(120)
        except gexc.GoogleAPICallError:
            raise
        except Exception as exc:  # the operation future wraps errors of its own
            raise CheckpointError(f"Schema change on checkpoint table {self.table} failed: {exc}") from exc

    def _verify(self, columns: dict[str, str]) -> None:
        for name, expected in JAVA_COLUMNS:
            actual = columns.get(name)
            if actual is None:
                raise CheckpointError(f"Checkpoint table {self.table} has no column {name} ({expected}); "
                                      "it is not a LAST_SEEN_COMMIT_TIMESTAMPS table.")
            if not _type_matches(expected, actual):
                raise CheckpointError(f"Column {name} of checkpoint table {self.table} is {actual}, expected {expected}.")
        position = columns.get(POSITION_COLUMN.upper())
        if position is not None and not position.startswith("STRING"):
            raise CheckpointError(f"Column {POSITION_COLUMN} of checkpoint table {self.table} is {position}, expected STRING(MAX).")
        key = [r[0].upper() for r in self._rows(key_query(self.dialect, TableId(self._name(self.table))))]
        if key != list(KEY_COLUMNS):
            raise CheckpointError(f"Checkpoint table {self.table} has primary key ({', '.join(key)}), "
                                  f"expected ({', '.join(KEY_COLUMNS)}).")

    # --- rows ---------------------------------------------------------------------------------------------

    def _key(self, table: TableId, shard: Any, columns: list[Any] | None = None) -> list[Any]:
        shard_values = shard_columns(shard) if columns is None else columns
        return [self.watched_database_name, table.catalog, table.schema, table.table, *shard_values]

    def _read_row(self, key: list[Any]) -> list[Any]:
        with self.database.snapshot() as snap:
            return list(snap.read(self._name(self.table), self._names(_READ_COLUMNS), KeySet(keys=[key]),
                                  request_options=self._read_options()))

    def get(self, table: TableId, shard: Any = None) -> Checkpoint | None:
        self.initialize()
        rows = self._read_row(self._key(table, shard))
        legacy = None if rows else legacy_shard_columns(shard)
        if legacy is not None:
            rows = self._read_row(self._key(table, shard, legacy))
            if rows:
                self._stored_keys[(table, shard_key(shard))] = (legacy, True)
                log.info("checkpoint of %s shard %r found as an earlier version stored it; the next checkpoint rewrites it",
                         table, shard)
        if not rows and isinstance(shard, (list, tuple)) and shard:
            rows = self._array_row_in_another_text(table, shard)
        if not rows:
            return None
        ts, position = rows[0]
        if position:
            try:
                cp = Checkpoint.from_text(position)
            except (ValueError, KeyError) as exc:
                raise CheckpointError(f"Unreadable {POSITION_COLUMN} for table {table} in {self.table}: {exc}") from exc
            if cp.commit_timestamp == ts:
                return cp
        return Checkpoint(ts)

    def _array_row_in_another_text(self, table: TableId, shard: Any) -> list[Any]:
        """The row of an array shard stored in another Java text of the same values (an older Java
        runtime's longer double digits), kept in that text so that runtime finds its row again. A
        stored text in no known form stops the watcher rather than letting it start afresh."""
        others = [c for c in KEY_COLUMNS[4:] if c != TEXT_COLUMN]
        stored = self._rows(text_rows_sql(self.dialect, self.table, TEXT_COLUMN, others,
                                          [TEXT_COLUMN, "LAST_SEEN_COMMIT_TIMESTAMP", POSITION_COLUMN],
                                          self.watched_database_name, table.catalog, table.schema, table.table))
        for text, ts, position in stored:
            values = decode_array_text(text, shard)
            if values is None:
                if is_legacy_array_text(text, shard):
                    continue  # another shard's row as an earlier version stored it
                raise CheckpointError(
                    f"Checkpoint table {self.table} has a row for table {table} whose {TEXT_COLUMN} is {text!r}: "
                    f"not an array of {type(shard[0]).__name__} as the Java library or spanner-watcher store one, "
                    f"so the checkpoint of shard {shard!r} cannot be told apart from it. Correct or delete that row.")
            if same_array(values, shard):
                columns = shard_columns(shard)
                columns[_TEXT_INDEX] = text
                self._stored_keys[(table, shard_key(shard))] = (columns, False)
                return [[ts, position]]
        return []

    def set(self, table: TableId, checkpoint: Checkpoint, shard: Any = None) -> None:
        self.initialize()
        position = checkpoint.to_text() if checkpoint.key is not None else None
        stored, rewrite = self._stored_keys.get((table, shard_key(shard)), (None, False))
        with self.database.batch(request_options=self.request_settings.commit_options()) as batch:
            batch.insert_or_update(self._name(self.table), self._names((*KEY_COLUMNS, *_READ_COLUMNS)),
                                   [[*self._key(table, shard, None if rewrite else stored), checkpoint.commit_timestamp, position]])
            if rewrite:
                batch.delete(self._name(self.table), KeySet(keys=[self._key(table, shard, stored)]))
        if rewrite:
            self._stored_keys.pop((table, shard_key(shard)), None)

    def oldest(self, table: TableId) -> dt.datetime | None:
        self.initialize()
        rows = self._rows(oldest_sql(self.dialect, self.table, self.watched_database_name, table.catalog, table.schema,
                                     table.table))
        return rows[0][0] if rows else None

    def _read_options(self) -> dict[str, Any]:
        """Checkpoint reads carry the request tag, never the priority (they are not polls)."""
        return self.request_settings.request_options(with_priority=False)


def _type_matches(expected: str, actual: str) -> bool:
    if expected.startswith("STRING"):
        return actual.startswith("STRING")
    if expected.startswith("BYTES"):
        return actual.startswith("BYTES")
    return actual == expected
