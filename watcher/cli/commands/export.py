"""``spanner-watcher export``: the changelog as BigQuery CDC rows, Datastream events or a Spanner table, incrementally.

Example:
    $ spanner-watcher export --warehouse ./warehouse --format bigquery --out ./bq
    $ spanner-watcher export --warehouse ./warehouse --format bigquery --out ./bq --source-database orders
    $ spanner-watcher export --warehouse ./warehouse --format spanner --out projects/p/instances/i/databases/d
    $ spanner-watcher export --warehouse ./warehouse --format spanner --project p --instance i --database d

Each export adds the changelog runs its target does not hold yet (:mod:`watcher.changelog.exports`):
a folder gets one ``increment=N`` folder and its progress file, a Spanner table the rows and its
progress row. A warehouse of the layout before Delta tables is refused, naming ``changelog --convert``.

``--format spanner`` names its database by ``--out`` or by the database options (flags, else
SPANNER_PROJECT / SPANNER_INSTANCE / SPANNER_DATABASE; see :mod:`watcher.cli.database_choice`);
with neither, and no SPANNER_EMULATOR_HOST, it stops (``--embedded`` for the embedded server).
"""

from __future__ import annotations

import argparse
from typing import Any

from .spark_options import add_spark_arguments, executor_failures, session

NAME = "export"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand."""
    from ...changelog.exports import FORMATS
    from ..connection import add_arguments

    parser = subparsers.add_parser(
        NAME, help="export the changelog incrementally (BigQuery CDC rows, Datastream-style events, a Spanner table)",
        description="Export the committed changelog of a warehouse, incrementally: each export adds the changelog "
                    "job's runs that the target does not hold yet, so a change that arrives in a later run is "
                    "exported once, however old its commit timestamp, and an export with nothing new writes nothing. "
                    "'bigquery' rows carry _CHANGE_TYPE (UPSERT/DELETE) and _CHANGE_SEQUENCE_NUMBER (commit order "
                    "per key, across exports); 'datastream' events carry uuid, read_timestamp, source_timestamp, "
                    "object, read_method, schema_key, sort_keys, source_metadata and the payload. Both write JSON "
                    "lines into --out, one folder per export (increment=N/), inside it one per source database and "
                    "table, and record their progress in --out/_export_progress.json after the files. 'spanner' "
                    "writes the changelog into a table of a Spanner database (created when missing) and records "
                    "its progress in the table SpannerWatcherExportProgress there; a row written again replaces "
                    "itself. A target keeps the selection it was first exported with (--source-*, --table, --since).",
        epilog="exit status: 0 done (also when nothing was new); 2 bad arguments (unknown table, no changelog yet, "
               "a target holding another selection, format or warehouse, no target database named, unknown or "
               "unreachable target database)")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the changelog job's output folder")
    parser.add_argument("--format", required=True, choices=sorted(FORMATS), help="what to write")
    parser.add_argument("--out", default=None, metavar="DIR|DATABASE",
                        help="output folder (new, or one an export wrote; required but for --format spanner); for "
                             "--format spanner the database (and table) to write to: "
                             "projects/P/instances/I/databases/D[/tables/T] (through SPANNER_EMULATOR_HOST when set), "
                             "else the database options name it")
    parser.add_argument("--table", action="append", default=[], metavar="TABLE", help="only this table; repeatable")
    for part, words in (("project", "of watched databases in this Google Cloud project"),
                        ("instance", "of watched databases in this Spanner instance"),
                        ("database", "of the watched database of this name (a warehouse may hold several "
                                     "databases' changes, same-named tables apart)")):
        parser.add_argument(f"--source-{part}", default=None, metavar=part.upper(), help=f"only the changes {words}")
    parser.add_argument("--since", default=None, metavar="TIMESTAMP",
                        help="only changes committed after this RFC 3339 timestamp (to nine fractional digits)")
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
    from .warehouse_options import check_warehouse

    check_folder("--warehouse", args.warehouse, "run `spanner-watcher changelog` first, or name its --warehouse")
    check_warehouse(args.warehouse)
    selection = _selection(args)  # checked before Spark starts
    if args.format != "spanner":
        if args.out is None:
            raise CommandError(f"--out is required with --format {args.format}: name the output folder")
        check_folder("--out", args.out)
        return _export(args, selection, None)
    choice, table = _spanner_choice(args)
    try:
        with open_choice(choice, create=False) as target:
            return _export(args, selection, (target, table))
    except ConfigurationError as exc:
        raise CommandError(f"--out: {exc}" if args.out else str(exc)) from None
    except GoogleAPICallError as exc:
        raise CommandError(f"{args.out or choice.database}: {exc.message}") from None


def _selection(args: argparse.Namespace) -> Any:
    from ...changelog.exports import Selection
    from ...errors import ConfigurationError
    from ..main import CommandError

    try:
        return Selection(args.source_project, args.source_instance, args.source_database, tuple(args.table), args.since)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None


def _export(args: argparse.Namespace, selection: Any, spanner: tuple[Any, str] | None) -> int:
    """Export the runs the target does not hold (``spanner``: the open target and its table)."""
    from ...changelog.exports.folder_target import FolderExport
    from ...changelog.exports.rows import snapshot
    from ...changelog.exports.spanner_target import SpannerExport
    from ...errors import StorageURLError, WatcherError
    from ..main import CommandError

    try:  # no changelog yet, or a table it does not hold: said before Spark starts
        snapshot(args.warehouse).check_tables(selection)
    except WatcherError as exc:
        raise CommandError(str(exc)) from None
    done: Any
    try:
        spark = session(args, "spanner-watcher export")
        with executor_failures():  # the Spanner-table export writes from the executors
            if spanner is not None:
                target, table = spanner
                done = SpannerExport(spark, args.warehouse, target.database, table, selection).run()
                where, rows = args.out or target.database.name, done.written
                what = f"{rows} rows of spanner export"
                new = done.increment is not None
            else:
                options = {"stream_name": args.stream_name} if args.format == "datastream" else {}
                done = FolderExport(spark, args.warehouse, args.out, args.format, selection, options=options).run()
                where, new = args.out, done.written is not None
                rows = done.written.total if new else 0
                what = f"{args.format} export"
    except (WatcherError, StorageURLError) as exc:  # a target holding another selection, an unknown table, ...
        raise CommandError(str(exc)) from None
    progress = done.progress
    if not new and not progress.last_run:
        print(f"nothing to export to {where}: the changelog holds no run yet")
    elif not new:
        print(f"nothing new for {where}: it holds the changelog up to run {progress.last_run}")
    else:
        print(f"wrote {what} of version {progress.last_run} to {where} "
              f"(increment {len(progress.increments)}: {rows} rows, Delta version {progress.delta_version})")
    return 0
