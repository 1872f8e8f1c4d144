"""Partition progress in a Spanner table: ``WATCHER_CHANGE_STREAM_PARTITIONS``.

The table is one of the library's own migrations (``ddl/watcher/V004__watcher_change_stream_partitions.sql``,
applied by ``spanner-watcher migrate``). When it is missing, :meth:`SpannerProgressStore.initialize`
runs that file's statements itself (they are ``IF NOT EXISTS``, so a later ``migrate`` run
applies them again harmlessly). Each save is one write of ``insert_or_update`` mutations: atomic.

Example::

    store = SpannerProgressStore(database)          # may be another database than the watched one
    watcher = ChangeStreamWatcher(database, "SingersStream", progress=store, watcher_id="orders-sync")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from ...errors import CheckpointError
from ...schema_tools.migration_files import default_migrations
from .progress import PartitionProgress, ProgressStore

TABLE = "WATCHER_CHANGE_STREAM_PARTITIONS"
#: The migration file that creates :data:`TABLE`.
MIGRATION_VERSION = 4
COLUMNS = ("STREAM_NAME", "WATCHER_ID", "PARTITION_TOKEN", "PARENT_TOKENS", "START_TIMESTAMP", "WATERMARK",
           "DELIVERED_AT_WATERMARK", "STATE", "UPDATED_AT")
_EXISTS_SQL = ("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES "
               "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' AND TABLE_NAME = @table")
_LOAD_SQL = (f"SELECT PARTITION_TOKEN, PARENT_TOKENS, START_TIMESTAMP, WATERMARK, DELIVERED_AT_WATERMARK, STATE "
             f"FROM {TABLE} WHERE STREAM_NAME = @stream AND WATCHER_ID = @watcher")


def table_statements() -> list[str]:
    """The statements of the migration that creates the progress table."""
    for migration in default_migrations().files:
        if migration.version == MIGRATION_VERSION:
            return [st.sql for st in migration.statements]
    raise CheckpointError(f"the packaged migrations lack V{MIGRATION_VERSION:03d}, which creates {TABLE}")


class SpannerProgressStore(ProgressStore):
    """Progress rows in :data:`TABLE` of ``database``.

    Args:
        database: where the table lives (the watched database, or another one).
        create_if_missing: create the table at :meth:`initialize` when it does not exist
            (off: a missing table is a CheckpointError telling to run ``spanner-watcher migrate``).
    """

    def __init__(self, database: Any, *, create_if_missing: bool = True) -> None:
        self.database = database
        self.create_if_missing = create_if_missing
        self._initialized = False

    def initialize(self) -> None:
        if self._initialized:
            return
        if not self._exists():
            if not self.create_if_missing:
                raise CheckpointError(f"Progress table {TABLE} does not exist in {self.database.name} and "
                                      "create_if_missing is off; create it with `spanner-watcher migrate`.")
            try:
                self.database.update_ddl(table_statements()).result(300)
            except gexc.GoogleAPICallError as exc:
                if not self._exists():  # another watcher creating it at the same moment is fine
                    raise CheckpointError(f"Could not create progress table {TABLE}: {exc.message}") from exc
        self._initialized = True

    def _exists(self) -> bool:
        with self.database.snapshot() as snap:
            rows = list(snap.execute_sql(_EXISTS_SQL, params={"table": TABLE}, param_types={"table": param_types.STRING}))
        return bool(rows[0][0])

    def load(self, stream: str, watcher_id: str) -> list[PartitionProgress]:
        with self.database.snapshot() as snap:
            rows = snap.execute_sql(_LOAD_SQL, params={"stream": stream, "watcher": watcher_id},
                                    param_types={"stream": param_types.STRING, "watcher": param_types.STRING})
            return [PartitionProgress(token, tuple(parents or ()), start, watermark, state, tuple(delivered or ()))
                    for token, parents, start, watermark, delivered, state in rows]

    def save(self, stream: str, watcher_id: str, rows: Sequence[PartitionProgress]) -> None:
        if not rows:
            return
        values = [(stream, watcher_id, p.token, list(p.parents), p.start, p.watermark, list(p.delivered_at_watermark),
                   p.state, spanner.COMMIT_TIMESTAMP) for p in rows]
        with self.database.batch() as batch:
            batch.insert_or_update(TABLE, COLUMNS, values)
