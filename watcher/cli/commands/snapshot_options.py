"""Options shared by ``backfill`` and ``reconcile``: the table, the folders, how to split the read.

Example:
    >>> shard_values("-2..2")
    [-2, -1, 0, 1, 2]
    >>> shard_values('["eu", "us"]')
    ['eu', 'us']
"""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any

_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


def shard_values(text: str) -> list[Any]:
    """``LO..HI`` (integers, both included) or a JSON array of shard values."""
    match = _RANGE.match(text)
    if match:
        low, high = int(match.group(1)), int(match.group(2))
        if high < low:
            raise argparse.ArgumentTypeError(f"empty shard range {text!r}")
        return list(range(low, high + 1))
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, list) or not values or any(v is None for v in values):
        raise argparse.ArgumentTypeError(f"expected LO..HI or a non-empty JSON array of shard values, got {text!r}")
    return values


def json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a JSON value (null, 3, \"eu\", [1, 2]), got {text!r}") from None


def add_snapshot_arguments(parser: argparse.ArgumentParser) -> None:
    """Table, staging, warehouse, partitioning, read mode, Spark master, --json, the database and request options."""
    from ...changelog.snapshots.spanner_source import READ_MODES
    from ..connection import add_arguments
    from ..request_options import add_request_arguments
    from .spark_options import add_spark_arguments

    parser.add_argument("--table", required=True, help="the table to read")
    parser.add_argument("--staging", required=True, metavar="DIR", help="the staging folder the watchers write to: a path or URL (file:///..., hdfs://..., gs://...)")
    parser.add_argument("--warehouse", required=True, metavar="DIR", help="the changelog job's output folder (a path or URL)")
    parser.add_argument("--shard-column", default=None, metavar="COLUMN",
                        help="split the read by the values of this (usually generated) shard column")
    parser.add_argument("--shard-values", type=shard_values, default=None, metavar="LO..HI|JSON",
                        help="the shard values, e.g. --shard-values=-18..18 (with '=', as the value starts with '-') or "
                             "'[\"eu\", \"us\"]' (rows with other values or NULL "
                             "are read too, in one more partition)")
    parser.add_argument("--per-partition", type=int, default=4, metavar="N", help="shard values per Spark partition")
    parser.add_argument("--partitions", type=int, default=4, metavar="N",
                        help="without shards: Spark partitions, by a hash of the first key column (default 4)")
    parser.add_argument("--read-mode", choices=READ_MODES, default="auto",
                        help="kept for compatibility, no longer changes anything: every Spark task reads at "
                             "exactly the read timestamp, on the embedded local Spanner too (it keeps row versions)")
    add_spark_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_arguments(parser)
    add_request_arguments(parser, data_boost=True)


def check_folder(flag: str, path: str, missing: str | None = None) -> None:
    """Refuse a local path that is a file (or, with ``missing`` as the hint, that is absent) before anything starts.

    >>> check_folder("--staging", "/dev/null")
    Traceback (most recent call last):
    ...
    watcher.cli.main.CommandError: --staging /dev/null exists and is not a folder: name a folder (it is created when missing)
    """
    from ...storage_urls import local_path  # the one reading of folder URLs, shared with the sink
    from ..main import CommandError

    local = local_path(path)
    if local is None:  # another Hadoop file system: Spark checks it
        return
    path = local
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{flag} {path} exists and is not a folder: name a folder (it is created when missing)")
    if missing is not None and not os.path.isdir(path):
        raise CommandError(f"{flag} {path} is not a folder: {missing}")


def absolute_folder(path: str) -> str:
    """A local folder as an absolute path (relative ones under the working folder); a URL of another filesystem as given.

    The changelog job names its Delta tables in Spark SQL (``MERGE INTO delta.`<folder>/current_state```),
    and Delta's catalog takes such a name for a path only when it is absolute: a relative one is
    refused as a file query (UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY).

    >>> absolute_folder("/data/warehouse"), absolute_folder("file:///data/w"), absolute_folder("gs://b/w")
    ('/data/warehouse', '/data/w', 'gs://b/w')
    >>> absolute_folder("warehouse") == os.path.join(os.getcwd(), "warehouse")
    True
    """
    from ...storage_urls import parse

    return parse(path).local or path


def check_table(args: argparse.Namespace, database: Any) -> None:
    """The table and the shard column exist (and the request options can work): checked before Spark
    starts, as errors the user fixes."""
    from ...capture.table_info import discover, watchable_tables
    from ...errors import ConfigurationError, SchemaError
    from ..main import CommandError
    from ..request_options import settings_from_args

    settings_from_args(args)

    if (args.shard_column is None) != (args.shard_values is None):
        raise CommandError("--shard-column and --shard-values go together")
    try:
        info = discover(database, args.table)
    except (SchemaError, ConfigurationError) as exc:
        tables = ", ".join(watchable_tables(database)) or "none"
        raise CommandError(f"--table {args.table}: {exc} in {database.name} (tables with a commit-timestamp "
                           f"column: {tables})") from None
    if args.shard_column is not None and args.shard_column not in info.column_types:
        raise CommandError(f"--shard-column {args.shard_column} is not a column of {args.table} "
                           f"(columns: {', '.join(info.column_types)})")


def configure(job: Any, args: argparse.Namespace) -> Any:
    """Apply the shared options to a Backfill or Reconcile builder."""
    from ..main import CommandError
    from ..request_options import settings_from_args

    job.table(args.table).staging(args.staging).warehouse(args.warehouse).read_mode(args.read_mode)
    job.request_settings(settings_from_args(args))  # priority, request tag, Data Boost of the reads
    if (args.shard_column is None) != (args.shard_values is None):
        raise CommandError("--shard-column and --shard-values go together")
    if args.shard_column is not None:
        job.shards(args.shard_column, args.shard_values, args.per_partition)
    else:
        job.partitions(args.partitions)
    return job


def print_result(result: Any, as_json: bool, extra: str = "") -> None:
    if as_json:
        print(json.dumps(result.__dict__, indent=1, default=str))
        return
    print(f"{result.table}: {result.rows} rows read at {result.read_timestamp} in {result.partitions} partitions "
          f"({result.read_at_timestamp} at that timestamp), {len(result.batches)} batches staged{extra}, {result.seconds:.1f} s")
