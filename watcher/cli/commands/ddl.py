"""``spanner-watcher ddl ...``: print the DDL the helpers of :mod:`watcher.schema_tools.ddl` generate.

The output is a valid migration file (statements end with ``;``, notes are ``--``
comments), so it can go straight into a migration folder. ``--dialect postgresql`` prints the
statements for a PostgreSQL-dialect database; these subcommands do not connect to a database, so
GoogleSQL is the default. Column types may be written either way (``INT64`` or ``bigint``) in both.

Example:
    $ spanner-watcher ddl setup Singers --source FirstName --source LastName:STRING:not_null
    $ spanner-watcher ddl setup singers --source firstname --dialect postgresql
    $ spanner-watcher ddl commit-timestamp Performances --column LastUpdateTime --convert
    $ spanner-watcher ddl prune Singers --retention 1h                 # print, with the cutoff from the checkpoints
    $ spanner-watcher ddl prune Singers --retention 1h --execute       # or run it
    $ spanner-watcher ddl change-stream SingersStream --table Singers --table 'Albums(Title)' --retention 36h
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from collections.abc import Callable, Sequence
from typing import Any

NAME = "ddl"

#: Flag words accepted after ``:`` in --column and --source specifications.
_NOT_NULL = {"not_null", "notnull", "not-null"}
#: Units of a --retention duration.
_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_TRACKED_TABLE = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*\Z")
#: --dialect's values; the dialect objects are looked up when the command runs (the parser imports no client).
DIALECT_CHOICES = ("googlesql", "postgresql")
_DIALECT_HELP = ("the SQL dialect of the database the DDL is for (default googlesql: this command does not "
                 "connect to a database, so it cannot read the database's own)")


def parse_duration(text: str) -> dt.timedelta:
    """``1h``, ``30m``, ``1h30m``, ``2d``, ``90s`` or ``0`` as a timedelta.

    >>> parse_duration("1h30m"), parse_duration("0")
    (datetime.timedelta(seconds=5400), datetime.timedelta(0))
    """
    compact = text.strip().lower()
    if compact == "0":
        return dt.timedelta(0)
    parts = _DURATION.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use e.g. 90s, 30m, 1h, 1h30m or 2d")
    return sum((dt.timedelta(**{_UNITS[unit]: float(number)}) for number, unit in parts), dt.timedelta(0))


def _split_spec(text: str, what: str) -> tuple[str, str | None, bool]:
    """``NAME[:TYPE][:not_null]`` -> (name, type or None, not_null)."""
    parts = text.split(":")
    not_null = len(parts) > 1 and parts[-1].lower() in _NOT_NULL
    if not_null:
        parts = parts[:-1]
    if len(parts) > 2 or not parts[0]:
        raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: expected NAME[:TYPE][:not_null]")
    return parts[0], parts[1] if len(parts) == 2 else None, not_null


def _column_spec(text: str) -> Any:
    from ...schema_tools.ddl import ColumnDef

    name, type_, not_null = _split_spec(text, "column")
    if type_ is None:
        raise argparse.ArgumentTypeError(f"invalid column {text!r}: expected NAME:TYPE[:not_null], e.g. SingerId:INT64:not_null")
    return lambda: ColumnDef(name, type_, not_null=not_null)


def _source_spec(text: str) -> Any:
    from ...schema_tools.ddl import ShardSource

    name, type_, not_null = _split_spec(text, "source column")
    return lambda: ShardSource(name, type_ or "STRING", not_null=not_null)


def tracked_table(text: str) -> tuple[str, tuple[str, ...] | None]:
    """``Table`` (all columns), ``Table(c1, c2)`` or ``Table()`` (keys only), as a change stream tracks it.

    >>> tracked_table("Singers"), tracked_table("Albums(Title, Year)"), tracked_table("Songs()")
    (('Singers', None), ('Albums', ('Title', 'Year')), ('Songs', ()))
    """
    match = _TRACKED_TABLE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid table {text!r}: expected TABLE, TABLE(COLUMN, ...) or TABLE() for keys only")
    table, columns = match.group(1), match.group(2)
    if columns is None:
        return table, None
    names = tuple(c.strip() for c in columns.split(",") if c.strip())
    if columns.strip() and len(names) != len(columns.split(",")):
        raise argparse.ArgumentTypeError(f"invalid table {text!r}: an empty column name in the list")
    return table, names


def _dialect_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dialect", type=str.lower, choices=DIALECT_CHOICES, default="googlesql", help=_DIALECT_HELP)


def dialect_named(name: str) -> Any:
    """The :class:`~watcher.dialects.Dialect` a --dialect value names.

    >>> dialect_named("postgresql"), dialect_named("googlesql")
    (PostgreSQL, GoogleSQL)
    """
    from ...dialects import GOOGLE_SQL, POSTGRESQL

    return {"googlesql": GOOGLE_SQL, "postgresql": POSTGRESQL}[name]


def _shard_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    from ...schema_tools.ddl import DEFAULT_SHARD_COLUMN, DEFAULT_SHARDS

    parser.add_argument("--source", dest="sources", metavar="NAME[:TYPE][:not_null]", type=_source_spec, action="append",
                        required=required, help="a column the shard is computed from (repeat for several; nullable ones "
                                                "are wrapped in COALESCE; TYPE defaults to STRING)")
    parser.add_argument("--shards", type=int, default=DEFAULT_SHARDS,
                        help=f"N of MOD(FARM_FINGERPRINT(...), N): 2N-1 shard values (default {DEFAULT_SHARDS})")
    parser.add_argument("--shard-column", default=DEFAULT_SHARD_COLUMN, help=f"default {DEFAULT_SHARD_COLUMN}")
    parser.add_argument("--processed-column", default=None, metavar="NAME",
                        help="NULL the shard while this BOOL column is true (rows marked processed leave the index)")
    parser.add_argument("--separator", default=" ", help="text between source values (default one space)")


def _index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index-name", default=None, help="default Idx_<table>_<shard column>_<commit timestamp column>")
    parser.add_argument("--storing", nargs="+", default=(), metavar="COLUMN", help="columns the index stores")


def _ts_option(parser: argparse.ArgumentParser) -> None:
    from ...schema_tools.ddl import DEFAULT_COMMIT_TIMESTAMP_COLUMN

    parser.add_argument("--commit-timestamp-column", default=DEFAULT_COMMIT_TIMESTAMP_COLUMN,
                        help=f"default {DEFAULT_COMMIT_TIMESTAMP_COLUMN}")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``ddl`` subcommand and its own subcommands."""
    parser = subparsers.add_parser(
        NAME, help="print the DDL for commit timestamps, shard columns and the index the watcher polls",
        description="Print the DDL for what the watcher needs: commit-timestamp columns, a computed "
                    "FARM_FINGERPRINT shard column, the NULL-filtered (shard, commit timestamp) index, or all of it "
                    "at once with the matching watcher settings, in GoogleSQL or (--dialect postgresql) PostgreSQL. "
                    "The output can be saved as a migration file.")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True, parser_class=type(parser))

    p = kinds.add_parser("commit-timestamp", help="add, convert or remove a commit-timestamp column")
    p.add_argument("table")
    p.add_argument("--column", default="LastUpdated", help="default LastUpdated")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--add", dest="mode", action="store_const", const="add", help="ALTER TABLE ... ADD COLUMN")
    mode.add_argument("--convert", dest="mode", action="store_const", const="convert",
                      help="make an existing TIMESTAMP column a commit-timestamp column (GoogleSQL: SET OPTIONS "
                           "(allow_commit_timestamp=true); PostgreSQL: TYPE spanner.commit_timestamp)")
    mode.add_argument("--remove", dest="mode", action="store_const", const="remove",
                      help="make it a plain timestamp again (allow_commit_timestamp=null; PostgreSQL: TYPE timestamptz)")
    p.add_argument("--not-null", action="store_true", help="with --add: NOT NULL (works on an empty table only)")
    _dialect_option(p)

    p = kinds.add_parser("shard-column", help="add a computed shard column to an existing table")
    p.add_argument("table")
    _shard_options(p)
    _dialect_option(p)

    p = kinds.add_parser("index", help="the NULL-filtered index on (shard, commit timestamp)")
    p.add_argument("table")
    p.add_argument("--shard-column", default="ShardId", help="default ShardId")
    _ts_option(p)
    _index_options(p)
    _dialect_option(p)

    p = kinds.add_parser("setup", help="everything for an existing table, plus the watcher settings")
    p.add_argument("table")
    _shard_options(p)
    _ts_option(p)
    _index_options(p)
    p.add_argument("--commit-timestamp", choices=("existing", "add", "convert"), default="existing",
                   help="the commit-timestamp column exists already, must be added, or is a TIMESTAMP to convert")
    p.add_argument("--processed-exists", action="store_true", help="the table has its --processed-column already")
    _dialect_option(p)

    p = kinds.add_parser("table", help="a new table with all of it, plus the watcher settings")
    p.add_argument("table")
    p.add_argument("--column", dest="columns", metavar="NAME:TYPE[:not_null]", type=_column_spec, action="append",
                   required=True, help="a column of the table (repeat); the commit-timestamp column is added if missing")
    p.add_argument("--primary-key", nargs="+", required=True, metavar="COLUMN")
    _shard_options(p)
    _ts_option(p)
    _index_options(p)
    p.add_argument("--allow-hotspot", action="store_true",
                   help="allow the commit-timestamp column as the first primary-key column")
    _dialect_option(p)

    _change_stream_parser(kinds)

    from ...checkpoints.spanner import DEFAULT_TABLE as CHECKPOINTS
    from ..connection import add_arguments
    from ..request_options import add_request_arguments

    p = kinds.add_parser(
        "prune", help="take rows the watchers no longer need out of the index they poll (print or run it)",
        description="Take rows unchanged for longer than --retention out of the index the watchers poll (partitioned DML, so the index stays small), "
                    "never past what the watchers have delivered: the cutoff is the oldest checkpoint of the table "
                    "in --checkpoint-table (or now, if earlier) minus --retention. Prints the statement with that "
                    "cutoff as a literal, or runs it with --execute. Refuses when the table has no checkpoint.")
    p.add_argument("table")
    _ts_option(p)
    p.add_argument("--processed-column", default=None, metavar="NAME", help="mark rows processed instead of nulling")
    p.add_argument("--retention", type=parse_duration, default=dt.timedelta(0), metavar="DURATION",
                   help="keep rows changed within this long before the cutoff in the index, e.g. 1h, 30m, 2d (default 0)")
    p.add_argument("--checkpoint-table", default=CHECKPOINTS, metavar="NAME",
                   help=f"where the watchers keep their checkpoints (default {CHECKPOINTS})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="run the pruning against the database instead of printing it")
    mode.add_argument("--template", action="store_true",
                      help="print the statement with a @cutoff parameter, without reading any checkpoint")
    p.add_argument("--dialect", type=str.lower, choices=DIALECT_CHOICES, default=None,
                   help="the SQL dialect of the statement (default: the database's own; with --template, which reads "
                        "no database, googlesql)")
    add_arguments(p)
    add_request_arguments(p)
    return parser


def _change_stream_parser(kinds: Any) -> None:
    from ...schema_tools.ddl.change_streams import VALUE_CAPTURE_TYPES

    p = kinds.add_parser(
        "change-stream", help="CREATE, ALTER or DROP the change stream the change-stream capture mode reads",
        description="Print a CREATE CHANGE STREAM (default), its ALTER ... SET FOR (--alter) or its DROP (--drop). "
                    "Without --table the stream tracks ALL tables. Options not given are left to Spanner's "
                    "defaults (retention 1d, OLD_AND_NEW_VALUES).")
    p.add_argument("stream", help="the change stream's name, as the watcher's mode = \"change_stream\" names it")
    p.add_argument("--table", dest="tables", action="append", type=tracked_table, metavar="TABLE[(COL, ...)]",
                   help="a table to track (repeat): TABLE for all its columns, TABLE(c1, c2) for some, TABLE() for "
                        "keys only; default: FOR ALL")
    p.add_argument("--none", action="store_true", help="track nothing yet (CREATE without FOR; with --alter: DROP FOR ALL)")
    p.add_argument("--retention", dest="retention_period", metavar="TIMESPAN",
                   help="retention_period, e.g. 36h or 7d (Spanner's default 1d)")
    p.add_argument("--value-capture-type", type=str.upper, choices=VALUE_CAPTURE_TYPES,
                   help="what each change record carries (Spanner's default OLD_AND_NEW_VALUES)")
    for flag in ("exclude-insert", "exclude-update", "exclude-delete", "exclude-ttl-deletes", "allow-txn-exclusion"):
        p.add_argument(f"--{flag}", action="store_true", default=None, help=f"set {flag.replace('-', '_')} = true")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--alter", action="store_true", help="print ALTER CHANGE STREAM ... SET FOR (the tables only)")
    mode.add_argument("--drop", action="store_true", help="print DROP CHANGE STREAM")
    _dialect_option(p)


def _change_stream(args: argparse.Namespace) -> list[str]:
    from ...schema_tools.ddl import change_streams as cs

    if args.tables and args.none:
        raise argparse.ArgumentTypeError("--table and --none exclude each other")
    tracking: Any = None if args.none else (dict(args.tables) if args.tables else cs.ALL)
    if args.tables and len({t.lower() for t, _ in args.tables}) != len(args.tables):
        raise argparse.ArgumentTypeError("a table is given twice with --table")
    dialect = dialect_named(args.dialect)
    if args.drop:
        return [cs.drop_change_stream(args.stream, dialect=dialect)]
    if args.alter:
        return [cs.alter_change_stream_tracking(args.stream, tracking, dialect=dialect)]
    return [cs.create_change_stream(
        args.stream, tracking, retention_period=args.retention_period, value_capture_type=args.value_capture_type,
        exclude_insert=args.exclude_insert, exclude_update=args.exclude_update, exclude_delete=args.exclude_delete,
        exclude_ttl_deletes=args.exclude_ttl_deletes, allow_txn_exclusion=args.allow_txn_exclusion, dialect=dialect)]


def _settings(setup: Any) -> list[str]:
    provider = setup.shard_column
    return ["-- Watcher settings for this schema:",
            f"--   shard_provider=FixedShardProvider({provider.name!r}, range({provider.values.start}, {provider.values.stop})),",
            f"--   table_hint={setup.table_hint!r}"]


def _commit_timestamp(args: argparse.Namespace) -> list[str]:
    from ...schema_tools import ddl

    dialect = dialect_named(args.dialect)
    actions: dict[str, Callable[[], str]] = {
        "add": lambda: ddl.add_commit_timestamp_column(args.table, args.column, not_null=args.not_null, dialect=dialect),
        "convert": lambda: ddl.enable_commit_timestamp(args.table, args.column, dialect=dialect),
        "remove": lambda: ddl.disable_commit_timestamp(args.table, args.column, dialect=dialect),
    }
    return [actions[args.mode]()]


def _shard_column(args: argparse.Namespace) -> list[str]:
    from ...schema_tools import ddl

    column = ddl.shard_column(args.shard_column, [s() for s in args.sources], args.shards,
                              processed_column=args.processed_column, separator=args.separator)
    return [ddl.add_column(args.table, column, dialect=dialect_named(args.dialect))]


def _index(args: argparse.Namespace) -> list[str]:
    from ...schema_tools import ddl

    return [ddl.shard_index(args.table, args.shard_column, args.commit_timestamp_column, name=args.index_name,
                            storing=args.storing, dialect=dialect_named(args.dialect))]


def _setup(args: argparse.Namespace) -> list[str]:
    from ...schema_tools import ddl

    setup = ddl.sharded_polling(args.table, [s() for s in args.sources], shards=args.shards,
                                commit_timestamp_column=args.commit_timestamp_column,
                                commit_timestamp=args.commit_timestamp, shard_column_name=args.shard_column,
                                processed_column=args.processed_column, add_processed_column=not args.processed_exists,
                                storing=args.storing, index_name=args.index_name, separator=args.separator,
                                dialect=dialect_named(args.dialect))
    return [*setup.statements, *_settings(setup)]


def _table(args: argparse.Namespace) -> list[str]:
    from ...schema_tools import ddl

    setup = ddl.sharded_table(args.table, [c() for c in args.columns], args.primary_key, [s() for s in args.sources],
                              shards=args.shards, commit_timestamp_column=args.commit_timestamp_column,
                              shard_column_name=args.shard_column, processed_column=args.processed_column,
                              storing=args.storing, index_name=args.index_name, separator=args.separator,
                              allow_hotspot=args.allow_hotspot, dialect=dialect_named(args.dialect))
    return [*setup.statements, *_settings(setup)]


def _prune(args: argparse.Namespace) -> list[str]:
    from ...schema_tools.pruning import CUTOFF_PARAM, PruneSpec, prune_statement
    from .ddl_prune import bounded_prune

    spec = PruneSpec(args.table, args.retention, args.commit_timestamp_column, args.processed_column)
    if args.template:
        dialect = dialect_named(args.dialect or "googlesql")
        parameter = dialect.bind(f"@{CUTOFF_PARAM}", {CUTOFF_PARAM: None}, {}).sql   # @cutoff, or $1
        return [f"-- Run as partitioned DML, with {parameter} = the table's oldest checkpoint (or now, if earlier) "
                "minus the retention.", prune_statement(spec, dialect=dialect)]
    return bounded_prune(args, spec)


_KINDS: dict[str, Callable[[argparse.Namespace], list[str]]] = {
    "commit-timestamp": _commit_timestamp,
    "shard-column": _shard_column,
    "index": _index,
    "setup": _setup,
    "table": _table,
    "prune": _prune,
    "change-stream": _change_stream,
}


def render(lines: Sequence[str]) -> str:
    """Statements end with ';' and a blank line; comment lines are printed as they are.

    >>> print(render(["CREATE TABLE A (K INT64) PRIMARY KEY (K)", "-- note"]))
    CREATE TABLE A (K INT64) PRIMARY KEY (K);
    <BLANKLINE>
    -- note
    """
    out = []
    for line in lines:
        out.append(line if line.startswith("--") else line + ";\n")
    return "\n".join(out).rstrip("\n")


def run(args: argparse.Namespace) -> int:
    import warnings

    from ...errors import ConfigurationError, DdlError
    from ..main import CommandError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lines = _KINDS[args.kind](args)
        except (DdlError, ConfigurationError, argparse.ArgumentTypeError) as exc:
            raise CommandError(str(exc)) from None
    print(render([*(f"-- warning: {w.message}" for w in caught), *lines]))
    return 0
