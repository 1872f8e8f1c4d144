"""``spanner-watcher export``: the changelog as BigQuery CDC rows, Datastream events or a Spanner table.

Example:
    $ spanner-watcher export --warehouse ./warehouse --format bigquery --out ./bq
    $ spanner-watcher export --warehouse ./warehouse --format spanner --out projects/p/instances/i/databases/d
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

from .spark_options import add_spark_arguments, executor_failures, session

NAME = "export"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand."""
    from ...changelog.exports import FORMATS

    parser = subparsers.add_parser(
        NAME, help="export the changelog (BigQuery CDC rows, Datastream-style events)",
        description="Write the committed changelog of a warehouse as JSON lines, one folder per table: "
                    "'bigquery' rows carry _CHANGE_TYPE (UPSERT/DELETE) and _CHANGE_SEQUENCE_NUMBER; "
                    "'datastream' events carry uuid, read_timestamp, source_timestamp, object, read_method, "
                    "schema_key, sort_keys, source_metadata and the payload. The output folder is replaced. "
                    "'spanner' writes the changelog into a table of a Spanner database (created when missing; "
                    "exporting again rewrites the same rows).",
        epilog="exit status: 0 done; 2 bad arguments (unknown table, no changelog yet, unknown or unreachable "
               "target database)")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the changelog job's output folder")
    parser.add_argument("--format", required=True, choices=sorted(FORMATS), help="what to write")
    parser.add_argument("--out", required=True, metavar="DIR|DATABASE",
                        help="output folder (replaced); for --format spanner the database (and table) to write to: "
                             "projects/P/instances/I/databases/D[/tables/T] (through SPANNER_EMULATOR_HOST when set)")
    parser.add_argument("--table", action="append", default=[], metavar="TABLE", help="only this table; repeatable")
    parser.add_argument("--since", default=None, metavar="TIMESTAMP",
                        help="only changes committed after this RFC 3339 timestamp (nine fractional digits)")
    parser.add_argument("--stream-name", default=None, help="stream_name of datastream events")
    add_spark_arguments(parser)
    return parser


def _check_spanner_target(out: str) -> None:
    """The target database of ``--format spanner`` exists and answers (checked before Spark starts)."""
    from google.api_core.exceptions import GoogleAPICallError

    from ...changelog.exports.spanner_table import parse_target
    from ...changelog.spanner_source import SpannerLocation
    from ...errors import ConfigurationError
    from ..connection import EMULATOR_ENV, ensure_reachable
    from ..main import CommandError

    try:
        project, instance, database, _ = parse_target(out)
        host = os.environ.get(EMULATOR_ENV) or None
        ensure_reachable(host)
        exists = SpannerLocation(project, instance, database, host).open().exists()
    except ConfigurationError as exc:
        raise CommandError(f"--out: {exc}") from None
    except GoogleAPICallError as exc:
        raise CommandError(f"--out {out}: {exc.message}") from None
    if not exists:
        raise CommandError(f"--out {out}: no such database; create it first (e.g. spanner-watcher migrate "
                           f"--project {project} --instance {instance} --database {database})")


def run(args: argparse.Namespace) -> int:
    from ...changelog import register_views
    from ...changelog.exports import FORMATS
    from ...errors import StorageURLError
    from ..main import CommandError
    from .snapshot_options import check_folder

    check_folder("--warehouse", args.warehouse, "run `spanner-watcher changelog` first, or name its --warehouse")
    if args.format == "spanner":
        _check_spanner_target(args.out)
    else:
        check_folder("--out", args.out)
    spark = session(args, "spanner-watcher export")
    try:
        committed = register_views(spark, args.warehouse)
    except StorageURLError as exc:  # a URL whose filesystem Spark (or pyarrow) cannot open
        raise CommandError(str(exc)) from None
    if committed.version == 0:
        raise CommandError(f"no changelog in {args.warehouse} yet: run `spanner-watcher changelog` first")
    unknown = sorted(set(args.table) - set(committed.tables))
    if unknown:
        raise CommandError(f"--table {', '.join(unknown)}: not in the changelog (tables: {', '.join(sorted(committed.tables))})")
    changelog = spark.table("changelog")
    if args.table:
        changelog = changelog.where(changelog.table_name.isin(args.table))
    if args.since:
        changelog = changelog.where(changelog.commit_timestamp > args.since)
    module = importlib.import_module(FORMATS[args.format])
    with executor_failures():  # the Spanner-table export writes from the executors
        if args.stream_name and args.format == "datastream":
            written = module.write(changelog, args.out, args.stream_name)
        else:
            written = module.write(changelog, args.out)
    rows = f"{written} rows of " if isinstance(written, int) else ""  # only the Spanner table counts them
    print(f"wrote {rows}{args.format} export of version {committed.version} to {args.out}")
    return 0
