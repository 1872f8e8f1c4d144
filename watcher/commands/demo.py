"""``spanner-watcher demo``: the end-to-end demo on the embedded local Spanner.

Example:
    $ spanner-watcher demo --rows 500
"""

from __future__ import annotations

import argparse
from typing import Any

NAME = "demo"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        NAME, help="run the end-to-end demo on the embedded local Spanner",
        description="Start the embedded local Spanner, create the Singers sample database (commit-timestamp "
                    "column, FARM_FINGERPRINT shard column, NULL_FILTERED index), write and update rows "
                    "through the official client, read the changes back with the watcher's poll query, "
                    "and print what happened.")
    parser.add_argument("--rows", type=int, default=2_000, help="rows to write (default 2000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the generated rows (default 7)")
    return parser


def run(args: argparse.Namespace) -> int:
    from ..cli import CommandError
    from ..demo import run_demo

    if args.rows < 1:
        raise CommandError(f"--rows must be at least 1, got {args.rows}")
    run_demo(rows=args.rows, seed=args.seed)
    return 0
