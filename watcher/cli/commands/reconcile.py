"""``spanner-watcher reconcile``: record the hard deletes polling cannot see.

Example:
    $ spanner-watcher reconcile --table Singers --staging ./staging --warehouse ./warehouse --run-job
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

NAME = "reconcile"
EXIT_FAILED = 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``reconcile`` subcommand."""
    from .changelog import soft_delete_pair
    from .snapshot_options import add_snapshot_arguments

    parser = subparsers.add_parser(
        NAME, help="detect hard deletes (and rows the changelog lacks) by comparing the table with the current state",
        description="Read the table at one strong read timestamp R (in parallel with PySpark) and compare its keys "
                    "with the changelog's current state: keys gone from the table are staged as DELETE records "
                    "(read_method reconcile, committed at R, the time of detection), rows the state lacks are "
                    "staged too. The changelog job then applies them.",
        epilog="exit status: 0 done; 2 bad arguments; 1 failed")
    add_snapshot_arguments(parser)
    parser.add_argument("--run-job", action="store_true",
                        help="run the changelog job before (so the comparison sees everything staged) and after "
                             "(so the deletes are applied)")
    parser.add_argument("--soft-delete", type=soft_delete_pair, action="append", default=[], metavar="TABLE=COLUMN",
                        help="with --run-job: the job's soft-delete columns; repeatable")
    return parser


def run(args: argparse.Namespace) -> int:
    from google.api_core.exceptions import GoogleAPICallError

    from ...changelog import Changelog
    from ...changelog.snapshots.reconcile import Reconcile
    from ...errors import ConfigurationError, WatcherError
    from ..connection import open_from_args
    from ..main import PROG, CommandError
    from .snapshot_options import absolute_folder, check_folder, check_table, configure, print_result
    from .spark_options import executor_failures, session
    from .warehouse_options import check_warehouse

    check_folder("--staging", args.staging)
    check_folder("--warehouse", args.warehouse)
    args.warehouse = absolute_folder(args.warehouse)  # how Spark SQL names its Delta tables
    check_warehouse(args.warehouse)  # the Parquet layout of older versions: refused, naming --convert

    def job(spark: Any) -> None:
        changelog = Changelog(spark).staging(args.staging).warehouse(args.warehouse)
        for table, column in args.soft_delete:
            changelog.soft_delete_column(table, column)
        done = changelog.run()
        # with --json, stdout holds only the JSON result
        print(f"changelog version {done.version}: {done.changes_written} changes {dict(sorted(done.mod_types.items()))}",
              file=sys.stderr if args.json else sys.stdout)

    try:
        with executor_failures(), open_from_args(args) as target:
            check_table(args, target.database)  # before Spark starts: a wrong name fails in a second
            spark = session(args, "spanner-watcher reconcile")
            reconcile = configure(Reconcile(spark, target.database), args)
            if args.run_job:
                job(spark)
            result = reconcile.run()
            if args.run_job:
                job(spark)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    except (WatcherError, GoogleAPICallError) as exc:
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print_result(result, args.json, f": {result.deletes} deletes, {result.restaged} rows restaged")
    return 0
