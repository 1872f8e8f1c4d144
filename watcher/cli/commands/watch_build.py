"""How ``spanner-watcher watch`` builds its watchers from a checked configuration and the database.

The tables to poll are resolved against the database (errors name the configuration key), then
a :class:`~watcher.capture.database_watcher.DatabaseWatcher` for the polled tables, a
:class:`~watcher.capture.helper_tables.history.HistoryWatcher` per ``[[history]]`` entry, a
:class:`~watcher.capture.helper_tables.change_sets.ChangeSetWatcher` per ``[[change_sets]]`` entry
and a :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher` per ``[[change_streams]]``
entry are built, not started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...sqlnames import find_name, has_name

if TYPE_CHECKING:  # imported when a command runs, so that `--help` starts quickly
    from ...capture.base import Watcher


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


def _change_set_watchers(database: Any, cfg: Any, requests: Any = None) -> list[Any]:
    from ...capture.database_watcher import ALL
    from ...capture.helper_tables.change_sets import ChangeSetWatcher

    return [ChangeSetWatcher(database, list(c.tables) if c.tables is not None else ALL, exclude=c.exclude,
                             change_sets_table=c.change_sets_table, change_set_column=c.change_set_column,
                             checkpoints=_checkpoints(database, cfg, requests),
                             poll_interval=cfg.poll_interval, limit=cfg.limit, initial_timestamp=cfg.start_timestamp(),
                             request_settings=requests, max_batches_in_flight=cfg.max_batches_in_flight)
            for c in cfg.change_sets]


def _checkpoints(database: Any, cfg: Any, requests: Any) -> Any:
    """The checkpoint store of the configuration, its requests tagged as ``requests`` (RequestSettings) say."""
    from ...checkpoints import SpannerCommitTimestampRepository

    return SpannerCommitTimestampRepository(database, table=cfg.checkpoint_table, request_settings=requests)


def build_mode_watchers(database: Any, cfg: Any, requests: Any = None) -> list[Any]:
    """The history and change-set watchers of the configuration (not started), their tables checked;
    errors name the configuration key. ``requests``: the RequestSettings of their requests."""
    from ...capture.helper_tables.history import HistoryTable, HistoryWatcher
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
                                       checkpoints=_checkpoints(database, cfg, requests),
                                       poll_interval=cfg.poll_interval, limit=cfg.limit,
                                       fallback_to_with_query_seconds=cfg.fallback_to_with_query_seconds,
                                       initial_timestamp=cfg.start_timestamp(), request_settings=requests,
                                       max_batches_in_flight=cfg.max_batches_in_flight))
    for c, w in zip(cfg.change_sets, _change_set_watchers(database, cfg, requests), strict=True):
        try:
            w.describe_tables()
        except (SchemaError, ConfigurationError) as exc:
            raise cfg.error(f"{c.key}.tables", f"{exc} in {database.name}") from None
        watchers.append(w)
    return watchers + build_stream_watchers(database, cfg, requests)


def build_stream_watchers(database: Any, cfg: Any, requests: Any = None) -> list[Any]:
    """A ChangeStreamWatcher per ``[[change_streams]]`` entry (not started), each stream checked to
    exist; errors name the configuration key. ``requests``: the RequestSettings of their requests."""
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
            raise cfg.error(s.key_of("stream"), f"{exc} (create it with `spanner-watcher ddl change-stream "
                                               f"{s.stream} --table TABLE`, then apply the statement)") from None
        watchers.append(ChangeStreamWatcher(
            database, s.stream, heartbeat=s.heartbeat, start=s.start, max_concurrent_partitions=s.max_concurrent_partitions,
            progress=SpannerProgressStore(database, table=s.progress_table, request_settings=requests),
            watcher_id=s.watcher_id, ignore_tables=own, request_settings=requests,
            max_batches_in_flight=cfg.max_batches_in_flight))
    return watchers


def start_watching(watcher: Watcher, cfg: Any) -> None:
    """Start ``watcher``; a stream start outside its retention is a configuration error naming the key."""
    from ...errors import ChangeStreamRetentionError

    try:
        watcher.start()
    except ChangeStreamRetentionError as exc:
        key = next((s.key_of("start") for s in cfg.change_streams
                    if s.stream.casefold() == str(exc.stream).casefold()), "change_streams")
        raise cfg.error(key, str(exc)) from None


def build_watcher(database: Any, cfg: Any, tables: list[str], requests: Any = None) -> Watcher:
    """The DatabaseWatcher the configuration describes (not started); ``requests``: its RequestSettings.

    ``tables`` are the ones found now; with ``"all"`` or patterns, tables created later join
    (their ``[tables.<Name>]`` settings apply too).
    """
    from ...capture.database_watcher import DatabaseWatcher
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
        checkpoints=_checkpoints(database, cfg, requests),
        poll_interval=cfg.poll_interval, limit=cfg.limit,
        fallback_to_with_query_seconds=cfg.fallback_to_with_query_seconds, initial_timestamp=cfg.start_timestamp(),
        request_settings=requests, max_batches_in_flight=cfg.max_batches_in_flight)
