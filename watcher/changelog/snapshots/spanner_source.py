"""Reading a whole table at one read timestamp, in parallel, as Spark partitions.

Backfill and reconcile both need "every row of table T as of read timestamp R". The
driver chooses R with a strong read (a multi-use read-only transaction:
:class:`ReadPoint`), splits the table into :class:`ReadPartition` s (by shard value
groups, or by a hash of the first key column), and each Spark task opens its own
Spanner client and reads its partition **at exactly R**: ``database.snapshot(read_timestamp=R)``.
That is stateless and retry-safe, and it is what runs on Cloud Spanner, on the
official emulator and on the embedded local Spanner (which keeps row versions for the
database's version retention period, one hour by default, as Spanner does).

Both of Spanner's dialects are read: the partitions' conditions and the query are written in the
database's (``ReadPlan.dialect``, found from the database), parameters bound as it takes them.

Rows come out as staging records (:mod:`watcher.staging.contract`, ``read_method`` backfill
or reconcile), so the changelog job reads them like anything a watcher staged.

Example:
    >>> from watcher.dialects import POSTGRESQL
    >>> [p.label for p in shard_partitions("ShardId", [0, 1, 2], per_partition=2)]
    ['ShardId in [0, 1]', 'ShardId in [2]', 'ShardId: NULL or other values']
    >>> hash_partitions("Id", "INT64", 2)[1].where
    'MOD(MOD(`Id`, 2) + 2, 2) = 1'
    >>> hash_partitions("name", "STRING", 2, POSTGRESQL)[1].where
    'MOD(MOD(spanner.farm_fingerprint("name"), 2) + 2, 2) = 1'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from watcher import spanner_client
from watcher.codec import timestamp_text
from watcher.connection import connect, settings_of
from watcher.dialects import GOOGLE_SQL, Dialect
from watcher.dialects.base import BY_NAME
from watcher.dialects.ddl import DDL_SQL
from watcher.errors import ChangelogError, ConfigurationError
from watcher.request_settings import DEFAULT_SETTINGS, RequestSettings, settings_or_default
from watcher.staging import contract

from ..spark import cluster

#: Read modes a caller may still name. Every partition now reads at exactly the read timestamp on
#: every kind of Spanner; "auto" and "shared" (the old fallback to, and the forced use of, the
#: driver's transaction) are accepted for compatibility and give the same rows, read the same way.
READ_MODES = ("auto", "timestamp", "shared")
#: Hash expressions that spread a key column over N partitions, by the column's base type (``{hash}``:
#: the dialect's fingerprint of the column).
HASH_SQL = {
    "INT64": "MOD(MOD({col}, {n}) + {n}, {n})",
    "STRING": "MOD(MOD({hash}, {n}) + {n}, {n})",
    "BYTES": "MOD(MOD({hash}, {n}) + {n}, {n})",
}
#: Seconds a task waits for its Spanner client's first answer before giving up.
READ_TIMEOUT = 600.0


@dataclass(frozen=True)
class SpannerLocation:
    """Where a task connects (picklable): names, the emulator host (None: real Spanner), the database
    role its sessions take (None: none; fine-grained access control), and for Cloud Spanner the key
    file and endpoint the driver's database was opened with by :func:`watcher.connect` (the key file
    must be readable at that path where the tasks run)."""

    project: str
    instance: str
    database: str
    emulator_host: str | None = None
    database_role: str | None = None
    credentials_file: str | None = None
    api_endpoint: str | None = None

    @staticmethod
    def of(database: Any) -> SpannerLocation:
        """The location of a client ``Database`` object, with its database role and connection settings."""
        project, instance, name = spanner_client.database_path(database.name)
        settings = settings_of(database)
        return SpannerLocation(project, instance, name, spanner_client.emulator_host(database),
                               getattr(database, "database_role", None) or None,
                               settings.credentials_file, settings.api_endpoint)

    def open(self) -> Any:
        """A new client's ``Database`` for this location."""
        if self.emulator_host:
            return connect(self.project, self.instance, self.database, emulator_host=self.emulator_host,
                           database_role=self.database_role)
        return connect(self.project, self.instance, self.database, credentials_file=self.credentials_file,
                       api_endpoint=self.api_endpoint, database_role=self.database_role)


@dataclass(frozen=True)
class ReadPartition:
    """One Spark partition's slice of the table: a WHERE condition and its parameters."""

    index: int
    where: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = "all rows"


def single_partition() -> list[ReadPartition]:
    return [ReadPartition(0)]


def shard_partitions(column: str, values: Sequence[Any], per_partition: int = 4,
                     dialect: Dialect = GOOGLE_SQL) -> list[ReadPartition]:
    """Groups of shard values, plus one partition for NULL and unlisted values (the whole table).

    >>> from watcher.dialects import POSTGRESQL
    >>> shard_partitions("ShardId", [1], dialect=POSTGRESQL)[1].where
    '("ShardId" IS NULL OR NOT ("ShardId" = ANY(@shards)))'
    """
    if not values:
        raise ConfigurationError("shard_partitions needs at least one shard value")
    if per_partition < 1:
        raise ConfigurationError(f"per_partition must be >= 1, got {per_partition}")
    col = dialect.quote(column, "shard column")
    values = list(values)
    parts = [ReadPartition(i, dialect.in_array(col, "shards"), {"shards": values[start:start + per_partition]},
                           f"{column} in {values[start:start + per_partition]}")
             for i, start in enumerate(range(0, len(values), per_partition))]
    parts.append(ReadPartition(len(parts), f"({col} IS NULL OR {dialect.not_in_array(col, 'shards')})", {"shards": values},
                               f"{column}: NULL or other values"))
    return parts


def hash_partitions(key_column: str, key_type: str, count: int, dialect: Dialect = GOOGLE_SQL) -> list[ReadPartition]:
    """``count`` partitions by a hash of the key column (one partition when its type has no hash).

    A NULL key part (allowed in Spanner keys) hashes to NULL, so partition 0 takes it: every row
    is in exactly one partition (a row missing from reconcile's snapshot would be recorded as deleted).

    >>> hash_partitions("A", "INT64", 2)[0].where
    '(MOD(MOD(`A`, 2) + 2, 2) = 0 OR `A` IS NULL)'
    """
    template = HASH_SQL.get(key_type.split("(", 1)[0].strip().upper())
    if template is None or count <= 1:
        return single_partition()
    column = dialect.quote(key_column)
    expr = template.format(col=column, n=count, hash=DDL_SQL[dialect.name].fingerprint.format(column))
    return [ReadPartition(i, f"({expr} = 0 OR {column} IS NULL)" if i == 0 else f"{expr} = {i}", {},
                          f"hash({key_column}) = {i} of {count}") for i in range(count)]


@dataclass(frozen=True)
class ReadPlan:
    """What every task needs (picklable): the table, its layout, the read point, the method."""

    location: SpannerLocation
    table: str
    key_columns: tuple[str, ...]
    commit_timestamp_column: str
    column_types: Mapping[str, str]
    read_timestamp: str
    read_method: str
    watcher_id: str
    batch_prefix: str
    #: The tag and priority of the reads, and whether they run on Data Boost.
    request_settings: RequestSettings = DEFAULT_SETTINGS
    #: The database's dialect, by name (the partitions' conditions are written in it).
    dialect: str = GOOGLE_SQL.name

    def sql(self, part: ReadPartition) -> str:
        """The partition's query, with ``@name`` parameters (bound by :meth:`statement`)."""
        dialect = BY_NAME[self.dialect]
        table = ".".join(dialect.quote(p) for p in self.table.split("."))
        return f"SELECT * FROM {table}" + (f" WHERE {part.where}" if part.where else "")

    def statement(self, part: ReadPartition) -> Any:
        """The partition's query and parameters as the database's dialect takes them."""
        params = dict(part.params)
        return BY_NAME[self.dialect].bind(self.sql(part), params, _param_types(params))


class ReadPoint:
    """The driver's strong multi-use read-only transaction: it fixes R (tasks then read at R).

    Use as a context manager. Its query carries ``request_settings``' request tag.
    """

    def __init__(self, database: Any, request_settings: RequestSettings | None = None) -> None:
        self._database = database
        self._options = settings_or_default(request_settings).request_options(with_priority=False)
        self._checkout: Any = None
        self.read_timestamp: Any = None

    def __enter__(self) -> ReadPoint:
        self._checkout = self._database.snapshot(multi_use=True)
        snapshot = self._checkout.__enter__()
        self.read_timestamp = spanner_client.strong_read_timestamp(snapshot, self._options)  # its first query fixes R here
        if self.read_timestamp is None:
            self.close()
            raise ChangelogError("the Spanner client did not report the read timestamp of its read-only transaction")
        return self

    @property
    def read_timestamp_text(self) -> str:
        return timestamp_text(self.read_timestamp)

    def close(self) -> None:
        if self._checkout is not None:
            try:
                self._checkout.__exit__(None, None, None)
            finally:
                self._checkout = None

    def __exit__(self, *exc: Any) -> None:
        self.close()


def staging_record(plan: ReadPlan, batch_id: str, seq: int, keys: list[Any], values: Mapping[str, Any], *,
                   commit_timestamp: str, mod_type: str | None = None, key_columns: Sequence[str] | None = None,
                   types: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The staging record (:func:`watcher.staging.contract.record`) of typed-JSON keys and values read by ``plan``."""
    return contract.record(batch_id=batch_id, seq=seq, table=plan.table,
                           key_columns=key_columns if key_columns is not None else plan.key_columns, keys=keys,
                           commit_timestamp=commit_timestamp, read_timestamp=plan.read_timestamp,
                           watcher_id=plan.watcher_id, read_method=plan.read_method, mod_type=mod_type,
                           values=values, types=types if types is not None else plan.column_types)


def record_line(plan: ReadPlan, batch_id: str, seq: int, row: Mapping[str, Any], *,
                commit_timestamp: str, mod_type: str | None = None) -> str:
    """The staging line of a row as the client returned it, read at the plan's read timestamp."""
    types = plan.column_types
    keys = contract.encode_keys(types, plan.key_columns, [row[k] for k in plan.key_columns])
    return contract.to_line(staging_record(plan, batch_id, seq, keys, contract.encode_row(types, row, plan.table),
                                           commit_timestamp=commit_timestamp, mod_type=mod_type))


def _param_types(params: Mapping[str, Any]) -> dict[str, Any]:
    from google.cloud.spanner_v1 import param_types

    from watcher.capture.shards import param_type_of

    return {name: param_types.Array(param_type_of(value[0])) if isinstance(value, list) else param_type_of(value)
            for name, value in params.items()}


def _rows(plan: ReadPlan, part: ReadPartition, database: Any) -> Iterator[tuple[Any, ...]]:
    """The partition's field names, then its rows, at exactly the plan's read timestamp.

    The query carries the plan's request tag and priority. With Data Boost it runs as a
    partitioned query (Spanner serves Data Boost only to those): its partitions are read in
    turn, each with ``data_boost_enabled``, in a read-only transaction at the same timestamp.
    """
    from google.api_core.datetime_helpers import DatetimeWithNanoseconds

    statement = plan.statement(part)
    sql = statement.sql
    kwargs: dict[str, Any] = {"params": statement.params, "param_types": statement.types} if statement.params else {}
    options = plan.request_settings.request_options()
    at = DatetimeWithNanoseconds.from_rfc3339(plan.read_timestamp)
    if plan.request_settings.data_boost:
        yield from _boosted_rows(database, at, sql, kwargs, options)
        return
    with database.snapshot(read_timestamp=at) as snap:
        yield from _with_names(snap.execute_sql(sql, request_options=options, **kwargs))


def _boosted_rows(database: Any, at: Any, sql: str, kwargs: dict[str, Any],
                  options: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    """:func:`_rows` on Data Boost: the field names once, then the rows of every partition of the query."""
    snapshot = database.batch_snapshot(read_timestamp=at)
    try:
        named = False
        for batch in list(snapshot.generate_query_batches(sql, data_boost_enabled=True, **kwargs)):
            batch["query"]["request_options"] = options  # the batch's query is execute_sql's keyword arguments
            for i, item in enumerate(_with_names(snapshot.process_query_batch(batch))):
                if i > 0 or not named:
                    yield item
                named = True
    finally:
        snapshot.close()


def _with_names(results: Any) -> Iterator[tuple[Any, ...]]:
    """The field names of a result set, then its rows; nothing for a result without rows."""
    rows = iter(results)  # one iterator: a second one would skip the rows the first buffered
    first = next(rows, None)  # the fields are known once the first answer arrived
    if first is not None:
        yield tuple(f.name for f in results.fields)
        yield tuple(first)
        yield from (tuple(r) for r in rows)


def read_partition(plan: ReadPlan, part: ReadPartition) -> Iterator[tuple[str, str]]:
    """Runs in a Spark task: (batch_id, staging line) for every row of ``part`` (one batch per partition)."""
    database = plan.location.open()
    batch_id = contract.task_batch_id(plan.batch_prefix, part.index, "p")
    ts_column = plan.commit_timestamp_column
    names: tuple[str, ...] | None = None
    seq = 0
    for item in _rows(plan, part, database):
        if names is None:
            names = item
            continue
        row = dict(zip(names, item, strict=True))
        # A row that never got a commit timestamp existed at R: record it at R (watchers never see it).
        commit = row.get(ts_column)
        commit_text = timestamp_text(commit) if commit is not None else plan.read_timestamp
        yield batch_id, record_line(plan, batch_id, seq, row, commit_timestamp=commit_text)
        seq += 1


def batch_prefix(read_timestamp: str, method: str) -> str:
    """A unique, file-name-safe batch id prefix for one backfill/reconcile run (the staging contract's)."""
    return contract.snapshot_batch_prefix(read_timestamp, method)


def snapshot_lines(spark: Any, plan: ReadPlan, partitions: Sequence[ReadPartition]) -> Any:
    """A DataFrame (batch_id, value) of the table's rows at R: one Spark partition per read partition.

    Only DataFrame operations, so it runs on a classic session and on Spark Connect alike: a
    DataFrame of partition numbers (one per Spark partition), mapped by :func:`read_partition`
    in the tasks (``mapInArrow``).
    """
    cluster.ship(spark)  # read_partition runs on the executors, which may lack this package
    parts = list(partitions)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from arrow_batches(read_partition(plan, parts[index]), LINE_COLUMNS)

    numbers = spark.range(0, len(parts), 1, len(parts))
    return numbers.mapInArrow(run, "batch_id STRING, value STRING")


#: The columns of a staging-lines DataFrame.
LINE_COLUMNS = ("batch_id", "value")
#: Rows per Arrow batch a task hands back (a partition's rows are never all held at once).
ARROW_BATCH_ROWS = 4096


def arrow_batches(rows: Iterable[Sequence[Any]], names: Sequence[str], size: int = ARROW_BATCH_ROWS) -> Iterator[Any]:
    """Tuples as pyarrow RecordBatches of ``size`` rows (``mapInArrow``'s output), column types inferred.

    >>> [b.num_rows for b in arrow_batches([("a", "x")] * 5, ("batch_id", "value"), size=2)]
    [2, 2, 1]
    """
    import pyarrow as pa

    chunk: list[Sequence[Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield pa.RecordBatch.from_arrays([pa.array(list(c)) for c in zip(*chunk, strict=True)], names=list(names))
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_arrays([pa.array(list(c)) for c in zip(*chunk, strict=True)], names=list(names))
