"""``spanner-watcher ddl prune``: the index pruning, bounded by the table's oldest checkpoint.

The cutoff is computed as :mod:`watcher.schema_tools.pruning` does for the scheduled job:
the oldest checkpoint of the table (or now, if earlier) minus the retention, so rows a
watcher has not delivered yet are never taken out of the index. Without a checkpoint there
is nothing to bound by, and the command refuses rather than guess.

Example:
    $ spanner-watcher ddl prune Singers --retention 1h --project p --instance i --database d
    -- Oldest checkpoint of table Singers in LAST_SEEN_COMMIT_TIMESTAMPS: 2024-05-01T10:00:00.000000000Z
    -- Cutoff: that checkpoint (or now, if earlier) minus the retention 1:00:00 = 2024-05-01T09:00:00.000000000Z
    -- Run as partitioned DML, or again with --execute.
    UPDATE `Singers` SET `LastUpdated` = NULL WHERE `LastUpdated` < TIMESTAMP '2024-05-01T09:00:00.000000000Z';
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def bounded_prune(args: argparse.Namespace, spec: Any, *, now: dt.datetime | None = None) -> list[str]:
    """Print lines for ``spec`` (a PruneSpec) on the database of ``args``, or run it with ``args.execute``, in
    the database's dialect.

    Raises CommandError (one line) when the table has no checkpoint, the checkpoint table is
    missing, the table cannot be pruned as asked, or ``--dialect`` is not the database's.
    """
    from google.api_core.exceptions import GoogleAPICallError

    from ...checkpoints.spanner import SpannerCommitTimestampRepository
    from ...dialects import dialect_of
    from ...errors import CheckpointError, ConfigurationError, SchemaError
    from ...model import rfc3339_nanos
    from ...schema_tools.pruning import check_schema, prune_cutoff, prune_index, prune_statement
    from ..connection import open_from_args
    from ..main import CommandError
    from ..request_options import settings_from_args

    table, where = spec.table_id, f"--checkpoint-table {args.checkpoint_table}"
    try:
        with open_from_args(args) as target:
            dialect = dialect_of(target.database)
            if getattr(args, "dialect", None) and args.dialect != dialect.name.lower():
                raise CommandError(f"--dialect {args.dialect}: {target.describe()} is a {dialect.name} database "
                                   "(leave --dialect out to use the database's own)")
            settings = settings_from_args(args)
            repository = SpannerCommitTimestampRepository(target.database, table=args.checkpoint_table,
                                                          create_if_missing=False, request_settings=settings)
            try:
                oldest = repository.oldest(table)
            except CheckpointError:
                raise CommandError(f"{where}: no such table in {target.describe()}, so no checkpoint bounds the "
                                   f"pruning of {table}; run a watcher (or `spanner-watcher migrate`) first") from None
            at = now or _utcnow()
            cutoff = prune_cutoff(at, oldest, spec.retention)
            if cutoff is None:
                raise CommandError(f"no checkpoint for table {table} in {args.checkpoint_table} ({target.describe()}): "
                                   "nothing is known to be delivered, so there is no bound to prune by; run its "
                                   "watcher first, or check --checkpoint-table")
            check_schema(target.database, spec, settings)
            assert oldest is not None
            lines = [f"-- Oldest checkpoint of table {table} in {args.checkpoint_table}: {rfc3339_nanos(oldest)}",
                     f"-- Cutoff: that checkpoint (or now, if earlier) minus the retention {spec.retention} = "
                     f"{rfc3339_nanos(cutoff)}"]
            if not args.execute:
                return [*lines, "-- Run as partitioned DML, or again with --execute.", prune_statement(spec, cutoff, dialect=dialect)]
            result = prune_index(target.database, spec, repository, at, request_settings=settings)
            assert result.cutoff is not None  # the checkpoint was there a moment ago, and checkpoints only move on
            return [lines[0], f"-- Pruned {result.rows} row(s) of {table} with {spec.commit_timestamp_column} before "
                              f"{rfc3339_nanos(result.cutoff)} (partitioned DML, {result.seconds:.2f} s)"]
    except (SchemaError, ConfigurationError) as exc:
        raise CommandError(str(exc)) from None
    except GoogleAPICallError as exc:
        raise CommandError(f"pruning {table} failed: {exc.message}") from None
