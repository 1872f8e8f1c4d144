"""``spanner-watcher watch``: run watchers on a database into a staging directory.

Reads a TOML configuration (see :mod:`watcher.cli.config`; ``examples/watcher.toml`` watches the
Singers sample schema), checks it and the tables it names before anything is written, then
runs a :class:`~watcher.capture.database_watcher.DatabaseWatcher` for the polled tables, a
:class:`~watcher.capture.helper_tables.history.HistoryWatcher` per ``[[history]]`` entry and a
:class:`~watcher.capture.helper_tables.change_sets.ChangeSetWatcher` per ``[[change_sets]]`` entry
and a :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher` per ``[[change_streams]]``
entry (together a :class:`~watcher.capture.group.WatcherGroup`), whose polls and stream batches are
staged as durable batch files (:class:`~watcher.staging.sink.StagingSink`) before each checkpoint moves. Progress
(changes staged, lag, per table) is shown live on a terminal, as a line every few seconds
otherwise. Stops cleanly on Ctrl-C, SIGTERM or after ``--duration`` seconds.

Tables created while it runs join when they match ``[tables] include`` (``"all"`` or patterns)
and not ``exclude``; a dropped table's watcher ends alone (shown as ``dropped``) and the others
go on. With ``--metrics-port`` it serves Prometheus metrics at ``/metrics`` and a health check at
``/healthz`` (200 while watching, 503 with the reason once failed) on loopback by default
(:mod:`watcher.cli.metrics_server`), until it stops.

Exit status: 0 stopped as asked; 1 a watcher failed while running (the reason is printed);
2 a problem to fix before starting (configuration, unknown table, unreachable server).

Example:
    $ spanner-watcher watch --config examples/watcher.toml --duration 60
    $ spanner-watcher watch --config examples/watcher.toml --metrics-port 9464   # curl localhost:9464/metrics
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...sqlnames import find_name, has_name
from .local_spanner import port_number

if TYPE_CHECKING:  # imported when a command runs, so that `--help` starts quickly
    from ...capture.base import Watcher

NAME = "watch"

#: Exit status when a watcher failed while running (usage and configuration errors exit with 2).
EXIT_FAILED = 1
#: Seconds between progress lines when the output is not a terminal.
PLAIN_PROGRESS_EVERY = 10.0
#: Seconds to wait for a TCP connection to an emulator before calling it unreachable.
REACH_TIMEOUT = 3.0


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

    parser = subparsers.add_parser(
        NAME, help="watch tables for changes and stage them as durable batch files",
        description="Run the watchers a TOML configuration describes (tables, shard providers, hints, poll "
                    "interval, limit, staging directory, checkpoint table; see examples/watcher.toml) and stage "
                    "every change before the checkpoint moves. The configuration is checked before anything "
                    "connects. Stop with Ctrl-C or SIGTERM. Exit status: 0 stopped as asked, 1 a watcher failed, "
                    "2 a problem in the configuration or the database to fix first.")
    parser.add_argument("--config", metavar="FILE", required=True,
                        help="the watcher's TOML configuration (relative paths in it are relative to its folder)")
    parser.add_argument("--duration", metavar="SECONDS", type=_seconds, default=None,
                        help="stop after this many seconds (default: run until Ctrl-C or SIGTERM)")
    parser.add_argument("--quiet", action="store_true", help="no progress display, only the final summary")
    parser.add_argument("--metrics-port", metavar="PORT", type=port_number, default=None,
                        help="serve Prometheus metrics at /metrics and a health check at /healthz on this port "
                             "(0: any free port, printed at start)")
    parser.add_argument("--metrics-host", metavar="HOST", default=None,
                        help="the interface the metrics endpoint listens on (default: 127.0.0.1, this machine only)")
    add_arguments(parser)
    return parser


# --- checks before connecting -----------------------------------------------------------------------

def ensure_reachable(timeout: float = REACH_TIMEOUT) -> None:
    """Fail fast, with what to do, when ``SPANNER_EMULATOR_HOST`` points at nothing.

    (The client would otherwise retry for minutes before giving up.)
    """
    from ...errors import ConfigurationError
    from ..connection import EMULATOR_ENV
    from ..connection import ensure_reachable as check
    from ..main import CommandError

    try:
        check(os.environ.get(EMULATOR_ENV), timeout)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None


def _database_args(args: argparse.Namespace, cfg: Any) -> dict[str, Any]:
    """Command-line names win over the configuration's [database] section."""
    db = cfg.database
    return {"project": args.project or db.project, "instance": args.instance or db.instance,
            "database": args.database or db.database,
            "data_dir": args.data_dir or (str(db.data_dir) if db.data_dir else None)}


# --- resolving tables against the database ---------------------------------------------------------

def resolve_tables(database: Any, cfg: Any) -> dict[str, Any]:
    """The tables to poll -> their discovered TableInfo; errors name the configuration key."""
    from ...capture.table_info import discover, watchable_tables
    from ...errors import ConfigurationError, SchemaError, TableNotFoundError

    if not cfg.poll_tables:
        return {}
    selection = cfg.selection()
    if selection.fixed:
        names, key = list(cfg.include), "tables.include"
    else:
        available = watchable_tables(database)
        elsewhere = _captured_elsewhere(database, cfg)
        available = [t for t in available if not has_name(elsewhere, t)]
        named = list(selection.named)
        names = named + [t for t in available if selection.matches(t) and not has_name(named, t)]
        key = "tables.include" if cfg.include is not None else "tables"
        if not names:
            raise cfg.error(key, f"no table to watch in {database.name}: "
                                 + ("no table with a commit-timestamp column matches" if available else
                                    "no table has a column with allow_commit_timestamp=true (create one, e.g. "
                                    "with `spanner-watcher migrate --dir ddl/samples/singers`)"))
        for name in cfg.tables:
            if cfg.include is None and not has_name(names, name):
                raise cfg.error(f"tables.{name}", f"no such table with a commit-timestamp column in {database.name} "
                                                  f"(tables: {', '.join(names)})")
    infos: dict[str, Any] = {}
    for name in names:
        settings = _settings_for(cfg, name)
        column = settings.commit_timestamp_column if settings else None
        try:
            infos[name] = discover(database, name, column)
        except TableNotFoundError as exc:
            available = watchable_tables(database)
            raise cfg.error(key, f"{exc} in {database.name} (tables with a commit-timestamp column: "
                                 f"{', '.join(available) or 'none'})") from None
        except (SchemaError, ConfigurationError) as exc:
            where = f"tables.{settings.name}.commit_timestamp_column" if column else key
            raise cfg.error(where, str(exc)) from None
    return infos


def _settings_for(cfg: Any, table: str) -> Any:
    return find_name(cfg.tables, table)


def _captured_elsewhere(database: Any, cfg: Any) -> list[str]:
    """Tables another capture mode of the configuration takes (so polling leaves them out, also later)."""
    from ..config_modes import captured_elsewhere

    if not (cfg.history or cfg.change_sets or cfg.change_streams):
        return []
    return captured_elsewhere(cfg.history, cfg.change_sets,
                              [t for w in _change_set_watchers(database, cfg) for t in w.tables()], cfg.change_streams)


def _change_set_watchers(database: Any, cfg: Any) -> list[Any]:
    from ...capture.database_watcher import ALL
    from ...capture.helper_tables.change_sets import ChangeSetWatcher
    from ...checkpoints import SpannerCommitTimestampRepository

    return [ChangeSetWatcher(database, list(c.tables) if c.tables is not None else ALL, exclude=c.exclude,
                             change_sets_table=c.change_sets_table, change_set_column=c.change_set_column,
                             checkpoints=SpannerCommitTimestampRepository(database, table=cfg.checkpoint_table),
                             poll_interval=cfg.poll_interval, limit=cfg.limit, initial_timestamp=cfg.start_timestamp())
            for c in cfg.change_sets]


def build_mode_watchers(database: Any, cfg: Any) -> list[Any]:
    """The history and change-set watchers of the configuration (not started), their tables checked;
    errors name the configuration key."""
    from ...capture.helper_tables.history import HistoryTable, HistoryWatcher
    from ...checkpoints import SpannerCommitTimestampRepository
    from ...errors import ConfigurationError, SchemaError, TableNotFoundError

    watchers: list[Any] = []
    for h in cfg.history:
        for name, key in ((h.table, f"{h.key}.table"), (h.history_table, f"{h.key}.history_table")):
            try:
                HistoryTable.discover(database, name)
            except TableNotFoundError as exc:
                hint = (" (create it with HistoryTable.discover(database, table).create(database))"
                        if name == h.history_table else "")
                raise cfg.error(key, f"{exc} in {database.name}{hint}") from None
        watchers.append(HistoryWatcher(database, h.table, history_table=h.history_table,
                                       checkpoints=SpannerCommitTimestampRepository(database, table=cfg.checkpoint_table),
                                       poll_interval=cfg.poll_interval, limit=cfg.limit,
                                       fallback_to_with_query_seconds=cfg.fallback_to_with_query_seconds,
                                       initial_timestamp=cfg.start_timestamp()))
    for c, w in zip(cfg.change_sets, _change_set_watchers(database, cfg), strict=True):
        try:
            w.describe_tables()
        except (SchemaError, ConfigurationError) as exc:
            raise cfg.error(f"{c.key}.tables", f"{exc} in {database.name}") from None
        watchers.append(w)
    return watchers + build_stream_watchers(database, cfg)


def build_stream_watchers(database: Any, cfg: Any) -> list[Any]:
    """A ChangeStreamWatcher per ``[[change_streams]]`` entry (not started), each stream checked to
    exist; errors name the configuration key."""
    from ...capture.change_streams.spanner_progress import SpannerProgressStore
    from ...capture.change_streams.stream_info import describe_stream
    from ...capture.change_streams.watcher import ChangeStreamWatcher
    from ...errors import ChangeStreamNotFoundError

    # The library's own bookkeeping (checkpoints, every stream's progress) is never staged as data.
    own = [cfg.checkpoint_table, *(s.progress_table for s in cfg.change_streams)]
    watchers = []
    for s in cfg.change_streams:
        try:
            describe_stream(database, s.stream)
        except ChangeStreamNotFoundError as exc:
            raise cfg.error(f"{s.key}.stream", f"{exc} (create it with `spanner-watcher ddl change-stream "
                                               f"{s.stream} --table TABLE`, then apply the statement)") from None
        watchers.append(ChangeStreamWatcher(
            database, s.stream, heartbeat=s.heartbeat, start=s.start, max_concurrent_partitions=s.max_concurrent_partitions,
            progress=SpannerProgressStore(database, table=s.progress_table), watcher_id=s.watcher_id, ignore_tables=own))
    return watchers


def start_watching(watcher: Watcher, cfg: Any) -> None:
    """Start ``watcher``; a stream start outside its retention is a configuration error naming the key."""
    from ...errors import ChangeStreamRetentionError

    try:
        watcher.start()
    except ChangeStreamRetentionError as exc:
        key = next((s.key for s in cfg.change_streams if s.stream.casefold() == str(exc.stream).casefold()),
                   "change_streams")
        raise cfg.error(f"{key}.start", str(exc)) from None


def build_watcher(database: Any, cfg: Any, tables: list[str]) -> Watcher:
    """The DatabaseWatcher the configuration describes (not started).

    ``tables`` are the ones found now; with ``"all"`` or patterns, tables created later join
    (their ``[tables.<Name>]`` settings apply too).
    """
    from ...capture.database_watcher import DatabaseWatcher
    from ...checkpoints import SpannerCommitTimestampRepository
    from ...errors import ConfigurationError

    providers: dict[str, Any] = {}
    hints: dict[str, str] = {}
    columns: dict[str, str] = {}
    for s in cfg.tables.values():
        table = next((t for t in tables if t.casefold() == s.name.casefold()), s.name)
        if s.shards is not None:
            try:
                providers[table] = s.shards.provider()
            except ConfigurationError as exc:
                raise cfg.error(f"tables.{s.name}.shards", str(exc)) from None
        if s.hint:
            hints[table] = s.hint
        if s.commit_timestamp_column:
            columns[table] = s.commit_timestamp_column
    selection = cfg.selection()
    chosen: dict[str, Any] = ({"include": tables} if selection.fixed else
                              {"include": selection.include,
                               "exclude": [*selection.exclude, *_captured_elsewhere(database, cfg)]})
    return DatabaseWatcher(
        database, **chosen, discover_interval=cfg.discover_interval, shard_provider=providers, table_hint=hints,
        commit_timestamp_column=columns,
        checkpoints=SpannerCommitTimestampRepository(database, table=cfg.checkpoint_table),
        poll_interval=cfg.poll_interval, limit=cfg.limit,
        fallback_to_with_query_seconds=cfg.fallback_to_with_query_seconds, initial_timestamp=cfg.start_timestamp())


# --- running ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def stop_on_signals(event: threading.Event) -> Iterator[None]:
    """Set ``event`` on SIGINT or SIGTERM while the context is open (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: event.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Progress:
    """Counts staged changes per table (a batch callback) and renders the status."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.staged: dict[str, int] = {}
        self.batches = 0

    def on_batch(self, changes: list[Any]) -> None:
        self.count(changes[0].table, len(changes))

    def on_stream_batch(self, watcher: Any) -> Any:
        """A batch callback counting a change stream watcher's changes under its stream's name (its stats' ``table``)."""
        return lambda changes: self.count(watcher.name, len(changes))

    def count(self, name: str, n: int) -> None:
        with self.lock:
            self.staged[name] = self.staged.get(name, 0) + n
            self.batches += 1

    def rows(self, watcher: Watcher) -> list[tuple[str, int, int, str, str]]:
        out = []
        for stats in watcher.poll_stats():
            lag = stats.get("lag_seconds")
            out.append((stats["table"], self.staged.get(stats["table"], 0), stats["polls"],
                        f"{lag:.1f} s" if lag is not None else "-", stats["state"]))
        return out

    def line(self, watcher: Watcher, elapsed: float) -> str:
        parts = [f"{t}: {n:,} staged, lag {lag}" for t, n, _, lag, _ in self.rows(watcher)]
        return f"[{elapsed:6.0f} s] {sum(self.staged.values()):,} changes staged; " + "; ".join(parts)

    def table(self, watcher: Watcher, elapsed: float, staging: Path) -> Any:
        from rich.table import Table

        table = Table(title=f"spanner-watcher watch: {elapsed:.0f} s, {sum(self.staged.values()):,} changes staged "
                            f"in {self.batches:,} batches under {staging}", title_justify="left")
        for column in ("table", "staged", "polls", "lag", "state"):
            table.add_column(column, justify="left" if column in ("table", "state") else "right")
        for t, n, polls, lag, state in self.rows(watcher):
            table.add_row(t, f"{n:,}", f"{polls:,}", lag, state)
        return table


def _run_until(watcher: Watcher, stop: threading.Event, deadline: float | None, progress: _Progress, staging: Path,
               quiet: bool) -> float:
    """Show progress until stopped, failed or past ``deadline``; returns the seconds it ran."""
    from rich.console import Console
    from rich.live import Live

    from ...capture.base import State

    started = time.monotonic()
    console = Console(stderr=True)

    def done() -> bool:
        return stop.is_set() or watcher.state == State.FAILED or (deadline is not None and time.monotonic() >= deadline)

    if quiet or not console.is_terminal:
        next_line = started + PLAIN_PROGRESS_EVERY
        while not done():
            stop.wait(0.2)
            if not quiet and time.monotonic() >= next_line:
                print(progress.line(watcher, time.monotonic() - started), flush=True)
                next_line += PLAIN_PROGRESS_EVERY
        return time.monotonic() - started
    with Live(progress.table(watcher, 0, staging), console=console, refresh_per_second=4, transient=True) as live:
        while not done():
            stop.wait(0.25)
            live.update(progress.table(watcher, time.monotonic() - started, staging))
    return time.monotonic() - started


def run(args: argparse.Namespace) -> int:
    """Check the configuration and the tables, then watch until stopped."""
    from google.api_core.exceptions import GoogleAPICallError

    from ...capture.group import WatcherGroup
    from ...errors import ConfigurationError, WatcherError
    from ...staging.sink import StagingSink
    from ..config import load_config
    from ..connection import open_database
    from ..main import PROG, CommandError
    from ..metrics_server import MetricsServer

    try:
        cfg = load_config(args.config)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    staging = cfg.staging_dir
    if staging.exists() and not staging.is_dir():
        raise CommandError(str(cfg.error("watch.staging_dir", f"{staging} exists and is not a folder")))
    ensure_reachable()
    stop = threading.Event()
    progress = _Progress()
    created_staging = not staging.exists()
    metrics = _metrics_server(args)
    try:
        with stop_on_signals(stop), metrics, open_database(**_database_args(args, cfg)) as target:
            infos = resolve_tables(target.database, cfg)
            modes = build_mode_watchers(target.database, cfg)
            members = ([build_watcher(target.database, cfg, list(infos))] if infos else []) + modes
            watcher = WatcherGroup(members) if len(members) > 1 else members[0]
            sink = StagingSink(staging, watcher_id=cfg.watcher_id)
            sink.attach(watcher)
            streams = modes[len(modes) - len(cfg.change_streams):]
            for member in members:
                member.add_batch_callback(progress.on_stream_batch(member) if member in streams
                                          else progress.on_batch)
            watched = [*infos, *(f"{h.table} (history)" for h in cfg.history),
                       *(f"{i.table} (change sets)" for w in modes[len(cfg.history):len(modes) - len(streams)]
                         for i in w.table_infos()),
                       *(f"change stream {s.stream}" for s in cfg.change_streams)]
            print(f"watching {', '.join(watched)} in {target.describe()}; staging to {staging}"
                  f"{'' if args.duration else '; press Ctrl-C to stop'}", flush=True)
            if isinstance(metrics, MetricsServer):
                metrics.watcher = watcher
                print(f"metrics at {metrics.url}/metrics, health at {metrics.url}/healthz", flush=True)
            try:
                start_watching(watcher, cfg)
                deadline = time.monotonic() + args.duration if args.duration else None
                elapsed = _run_until(watcher, stop, deadline, progress, staging, args.quiet)
            finally:
                watcher.stop()
            for table, staged, polls, lag, state in progress.rows(watcher):
                ended = " (dropped while watching)" if state == "dropped" else ""
                print(f"  {table}: {staged:,} changes staged, {polls:,} polls, lag {lag}{ended}")
            print(f"stopped after {elapsed:.1f} s: {sink.records_written:,} changes staged in "
                  f"{sink.batches_written:,} batches under {staging}", flush=True)
            if watcher.failure is not None:
                print(f"{PROG} {NAME}: error: the watcher failed: {watcher.failure}", file=sys.stderr)
                return EXIT_FAILED
    except ConfigurationError as exc:
        _remove_if_empty(staging, created_staging)
        raise CommandError(str(exc)) from None
    except (WatcherError, GoogleAPICallError) as exc:
        _remove_if_empty(staging, created_staging)
        print(f"{PROG} {NAME}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _metrics_server(args: argparse.Namespace) -> Any:
    """The ``--metrics-port`` endpoint, listening already (a no-op context without the option)."""
    from ..main import CommandError
    from ..metrics_server import DEFAULT_HOST, MetricsServer

    if args.metrics_port is None:
        if args.metrics_host is not None:
            raise CommandError("--metrics-host needs --metrics-port")
        return contextlib.nullcontext()
    host = args.metrics_host or DEFAULT_HOST
    try:
        return MetricsServer(None, host, args.metrics_port)
    except OSError as exc:
        raise CommandError(f"cannot serve metrics on {host}:{args.metrics_port}: {exc.strerror or exc}") from None


def _remove_if_empty(path: Path, created: bool) -> None:
    """Leave nothing behind when a run that created the staging folder failed before staging."""
    if created:
        with contextlib.suppress(OSError):
            path.rmdir()
