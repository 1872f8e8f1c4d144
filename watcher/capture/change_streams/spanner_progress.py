"""Partition progress in a Spanner table: ``WATCHER_CHANGE_STREAM_PARTITIONS``.

The table is one of the library's own migrations (``ddl/watcher/V004__watcher_change_stream_partitions.sql``,
``ddl/watcher-postgresql/V004__...`` in a PostgreSQL database; applied by ``spanner-watcher migrate``). When it is missing, :meth:`SpannerProgressStore.initialize`
runs that file's statements itself (they are ``IF NOT EXISTS``, so a later ``migrate`` run
applies them again harmlessly). Each save is one write of ``insert_or_update`` mutations: atomic;
a prune is one write of the deletes and those mutations.

Another table name than :data:`TABLE` (``table=``) gets the same columns, created from the
same statements with the name replaced (``spanner-watcher watch`` exposes it as ``progress_table``).

Example::

    store = SpannerProgressStore(database)          # may be another database than the watched one
    watcher = ChangeStreamWatcher(database, "SingersStream", progress=store, watcher_id="orders-sync")
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from google.api_core import exceptions as gexc
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from ...dialects import GOOGLE_SQL, POSTGRESQL, Dialect
from ...dialects.checkpoints import InDatabaseDialect, create_table_sql
from ...dialects.schema import columns_query
from ...errors import CheckpointError
from ...model import TableId
from ...request_settings import RequestSettings, settings_or_default
from ...schema_tools.migration_files import default_migrations
from ...sqlnames import quote_identifier, validate_identifier
from .progress import PartitionProgress, ProgressStore

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

TABLE = "WATCHER_CHANGE_STREAM_PARTITIONS"
#: The migration file that creates :data:`TABLE`.
MIGRATION_VERSION = 4
COLUMNS = ("STREAM_NAME", "WATCHER_ID", "PARTITION_TOKEN", "PARENT_TOKENS", "START_TIMESTAMP", "WATERMARK",
           "DELIVERED_AT_WATERMARK", "STATE", "UPDATED_AT")
#: The columns as :data:`MIGRATION_VERSION` creates them (name, GoogleSQL type, NOT NULL), for a PostgreSQL
#: database, which gets them from :func:`watcher.dialects.checkpoints.create_table_sql` in lower case.
_COLUMN_SPECS = (("STREAM_NAME", "STRING(MAX)", True), ("WATCHER_ID", "STRING(MAX)", True),
                 ("PARTITION_TOKEN", "STRING(MAX)", True), ("PARENT_TOKENS", "ARRAY<STRING(MAX)>", False),
                 ("START_TIMESTAMP", "TIMESTAMP", True), ("WATERMARK", "TIMESTAMP", True),
                 ("DELIVERED_AT_WATERMARK", "ARRAY<STRING(MAX)>", False), ("STATE", "STRING(16)", True),
                 ("UPDATED_AT", "TIMESTAMP", True))
_KEY = ("STREAM_NAME", "WATCHER_ID", "PARTITION_TOKEN")
_LOADED = ("PARTITION_TOKEN", "PARENT_TOKENS", "START_TIMESTAMP", "WATERMARK", "DELIVERED_AT_WATERMARK", "STATE")


def table_statements(table: str = TABLE) -> list[str]:
    """The statements of the migration that creates the progress table (named ``table``).

    >>> table_statements("MY_PROGRESS")[0].split("(")[0].split()[-1]
    '`MY_PROGRESS`'
    """
    for migration in default_migrations().files:
        if migration.version == MIGRATION_VERSION:
            statements = [st.sql for st in migration.statements]
            if table == TABLE:
                return statements
            name = quote_identifier(table, "progress table")  # letters, digits and _: safe as a replacement
            return [re.sub(rf"\b{TABLE}\b", name, sql) for sql in statements]
    raise CheckpointError(f"the packaged migrations lack V{MIGRATION_VERSION:03d}, which creates {TABLE}")


def postgresql_statements(table: str = TABLE) -> list[str]:
    """The progress table in a PostgreSQL database: the migration's columns, lower case.

    >>> postgresql_statements()[0].splitlines()[0]
    'CREATE TABLE "watcher_change_stream_partitions" ('
    """
    return [create_table_sql(POSTGRESQL, table, _COLUMN_SPECS, _KEY, ("UPDATED_AT",))]


#: The statements that create the progress table, by dialect.
_CREATE = {GOOGLE_SQL.name: table_statements, POSTGRESQL.name: postgresql_statements}


class SpannerProgressStore(InDatabaseDialect, ProgressStore):
    """Progress rows in :data:`TABLE` of ``database``.

    Args:
        database: where the table lives (the watched database, or another one).
        create_if_missing: create the table at :meth:`initialize` when it does not exist
            (off: a missing table is a CheckpointError telling to run ``spanner-watcher migrate``).
        table: the table's name (another than :data:`TABLE` is created with the same columns).
        request_settings: the request tag of its reads and the transaction tag of its writes
            (default: the default tags); never a priority.
    """

    def __init__(self, database: Database, *, create_if_missing: bool = True, table: str = TABLE,
                 request_settings: RequestSettings | None = None) -> None:
        self.database = database
        self.request_settings = settings_or_default(request_settings)
        self.create_if_missing = create_if_missing
        self.table = validate_identifier(table, "progress table")
        self._initialized = False
        self._dialect: Dialect | None = None

    def initialize(self) -> None:
        if self._initialized:
            return
        if not self._exists():
            if not self.create_if_missing:
                raise CheckpointError(f"Progress table {self.table} does not exist in {self.database.name} and "
                                      "create_if_missing is off; create it with `spanner-watcher migrate`.")
            try:
                self.database.update_ddl(_CREATE[self.dialect.name](self.table)).result(300)
            except gexc.GoogleAPICallError as exc:
                if not self._exists():  # another watcher creating it at the same moment is fine
                    raise CheckpointError(f"Could not create progress table {self.table}: {exc.message}") from exc
        self._initialized = True

    def _exists(self) -> bool:
        statement = columns_query(self.dialect, TableId(self._name(self.table)))
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                         request_options=self.request_settings.request_options(with_priority=False)))
        return bool(rows)

    def load(self, stream: str, watcher_id: str) -> list[PartitionProgress]:
        d = self.dialect
        sql = (f"SELECT {', '.join(d.quote(self._name(c)) for c in _LOADED)} FROM {d.quote(self._name(self.table), 'progress table')} "
               f"WHERE {d.quote(self._name('STREAM_NAME'))} = @stream AND {d.quote(self._name('WATCHER_ID'))} = @watcher")
        statement = d.bind(sql, {"stream": stream, "watcher": watcher_id},
                           {"stream": param_types.STRING, "watcher": param_types.STRING})
        with self.database.snapshot() as snap:
            rows = snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                    request_options=self.request_settings.request_options(with_priority=False))
            return [PartitionProgress(token, tuple(parents or ()), start, watermark, state, tuple(delivered or ()))
                    for token, parents, start, watermark, delivered, state in rows]

    def save(self, stream: str, watcher_id: str, rows: Sequence[PartitionProgress]) -> None:
        self.prune(stream, watcher_id, (), rows)

    def prune(self, stream: str, watcher_id: str, tokens: Sequence[str], rows: Sequence[PartitionProgress]) -> None:
        if not rows and not tokens:
            return
        values = [(stream, watcher_id, p.token, list(p.parents), p.start, p.watermark, list(p.delivered_at_watermark),
                   p.state, spanner.COMMIT_TIMESTAMP) for p in rows]
        # One commit, deletes and saves together, under the checkpoint writes' transaction tag.
        with self.database.batch(request_options=self.request_settings.commit_options()) as batch:
            if tokens:
                batch.delete(self._name(self.table), spanner.KeySet(keys=[[stream, watcher_id, t] for t in tokens]))
            if values:
                batch.insert_or_update(self._name(self.table), tuple(self._name(c) for c in COLUMNS), values)

    def own_tables(self) -> tuple[str, ...]:
        return (self.table,)
