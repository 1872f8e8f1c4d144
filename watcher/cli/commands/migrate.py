"""``spanner-watcher migrate``: apply versioned migration folders to a database.

Example:
    $ spanner-watcher migrate --dry-run                                  # the watcher's own tables
    $ spanner-watcher migrate --dir ddl/samples/singers --project p --instance i --database d
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

NAME = "migrate"

#: Exit status when a migration could not be applied (usage errors exit with 2).
EXIT_FAILED = 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``migrate`` subcommand."""
    from ...schema_tools.migration_lock import DEFAULT_LOCK_TIMEOUT
    from ...schema_tools.migrations import MIGRATIONS_TABLE
    from ..connection import add_arguments

    parser = subparsers.add_parser(
        NAME, help="apply versioned .sql migrations (by default the watcher's own tables)",
        description="Apply the pending V<version>__<name>.sql files of each folder in version order, and record "
                    f"each applied file (version, checksum, time) in {MIGRATIONS_TABLE}. Running again applies "
                    "nothing new; a file changed after it was applied is refused. Each folder is tracked on its "
                    "own, under its name. One run at a time applies files: a run takes a lock (a row of "
                    f"{MIGRATIONS_TABLE}_LOCK) and waits while another live run holds it. In a PostgreSQL database both "
                    "tables have lower-case names and the files must be PostgreSQL: a pending file in the other "
                    "dialect stops the run before anything is applied.")
    parser.add_argument("--dir", dest="dirs", metavar="DIR", action="append", default=None,
                        help="a migration folder (repeat for several; default: the watcher's own tables, "
                             "shipped with the package, the same files as ddl/watcher, or ddl/watcher-postgresql "
                             "in a PostgreSQL database)")
    parser.add_argument("--folder-id", metavar="ID", default=None,
                        help="track the (single) --dir under this id instead of the folder's name")
    parser.add_argument("--dry-run", action="store_true", help="print what would run, change nothing")
    parser.add_argument("--table", default=MIGRATIONS_TABLE, help=f"the migrations table (default {MIGRATIONS_TABLE})")
    parser.add_argument("--lock-timeout", type=_seconds, default=DEFAULT_LOCK_TIMEOUT, metavar="SECONDS",
                        help="how long the migration lock lasts without renewal: a run that crashed blocks others "
                             f"this long, then its lock is taken over (default {DEFAULT_LOCK_TIMEOUT:.0f})")
    parser.add_argument("--lock-wait", type=_seconds, default=None, metavar="SECONDS",
                        help="stop with an error instead of waiting longer than this for another run's lock "
                             "(default: wait until it finishes; 0: do not wait)")
    add_arguments(parser)
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 or more), got {text!r}")
    return value


def _sets(args: argparse.Namespace) -> list[Any]:
    from ...schema_tools.migrations import MigrationSet, default_migrations
    from ..main import CommandError

    if args.folder_id and len(args.dirs or []) != 1:
        raise CommandError("--folder-id needs exactly one --dir")
    if not args.dirs:
        return [default_migrations()]
    missing = [d for d in args.dirs if not os.path.isdir(d)]
    if missing:  # a wrong path is a usage error; a bad file inside a folder is a migration that cannot apply
        raise CommandError(f"--dir {', '.join(missing)}: no such folder (give a folder of V<version>__<name>.sql files)")
    return [MigrationSet.from_directory(d, args.folder_id) for d in args.dirs]


def run(args: argparse.Namespace) -> int:
    from google.api_core.exceptions import GoogleAPICallError

    from ...errors import ConfigurationError, MigrationError
    from ...schema_tools.migrations import Migrator
    from ..connection import open_from_args
    from ..main import PROG, CommandError

    try:
        if args.lock_timeout <= 0:
            raise CommandError("--lock-timeout must be more than 0 seconds")
        sets = _sets(args)  # files are checked before any connection is made
        with open_from_args(args) as target:
            print(f"{target.describe()}", flush=True)
            migrator = Migrator(target.database, table=args.table, progress=lambda line: print(line, flush=True),
                                lock_timeout=args.lock_timeout, lock_wait=args.lock_wait)
            plan = migrator.migrate(sets, dry_run=True)
            for folder in plan.plans:
                for line in folder.describe(statements=args.dry_run):
                    print(line)
            pending = sum(len(folder.pending) for folder in plan.plans)
            if args.dry_run:
                print("dry run: nothing was changed")
                return 0
            if not pending:
                print("up to date: nothing to apply")
                return 0
            report = migrator.migrate(sets)
            late = sum(len(folder.pending) for folder in report.plans) < pending
            print(f"done: {len(report.applied)} file(s) applied"
                  + (" (another migrate run applied the others meanwhile)" if late else ""))
            if target.kind == "embedded" and args.data_dir is None:
                print(f"note: the embedded local Spanner kept this database in a temporary folder, now deleted; "
                      f"pass --data-dir, or point {PROG} at a server with SPANNER_EMULATOR_HOST, to keep it",
                      file=sys.stderr)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    except (MigrationError, GoogleAPICallError) as exc:
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return 0
