"""``spanner-watcher local-spanner``: run the embedded Spanner-compatible server.

Example:
    $ spanner-watcher local-spanner --port 9010 --data-dir ./spanner-data
    export SPANNER_EMULATOR_HOST=127.0.0.1:9010
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

NAME = "local-spanner"


def port_number(text: str) -> int:
    """An argparse type for a TCP port (0: any free port); the one check the subcommands share."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected a number from 0 to 65535") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: expected a number from 0 to 65535")
    return port


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``local-spanner`` subcommand."""
    from ...localspanner.common.limits import DEFAULT_HOST, DEFAULT_PORT

    parser = subparsers.add_parser(
        NAME, help="run a local Spanner-compatible server (no cloud account, no Docker)",
        description="Run an embedded server that the official Spanner client libraries talk to "
                    "through SPANNER_EMULATOR_HOST. Stop it with Ctrl-C (or SIGTERM).")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                        help=f"port to listen on; 0 picks a free one (default {DEFAULT_PORT})")
    parser.add_argument("--data-dir", metavar="DIR", default=None,
                        help="folder that keeps the databases between runs (default: a temporary "
                             "folder, deleted when the server stops)")
    parser.add_argument("--shared-commit-timestamps", action="store_true",
                        help="let consecutive blind-write commits that write different rows share a commit "
                             "timestamp, as Spanner may (default: every commit timestamp is unique)")
    parser.add_argument("--change-stream-partition-churn-seconds", type=float, default=0.0, metavar="SECONDS",
                        help="split and merge change stream partitions every SECONDS, so readers must follow "
                             "child partitions (default 0: one partition per stream, never churning)")
    parser.add_argument("--change-stream-split-rate", type=float, default=0.0, metavar="RECORDS_PER_SECOND",
                        help="split a change stream partition whose write rate stays above this many data change "
                             "records per second, as Spanner splits by load (default 0: off; not with the churn option)")
    parser.add_argument("--change-stream-merge-rate", type=float, default=None, metavar="RECORDS_PER_SECOND",
                        help="merge split partitions back once each writes fewer records per second than this "
                             "(default: a quarter of the split rate)")
    parser.add_argument("--change-stream-load-window-seconds", type=float, default=None, metavar="SECONDS",
                        help="the sliding window write rates are measured over, and the least life of a "
                             "partition before it splits or merges (default 2)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from ...localspanner.change_streams.load import LoadPolicy
    from ...localspanner.server import ServerStartError, serve_forever
    from ..main import CommandError

    if args.data_dir is not None and os.path.exists(args.data_dir) and not os.path.isdir(args.data_dir):
        raise CommandError(f"--data-dir {args.data_dir} exists and is not a folder")
    if args.change_stream_partition_churn_seconds < 0:
        raise CommandError(f"--change-stream-partition-churn-seconds must be 0 or more, got {args.change_stream_partition_churn_seconds}")
    if args.change_stream_split_rate < 0:
        raise CommandError(f"--change-stream-split-rate must be 0 or more, got {args.change_stream_split_rate}")
    if args.change_stream_split_rate and args.change_stream_partition_churn_seconds:
        raise CommandError("--change-stream-split-rate and --change-stream-partition-churn-seconds exclude each other: "
                           "partitions follow either the load or the timer")
    if args.change_stream_split_rate:
        try:
            LoadPolicy.of(args.change_stream_split_rate, args.change_stream_merge_rate,
                          args.change_stream_load_window_seconds)
        except ValueError as exc:
            raise CommandError(f"--change-stream-split-rate, --change-stream-merge-rate, "
                               f"--change-stream-load-window-seconds: {exc}") from None

    def ready(server: Any) -> None:
        print(f"export SPANNER_EMULATOR_HOST={server.emulator_host}", flush=True)
        where = f"in {args.data_dir}" if args.data_dir else "in a temporary folder (gone when the server stops)"
        print(f"local Spanner server listening on {server.emulator_host}; databases {where}; "
              "press Ctrl-C to stop", file=sys.stderr, flush=True)

    try:
        serve_forever(args.host, args.port, args.data_dir, on_ready=ready,
                      shared_commit_timestamps=args.shared_commit_timestamps,
                      change_stream_partition_churn_seconds=args.change_stream_partition_churn_seconds,
                      change_stream_split_rate=args.change_stream_split_rate,
                      change_stream_merge_rate=args.change_stream_merge_rate,
                      change_stream_load_window_seconds=args.change_stream_load_window_seconds)
    except ServerStartError as exc:
        raise CommandError(str(exc)) from None
    return 0
