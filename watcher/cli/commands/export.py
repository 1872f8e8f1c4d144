"""``spanner-watcher export``: the changelog as BigQuery CDC rows, Datastream events or a Spanner table.

Example:
    $ spanner-watcher export --warehouse ./warehouse --format bigquery --out ./bq
    $ spanner-watcher export --warehouse ./warehouse --format spanner --out projects/p/instances/i/databases/d
    $ spanner-watcher export --warehouse ./warehouse --format spanner --project p --instance i --database d

``--format spanner`` names its database by ``--out`` or by the database options (flags, else
SPANNER_PROJECT / SPANNER_INSTANCE / SPANNER_DATABASE; see :mod:`watcher.cli.database_choice`);
with neither, and no SPANNER_EMULATOR_HOST, it stops (``--embedded`` for the embedded server).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from .spark_options import add_spark_arguments, executor_failures, session

NAME = "export"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand."""
    from ...changelog.exports import FORMATS
    from ..connection import add_arguments

    parser = subparsers.add_parser(
        NAME, help="export the changelog (BigQuery CDC rows, Datastream-style events)",
        description="Write the committed changelog of a warehouse as JSON lines, one folder per table: "
                    "'bigquery' rows carry _CHANGE_TYPE (UPSERT/DELETE) and _CHANGE_SEQUENCE_NUMBER; "
                    "'datastream' events carry uuid, read_timestamp, source_timestamp, object, read_method, "
                    "schema_key, sort_keys, source_metadata and the payload. The output folder is replaced. "
                    "'spanner' writes the changelog into a table of a Spanner database (created when missing; "
                    "exporting again rewrites the same rows).",
        epilog="exit status: 0 done; 2 bad arguments (unknown table, no changelog yet, no target database named, "
               "unknown or unreachable target database)")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the changelog job's output folder")
    parser.add_argument("--format", required=True, choices=sorted(FORMATS), help="what to write")
    parser.add_argument("--out", default=None, metavar="DIR|DATABASE",
                        help="output folder (replaced; required but for --format spanner); for --format spanner the "
                             "database (and table) to write to: projects/P/instances/I/databases/D[/tables/T] "
                             "(through SPANNER_EMULATOR_HOST when set), else the database options name it")
    parser.add_argument("--table", action="append", default=[], metavar="TABLE", help="only this table; repeatable")
    parser.add_argument("--since", default=None, metavar="TIMESTAMP",
                        help="only changes committed after this RFC 3339 timestamp (nine fractional digits)")
    parser.add_argument("--stream-name", default=None, help="stream_name of datastream events")
    add_spark_arguments(parser)
    add_arguments(parser)
    return parser


def _spanner_choice(args: argparse.Namespace) -> tuple[Any, str]:
    """The target database of ``--format spanner`` and its table: from ``--out`` or the database options."""
    from ...changelog.exports.spanner_table import DEFAULT_TABLE, parse_target
    from ...errors import ConfigurationError
    from ..connection import choice_from_args
    from ..database_choice import NoDatabaseError
    from ..main import CommandError

    options = vars(args)
    table = DEFAULT_TABLE
    if args.out is not None:
        given = [flag for flag in ("project", "instance", "database") if options.get(flag)]
        if given:
            raise CommandError(f"--out {args.out} and --{given[0]} both name the target database: give one")
        try:
            project, instance, database, table = parse_target(args.out)
        except ConfigurationError as exc:
            raise CommandError(f"--out: {exc}") from None
        options = {**options, "project": project, "instance": instance, "database": database}
    try:
        return choice_from_args(argparse.Namespace(**options)), table
    except NoDatabaseError as exc:
        raise CommandError(f"{exc} (or name the target as --out projects/P/instances/I/databases/D)") from None
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from google.api_core.exceptions import GoogleAPICallError

    from ...errors import ConfigurationError
    from ..connection import open_choice
    from ..main import CommandError
    from .snapshot_options import check_folder

    check_folder("--warehouse", args.warehouse, "run `spanner-watcher changelog` first, or name its --warehouse")
    if args.format != "spanner":
        if args.out is None:
            raise CommandError(f"--out is required with --format {args.format}: name the output folder")
        check_folder("--out", args.out)
        return _export(args, None)
    choice, table = _spanner_choice(args)  # checked before Spark starts
    try:
        with open_choice(choice, create=False) as target:
            return _export(args, (target, table))
    except ConfigurationError as exc:
        raise CommandError(f"--out: {exc}" if args.out else str(exc)) from None
    except GoogleAPICallError as exc:
        raise CommandError(f"{args.out or choice.database}: {exc.message}") from None


def _export(args: argparse.Namespace, spanner: tuple[Any, str] | None) -> int:
    """Write the export (``spanner``: the open target and its table, for --format spanner)."""
    from ...changelog import register_views
    from ...changelog.exports import FORMATS
    from ...errors import StorageURLError
    from ..main import CommandError

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
        if spanner is not None:
            target, table = spanner
            written = module.write_to_database(changelog, target.database, table)
            where = args.out or target.database.name
        elif args.stream_name and args.format == "datastream":
            written, where = module.write(changelog, args.out, args.stream_name), args.out
        else:
            written, where = module.write(changelog, args.out), args.out
    rows = f"{written} rows of " if isinstance(written, int) else ""  # only the Spanner table counts them
    print(f"wrote {rows}{args.format} export of version {committed.version} to {where}")
    return 0
