"""``spanner-watcher changelog``: build the changelog from staged batches (the Spark job).

Example:
    $ spanner-watcher changelog --staging ./staging --warehouse ./warehouse --soft-delete Singers=Deleted
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..database_choice import DEFAULTS
from .spark_options import add_spark_arguments, session

NAME = "changelog"
#: Exit status when the run succeeded but set bad batch files aside.
EXIT_QUARANTINED = 3
EXIT_FAILED = 1


def soft_delete_pair(text: str) -> tuple[str, str]:
    table, sep, column = text.partition("=")
    if not sep or not table or not column:
        raise argparse.ArgumentTypeError(f"expected TABLE=COLUMN, got {text!r}")
    return table, column


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``changelog`` subcommand."""
    parser = subparsers.add_parser(
        NAME, help="build the changelog table from staged batches (PySpark)",
        description="Read the batch files the watchers staged that no earlier run processed, de-duplicate them, "
                    "classify each change (INSERT/UPDATE/DELETE, or UPSERT for a key first seen before the table's "
                    "state is complete), and write the changelog (partitioned by table and commit date), "
                    "the current state and the watermarks into the warehouse folder as Delta tables. Runs again "
                    "safely: nothing is written twice, and a run that was stopped half way is finished.",
        epilog=f"exit status: 0 done; {EXIT_QUARANTINED} done, but bad batch files were moved to "
               "<warehouse>/_quarantine (see the report next to each); 2 bad arguments; 1 the run failed. "
               "On a cluster: spark-submit watcher/changelog/job.py --staging DIR --warehouse DIR")
    parser.add_argument("--staging", metavar="DIR", help="the staging folder the watchers write to: a path or URL (file:///..., hdfs://..., gs://...); required except with --convert")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the output folder, a path or URL (created when missing)")
    parser.add_argument("--soft-delete", type=soft_delete_pair, action="append", default=[], metavar="TABLE=COLUMN",
                        help="rows of TABLE whose COLUMN is set (and not false) are deletions; repeatable")
    for part, default in DEFAULTS.items():
        parser.add_argument(f"--source-{part}", default=default, metavar="NAME",
                            help=f"the {part} of the watched database the batches are of, kept with every row so "
                                 f"that several databases share a warehouse (default: {default}, the embedded one's)")
    add_spark_arguments(parser)
    parser.add_argument("--engine", choices=("auto", "spark", "driver"), default=None,
                        help="auto (default): a small run of polled rows is computed in this process and written "
                             "with delta-rs, without starting Spark; any other run by Spark. spark: every run by "
                             "Spark. driver: never Spark (a run it cannot do fails, saying why)")
    parser.add_argument("--spark-only", action="store_true", help="the same as --engine spark")
    parser.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    from .warehouse_options import add_arguments as add_warehouse_arguments

    add_warehouse_arguments(parser)  # --convert and the retention options
    return parser


def run(args: argparse.Namespace) -> int:
    import sys

    from ...changelog import Changelog
    from ...errors import ChangelogError, ConfigurationError
    from ..main import CommandError
    from .snapshot_options import absolute_folder, check_folder
    from .warehouse_options import apply_retention, check_warehouse, convert, policy

    if args.convert:
        check_folder("--warehouse", args.warehouse, "name the warehouse to convert")
        return convert(args)
    if args.staging is None:
        raise CommandError("--staging is required (except with --convert)")
    check_folder("--staging", args.staging, "name the folder the watchers stage into")
    check_folder("--warehouse", args.warehouse)
    args.warehouse = absolute_folder(args.warehouse)  # how Spark SQL names its Delta tables
    check_warehouse(args.warehouse)  # the Parquet layout of older versions: refused, naming --convert
    policy(args)  # a bad retention option fails before Spark starts
    try:
        from ...changelog.spark.session import DeferredSession

        # Spark starts only for a run the driver engine does not take (the views would be this
        # process's alone: none are registered).
        job = Changelog(DeferredSession(lambda: session(args, "spanner-watcher changelog"))).staging(args.staging)
        if args.engine or args.spark_only:
            job.engine("spark" if args.spark_only else args.engine)
        job.views(False)
        if args.compact_files is not None:
            job.compaction(args.compact_files)
        job.warehouse(args.warehouse).source(args.source_project, args.source_instance, args.source_database)
        for table, column in args.soft_delete:
            job.soft_delete_column(table, column)
        result = job.run()
        retained = apply_retention(args)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    except ChangelogError as exc:
        print(f"spanner-watcher changelog: failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({**result.summary(), **({"retention": retained} if retained else {})}, indent=1, default=str))
    else:
        print(f"version {result.version}: {result.batches_read} batches, {result.changes_written} changes "
              f"{dict(sorted(result.mod_types.items()))}, {result.duplicates_dropped} duplicates dropped, "
              f"{result.seconds:.1f} s")
        for table, mark in sorted(result.watermarks.items()):
            print(f"  watermark {table}: {mark}")
        if retained:
            print(f"  retention: {retained}")
        if result.compacted:
            print(f"  compacted: {', '.join(f'{t} ({n} files)' for t, n in sorted(result.compacted.items()))}")
    for q in result.quarantined:
        print(f"quarantined {q.batch}: {q.reason} -> {q.moved_to}", file=sys.stderr)
    return EXIT_QUARANTINED if result.quarantined else 0
