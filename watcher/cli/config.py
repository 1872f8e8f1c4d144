"""The TOML configuration of ``spanner-watcher watch``, validated up front into typed settings.

Every problem is reported before anything connects or writes, as one line naming the file,
the key at fault and its line, e.g. ``watcher.toml: tables.Singers.shards.values: expected a list
of integers or a range like '-18..18' (line 7)``; a file with several mistakes reports them all at
once (:class:`ConfigErrors`, one per line). Unknown keys are errors (with a did-you-mean).
The checks are plain code rather than pydantic models: pydantic reports "Extra inputs are
not permitted" or "Input should be a valid number" with union branches in the key path
(``watch.poll_interval.float``), so keeping these messages would need a translation table
about as long as the generic checks it would replace.

The file (every key optional except where noted)::

    [database]                 # omitted: SPANNER_PROJECT/..., SPANNER_EMULATOR_HOST, or --embedded
    project = "my-project"     # (and credentials, endpoint, database_role, embedded:
    instance = "my-instance"   # see watcher.cli.config_connection)
    database = "my-database"
    data_dir = "spanner-data"  # embedded local Spanner only: keep its databases here

    [watch]
    poll_interval = 1.0                      # seconds between polls that found less than `limit` rows
    limit = 10000                            # rows per poll
    fallback_to_with_query_seconds = 60      # use the WITH query when this far behind
    initial_timestamp = "now"                # "now", "beginning" or an RFC 3339 time, when no checkpoint exists
    checkpoint_table = "LAST_SEEN_COMMIT_TIMESTAMPS"
    staging_dir = "staging"                  # a path (relative to this file's folder) or a URL: file:///..., gs://...
    watcher_id = "watcher-1"                 # written in every staged record (default: random)
    discover_interval = 10                   # seconds between looks for created and dropped tables (0: never)
    max_batches_in_flight = 4                # batches a loop hands to acknowledging sinks before it waits
    mode = "poll"                            # or "change_stream": read one change stream only, named by
    change_stream = "SingersStream"          # (required then; the same as a [[change_streams]] entry with
                                             # only `stream`, see watcher.cli.config_modes)
    priority = "low"                         # and request_tag, transaction_tag, max_lag
                                             # (see watcher.cli.config_connection)

    [tables]
    include = "all"                          # "all" (default) or a list of table names or patterns ("Log_*")
    exclude = ["Audit*"]                     # names or patterns; only with "all" or include patterns
                                             # (tables created later that match join while watching)

    [tables.Singers]                         # per-table settings (any table watched)
    commit_timestamp_column = "LastUpdated"  # default: the column with allow_commit_timestamp=true
    hint = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
    shards = { kind = "fixed", column = "ShardId", values = "-18..18" }
    # or { kind = "not_null", column = "ShardId" }
    # or { kind = "time", column = "ShardId", interval = "DAY", previous_seconds = 60 }

    [[history]]                              # history-table mode (see watcher.cli.config_modes)
    table = "Documents"

    [[change_sets]]                          # tables without a commit-timestamp column
    tables = ["Orders"]

    [[change_streams]]                       # change-stream mode: every version, deletes, old values
    stream = "SingersStream"

    [kafka]                                  # publish to Kafka too (see watcher.cli.config_sinks,
    bootstrap_servers = "127.0.0.1:9092"     # also for [[sinks]]: several sinks, in order)
    topic_template = "%database%.%table%"

Example:
    >>> cfg = parse_config('''
    ... [watch]
    ... poll_interval = 0.5
    ... [tables.Singers]
    ... shards = { kind = "fixed", column = "ShardId", values = "-1..1" }
    ... ''', "watcher.toml")
    >>> cfg.poll_interval, cfg.tables["Singers"].shards.values
    (0.5, (-1, 0, 1))
    >>> parse_config("[watch]\\npoll_intervall = 1", "watcher.toml")
    Traceback (most recent call last):
    ...
    watcher.cli.config.ConfigError: watcher.toml: watch.poll_intervall: unknown key (did you mean poll_interval?) (line 2)
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.acks import DEFAULT_MAX_BATCHES_IN_FLIGHT
from ..capture.table_set import TableSelection, is_pattern
from ..errors import ConfigurationError, InvalidIdentifierError
from ..request_settings import RequestSettings
from ..sqlnames import has_name, validate_identifier
from ..storage_urls import parse, scheme_of
from .config_connection import REQUEST_KEYS, DatabaseSettings, read_database, read_requests
from .config_lines import key_line
from .config_modes import (
    MODE_KEYS,
    ChangeSetSettings,
    ChangeStreamSettings,
    HistorySettings,
    check_one_way,
    read_change_sets,
    read_change_streams,
    read_history,
    read_watch_mode,
)
from .config_sinks import SinkSettings, StagingSinkSettings, read_sinks
from .config_tables import ShardSettings, TableSettings, read_tables

__all__ = ["ConfigError", "ConfigErrors", "DatabaseSettings", "ShardSettings", "TableSettings", "WatchConfig", "load_config", "parse_config"]

#: The Java library's defaults.
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_LIMIT = 10_000
DEFAULT_FALLBACK_SECONDS = 60.0
DEFAULT_CHECKPOINT_TABLE = "LAST_SEEN_COMMIT_TIMESTAMPS"
DEFAULT_STAGING_DIR = "staging"
DEFAULT_DISCOVER_INTERVAL = 10.0
INITIAL_NAMED = ("now", "beginning")

_PATTERN = re.compile(r"^[A-Za-z0-9_*?]*(\[!?[A-Za-z0-9_-]+\][A-Za-z0-9_*?]*)*$")



class ConfigError(ConfigurationError):
    """A configuration file that cannot work; the message names the file, the key and, when known, its line."""

    def __init__(self, source: str, key: str, problem: str, line: int | None = None,
                 column: int | None = None) -> None:
        where = "" if line is None else f" (line {line})" if column is None else f" (line {line}, column {column})"
        super().__init__((f"{source}: {key}: {problem}" if key else f"{source}: {problem}") + where)
        self.source, self.key, self.problem, self.line, self.column = source, key, problem, line, column
        #: Every mistake this error stands for (one, or each of a :class:`ConfigErrors`).
        self.errors: tuple[ConfigError, ...] = (self,)

    def at(self, line: int | None) -> ConfigError:
        """The same error, naming ``line``."""
        return ConfigError(self.source, self.key, self.problem, line, self.column)


class ConfigErrors(ConfigError):
    """Several mistakes of one file, reported at once: a first line that counts them, then one per line.

    >>> print(ConfigErrors([ConfigError("w.toml", "watch.limit", "expected an integer", 2),
    ...                     ConfigError("w.toml", "watch.x", "unknown key", 3)]))
    w.toml: 2 mistakes:
      w.toml: watch.limit: expected an integer (line 2)
      w.toml: watch.x: unknown key (line 3)
    """

    def __init__(self, errors: list[ConfigError]) -> None:
        first = errors[0]
        ConfigurationError.__init__(self, "\n  ".join([f"{first.source}: {len(errors)} mistakes:",
                                                       *(str(e) for e in errors)]))
        self.source, self.key, self.problem, self.line, self.column = (first.source, first.key,
                                                                       f"{len(errors)} mistakes", first.line, None)
        self.errors = tuple(errors)


# --- typed settings ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class WatchConfig:
    """A validated ``watch`` configuration."""

    source: str
    database: DatabaseSettings = DatabaseSettings()
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    tables: dict[str, TableSettings] = field(default_factory=dict)
    poll_interval: float = DEFAULT_POLL_INTERVAL
    limit: int = DEFAULT_LIMIT
    fallback_to_with_query_seconds: float = DEFAULT_FALLBACK_SECONDS
    initial_timestamp: str | dt.datetime = "now"
    checkpoint_table: str = DEFAULT_CHECKPOINT_TABLE
    #: A local folder as a Path; a folder of another filesystem (gs://, s3://, hdfs://) as its URL.
    staging_dir: Path | str = Path(DEFAULT_STAGING_DIR)
    watcher_id: str | None = None
    discover_interval: float = DEFAULT_DISCOVER_INTERVAL
    #: Batches one poll loop or stream partition hands to sinks that acknowledge later before it waits.
    max_batches_in_flight: int = DEFAULT_MAX_BATCHES_IN_FLIGHT
    #: The priority and tags of the watchers' requests ([watch] priority, request_tag, transaction_tag).
    requests: RequestSettings = RequestSettings()
    #: /healthz answers 503 once a table lags more than this many seconds (None: no bound).
    max_lag: float | None = None

    history: tuple[HistorySettings, ...] = ()
    change_sets: tuple[ChangeSetSettings, ...] = ()
    change_streams: tuple[ChangeStreamSettings, ...] = ()
    #: Whether tables are polled by their commit-timestamp column (without [tables], only when
    #: no other capture mode is configured).
    poll_tables: bool = True
    #: Where batches go ([[sinks]] and [kafka], see watcher.cli.config_sinks); () for the default.
    sinks: tuple[SinkSettings, ...] = ()

    def sink_settings(self) -> tuple[SinkSettings, ...]:
        """The sinks every batch goes to, in order (by default one staging sink into ``staging_dir``).

        >>> [s.name for s in WatchConfig("x").sink_settings()]
        ['staging']
        """
        return self.sinks or (StagingSinkSettings("watch.staging_dir", "staging", self.staging_dir),)

    def selection(self) -> TableSelection:
        """The tables to watch as names and patterns (include None: every table with a commit-timestamp column)."""
        return TableSelection(self.include, self.exclude)

    def start_timestamp(self) -> dt.datetime | None:
        """Where a watcher without a checkpoint starts (None: the database's current time).

        >>> WatchConfig("x").start_timestamp() is None, WatchConfig("x", initial_timestamp="beginning").start_timestamp().year
        (True, 1)
        """
        from ..model import MIN_TIMESTAMP

        if self.initial_timestamp == "now":
            return None
        if self.initial_timestamp == "beginning":
            return MIN_TIMESTAMP
        assert isinstance(self.initial_timestamp, dt.datetime)
        return self.initial_timestamp

    def error(self, key: str, problem: str) -> ConfigError:
        """An error about ``key`` of this file (for checks that need the database, made later)."""
        return ConfigError(self.source, key, problem)


# --- reading ---------------------------------------------------------------------------------------

def load_config(path: str | Path) -> WatchConfig:
    """Read and validate a configuration file; relative paths in it are relative to its folder.

    Raises:
        ConfigError: the file is missing, is not TOML, or has a key that cannot work.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, "", "no such file (pass --config with the path of a watcher TOML file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, "", f"cannot read it: {exc}") from None
    return parse_config(text, source, base_dir=Path(path).resolve().parent)


def parse_config(text: str, source: str = "watcher.toml", *, base_dir: Path | None = None) -> WatchConfig:
    """Validate TOML ``text``; ``source`` names it in messages, ``base_dir`` anchors relative paths."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = _DECODE_AT.search(str(exc))
        if at is None:
            raise ConfigError(source, "", f"not valid TOML: {exc}") from None
        raise ConfigError(source, "", f"not valid TOML: {str(exc)[:at.start()]}",
                          int(at.group(1)), int(at.group(2))) from None
    # Each part is read on its own, so one mistake does not hide the next: a part that fails
    # counts as its default for the checks after it, and every mistake is raised at the end.
    r = _Reader(source, base_dir or Path.cwd(), text)
    r.keys("", data, _SECTIONS)
    database = r.attempt(DatabaseSettings(), read_database, r, data.get("database"))
    include, exclude, tables = r.attempt((None, (), {}), read_tables, r, data.get("tables"))
    watch = r.attempt({}, r.section, "watch", data.get("watch"), _WATCH_KEYS)
    history = r.attempt((), read_history, r, data.get("history"))
    change_sets = r.attempt((), read_change_sets, r, data.get("change_sets"))
    watcher_id = r.attempt(None, r.text, "watch.watcher_id", watch["watcher_id"]) if "watcher_id" in watch else None
    change_streams = r.attempt((), read_change_streams, r, data.get("change_streams"), watcher_id)
    one_stream = r.attempt(None, read_watch_mode, r, watch, data, watcher_id)
    if one_stream is not None:
        change_streams = (one_stream,)
    r.attempt(None, check_one_way, r, include, history, change_sets)
    requests, max_lag = r.attempt((RequestSettings(), None), read_requests, r, watch)
    staging_dir = r.attempt(Path(DEFAULT_STAGING_DIR), r.folder, "watch.staging_dir",
                            watch.get("staging_dir", DEFAULT_STAGING_DIR))
    config = WatchConfig(
        source=source, database=database, include=include, exclude=exclude, tables=tables,
        poll_interval=r.attempt(DEFAULT_POLL_INTERVAL, r.number, "watch.poll_interval",
                                watch.get("poll_interval", DEFAULT_POLL_INTERVAL), minimum=0.0),
        limit=r.attempt(DEFAULT_LIMIT, r.integer, "watch.limit", watch.get("limit", DEFAULT_LIMIT), minimum=1),
        fallback_to_with_query_seconds=r.attempt(
            DEFAULT_FALLBACK_SECONDS, r.number, "watch.fallback_to_with_query_seconds",
            watch.get("fallback_to_with_query_seconds", DEFAULT_FALLBACK_SECONDS), minimum=0.0),
        initial_timestamp=r.attempt("now", r.initial, "watch.initial_timestamp", watch.get("initial_timestamp", "now")),
        checkpoint_table=r.attempt(DEFAULT_CHECKPOINT_TABLE, r.identifier, "watch.checkpoint_table",
                                   watch.get("checkpoint_table", DEFAULT_CHECKPOINT_TABLE), "table name"),
        staging_dir=staging_dir, sinks=r.attempt((), read_sinks, r, data.get("sinks"), data.get("kafka"), staging_dir),
        watcher_id=watcher_id,
        discover_interval=r.attempt(DEFAULT_DISCOVER_INTERVAL, r.number, "watch.discover_interval",
                                    watch.get("discover_interval", DEFAULT_DISCOVER_INTERVAL), minimum=0.0),
        max_batches_in_flight=r.attempt(DEFAULT_MAX_BATCHES_IN_FLIGHT, r.integer, "watch.max_batches_in_flight",
                                        watch.get("max_batches_in_flight", DEFAULT_MAX_BATCHES_IN_FLIGHT), minimum=1),
        requests=requests, max_lag=max_lag,
        history=history, change_sets=change_sets, change_streams=change_streams,
        poll_tables="tables" in data or not (history or change_sets or change_streams),
    )
    r.raise_errors()
    return config


#: Where tomllib's messages give the position of a syntax error.
_DECODE_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_SECTIONS = ("database", "watch", "tables", "history", "change_sets", "change_streams", "sinks", "kafka")
_WATCH_KEYS = ("poll_interval", "limit", "fallback_to_with_query_seconds", "initial_timestamp", "checkpoint_table",
               "staging_dir", "watcher_id", "discover_interval", "max_batches_in_flight", *MODE_KEYS, *REQUEST_KEYS)
_TYPE_NAMES: dict[type, str] = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                                list: "a list", dict: "a table", dt.datetime: "a date-time", dt.date: "a date",
                                dt.time: "a time"}


def _did_you_mean(word: str, choices: Any) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Reader:
    """Checks values one key at a time; every error names ``source``, the dotted key and its line in ``text``.

    A check raises its first mistake; :meth:`attempt` runs one, keeps the mistake and goes on, and
    :meth:`raise_errors` raises everything kept, so a file's mistakes are reported together.
    """

    def __init__(self, source: str, base_dir: Path, text: str = "") -> None:
        self.source = source
        self.base_dir = base_dir
        self.text_of_file = text
        self.errors: list[ConfigError] = []

    #: For the section readers of other modules (config_tables, config_modes).
    did_you_mean = staticmethod(_did_you_mean)
    kind = staticmethod(_kind)

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(self.source, key, problem)

    def report(self, error: ConfigError) -> None:
        """Keep ``error`` (with its key's line) for :meth:`raise_errors`."""
        self.errors.append(error if error.line is not None else error.at(key_line(self.text_of_file, error.key)))

    def attempt(self, default: Any, check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``check(*args, **kwargs)``, or ``default`` after keeping the mistake it raised."""
        try:
            return check(*args, **kwargs)
        except ConfigError as exc:
            for error in exc.errors:
                self.report(error)
            return default

    def raise_errors(self) -> None:
        """Raise the mistakes kept: the one, or all of them as :class:`ConfigErrors` (in the file's order)."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(sorted(self.errors, key=lambda e: (e.line is None, e.line or 0)))

    def keys(self, prefix: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
        """Keep an error for each key of ``table`` not in ``allowed`` (unknown keys stop no other check)."""
        for key in table:
            if key not in allowed:
                where = f"{prefix}.{key}" if prefix else key
                hint = _did_you_mean(key, allowed) or f"; {'the file' if not prefix else prefix} takes {', '.join(allowed)}"
                self.report(self.fail(where, f"unknown key{hint}"))

    def section(self, key: str, value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table ([{key}]), got {_kind(value)}")
        self.keys(key, value, allowed)
        return value

    def text(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        if not value.strip():
            raise self.fail(key, "must not be empty")
        return value

    def identifier(self, key: str, value: Any, what: str) -> str:
        name = self.text(key, value)
        try:
            return validate_identifier(name, what)
        except InvalidIdentifierError as exc:
            raise self.fail(key, str(exc)) from None

    def number(self, key: str, value: Any, *, minimum: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected a number of seconds, got {_kind(value)}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum:g}, got {value}")
        return float(value)

    def integer(self, key: str, value: Any, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        return value

    def path(self, key: str, value: Any) -> Path:
        path = Path(self.text(key, value)).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    def folder(self, key: str, value: Any) -> Path | str:
        """A folder's path or URL (:mod:`watcher.storage_urls`): a local one as a Path, another as its URL."""
        text = self.text(key, value)
        if scheme_of(text) is None:
            return self.path(key, value)
        local = parse(text, base=self.base_dir).local
        return Path(local) if local is not None else text

    def initial(self, key: str, value: Any) -> str | dt.datetime:
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                raise self.fail(key, "a date-time needs a UTC offset, e.g. 2024-05-01T10:00:00Z")
            return value
        if not isinstance(value, str):
            raise self.fail(key, f"expected \"now\", \"beginning\" or an RFC 3339 time, got {_kind(value)}")
        if value.lower() in INITIAL_NAMED:
            return value.lower()
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise self.fail(key, f"expected \"now\", \"beginning\" or an RFC 3339 time like 2024-05-01T10:00:00Z, "
                                 f"got {value!r}{_did_you_mean(value.lower(), INITIAL_NAMED)}") from None
        if parsed.tzinfo is None:
            raise self.fail(key, f"{value!r} has no UTC offset; add one, e.g. {value}Z")
        return parsed.astimezone(dt.UTC)

    # --- sections ---------------------------------------------------------------------------------

    def include(self, value: Any, key: str = "tables.include") -> tuple[str, ...] | None:
        if isinstance(value, str):
            if value.lower() == "all":
                return None
            raise self.fail(key, f"expected \"all\" or a list of table names, got {value!r}")
        names = self.names(key, value)
        if not names:
            raise self.fail(key, "an empty list watches nothing; list at least one table, or use \"all\"")
        return names

    def names(self, key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of table names, got {_kind(value)}")
        for i, name in enumerate(value):
            if isinstance(name, str) and is_pattern(name):
                if not _PATTERN.match(name):
                    raise self.fail(f"{key}[{i}]", f"invalid table pattern {name!r}: use letters, digits, _ and the "
                                                   "wildcards * (any run), ? (one character) and [...] (one of)")
            else:
                self.identifier(f"{key}[{i}]", name, "table name")
            if has_name(value[:i], name):
                raise self.fail(f"{key}[{i}]", f"{name} is listed twice")
        return tuple(value)
