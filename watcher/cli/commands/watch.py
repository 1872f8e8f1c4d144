"""``spanner-watcher watch``: run watchers on a database into a staging directory.

Reads a TOML configuration (see :mod:`watcher.cli.config`; ``examples/watcher.toml`` watches the
Singers sample schema), checks it and the tables it names before anything is written, then runs
the watchers it describes (:mod:`watcher.cli.commands.watch_build`), whose polls and stream
batches are staged as durable batch files (:class:`~watcher.staging.sink.StagingSink`) before each
checkpoint moves; a ``[kafka]`` table or ``[[sinks]]`` entries publish them to Kafka as well, or
instead (:mod:`watcher.cli.config_sinks`), and a checkpoint moves once every sink acknowledged.
Progress (changes staged, lag, per table) is shown live on a terminal, as a line every few seconds
otherwise. Stops cleanly on Ctrl-C, SIGTERM or after ``--duration`` seconds;
with ``--until-caught-up``, once every change committed before the command started is staged (a
batch step for a scheduler).

Tables created while it runs join when they match ``[tables] include`` (``"all"`` or patterns)
and not ``exclude``; a dropped table's watcher ends alone (shown as ``dropped``) and the others
go on. With ``--metrics-port`` it serves Prometheus metrics at ``/metrics`` and a health check at
``/healthz`` (200 while watching, 503 with the reason once failed, or once a table lags more
than ``--max-lag`` seconds) on loopback by default (:mod:`watcher.cli.metrics_server`).

Exit status (:data:`EXIT_CODES`): 0 stopped as asked, or caught up; 1 a watcher (or one table's)
failed, the reason printed; 2 a problem to fix before starting (configuration, no database
named, unknown table, unreachable server, a Kafka broker that does not answer); 3 with
``--until-caught-up``, stopped (``--duration``, Ctrl-C, SIGTERM) before catching up.

Example:
    $ spanner-watcher watch --config examples/watcher.toml --duration 60
    $ spanner-watcher watch --config examples/watcher.toml --metrics-port 9464 --max-lag 300
    $ spanner-watcher watch --config examples/watcher.toml --until-caught-up --duration 600   # a batch step
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .local_spanner import port_number

NAME = "watch"

EXIT_STOPPED = 0
#: Exit status when a watcher (or a table's) failed while running.
EXIT_FAILED = 1
#: Usage and configuration errors (main.EXIT_USAGE).
EXIT_USAGE = 2
#: ``--until-caught-up`` stopped (--duration, Ctrl-C, SIGTERM) before every watcher caught up.
EXIT_NOT_CAUGHT_UP = 3
#: status -> meaning, for ``--help`` and the README.
EXIT_CODES = {EXIT_STOPPED: "stopped as asked (or, with --until-caught-up, caught up)",
              EXIT_FAILED: "a watcher or a table failed (the reason is printed)",
              EXIT_USAGE: "a problem to fix before starting (configuration, no database named, unknown table, "
                          "unreachable server or Kafka broker)",
              EXIT_NOT_CAUGHT_UP: "--until-caught-up stopped (--duration, Ctrl-C, SIGTERM) before catching up"}


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: expected a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must be more than 0 seconds")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``watch`` subcommand."""
    from ..connection import add_arguments
    from ..example_config import example_config_path
    from ..request_options import add_request_arguments

    parser = subparsers.add_parser(
        NAME, help="watch tables for changes and deliver them to durable batch files (and Kafka)",
        description="Run the watchers a TOML configuration describes (tables, shard providers, hints, poll "
                    f"interval, limit, staging directory, checkpoint table; an example: {example_config_path()}) and stage "
                    "every change before the checkpoint moves. The configuration is checked before anything "
                    "connects. Stop with Ctrl-C or SIGTERM, after --duration, or with --until-caught-up.",
        epilog="exit status: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()))
    parser.add_argument("--config", metavar="FILE", required=True,
                        help="the watcher's TOML configuration (relative paths in it are relative to its folder)")
    parser.add_argument("--duration", metavar="SECONDS", type=_seconds, default=None,
                        help="stop after this many seconds (default: run until Ctrl-C or SIGTERM)")
    parser.add_argument("--until-caught-up", action="store_true",
                        help="stop with status 0 once every watcher has staged (durably) every change committed "
                             f"before the command started; status {EXIT_NOT_CAUGHT_UP} if stopped before that "
                             "(--duration bounds the wait), 1 if a watcher or a table failed")
    parser.add_argument("--quiet", action="store_true", help="no progress display, only the final summary")
    parser.add_argument("--metrics-port", metavar="PORT", type=port_number, default=None,
                        help="serve Prometheus metrics at /metrics and a health check at /healthz on this port "
                             "(0: any free port, printed at start)")
    parser.add_argument("--metrics-host", metavar="HOST", default=None,
                        help="the interface the metrics endpoint listens on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--max-lag", metavar="SECONDS", type=_seconds, default=None,
                        help="/healthz answers 503, naming the table, once a table lags more than this (now minus "
                             "the time up to which its changes are delivered; an idle table does not lag); "
                             "default: [watch] max_lag, else no bound")
    add_arguments(parser)
    add_request_arguments(parser)
    return parser


def _watched(cfg: Any, infos: dict[str, Any], modes: list[Any], streams: list[Any]) -> list[str]:
    """What the watchers watch, for the first line."""
    return [*infos, *(f"{h.table} (history)" for h in cfg.history),
            *(f"{i.table} (change sets)" for w in modes[len(cfg.history):len(modes) - len(streams)]
              for i in w.table_infos()),
            *(f"change stream {s.stream}" for s in cfg.change_streams)]


def run(args: argparse.Namespace) -> int:
    """Check the configuration, the database choice and the tables, then watch until stopped (or caught up)."""
    from google.api_core.exceptions import GoogleAPICallError

    from ...errors import ConfigurationError, WatcherError
    from ..config import load_config
    from ..config_sinks import StagingSinkSettings
    from ..connection import choice_from_args, open_choice
    from ..main import PROG, CommandError
    from ..request_options import settings_from_args
    from .watch_sinks import check_sinks, close_sinks

    try:
        cfg = load_config(args.config)
        choice = choice_from_args(args, cfg.database)  # no database named: stop before anything starts
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    folders = [s.staging_dir for s in cfg.sink_settings() if isinstance(s, StagingSinkSettings)]
    created = [f for f in folders if isinstance(f, Path) and not f.exists()]
    sinks = check_sinks(cfg)  # staging folders usable, Kafka brokers answering: said before anything connects
    requests = settings_from_args(args, cfg.requests)
    metrics = _metrics_server(args, args.max_lag or cfg.max_lag)
    try:
        with metrics, open_choice(choice) as target:
            return _watch(args, cfg, target, requests, metrics, sinks)
    except ConfigurationError as exc:
        _remove_if_empty(created)
        raise CommandError(str(exc)) from None
    except (WatcherError, GoogleAPICallError) as exc:
        _remove_if_empty(created)
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        close_sinks(sinks)  # a Kafka sink waits for messages still queued


def _watch(args: argparse.Namespace, cfg: Any, target: Any, requests: Any, metrics: Any, sinks: list[Any]) -> int:
    """Build, start and run the watchers on the open ``target``; returns the exit status."""
    from ...capture.change_streams.stream_info import server_now
    from ...capture.group import WatcherGroup
    from ..health import behind, failed_loops
    from ..main import PROG
    from ..metrics_server import MetricsServer
    from .watch_build import build_mode_watchers, build_watcher, resolve_tables, start_watching
    from .watch_progress import Progress, run_until, stop_on_signals
    from .watch_sinks import attach_sinks, describe, summary

    database = target.database
    # Where "caught up" is: the database's clock when the command started, so every change committed
    # before it (commit timestamps are the database's) counts, whatever the local clock says.
    goal = server_now(database) if args.until_caught_up else None
    infos = resolve_tables(database, cfg)
    modes = build_mode_watchers(database, cfg, requests)
    members = ([build_watcher(database, cfg, list(infos), requests)] if infos else []) + modes
    watcher = WatcherGroup(members) if len(members) > 1 else members[0]
    attach_sinks(watcher, sinks)  # in order; the checkpoint moves once every sink acknowledged a batch
    progress = Progress()
    streams = modes[len(modes) - len(cfg.change_streams):]
    for member in members:
        member.add_batch_callback(progress.on_stream_batch(member) if member in streams else progress.on_batch)
    until = "until caught up with " + goal.isoformat() if goal is not None else ""
    print(f"watching {', '.join(_watched(cfg, infos, modes, streams))} in {target.describe()}; {describe(sinks)}"
          f"{'; ' + until if until else '' if args.duration else '; press Ctrl-C to stop'}", flush=True)
    if isinstance(metrics, MetricsServer):
        metrics.watcher = watcher
        metrics.sinks = [m.metrics for m in sinks]
        print(f"metrics at {metrics.url}/metrics, health at {metrics.url}/healthz", flush=True)
    stop = threading.Event()

    def finished() -> bool:  # caught up, or a table failed (which never catches up)
        return goal is not None and (not behind(watcher, goal) or bool(failed_loops(watcher)))

    with stop_on_signals(stop):
        try:
            start_watching(watcher, cfg)
            deadline = time.monotonic() + args.duration if args.duration else None
            elapsed = run_until(watcher, stop, deadline, progress, describe(sinks), args.quiet, finished if goal else None)
        finally:
            watcher.stop()
    for table, staged, polls, lag, state in progress.rows(watcher):
        ended = " (dropped while watching)" if state == "dropped" else ""
        print(f"  {table}: {staged:,} changes staged, {polls:,} polls, lag {lag}{ended}")
    print(f"stopped after {elapsed:.1f} s: {summary(sinks)}", flush=True)
    failed = failed_loops(watcher)
    if watcher.failure is not None or failed:
        why = watcher.failure if watcher.failure is not None else "; ".join(f"{n}: {f}" for n, f in failed)
        print(f"{PROG} {NAME}: error: the watcher failed: {why}", file=sys.stderr)
        return EXIT_FAILED
    if goal is not None:
        late = behind(watcher, goal)
        if late:
            print(f"{PROG} {NAME}: error: stopped before catching up with {goal.isoformat()}: "
                  f"{', '.join(late)} behind", file=sys.stderr)
            return EXIT_NOT_CAUGHT_UP
        print(f"caught up: every change committed up to {goal.isoformat()} is staged", flush=True)
    return EXIT_STOPPED


def _metrics_server(args: argparse.Namespace, max_lag: float | None) -> Any:
    """The ``--metrics-port`` endpoint, listening already (a no-op context without the option)."""
    from ..main import CommandError
    from ..metrics_server import DEFAULT_HOST, MetricsServer

    if args.metrics_port is None:
        for flag, value in (("--metrics-host", args.metrics_host), ("--max-lag", args.max_lag)):
            if value is not None:
                raise CommandError(f"{flag} needs --metrics-port")
        return contextlib.nullcontext()
    host = args.metrics_host or DEFAULT_HOST
    try:
        return MetricsServer(None, host, args.metrics_port, max_lag=max_lag)
    except OSError as exc:
        raise CommandError(f"cannot serve metrics on {host}:{args.metrics_port}: {exc.strerror or exc}") from None


def _remove_if_empty(created: list[Path]) -> None:
    """Leave nothing behind when a run that created (local) staging folders failed before staging."""
    for path in created:
        with contextlib.suppress(OSError):
            path.rmdir()
