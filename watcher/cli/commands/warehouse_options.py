"""The warehouse's upkeep on the command line: conversion of the old layout, its refusal, retention.

Every command that opens a warehouse calls :func:`check_warehouse` before it starts work, so a
warehouse of the Parquet layout of older versions is refused with one line naming
``spanner-watcher changelog --convert --warehouse DIR``. ``changelog`` takes the options of
:func:`add_arguments`: ``--convert`` (:mod:`watcher.changelog.tables.convert`) and the retention
options (:mod:`watcher.changelog.tables.retention`), applied after its run committed, and
``--compact-files`` (:mod:`watcher.changelog.tables.compaction`, which the run applies itself).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(); add_arguments(parser)
    >>> policy(parser.parse_args(["--history-retention", "400d", "--vacuum-retention"])).vacuum
    datetime.timedelta(days=7)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any

#: ``--vacuum-retention`` given without a value: Delta's default.
DEFAULT_VACUUM_TEXT = "7d"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--convert`` and the retention options of the ``changelog`` command."""
    parser.add_argument("--convert", action="store_true",
                        help="convert a warehouse of the Parquet layout of older versions into the Delta tables, once "
                             "(the old folders are kept in <warehouse>/_old_layout; nothing else runs)")
    parser.add_argument("--remove-old-layout", action="store_true",
                        help="with --convert: delete the old folders once the Delta tables are in place")
    parser.add_argument("--staging-retention", metavar="AGE",
                        help="after the run, delete staged batch files a complete run consumed at least AGE ago "
                             "(30d, 36h, 90m); batches no complete run consumed always stay")
    parser.add_argument("--history-retention", metavar="AGE",
                        help="after the run, drop changelog rows of commit dates older than AGE (whole days; the "
                             "current state keeps every key); keep it longer than any watcher may lag")
    parser.add_argument("--vacuum-retention", metavar="AGE", nargs="?", const=DEFAULT_VACUUM_TEXT,
                        help="after the run, VACUUM the Delta tables keeping AGE of old versions (default 7d, "
                             "Delta's; time travel past it is gone); shorter needs --force-vacuum-retention")
    parser.add_argument("--force-vacuum-retention", action="store_true",
                        help="allow a --vacuum-retention under 7 days")
    parser.add_argument("--compact-files", type=int, metavar="N", default=None,
                        help="after the run, compact a table once one of its partitions holds N small files (default: "
                             "the job's, 256; 0: never): the same rows in fewer files, which readers plan and scan faster")


def check_warehouse(warehouse: str) -> None:
    """Refuse a warehouse that holds the old layout (one line naming ``--convert``), as a usage error."""
    from ...changelog.tables.convert import OldLayoutError, refuse_old_layout
    from ...errors import StorageURLError
    from ..main import CommandError

    try:
        refuse_old_layout(warehouse)
    except OldLayoutError as exc:
        raise CommandError(str(exc)) from None
    except StorageURLError:
        return  # a filesystem only Spark's JVM opens here: the job's own check looks at it


def policy(args: argparse.Namespace) -> Any:
    """The retention policy the options ask for (every rule off without them)."""
    from ...changelog.tables.retention import RetentionPolicy, parse_duration
    from ...errors import ConfigurationError
    from ..main import CommandError

    def age(option: str) -> dt.timedelta | None:
        text = getattr(args, option.lstrip("-").replace("-", "_"))
        return None if text is None else parse_duration(text, option)

    try:
        return RetentionPolicy(staging=age("--staging-retention"), history=age("--history-retention"),
                               vacuum=age("--vacuum-retention"), force_vacuum=args.force_vacuum_retention).check()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None


def apply_retention(args: argparse.Namespace, now: dt.datetime | None = None) -> dict[str, Any] | None:
    """Apply the retention options after a run; returns what was removed (None: no option given)."""
    from ...changelog.tables import retention

    wanted = policy(args)
    if not wanted.active:
        return None
    done = retention.apply(args.warehouse, args.staging, wanted, now or dt.datetime.now(dt.UTC))
    return retention.summary(done)


def source_of(args: argparse.Namespace) -> tuple[str, str, str]:
    """The source database the command's ``--source-*`` options name (the embedded one's by default)."""
    from ..database_choice import DEFAULTS

    return tuple(getattr(args, f"source_{part}", None) or DEFAULTS[part]  # type: ignore[return-value]
                 for part in ("project", "instance", "database"))


def convert(args: argparse.Namespace) -> int:
    """``spanner-watcher changelog --convert --warehouse DIR``: convert, say what was done and where the old folders are."""
    from ...changelog.tables.convert import convert as run_conversion
    from ...errors import ChangelogError
    from ..main import PROG

    try:
        done = run_conversion(args.warehouse, source=source_of(args), keep_old=not args.remove_old_layout)
    except ChangelogError as exc:
        import sys

        print(f"{PROG} changelog --convert: failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(done.__dict__, indent=1, default=str))
    elif not done.converted:
        print(f"{done.warehouse}: nothing to convert (no Parquet layout of older versions)")
    else:
        rows = ", ".join(f"{n} {table}" for table, n in done.rows.items()) or "the tables were written before"
        print(f"{done.warehouse}: converted into Delta tables as run {done.run_version} ({rows})")
        if done.old_layout:
            print(f"  the old folders are in {done.old_layout}: nothing reads them now; delete it when satisfied")
    return 0
