"""``spanner-watcher bench``: the Java library's benchmark application (writers + watchers on Singers).

Without ``--project/--instance/--database`` and without SPANNER_EMULATOR_HOST, a local
Spanner server is started as a separate process (``python -m watcher local-spanner``) for
the run. Shows a live status line; at the end writes ``result.json``, PNG plots and
``report.html`` (figures and plots in one self-contained page) to ``--output``, by default a
new folder per run under ``./spanner-watcher-bench/``.

Exit status: 0 the run finished and every write was captured; 1 a watcher failed or some
writes were not captured before ``--drain-timeout``; 2 a problem to fix first (an option,
an unreachable server, a port in use).

``--dialect postgresql`` creates the database in PostgreSQL (the Singers table from the DDL helpers
in PostgreSQL, the polls' hint ``/*@ FORCE_INDEX=... */``); an existing database keeps its own.

Example:
    $ spanner-watcher bench --write-transactions-per-second 50 --mutations-per-transaction 100 --duration 60
    $ spanner-watcher bench --dialect postgresql --duration 10
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

NAME = "bench"

EXIT_FAILED = 1
#: Seconds between status lines when the output is not a terminal.
PLAIN_STATUS_EVERY = 5.0
#: Where runs write by default: one folder per run under this one, named by the run's start (UTC).
DEFAULT_OUTPUT_PARENT = "spanner-watcher-bench"


def default_output(now: float) -> str:
    """The output folder of a run started at ``now`` (seconds since the epoch) without --output.

    >>> default_output(0.0)
    'spanner-watcher-bench/run-19700101-000000'
    """
    return os.path.join(DEFAULT_OUTPUT_PARENT, time.strftime("run-%Y%m%d-%H%M%S", time.gmtime(now)))


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected {'an integer' if kind is int else 'a number'}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be more than 0")
        return value
    return parse


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected a number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be at least 0")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` subcommand."""
    from ...devtools.bench import BenchOptions
    from ..connection import add_arguments
    from .ddl import DIALECT_CHOICES
    from .local_spanner import port_number

    d = BenchOptions()
    parser = subparsers.add_parser(
        NAME, help="benchmark the watchers: writers and watchers on a sample Singers table, with plots",
        description="Write InsertOrUpdate transactions of random Singers rows at a set rate while table "
                    "watchers (sharing out the 37 shard values -18..18) capture them; show a live status line, then write "
                    "result.json, PNG plots (throughput and lag over time, poll time against table size) and report.html, "
                    "a page with the figures and the plots that opens offline. "
                    "Exit status: 0 every write captured, 1 a watcher failed or writes were missed, 2 bad input.")
    w = parser.add_argument_group("writers")
    w.add_argument("--write-transactions-per-second", "--tps", metavar="TPS", type=_positive(float),
                   default=d.write_transactions_per_second,
                   help=f"write transactions per second, all threads together (default {d.write_transactions_per_second:g})")
    w.add_argument("--mutations-per-transaction", metavar="M", type=_positive(int), default=d.mutations_per_transaction,
                   help=f"mean mutations per transaction: each writes a random 1..2M rows (default {d.mutations_per_transaction})")
    w.add_argument("--update-parallelism", metavar="THREADS", type=_positive(int), default=d.update_parallelism,
                   help=f"writer threads (default {d.update_parallelism})")
    w.add_argument("--writer-processes", metavar="N", type=int, default=d.writer_processes,
                   help="processes the writer threads run in, split evenly, apart from the watchers' process "
                        f"(default {d.writer_processes}; 0: in the watchers' process, sharing its GIL)")
    g = parser.add_argument_group("watchers")
    g.add_argument("--watchers", "--number-of-watchers", metavar="N", type=_positive(int), default=d.watchers,
                   help=f"table watchers; the 37 shard values are split evenly between them (default {d.watchers})")
    g.add_argument("--disable-shard-provider", action="store_true",
                   help="poll without a shard filter of fixed values (ShardId IN ...); a ShardId IS NOT NULL filter keeps "
                        "the index usable")
    g.add_argument("--disable-table-hint", action="store_true",
                   help="poll without @{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}")
    g.add_argument("--poll-interval", metavar="SECONDS", type=_non_negative, default=d.poll_interval,
                   help=f"seconds between polls that found less than --limit rows (default {d.poll_interval:g})")
    g.add_argument("--limit", metavar="ROWS", type=_positive(int), default=d.limit, help=f"rows per poll (default {d.limit:,})")
    g.add_argument("--fallback-to-with-query", metavar="SECONDS", type=_non_negative, default=d.fallback_to_with_query_seconds,
                   help="when a watcher is this far behind, poll with one sub-query per shard value (a WITH query) to "
                        f"catch up (default {d.fallback_to_with_query_seconds:g})")
    g.add_argument("--reset-last-seen-timestamps", action="store_true",
                   help="forget where earlier runs' watchers stood (their rows in LAST_SEEN_COMMIT_TIMESTAMPS)")
    g.add_argument("--drop-table", action="store_true", help="drop and re-create the Singers table first")
    r = parser.add_argument_group("run")
    r.add_argument("--duration", metavar="SECONDS", type=_positive(float), default=d.duration,
                   help=f"seconds of writes (default {d.duration:g})")
    r.add_argument("--warmup", metavar="SECONDS", type=_non_negative, default=d.warmup,
                   help=f"first seconds left out of the rates and lag percentiles (default {d.warmup:g})")
    r.add_argument("--drain-timeout", metavar="SECONDS", type=_non_negative, default=d.drain_timeout,
                   help=f"seconds the watchers get to catch up after the writes (default {d.drain_timeout:g})")
    r.add_argument("--seed", type=int, default=None, help="random seed of the writers (default: random)")
    r.add_argument("--output", metavar="DIR", default=None,
                   help="folder for result.json, the plots and report.html (default: a new folder per run, "
                        f"./{DEFAULT_OUTPUT_PARENT}/run-<UTC start time>; written at the end)")
    r.add_argument("--port", type=port_number, default=0,
                   help="port of the local Spanner server process started for the run (default 0: a free one)")
    r.add_argument("--quiet", action="store_true", help="no status line, only the final summary")
    r.add_argument("--dialect", type=str.lower, choices=DIALECT_CHOICES, default=None,
                   help="the SQL dialect of the database the run creates (default googlesql); a database that exists "
                        "already must be of this dialect (default: whichever it is)")
    add_arguments(parser, embedded_by_default=True)
    return parser


def options_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~watcher.devtools.bench.BenchOptions` the command line asks for."""
    from ...devtools.bench import BenchOptions

    warmup = args.warmup if args.warmup < args.duration else 0.0
    return BenchOptions(
        write_transactions_per_second=args.write_transactions_per_second,
        mutations_per_transaction=args.mutations_per_transaction, update_parallelism=args.update_parallelism,
        writer_processes=args.writer_processes,
        watchers=args.watchers, disable_shard_provider=args.disable_shard_provider,
        disable_table_hint=args.disable_table_hint, poll_interval=args.poll_interval, limit=args.limit,
        fallback_to_with_query_seconds=args.fallback_to_with_query,
        reset_last_seen_timestamps=args.reset_last_seen_timestamps, drop_table=args.drop_table,
        duration=args.duration, warmup=warmup, drain_timeout=args.drain_timeout, seed=args.seed)


@contextlib.contextmanager
def bench_database(args: argparse.Namespace) -> Iterator[tuple[Any, Any]]:
    """(target, server process or None): the database the options and the environment point at."""
    from ...devtools.bench_server import ServerProcess
    from ..connection import EMULATOR_ENV, open_database
    from .ddl import dialect_named

    dialect = dialect_named(args.dialect) if getattr(args, "dialect", None) else None
    settings = {"credentials_file": args.credentials_file, "api_endpoint": args.api_endpoint,
                "database_role": args.database_role, "dialect": dialect}
    if os.environ.get(EMULATOR_ENV) or args.project:
        with open_database(args.project, args.instance, args.database, **settings) as target:
            yield target, None
        return
    with ServerProcess(port=args.port, data_dir=args.data_dir) as server:
        os.environ[EMULATOR_ENV] = server.emulator_host
        try:
            with open_database(args.project, args.instance, args.database, **settings) as target:
                yield target, server
        finally:
            os.environ.pop(EMULATOR_ENV, None)


def run(args: argparse.Namespace) -> int:
    from google.api_core.exceptions import GoogleAPICallError

    from ...devtools.bench import Endpoint, count_rows, prepare_table, run_benchmark
    from ...devtools.bench_report import report, status_line, write_outputs
    from ...dialects import dialect_of
    from ...errors import ConfigurationError, WatcherError
    from ..connection import EMULATOR_ENV, ensure_reachable
    from ..main import PROG, CommandError
    from .watch_progress import stop_on_signals

    try:
        options = options_from_args(args)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    if args.output is None:
        args.output = default_output(time.time())
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise CommandError(f"--output {args.output} exists and is not a folder")
    try:
        ensure_reachable(os.environ.get(EMULATOR_ENV))  # fail fast: the client would retry for minutes
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    stop = threading.Event()
    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    try:
        with stop_on_signals(stop), bench_database(args) as (target, server):
            say(f"benchmark on {target.describe()}, a {dialect_of(target.database).name} database"
                + (f" (server process {server.pid})" if server else ""))
            prepare_table(target.database, options, log=say)
            initial_rows = count_rows(target.database)
            say(f"writing {options.write_transactions_per_second:g} tx/s x 1..{2 * options.mutations_per_transaction} "
                f"mutations (about {options.mutations_per_second:,.0f} mutations/s) with {options.update_parallelism} "
                f"threads{_in_processes(options.writer_processes)} for {options.duration:g} s; {options.watchers} watcher(s), "
                f"poll interval {options.poll_interval:g} s")
            show = _StatusPrinter(args.quiet)
            result = run_benchmark(target.database, options, on_status=lambda r: show(status_line(r)), stop=stop,
                                   server_cpu=server.cpu_seconds if server else None,
                                   endpoint=Endpoint(target.database.name, target.host))
            show.close(status_line(result))
            command = getattr(args, "command_line", None) or " ".join([PROG, *sys.argv[1:]])
            document = report(result, initial_rows=initial_rows, command=command, where=target.describe())
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    except (WatcherError, GoogleAPICallError) as exc:
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    paths = write_outputs(args.output, document)
    _summary(document, paths)
    if result.failure:
        print(f"{PROG} {NAME}: error: {result.failure}", file=sys.stderr)
        return EXIT_FAILED
    if not document["figures"]["all_captured"]:
        print(f"{PROG} {NAME}: error: {document['figures']['missing_changes']:,} writes were not captured within "
              f"--drain-timeout {options.drain_timeout:g} s", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _in_processes(processes: int) -> str:
    """How the writer threads run, for the opening line.

    >>> print(_in_processes(0), _in_processes(1), _in_processes(2), sep="|")
     in the watchers' process| in a process of their own| in 2 processes of their own
    """
    if processes == 0:
        return " in the watchers' process"
    return " in a process of their own" if processes == 1 else f" in {processes} processes of their own"


class _StatusPrinter:
    """The status line: rewritten in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stdout.isatty()
        self.next_plain = time.monotonic() + PLAIN_STATUS_EVERY

    def __call__(self, line: str) -> None:
        if self.quiet:
            return
        if self.tty:
            sys.stdout.write("\r\x1b[2K" + line)
            sys.stdout.flush()
        elif time.monotonic() >= self.next_plain:
            print(line, flush=True)
            self.next_plain += PLAIN_STATUS_EVERY

    def close(self, line: str) -> None:
        if not self.quiet:
            print(("\r\x1b[2K" if self.tty else "") + line, flush=True)


def _summary(document: dict[str, Any], paths: list[Any]) -> None:
    f = document["figures"]
    lag = f["lag_ms"]
    print(f"wrote {f['mutations']:,} mutations in {f['transactions']:,} transactions: {f['mutations_per_second']:,.0f} "
          f"mutations/s after the warm-up ({f['write_errors']} write errors)")
    print(f"received {f['received_changes']:,} changes ({f['received_per_second']:,.0f}/s); all captured: "
          f"{'yes' if f['all_captured'] else 'NO, ' + format(f['missing_changes'], ',') + ' missing'}; "
          f"duplicates: {f['duplicate_changes']:,}")
    if lag:
        print(f"detection lag (commit to callback): p50 {lag['p50']:,.0f} ms, p95 {lag['p95']:,.0f} ms, "
              f"p99 {lag['p99']:,.0f} ms, max {lag['p100']:,.0f} ms; {f['polls']:,} polls, "
              f"median {f['poll_ms'].get('p50', 0):,.0f} ms")
    print(f"results: {', '.join(str(p) for p in paths[:-1])}")
    print(f"report: {paths[-1]} (open it in a browser: figures and plots in one file)")
