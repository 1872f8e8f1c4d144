"""The capture modes of the ``watch`` configuration besides polling: history tables, change sets, change streams.

::

    [[history]]                          # history-table mode: every version of every row, deletes included
    table = "Documents"                  # required: the data table (its writers append history rows)
    history_table = "DocumentsHistory"   # default: <table>History

    [[change_sets]]                      # tables without a commit-timestamp column, through CHANGE_SETS
    tables = ["Orders", "Stock"]         # default "all": every table with the change-set id column
    exclude = ["Scratch"]                # only with tables = "all"
    change_sets_table = "CHANGE_SETS"
    change_set_column = "CHANGE_SET_ID"

    [[change_streams]]                   # change-stream mode: every version, hard deletes, old values
    stream = "SingersStream"             # required: the change stream (spanner-watcher ddl change-stream)
    heartbeat = 2.0                      # seconds an idle partition reports after (1 to 300)
    start = "now"                        # without stored progress: "now" or an RFC 3339 time within retention
    max_concurrent_partitions = 16       # partitions read at the same time at most
    progress_table = "WATCHER_CHANGE_STREAM_PARTITIONS"   # where each partition's place is stored
    watcher_id = "default"               # names the progress rows (default: [watch] watcher_id, else "default")

A configuration that only reads one change stream may say so in ``[watch]`` instead, as
``mode = "change_stream"`` with the stream's name; it builds exactly the settings of a
``[[change_streams]]`` entry naming only ``stream`` (every other key at its default)::

    [watch]
    mode = "change_stream"               # "poll" (the default) or "change_stream"
    change_stream = "SingersStream"      # required with mode = "change_stream"

That mode reads the stream alone: ``[tables]``, ``[[history]]``, ``[[change_sets]]`` and
``[[change_streams]]`` beside it are errors (leave ``mode`` out to run a stream beside polled
tables, or to tune the stream in a ``[[change_streams]]`` entry), and so is a change stream with
``mode = "poll"``.

With any of these sections and no ``[tables]`` section, no table is polled by its commit-timestamp
column; give ``[tables]`` (``include = "all"`` or a list) to poll tables too. A table is
captured one way only by polling, history and change sets: naming it in two places is an
error, and ``include = "all"`` leaves out the tables captured otherwise, the history tables,
the change-set tables and the change streams' progress tables. A change stream may track a
polled table too: the changelog keeps one row per version (the stream's when both saw it).

Example:
    >>> from watcher.cli.config import parse_config
    >>> cfg = parse_config('[[history]]\\ntable = "Documents"', "w.toml")
    >>> cfg.history[0].history_table, cfg.poll_tables
    ('DocumentsHistory', False)
    >>> parse_config('[[history]]\\ntable = "Documents"\\nhistory = "X"', "w.toml")
    Traceback (most recent call last):
    ...
    watcher.cli.config.ConfigError: w.toml: history[0].history: unknown key (did you mean history_table?) (line 3)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..sqlnames import has_name

if TYPE_CHECKING:
    from .config import _Reader

HISTORY_KEYS = ("table", "history_table")
#: The values of ``[watch] mode``.
POLL_MODE, CHANGE_STREAM_MODE = "poll", "change_stream"
WATCH_MODES = (POLL_MODE, CHANGE_STREAM_MODE)
#: The ``[watch]`` keys of the one-stream form (see the module docstring).
MODE_KEYS = ("mode", "change_stream")
#: The key of a stream named by ``[watch] mode = "change_stream"`` (ChangeStreamSettings.key).
WATCH_MODE_KEY = "watch"
#: Sections that cannot go with ``mode = "change_stream"`` (they poll, or name streams a second way).
NOT_WITH_STREAM_MODE = ("tables", "history", "change_sets", "change_streams")
CHANGE_STREAMS_KEYS = ("stream", "heartbeat", "start", "max_concurrent_partitions", "progress_table", "watcher_id")
DEFAULT_HEARTBEAT_SECONDS = 2.0
DEFAULT_MAX_CONCURRENT_PARTITIONS = 16
DEFAULT_PROGRESS_TABLE = "WATCHER_CHANGE_STREAM_PARTITIONS"
DEFAULT_STREAM_WATCHER_ID = "default"
CHANGE_SETS_KEYS = ("tables", "exclude", "change_sets_table", "change_set_column")
DEFAULT_CHANGE_SETS_TABLE = "CHANGE_SETS"
DEFAULT_CHANGE_SET_COLUMN = "CHANGE_SET_ID"


@dataclass(frozen=True)
class HistorySettings:
    """One ``[[history]]`` entry: a data table watched through its history table."""

    key: str
    table: str
    history_table: str


@dataclass(frozen=True)
class ChangeSetSettings:
    """One ``[[change_sets]]`` entry (``tables`` None: every table with the change-set column)."""

    key: str
    tables: tuple[str, ...] | None
    exclude: tuple[str, ...]
    change_sets_table: str
    change_set_column: str


@dataclass(frozen=True)
class ChangeStreamSettings:
    """One ``[[change_streams]]`` entry (``start`` None: now, by the database's clock)."""

    key: str
    stream: str
    heartbeat: float
    start: dt.datetime | None
    max_concurrent_partitions: int
    progress_table: str
    watcher_id: str

    def key_of(self, name: str) -> str:
        """The configuration key that set field ``name`` (for error messages).

        >>> ChangeStreamSettings("change_streams[1]", "S", 2.0, None, 16, "P", "w").key_of("stream")
        'change_streams[1].stream'
        >>> ChangeStreamSettings("watch", "S", 2.0, None, 16, "P", "w").key_of("stream")
        'watch.change_stream'
        """
        if self.key == WATCH_MODE_KEY and name == "stream":
            return "watch.change_stream"
        return f"{self.key}.{name}"


def _entries(r: _Reader, name: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise r.fail(name, f"expected [[{name}]] entries (an array of tables), got {type(value).__name__}")
    return value


def read_history(r: _Reader, value: Any) -> tuple[HistorySettings, ...]:
    """The ``[[history]]`` entries, checked."""
    from ..capture.helper_tables.history import history_table_name

    out: list[HistorySettings] = []
    for i, entry in enumerate(_entries(r, "history", value)):
        key = f"history[{i}]"
        r.keys(key, entry, HISTORY_KEYS)
        if "table" not in entry:
            raise r.fail(f"{key}.table", "missing: name the data table whose history table is watched")
        table = r.identifier(f"{key}.table", entry["table"], "table name")
        if has_name([h.table for h in out], table):
            raise r.fail(f"{key}.table", f"{table} is listed twice in [[history]]")
        history = (r.identifier(f"{key}.history_table", entry["history_table"], "table name")
                   if "history_table" in entry else history_table_name(table))
        out.append(HistorySettings(key, table, history))
    return tuple(out)


def read_change_sets(r: _Reader, value: Any) -> tuple[ChangeSetSettings, ...]:
    """The ``[[change_sets]]`` entries, checked."""
    out: list[ChangeSetSettings] = []
    for i, entry in enumerate(_entries(r, "change_sets", value)):
        key = f"change_sets[{i}]"
        r.keys(key, entry, CHANGE_SETS_KEYS)
        tables = r.include(entry.get("tables", "all"), f"{key}.tables")
        exclude = r.names(f"{key}.exclude", entry.get("exclude", []))
        if exclude and tables is not None:
            raise r.fail(f"{key}.exclude", "only applies with tables = \"all\"")
        out.append(ChangeSetSettings(
            key, tables, exclude,
            r.identifier(f"{key}.change_sets_table", entry.get("change_sets_table", DEFAULT_CHANGE_SETS_TABLE),
                         "table name"),
            r.identifier(f"{key}.change_set_column", entry.get("change_set_column", DEFAULT_CHANGE_SET_COLUMN),
                         "column name")))
    return tuple(out)


def read_change_streams(r: _Reader, value: Any, watcher_id: str | None) -> tuple[ChangeStreamSettings, ...]:
    """The ``[[change_streams]]`` entries, checked (``watcher_id``: the [watch] section's, the default here)."""
    out: list[ChangeStreamSettings] = []
    for i, entry in enumerate(_entries(r, "change_streams", value)):
        key = f"change_streams[{i}]"
        r.keys(key, entry, CHANGE_STREAMS_KEYS)
        if "stream" not in entry:
            raise r.fail(f"{key}.stream", "missing: name the change stream to read (create one with "
                                          "`spanner-watcher ddl change-stream NAME --table TABLE`)")
        stream = r.identifier(f"{key}.stream", entry["stream"], "change stream name")
        ident = r.text(f"{key}.watcher_id", entry["watcher_id"]) if "watcher_id" in entry else None
        ident = ident or watcher_id or DEFAULT_STREAM_WATCHER_ID
        if any(s.stream.casefold() == stream.casefold() and s.watcher_id == ident for s in out):
            raise r.fail(f"{key}.stream", f"{stream} is listed twice in [[change_streams]] with watcher_id {ident!r} "
                                          "(two entries would store their progress in the same rows)")
        heartbeat = r.number(f"{key}.heartbeat", entry.get("heartbeat", DEFAULT_HEARTBEAT_SECONDS), minimum=1.0)
        if heartbeat > 300:
            raise r.fail(f"{key}.heartbeat", f"must be at most 300 seconds, got {heartbeat:g}")
        start = r.initial(f"{key}.start", entry.get("start", "now"))
        if start == "beginning":
            raise r.fail(f"{key}.start", "a change stream reads back only as far as its retention period: use \"now\" "
                                         "or an RFC 3339 time within it")
        out.append(ChangeStreamSettings(
            key, stream, heartbeat, start if isinstance(start, dt.datetime) else None,
            r.integer(f"{key}.max_concurrent_partitions",
                      entry.get("max_concurrent_partitions", DEFAULT_MAX_CONCURRENT_PARTITIONS), minimum=1),
            r.identifier(f"{key}.progress_table", entry.get("progress_table", DEFAULT_PROGRESS_TABLE), "table name"),
            ident))
    return tuple(out)


def read_watch_mode(r: _Reader, watch: dict[str, Any], sections: dict[str, Any],
                    watcher_id: str | None) -> ChangeStreamSettings | None:
    """The stream of ``[watch] mode = "change_stream"`` (None in poll mode), its combinations checked.

    ``watch`` is the ``[watch]`` table, ``sections`` the whole file.

    >>> from watcher.cli.config import parse_config
    >>> s = parse_config('[watch]\\nmode = "change_stream"\\nchange_stream = "S"', "w.toml").change_streams[0]
    >>> s.stream, s.heartbeat, s.watcher_id, s.key_of("stream")
    ('S', 2.0, 'default', 'watch.change_stream')
    >>> parse_config('[watch]\\nmode = "change_stream"', "w.toml")
    Traceback (most recent call last):
    ...
    watcher.cli.config.ConfigError: w.toml: watch.change_stream: missing: mode = "change_stream" reads the change stream named here, e.g. change_stream = "SingersStream" (line 1)
    """
    mode = watch.get("mode", POLL_MODE)
    if not isinstance(mode, str) or mode not in WATCH_MODES:
        shown = repr(mode) if isinstance(mode, str) else r.kind(mode)
        hint = r.did_you_mean(mode.lower(), WATCH_MODES) if isinstance(mode, str) else ""
        raise r.fail("watch.mode", f"expected \"poll\" or \"change_stream\", got {shown}{hint}")
    if mode == POLL_MODE:
        if "change_stream" in watch:
            raise r.fail("watch.change_stream", "only with mode = \"change_stream\" (add it, or name the stream in "
                                                "a [[change_streams]] entry to read it beside polled tables)")
        if "mode" in watch and sections.get("change_streams"):
            raise r.fail("change_streams", "reads a change stream, but watch.mode = \"poll\" says polling only; "
                                           "leave mode out to run both")
        return None
    if "change_stream" not in watch:
        raise r.fail("watch.change_stream", "missing: mode = \"change_stream\" reads the change stream named here, "
                                            "e.g. change_stream = \"SingersStream\"")
    for section in NOT_WITH_STREAM_MODE:
        if section in sections:
            raise r.fail(section, f"cannot be used with watch.mode = \"change_stream\", which reads only the stream "
                                  f"{watch['change_stream']!r}; leave mode and change_stream out of [watch] to combine "
                                  "capture modes (a [[change_streams]] entry names the stream then)")
    stream = r.identifier("watch.change_stream", watch["change_stream"], "change stream name")
    return ChangeStreamSettings(WATCH_MODE_KEY, stream, DEFAULT_HEARTBEAT_SECONDS, None, DEFAULT_MAX_CONCURRENT_PARTITIONS,
                                DEFAULT_PROGRESS_TABLE, watcher_id or DEFAULT_STREAM_WATCHER_ID)


def check_one_way(r: _Reader, include: tuple[str, ...] | None, history: tuple[HistorySettings, ...],
                  change_sets: tuple[ChangeSetSettings, ...]) -> None:
    """Each named table is captured one way only (two ways would stage its changes twice)."""
    seen: dict[str, str] = {}

    def claim(table: str, key: str) -> None:
        for name, where in seen.items():
            if has_name([name], table):
                raise r.fail(key, f"{table} is already captured by {where}; a table is captured one way only")
        seen[table] = key

    for t in include or ():
        claim(t, "tables.include")
    for h in history:
        claim(h.table, f"{h.key}.table")
    for c in change_sets:
        for t in c.tables or ():
            claim(t, f"{c.key}.tables")
    if sum(1 for c in change_sets if c.tables is None) > 1:
        raise r.fail("change_sets", "tables = \"all\" may be used by one [[change_sets]] entry only")


def captured_elsewhere(history: tuple[HistorySettings, ...], change_sets: tuple[ChangeSetSettings, ...],
                       change_set_tables: list[str], change_streams: tuple[ChangeStreamSettings, ...] = ()) -> list[str]:
    """Tables that ``include = "all"`` leaves out: captured by another mode, or its helper tables.

    >>> captured_elsewhere((HistorySettings("h", "Docs", "DocsHistory"),), (), ["Orders"])
    ['Docs', 'DocsHistory', 'Orders']
    """
    names = [n for h in history for n in (h.table, h.history_table)]
    names += [c.change_sets_table for c in change_sets]
    names += [s.progress_table for s in change_streams if not has_name(names, s.progress_table)]
    return names + change_set_tables
