"""``spanner-watcher demo``: the end-to-end demo on the embedded local Spanner.

Example:
    $ spanner-watcher demo --keys 500
    $ spanner-watcher demo --mode both        # polling and a change stream side by side on one workload
    $ spanner-watcher demo --sink kafka       # into a Kafka broker it starts (needs mvn and java), read back
    $ spanner-watcher demo --dialect postgresql   # the same on a PostgreSQL-dialect database
"""

from __future__ import annotations

import argparse
from typing import Any

NAME = "demo"
#: The demo's capture modes (watcher.devtools.demo_capture.MODES; repeated so that --help starts quickly).
MODES = ("poll", "change_stream", "both")
#: Where the demo's batches go: staging files and the Spark changelog, or a Kafka broker the demo starts.
SINKS = ("staging", "kafka")
#: The extra each --sink needs (watcher.extras): the staging demo runs the Spark changelog, the Kafka one a producer.
SINK_EXTRAS = {"staging": "spark", "kafka": "kafka"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``demo`` subcommand."""
    from .ddl import DIALECT_CHOICES

    parser = subparsers.add_parser(
        NAME, help="run the end-to-end demo on the embedded local Spanner",
        description="Start the embedded local Spanner, apply the migrations (the watcher's tables and the "
                    "Singers sample schema with its FARM_FINGERPRINT shard column and NULL_FILTERED index), backfill "
                    "Singers, run writers while a watcher polls all 37 shard values and stages every change (or reads the "
                    "change stream, or both: --mode), run the Spark changelog job, and print what happened. "
                    "Exit status 1 if a change was lost.")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the writers run (default 20)")
    parser.add_argument("--writers", type=int, default=4, help="writer threads (default 4)")
    parser.add_argument("--keys", type=int, default=2_000, help="distinct SingerIds written (default 2000; fewer keys, more updates)")
    parser.add_argument("--workdir", default="spanner-watcher-demo",
                        help="folder for the local Spanner's data, the staging batches and the changelog warehouse "
                             "(default ./spanner-watcher-demo; replaced on the next run)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the generated rows (default 7)")
    parser.add_argument("--mode", choices=MODES, default="poll",
                        help="capture by polling (default), by the change stream SingersStream the demo creates, "
                             "or both side by side on the same workload (versions, hard deletes, lag, changelog)")
    parser.add_argument("--sink", choices=SINKS, default="staging",
                        help="staging (default): stage every batch and run the Spark changelog job; kafka: start a "
                             "Kafka broker (needs mvn and java), publish every batch to the topic demo.Singers, and "
                             "print what a plain consumer received (no Spark)")
    parser.add_argument("--dialect", type=str.lower, choices=DIALECT_CHOICES, default="googlesql",
                        help="the SQL dialect of the demo's database (default googlesql; postgresql: Singers from the "
                             "DDL helpers in PostgreSQL), with either sink")
    return parser


def run(args: argparse.Namespace) -> int:
    from ...extras import require
    from ..main import CommandError

    for name in ("seconds", "writers", "keys"):
        if getattr(args, name) <= 0:
            raise CommandError(f"--{name} must be positive, got {getattr(args, name)}")
    require(SINK_EXTRAS[args.sink], "spanner-watcher demo" + (" --sink kafka" if args.sink == "kafka" else ""))
    if args.sink == "kafka":
        return _run_kafka(args)
    from ...devtools.demo import run_demo
    from .ddl import dialect_named

    try:
        summary = run_demo(seconds=args.seconds, workdir=args.workdir, writers=args.writers, keys=args.keys, seed=args.seed,
                           mode=args.mode, dialect=dialect_named(args.dialect))
    except FileExistsError as exc:
        raise CommandError(str(exc)) from None
    return 0 if summary["keys_missing"] == 0 and summary["writer_errors"] == 0 else 1


def _run_kafka(args: argparse.Namespace) -> int:
    """``--sink kafka``: the demo into a broker it starts; status 2 when mvn or java is missing."""
    from ...devtools.jvm_tools import JvmToolsMissing
    from ..main import CommandError

    if args.mode == "both":
        raise CommandError("--mode both does not go with --sink kafka (choose poll or change_stream)")
    try:
        from ...devtools.demo_kafka import run_kafka_demo
        from .ddl import dialect_named

        summary = run_kafka_demo(seconds=args.seconds, workdir=args.workdir, writers=args.writers, keys=args.keys,
                                 seed=args.seed, mode=args.mode, dialect=dialect_named(args.dialect))
    except (ImportError, FileExistsError, JvmToolsMissing) as exc:  # ImportError: the kafka extra, which it names
        raise CommandError(str(exc)) from None
    return 0 if summary["keys_missing"] == 0 and summary["writer_errors"] == 0 else 1
