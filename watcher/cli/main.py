"""The ``spanner-watcher`` command line: a thin layer over the library.

Subcommands live in their own modules (``watcher/cli/commands/``), listed in
:data:`COMMANDS`; each module provides ``NAME``, ``add_parser(subparsers)`` and
``run(args) -> int``. To add a subcommand, write such a module and list it here.

Example:
    >>> main(["local-spanner", "--port", "not-a-port"])  # doctest: +SKIP
    spanner-watcher local-spanner: error: argument --port: ...
    2
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from ..errors import MissingExtraError
from ..extras import explain, require_for_command
from .log_setup import add_logging_options, add_logging_options_everywhere, configure_logging, level_of

# grpcio 1.80+ restarts its poller in a forked child, which then crashes before exec when the
# parent has a live channel (grpc/grpc#43055): Spark's JVM is started with fork + exec after the
# commands have talked to Spanner, and died with "Java gateway process exited". Nothing here
# uses gRPC in a forked child, so the fork handlers are not needed. Read when grpc is first imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

_log = logging.getLogger(__name__)

PROG = "spanner-watcher"
#: The distribution whose installed version \`\`--version\`\` prints.
DISTRIBUTION = "spanner-watcher"

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "watcher.cli.commands.demo",
    "watcher.cli.commands.local_spanner",
    "watcher.cli.commands.migrate",
    "watcher.cli.commands.watch",
    "watcher.cli.commands.bench",
    "watcher.cli.commands.ddl",
    "watcher.cli.commands.changelog",
    "watcher.cli.commands.export",
    "watcher.cli.commands.backfill",
    "watcher.cli.commands.reconcile",
)

#: Exit status for usage errors and for errors the user can fix (bad option, busy port).
EXIT_USAGE = 2


class CommandError(Exception):
    """A problem the user can fix; the CLI prints it as one line and exits with status 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (plus a hint), exit status 2."""

    def error(self, message: str) -> NoReturn:
        if message.endswith("expected one argument"):  # argparse takes a value like -18..18 for an option
            message += " (a value that starts with '-' is written --option=VALUE)"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def package_version() -> str:
    """The installed version of the package (its distribution's metadata), or a note that it is not installed.

    >>> package_version() == importlib.metadata.version(DISTRIBUTION)
    True
    """
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (the package is not installed; run pip install .)"


def _load(path: str) -> ModuleType:
    return importlib.import_module(path)


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with one subcommand per module in ``commands``."""
    parser = _Parser(prog=PROG, description="Watch Google Cloud Spanner tables for changes, "
                     "and run the tools around it (a local Spanner server among them).")
    add_logging_options(parser)
    parser.add_argument("--version", action="version", version=f"{PROG} {package_version()}",
                        help="print the installed version of %(prog)s and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for path in commands:
        module = _load(path)
        sub = module.add_parser(subparsers)
        sub.set_defaults(_run=module.run)
    add_logging_options_everywhere(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    configure_logging(args)
    _log.debug("%s %s %s, logging at %s", PROG, package_version(), args.command, level_of(args))
    try:
        require_for_command(args.command, f"{PROG} {args.command}")  # an extra it needs: one line, before any work
        return int(args._run(args))
    except CommandError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (MissingExtraError, ModuleNotFoundError) as exc:  # a module of an extra met later: the same one line
        missing = exc if isinstance(exc, MissingExtraError) else explain(exc, f"{PROG} {args.command}")
        if missing is None:
            raise
        print(f"{PROG}: error: {missing}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
