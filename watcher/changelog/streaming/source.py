"""The ``spanner_watcher`` Structured Streaming source (Spark's Python Data Source API).

Planning runs on the driver: :meth:`SpannerStreamReader.latestOffset` takes one strong read
(timestamp R) and, in it, asks whether rows came after the poll loops' (table, shard value)
positions, with the watcher's poll queries narrowed to the commit timestamp and key columns:
without ``limit`` one query per table over all its shards (its loops share a position), with
``limit`` one per loop. When none did, the offset stays (Spark plans no micro-batch). Otherwise
every loop moves to "all of R" (Checkpoint(R)), or, with the ``limit`` option, a loop with more
than ``limit`` new rows moves to its ``limit``-th row's exact position (timestamp and key). Reading runs on the executors:
:meth:`SpannerStreamReader.partitions` groups the loops that moved into Spark partitions
(``shards_per_partition`` loops each) and :func:`.partition_reader.read` reads them at R.

Invariant 4 of the design (no commit after a strong read at R gets a timestamp <= R) is what
makes "all of R" final: a later micro-batch never finds a row at or before a loop's position.

The world may change under a running query. A column added to a watched table appears in the
rows read after it (the poll queries select ``*``; each record carries the types it was read
with, so the changelog and the current state show the column from then on, as the batch job
does); a dropped column leaves them. A dropped table stops the query with one error naming it
and the position up to which earlier micro-batches hold its changes (:mod:`.dropped`: polling
cannot read a dropped table's last changes, and going on without them would lose them unsaid);
started again from its checkpoint without the table, the query goes on with the others.

Rows come out as staging records (the schema of
:func:`watcher.changelog.input.staging_reader.read_schema`): the changelog job's input.

Example:
    >>> SpannerWatcherSource.name()
    'spanner_watcher'
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from google.api_core import exceptions as gexc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader

from ...capture.table_info import TableInfo, discover, is_table_not_found, watchable_tables
from ...codec import timestamp_text
from ...errors import ConfigurationError
from ...model import Checkpoint
from ..input import staging_reader
from . import partition_reader
from .change_stream_source import ChangeStreamReader
from .dropped import table_dropped
from .offsets import EPOCH, Loop, Offset
from .options import SOURCE_NAME, StreamOptions
from .partition_reader import LoopRead, StreamPartition
from .snapshots import StrongSnapshot


class SpannerWatcherSource(DataSource):
    """``spark.readStream.format("spanner_watcher")``: see :mod:`.options` for the options."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> Any:
        return staging_reader.read_schema_ddl()

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        options = StreamOptions.parse(self.options)
        if options.change_stream is not None:
            return ChangeStreamReader(options)
        return SpannerStreamReader(options)


class SpannerStreamReader(DataSourceStreamReader):
    """Offsets are :class:`.offsets.Offset` JSON; partitions are :class:`.partition_reader.StreamPartition`."""

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self._infos: dict[str, TableInfo] | None = None  # discovered on first use (the driver's planner only)

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_infos": None}

    # -- driver side -------------------------------------------------------------------------

    def _database(self) -> Any:
        return partition_reader.database(self.options.location)

    def _tables(self) -> dict[str, TableInfo]:
        if self._infos is None:
            db = self._database()
            settings = self.options.request_settings
            names = list(self.options.tables) or watchable_tables(db, request_settings=settings)
            if not names:
                raise ConfigurationError(f"{SOURCE_NAME} source: database {self.options.location.database} has no "
                                         "table with a commit-timestamp column (allow_commit_timestamp=true)")
            self._infos = {name: discover(db, name, self.options.commit_timestamp_column, request_settings=settings)
                           for name in names}
        return self._infos

    def _loops(self) -> list[Loop]:
        shards: Sequence[Any] = self.options.shards or (None,)
        return [(table, shard) for table in self._tables() for shard in shards]

    def initialOffset(self) -> dict[str, Any]:
        if self.options.start == "now":
            with self._strong_snapshot() as (snap, read_ts):
                return Offset(read_ts, {loop: Checkpoint(read_ts) for loop in self._loops()}).to_json()
        return Offset(EPOCH, {loop: Checkpoint(EPOCH) for loop in self._loops()}).to_json()

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        begin = Offset.from_json(start)
        positions = dict(begin.positions)
        with self._strong_snapshot() as (snap, read_ts):
            if self.options.limit is None:
                moved = self._any_new(snap, positions, read_ts)
            else:
                moved = {}
                for loop in self._loops():
                    since = positions.get(loop) or self._first_position(read_ts)
                    found = self._next_position(snap, loop, since, read_ts)
                    if found is not None:
                        moved[loop] = found
            if not moved:
                return start
            # A loop without new rows has none up to R either: it moves to "all of R" too.
            end = {loop: moved.get(loop, Checkpoint(read_ts)) for loop in self._loops()}
        return Offset(read_ts, end).to_json()

    def _any_new(self, snap: Any, positions: dict[Loop, Checkpoint], read_ts: Any) -> dict[Loop, Checkpoint]:
        """Without a limit every loop moves to "all of R" as soon as one has new rows, so one row
        of any loop is all planning must find. A table whose loops share one position (every
        micro-batch after the first leaves them so) is asked once, over all its shards, instead of
        once per loop: planning costs a query per table, not per shard."""
        by_table: dict[str, dict[Loop, Checkpoint]] = {}
        for loop in self._loops():
            by_table.setdefault(loop[0], {})[loop] = positions.get(loop) or self._first_position(read_ts)
        for table, loops in by_table.items():
            shared = set(loops.values())
            since = next(iter(shared))
            if len(shared) == 1 and since.key is None:
                shards = list(self.options.shards) or None
                if self._next_position(snap, (table, shards), since, read_ts) is not None:
                    return {loop: Checkpoint(read_ts) for loop in self._loops()}
                continue
            for loop, position in loops.items():
                if self._next_position(snap, loop, position, read_ts) is not None:
                    return {loop: Checkpoint(read_ts) for loop in self._loops()}
        return {}

    def _first_position(self, read_ts: Any) -> Checkpoint:
        """Where a loop that is not in the start offset (a table or shard added since) begins."""
        return Checkpoint(read_ts if self.options.start == "now" else EPOCH)

    def _next_position(self, snap: Any, loop: Loop, since: Checkpoint, read_ts: Any) -> Checkpoint | None:
        """The loop's end position in a micro-batch ending at ``read_ts``, or None without new rows."""
        info = self._tables()[loop[0]]
        wanted = self.options.limit or 1  # without a limit, one row says whether there are new rows
        read = self._loop_read(loop, since, Checkpoint(read_ts))
        columns = [info.commit_timestamp_column, *info.key_columns]
        rows: list[Any] = []
        try:
            for query in partition_reader.bounded_queries(read, self.options.table_hint, wanted, since,
                                                          Checkpoint(read_ts), columns):
                if len(rows) >= wanted:
                    break
                rows += list(snap.execute_sql(query.sql, params={**query.params, "limit": wanted - len(rows)},
                                              param_types=query.types,
                                              request_options=self.options.request_settings.request_options()))
        except gexc.GoogleAPICallError as exc:
            if is_table_not_found(exc):
                raise table_dropped(loop[0], since, "found planning a micro-batch") from exc
            raise
        if not rows:
            return None
        if self.options.limit is not None and len(rows) >= self.options.limit:
            last = rows[-1]
            return Checkpoint(last[0], tuple(last[1:]))
        return Checkpoint(read_ts)

    def _loop_read(self, loop: Loop, start: Checkpoint, end: Checkpoint) -> LoopRead:
        """The read of one loop; ``loop``'s shard may be a list of shard values (a planning query over several)."""
        tables = list(self._tables())
        shards = list(self.options.shards) or [None]
        table, shard = loop
        index = shards.index(shard) if not isinstance(shard, list) else -1
        return LoopRead(tables.index(table), index, self._tables()[table], self.options.shard_column,
                        shard, start.to_text(), end.to_text())

    def _strong_snapshot(self) -> Any:
        return StrongSnapshot(self._database(), self.options.request_settings)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[StreamPartition]:
        begin, finish = Offset.from_json(start), Offset.from_json(end)
        reads = [self._loop_read(loop, begin.positions.get(loop) or self._first_position(finish.read_timestamp), position)
                 for loop, position in finish.positions.items()
                 if loop[0] in self._tables() and begin.positions.get(loop) != position]
        per = self.options.shards_per_partition
        groups = [reads[i:i + per] for i in range(0, len(reads), per)]
        return [StreamPartition(self.options.location, timestamp_text(finish.read_timestamp), tuple(group),
                                self.options.table_hint, self.options.watcher_id, self.options.request_settings)
                for group in groups]

    # -- executor side -----------------------------------------------------------------------

    def read(self, partition: Any) -> Iterator[tuple[Any, ...]]:
        return partition_reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: positions live in Spark's checkpoint, not in Spanner."""
