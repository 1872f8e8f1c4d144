"""``spanner-watcher export``: the changelog as BigQuery CDC rows or Datastream events.

Example:
    $ spanner-watcher export --warehouse ./warehouse --format bigquery --out ./bq
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

NAME = "export"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand."""
    from ..changelog.exports import FORMATS

    parser = subparsers.add_parser(
        NAME, help="export the changelog (BigQuery CDC rows, Datastream-style events)",
        description="Write the committed changelog of a warehouse as JSON lines, one folder per table: "
                    "'bigquery' rows carry _CHANGE_TYPE (UPSERT/DELETE) and _CHANGE_SEQUENCE_NUMBER; "
                    "'datastream' events carry uuid, read_timestamp, source_timestamp, object, read_method, "
                    "schema_key, sort_keys, source_metadata and the payload. The output folder is replaced.",
        epilog="exit status: 0 done; 2 bad arguments (unknown table, no changelog yet)")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the changelog job's output folder")
    parser.add_argument("--format", required=True, choices=sorted(FORMATS), help="what to write")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (replaced)")
    parser.add_argument("--table", action="append", default=[], metavar="TABLE", help="only this table; repeatable")
    parser.add_argument("--since", default=None, metavar="TIMESTAMP",
                        help="only changes committed after this RFC 3339 timestamp (nine fractional digits)")
    parser.add_argument("--stream-name", default=None, help="stream_name of datastream events")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    return parser


def run(args: argparse.Namespace) -> int:
    from ..changelog import register_views
    from ..changelog.exports import FORMATS
    from ..changelog.session import get_session
    from ..cli import CommandError

    spark = get_session(args.master, "spanner-watcher export")
    committed = register_views(spark, args.warehouse)
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
    if args.stream_name and args.format == "datastream":
        module.write(changelog, args.out, args.stream_name)
    else:
        module.write(changelog, args.out)
    print(f"wrote {args.format} export of version {committed.version} to {args.out}")
    return 0
