"""The changelog as a table inside Spanner (the DocumentHistory pattern).

Spanner's commit-timestamp documentation keeps a document's history next to it, keyed by the document and then the
commit timestamp, so one entity's history is one contiguous, ordered key range, and the
commit timestamp is never the first key part (that would send every write to one split).
This export does the same for every watched table of every source database::

    CREATE TABLE SpannerWatcherChangelog (
      KeyHash STRING(16) NOT NULL,      -- hash of (source database, table, key): spreads writes over the key space
      TableName STRING(MAX) NOT NULL,
      Keys STRING(MAX) NOT NULL,        -- the primary key, a JSON object in key order
      CommitTimestamp TIMESTAMP NOT NULL,
      SourceProject STRING(MAX), SourceInstance STRING(MAX), SourceDatabase STRING(MAX),
      ...                               -- the changelog record (see COLUMNS)
      ExportedAt TIMESTAMP OPTIONS (allow_commit_timestamp=true),
    ) PRIMARY KEY (KeyHash, TableName, Keys, CommitTimestamp)

so ``WHERE KeyHash = @h AND TableName = @t AND Keys = @k ORDER BY CommitTimestamp`` reads one
row's history (the hash names the source database too, so same-named tables of two databases
stay apart). The values stay JSON *text* (STRING), not Spanner JSON, which
would reorder object keys and round large numbers. The table is created when missing and
checked when present. Rows are written by the Spark tasks, each with its own client, in
commits of :data:`BATCH_ROWS` rows with ``insert_or_update``: the primary key is the
change's identity (source, table, key, commit timestamp), so exporting a row again rewrites the
same row (only ExportedAt moves). Rows of a view without source columns (a warehouse written
before they existed) leave the Source columns null. The incremental export, which records its
progress in the same database, is :mod:`.spanner_target`'s.

A PostgreSQL target database gets the same table in its spellings (:mod:`watcher.dialects.ddl`:
``varchar(16)``, ``bigint``, ``timestamptz``, ``spanner.commit_timestamp``), its names double-quoted as
given, so the same mutations write it in both dialects.

The ``export`` command reaches it as ``--format spanner --out
projects/P/instances/I/databases/D[/tables/T]`` (through SPANNER_EMULATOR_HOST when set).

Example:
    >>> create_table_ddl("History").splitlines()[0]
    'CREATE TABLE `History` ('
    >>> create_table_ddl("History", POSTGRESQL).splitlines()[1]
    '  "KeyHash" varchar(16) NOT NULL,'
    >>> parse_target("projects/p/instances/i/databases/d/tables/H")
    ('p', 'i', 'd', 'H')
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...dialects import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of
from ...dialects.ddl import DDL_SQL, column_definition_type
from ..snapshots.spanner_source import SpannerLocation
from ..spark import cluster
from . import errors
from .delta_columns import SOURCE_COLUMNS

DEFAULT_TABLE = "SpannerWatcherChangelog"
#: Rows per commit: well under Spanner's mutation limit (80,000 cells) for this table's 22 columns.
BATCH_ROWS = 1000
KEY = ("KeyHash", "TableName", "Keys", "CommitTimestamp")

#: (column, Spanner type, the changelog column or SQL it comes from). The key hash of a row without
#: source columns is the hash of (table, key) alone (concat_ws leaves nulls out), as before they existed.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("KeyHash", "STRING(16) NOT NULL", "substring(sha2(concat_ws('\\u001f', source_project, source_instance, "
                                       "source_database, table_name, keys), 256), 1, 16)"),
    ("TableName", "STRING(MAX) NOT NULL", "table_name"),
    ("Keys", "STRING(MAX) NOT NULL", "keys"),
    ("CommitTimestamp", "TIMESTAMP NOT NULL", "commit_timestamp"),
    ("SourceProject", "STRING(MAX)", "source_project"),
    ("SourceInstance", "STRING(MAX)", "source_instance"),
    ("SourceDatabase", "STRING(MAX)", "source_database"),
    ("RecordSequence", "INT64 NOT NULL", "record_sequence"),
    ("ChangeId", "STRING(32) NOT NULL", "change_id"),
    ("ModType", "STRING(16) NOT NULL", "mod_type"),
    ("NewValues", "STRING(MAX)", "new_values"),
    ("OldValues", "STRING(MAX)", "old_values"),
    ("ValueCaptureType", "STRING(32)", "value_capture_type"),
    ("ColumnTypes", "STRING(MAX)", "to_json(column_types)"),
    ("TransactionGroup", "STRING(16)", "transaction_group"),
    ("NumberOfRecordsInGroup", "INT64", "number_of_records_in_group"),
    ("ReadTimestamp", "TIMESTAMP", "read_timestamp"),
    ("ReadMethod", "STRING(16)", "read_method"),
    ("Shard", "STRING(MAX)", "shard"),
    ("WatcherId", "STRING(MAX)", "watcher_id"),
    ("ChangeType", "STRING(8) NOT NULL", "CASE WHEN mod_type = 'DELETE' THEN 'DELETE' ELSE 'UPSERT' END"),
    ("ExportedAt", "TIMESTAMP OPTIONS (allow_commit_timestamp=true)", ""),
)
_TIMESTAMPS = ("CommitTimestamp", "ReadTimestamp")
_TARGET = re.compile(r"^projects/([^/]+)/instances/([^/]+)/databases/([^/]+)(?:/tables/([^/]+))?/?$")


def create_table_ddl(table: str = DEFAULT_TABLE, dialect: Dialect = GOOGLE_SQL) -> str:
    """The CREATE TABLE statement of the changelog table in ``dialect``."""
    return table_ddl(dialect, table, [(name, kind) for name, kind, _ in COLUMNS], KEY, "changelog table")


def table_ddl(dialect: Dialect, table: str, columns: Sequence[tuple[str, str]], key: Sequence[str], what: str) -> str:
    """CREATE TABLE ``table`` in ``dialect`` for ``columns`` given as (name, GoogleSQL column definition: the type,
    then ``NOT NULL`` and ``OPTIONS (allow_commit_timestamp=true)`` when they apply), names quoted as given.

    >>> print(table_ddl(POSTGRESQL, "P", [("K", "STRING(MAX) NOT NULL"), ("At", "TIMESTAMP OPTIONS (allow_commit_timestamp=true)")], ["K"], "table"))
    CREATE TABLE "P" (
      "K" varchar NOT NULL,
      "At" spanner.commit_timestamp,
      PRIMARY KEY ("K")
    )
    """
    spelled = DDL_SQL[dialect.name]

    def column(name: str, kind: str) -> str:
        quoted, null = dialect.quote(name, "column"), " NOT NULL" if " NOT NULL" in kind.upper() else ""
        if "allow_commit_timestamp=true" in kind.replace(" ", "").lower():
            return f"  {spelled.commit_timestamp_column.format(name=quoted, not_null=null)},\n"
        return f"  {quoted} {column_definition_type(dialect, kind.split()[0])}{null},\n"

    return spelled.create_table.format(exists="", table=dialect.quote(table, what),
                                       columns="".join(column(n, k) for n, k in columns),
                                       key=", ".join(dialect.quote(k) for k in key))


def parse_target(out: str) -> tuple[str, str, str, str]:
    """``projects/P/instances/I/databases/D[/tables/T]`` -> (P, I, D, T)."""
    match = _TARGET.match(out.strip())
    if not match:
        raise errors.bad_spanner_target(out)
    project, instance, database, table = match.groups()
    return project, instance, database, table or DEFAULT_TABLE


def ensure_table(database: Any, table: str = DEFAULT_TABLE) -> bool:
    """Create the changelog table when missing (True), or check the one there (False)."""
    return ensure(database, table, lambda dialect: create_table_ddl(table, dialect), [name for name, _, _ in COLUMNS],
                  "changelog")


#: The columns of a table of the default schema, in each dialect.
_COLUMNS_SQL = {
    GOOGLE_SQL.name: ("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = '' "
                      "AND TABLE_NAME = @t"),
    POSTGRESQL.name: "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = @t",
}


def ensure(database: Any, table: str, ddl: Callable[[Dialect], str], columns: Sequence[str], kind: str) -> bool:
    """Create ``table`` by ``ddl`` (its CREATE TABLE in the database's dialect) when missing (True), or check
    that it has ``columns`` (False)."""
    from google.cloud.spanner_v1 import param_types

    dialect = dialect_of(database)
    statement = dialect.bind(_COLUMNS_SQL[dialect.name], {"t": table}, {"t": param_types.STRING})
    with database.snapshot() as snap:
        present = {r[0] for r in snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types)}
    if not present:
        database.update_ddl([ddl(dialect)]).result(300)
        return True
    missing = [name for name in columns if name not in present]
    if missing:
        raise errors.table_lacks_columns(table, database.name, missing, kind)
    return False


def export_rows(changelog: Any) -> Any:
    """The changelog rows (the view's columns, with or without the source columns) as the table's
    columns (ExportedAt is filled at commit)."""
    from pyspark.sql import functions as F

    for _, column in SOURCE_COLUMNS:
        if column not in changelog.columns:
            changelog = changelog.withColumn(column, F.lit(None).cast("string"))
    return changelog.select(*[F.expr(source).alias(name) for name, _, source in COLUMNS if source])


def _write_partition(location: SpannerLocation, table: str, rows: Iterator[Sequence[Any]], batch_rows: int) -> int:
    """Runs in a Spark task: commit the rows (in COLUMNS order) in batches of ``batch_rows``; returns how many."""
    from google.api_core.datetime_helpers import DatetimeWithNanoseconds
    from google.cloud import spanner

    database = location.open()
    names = [name for name, _, source in COLUMNS if source]
    stamps = [names.index(n) for n in _TIMESTAMPS]
    columns = (*names, "ExportedAt")
    pending: list[list[Any]] = []
    written = 0

    def flush() -> None:
        nonlocal written
        with database.batch() as batch:
            batch.insert_or_update(table, columns, pending)
        written += len(pending)
        pending.clear()

    for row in rows:
        values = list(row)
        for i in stamps:
            if values[i] is not None:
                values[i] = DatetimeWithNanoseconds.from_rfc3339(values[i])
        pending.append([*values, spanner.COMMIT_TIMESTAMP])
        if len(pending) >= batch_rows:
            flush()
    if pending:
        flush()
    return written


def write_to_database(changelog: Any, database: Any, table: str = DEFAULT_TABLE, *,
                      batch_rows: int = BATCH_ROWS) -> int:
    """Create the table if needed and write the changelog rows into it; returns the rows written.

    The tasks write and hand back their counts (``mapInArrow``), so it runs on classic and Spark
    Connect sessions alike.
    """
    from pyspark.sql import functions as F

    if not isinstance(batch_rows, int) or batch_rows < 1:
        raise errors.bad_option("batch_rows", batch_rows, "a positive integer")
    ensure_table(database, table)
    location = SpannerLocation.of(database)
    cluster.ship(changelog.sparkSession)  # _write_partition runs on the executors

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        rows = (tuple(r.values()) for batch in batches for r in batch.to_pylist())
        yield pa.RecordBatch.from_arrays([pa.array([_write_partition(location, table, rows, batch_rows)], pa.int64())],
                                         names=["written"])

    total = export_rows(changelog).mapInArrow(run, "written BIGINT").agg(F.sum("written").alias("n")).first()
    return int(total["n"] or 0) if total is not None else 0


def write(changelog: Any, out: str) -> int:
    """The ``export`` command's entry: ``out`` names the database (and table) as in :func:`parse_target`."""
    project, instance, database_id, table = parse_target(out)
    location = SpannerLocation(project, instance, database_id, os.environ.get("SPANNER_EMULATOR_HOST") or None)
    return write_to_database(changelog, location.open(), table)
