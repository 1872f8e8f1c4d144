"""``spanner-watcher backfill``: snapshot a table at one read timestamp into the staging folder.

Example:
    $ spanner-watcher backfill --table Singers --staging ./staging --warehouse ./warehouse \\
          --shard-column ShardId --shard-values=-18..18
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

NAME = "backfill"
EXIT_FAILED = 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``backfill`` subcommand."""
    from ...checkpoints import DEFAULT_TABLE
    from .snapshot_options import add_snapshot_arguments, json_value

    parser = subparsers.add_parser(
        NAME, help="snapshot a table at one read timestamp (read in parallel with PySpark)",
        description="Read the whole table at one strong read timestamp R, in parallel Spark partitions, and stage "
                    "every row as a 'backfill' record; then mark the table's changelog state complete as of R and "
                    "set the watchers' checkpoints to R, so the watchers go on exactly where the snapshot ends and "
                    "keys first seen after R are INSERTs. Run it before the watchers start; then run "
                    "`spanner-watcher changelog`.",
        epilog="exit status: 0 done; 2 bad arguments; 1 the backfill failed (nothing marked complete)")
    add_snapshot_arguments(parser)
    parser.add_argument("--checkpoint-shard", type=json_value, action="append", default=None, metavar="JSON",
                        help="a shard value the watchers store their checkpoint under (repeatable; JSON: null, 3, "
                             "[-1, 0, 1]); default: the --shard-values list as one value, or null without shards")
    parser.add_argument("--checkpoint-table", default=DEFAULT_TABLE, help=f"the checkpoint table (default {DEFAULT_TABLE})")
    parser.add_argument("--no-checkpoints", action="store_true", help="do not touch the watchers' checkpoints")
    return parser


def run(args: argparse.Namespace) -> int:
    from google.api_core.exceptions import GoogleAPICallError

    from ...changelog.snapshots.backfill import Backfill
    from ...checkpoints import SpannerCommitTimestampRepository
    from ...errors import ConfigurationError, WatcherError
    from ..connection import open_from_args
    from ..main import PROG, CommandError
    from ..request_options import settings_from_args
    from .snapshot_options import check_folder, check_table, configure, print_result
    from .spark_options import executor_failures, session
    from .warehouse_options import check_warehouse

    check_folder("--staging", args.staging)
    check_folder("--warehouse", args.warehouse)
    check_warehouse(args.warehouse)  # the Parquet layout of older versions: refused, naming --convert
    try:
        with executor_failures(), open_from_args(args) as target:
            check_table(args, target.database)  # before Spark starts: a wrong name fails in a second
            job = configure(Backfill(session(args, "spanner-watcher backfill"), target.database), args)
            if not args.no_checkpoints:
                shards = args.checkpoint_shard or [args.shard_values]  # None when there are no shards
                repository = SpannerCommitTimestampRepository(target.database, table=args.checkpoint_table,
                                                              request_settings=settings_from_args(args))
                job.checkpoints(repository, shards)
            result = job.run()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    except (WatcherError, GoogleAPICallError) as exc:
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print_result(result, args.json, f", checkpoints set for {len(result.checkpoints_set)} shard value(s)")
    return 0
