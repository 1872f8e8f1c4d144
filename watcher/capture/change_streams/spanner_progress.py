"""Partition progress in a Spanner table: ``WATCHER_CHANGE_STREAM_PARTITIONS``.

The table is one of the library's own migrations (``ddl/watcher/V004__watcher_change_stream_partitions.sql``,
applied by ``spanner-watcher migrate``). When it is missing, :meth:`SpannerProgressStore.initialize`
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

from ...errors import CheckpointError
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
_EXISTS_SQL = ("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES "
               "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' AND TABLE_NAME = @table")
_LOAD_SQL = ("SELECT PARTITION_TOKEN, PARENT_TOKENS, START_TIMESTAMP, WATERMARK, DELIVERED_AT_WATERMARK, STATE "
             "FROM {table} WHERE STREAM_NAME = @stream AND WATCHER_ID = @watcher")


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


class SpannerProgressStore(ProgressStore):
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

    def initialize(self) -> None:
        if self._initialized:
            return
        if not self._exists():
            if not self.create_if_missing:
                raise CheckpointError(f"Progress table {self.table} does not exist in {self.database.name} and "
                                      "create_if_missing is off; create it with `spanner-watcher migrate`.")
            try:
                self.database.update_ddl(table_statements(self.table)).result(300)
            except gexc.GoogleAPICallError as exc:
                if not self._exists():  # another watcher creating it at the same moment is fine
                    raise CheckpointError(f"Could not create progress table {self.table}: {exc.message}") from exc
        self._initialized = True

    def _exists(self) -> bool:
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(_EXISTS_SQL, params={"table": self.table}, param_types={"table": param_types.STRING},
                                         request_options=self.request_settings.request_options(with_priority=False)))
        return bool(rows[0][0])

    def load(self, stream: str, watcher_id: str) -> list[PartitionProgress]:
        with self.database.snapshot() as snap:
            rows = snap.execute_sql(_LOAD_SQL.format(table=quote_identifier(self.table, "progress table")), params={"stream": stream, "watcher": watcher_id},
                                    param_types={"stream": param_types.STRING, "watcher": param_types.STRING},
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
                batch.delete(self.table, spanner.KeySet(keys=[[stream, watcher_id, t] for t in tokens]))
            if values:
                batch.insert_or_update(self.table, COLUMNS, values)

    def own_tables(self) -> tuple[str, ...]:
        return (self.table,)
