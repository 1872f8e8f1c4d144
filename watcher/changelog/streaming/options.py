"""The options of the ``spanner_watcher`` streaming source, checked once on the driver.

They mirror :class:`~watcher.capture.table_watcher.TableWatcher`'s poll options::

    spark.readStream.format("spanner_watcher")
        .option("database", "projects/p/instances/i/databases/d")   # or project / instance / database_id
        .option("table", "Singers")                  # or tables = "Singers,Albums", or tables = "*" (all watchable)
        .option("commit_timestamp_column", "LastUpdated")   # default: the column with allow_commit_timestamp
        .option("shard_column", "ShardId")           # with shards: a JSON list of the shard values
        .option("shards", "[-2, -1, 0, 1, 2]")       # one poll loop (one position in the offset) per value
        .option("table_hint", "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}")
        .option("limit", "10000")                    # rows per shard per micro-batch (default: all new rows)
        .option("shards_per_partition", "4")         # shard loops per Spark partition (task)
        .option("emulator_host", "127.0.0.1:9010")   # default: SPANNER_EMULATOR_HOST of the driver
        .option("start", "earliest")                 # or "now": only changes committed after the query starts
        .option("priority", "low")                   # the reads' priority (default: Spanner's)
        .option("request_tag", "nightly-stream")     # every query's request tag (default spanner-watcher)
        .option("database_role", "reader")           # the sessions' database role (fine-grained access control)
        .load()

or, in change-stream mode (:mod:`.change_stream_source`), the records of a change stream::

    spark.readStream.format("spanner_watcher")
        .option("database", "projects/p/instances/i/databases/d")
        .option("change_stream", "SingersStream")    # excludes the poll options (shards, limit, table_hint...)
        .option("start", "now")                      # or an RFC 3339 timestamp within the stream's retention
        .option("tables", "Singers,Albums")          # optional: only these tables' changes (default: all)
        .option("max_partitions", "32")              # Spark partitions per micro-batch at most (segments grouped)
        .load()

Example:
    >>> o = StreamOptions.parse({"database": "projects/p/instances/i/databases/d", "table": "Singers",
    ...                          "shard_column": "ShardId", "shards": "[0, 1]", "limit": "100"}, environ={})
    >>> o.location.database, o.tables, o.shards, o.limit
    ('d', ('Singers',), (0, 1), 100)
    >>> StreamOptions.parse({"table": "T"}, environ={})
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: spanner_watcher source: option database is missing (projects/<p>/instances/<i>/databases/<d>, or project, instance and database_id)
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from ...codec import timestamp_text
from ...errors import ConfigurationError
from ...request_settings import DEFAULT_REQUEST_TAG, DEFAULT_SETTINGS, RequestSettings
from ...sqlnames import quote_identifier, validate_identifier
from ..snapshots.spanner_source import SpannerLocation

#: The name the source is registered under (``spark.readStream.format(SOURCE_NAME)``).
SOURCE_NAME = "spanner_watcher"
#: ``tables`` value meaning every table with a commit-timestamp column.
ALL_TABLES = "*"
#: Where a new query starts: every row with a commit timestamp, or only changes after the query's start.
STARTS = ("earliest", "now")
#: Options of polling only: change-stream mode (option ``change_stream``) refuses them.
POLL_ONLY = ("commit_timestamp_column", "shard_column", "shards", "table_hint", "limit", "shards_per_partition")
DEFAULT_SHARDS_PER_PARTITION = 4
#: Change-stream mode: Spark partitions per micro-batch at most (one per partition segment up to it).
DEFAULT_MAX_PARTITIONS = 32
DEFAULT_WATCHER_ID = "spark-stream"
_DATABASE_PATH = re.compile(r"^projects/([^/]+)/instances/([^/]+)/databases/([^/]+)$")


@dataclass(frozen=True)
class StreamOptions:
    """The source's options, checked (picklable: it travels to the executors)."""

    location: SpannerLocation
    tables: tuple[str, ...]  # empty: all watchable tables (ALL_TABLES)
    commit_timestamp_column: str | None = None
    shard_column: str | None = None
    shards: tuple[Any, ...] = ()
    table_hint: str = ""
    limit: int | None = None
    shards_per_partition: int = DEFAULT_SHARDS_PER_PARTITION
    watcher_id: str = DEFAULT_WATCHER_ID
    start: str = "earliest"  # change-stream mode: "now" or RFC 3339 text
    change_stream: str | None = None  # set: change-stream mode (``tables``, when given, filters its records)
    max_partitions: int = DEFAULT_MAX_PARTITIONS
    #: The priority and request tag of every query (options priority, request_tag).
    request_settings: RequestSettings = DEFAULT_SETTINGS

    @staticmethod
    def parse(options: Mapping[str, str], environ: Mapping[str, str] | None = None) -> StreamOptions:
        """Check ``options`` (Spark passes them case-insensitively, as strings); errors name the option."""
        environ = os.environ if environ is None else environ
        get = {k.lower(): v for k, v in options.items()}.get
        location = _location(get, environ)
        settings = _request_settings(get)
        if get("change_stream"):
            return dataclasses.replace(_change_stream_options(get, location), request_settings=settings)
        tables = _tables(get("table"), get("tables"))
        shard_column, shards = get("shard_column"), _shards(get("shards"))
        if bool(shard_column) != bool(shards):
            raise _error("shard_column and shards go together (the column, and a JSON list of its values)")
        if shard_column:
            quote_identifier(shard_column, "shard column")
        column = get("commit_timestamp_column") or None
        if column:
            quote_identifier(column, "commit timestamp column")
        start = (get("start") or "earliest").lower()
        if start not in STARTS:
            raise _error(f"start must be one of {', '.join(STARTS)}, got {start!r}")
        return StreamOptions(location, tables, column, shard_column or None, shards, get("table_hint") or "",
                             _positive(get, "limit", None), _positive(get, "shards_per_partition", DEFAULT_SHARDS_PER_PARTITION) or 1,
                             get("watcher_id") or DEFAULT_WATCHER_ID, start, request_settings=settings)


def _request_settings(get: Any) -> RequestSettings:
    """Options priority and request_tag as RequestSettings (a refused value names the option)."""
    try:
        return RequestSettings(priority=get("priority") or None, request_tag=get("request_tag") or DEFAULT_REQUEST_TAG)
    except ConfigurationError as exc:
        raise _error(str(exc)) from None


def _change_stream_options(get: Any, location: SpannerLocation) -> StreamOptions:
    """Change-stream mode: the stream, where to start, an optional table filter; no poll option."""
    stream = get("change_stream")
    validate_identifier(stream, "change stream")
    given = [name for name in POLL_ONLY if get(name)]
    if given:
        raise _error(f"option change_stream (change-stream mode) excludes the poll option(s) {', '.join(given)}")
    tables = _tables(get("table"), get("tables")) if get("table") or get("tables") else ()
    start = (get("start") or "now").strip()
    if start.lower() == "now":
        start = "now"
    else:
        try:
            start = timestamp_text(DatetimeWithNanoseconds.from_rfc3339(start))
        except ValueError:
            raise _error(f"in change-stream mode start must be now or an RFC 3339 timestamp within the stream's "
                         f"retention (e.g. 2024-05-01T10:00:00Z), got {start!r}") from None
    return StreamOptions(location, tables, watcher_id=get("watcher_id") or DEFAULT_WATCHER_ID, start=start,
                         change_stream=stream,
                         max_partitions=_positive(get, "max_partitions", DEFAULT_MAX_PARTITIONS) or 1)


def _error(text: str) -> ConfigurationError:
    return ConfigurationError(f"{SOURCE_NAME} source: {text}")


def _location(get: Any, environ: Mapping[str, str]) -> SpannerLocation:
    path = get("database")
    host = get("emulator_host") or environ.get("SPANNER_EMULATOR_HOST") or None
    role = get("database_role") or None
    if path and "/" in path:
        match = _DATABASE_PATH.match(path)
        if not match:
            raise _error(f"option database must be projects/<p>/instances/<i>/databases/<d>, got {path!r}")
        project, instance, database = match.groups()
        return SpannerLocation(project, instance, database, emulator_host=host, database_role=role)
    project, instance, database = get("project"), get("instance"), get("database_id") or path
    if not (project and instance and database):
        raise _error("option database is missing (projects/<p>/instances/<i>/databases/<d>, "
                     "or project, instance and database_id)")
    return SpannerLocation(project, instance, database, emulator_host=host, database_role=role)


def _tables(table: str | None, tables: str | None) -> tuple[str, ...]:
    if table and tables:
        raise _error("give option table or option tables, not both")
    text = (table or tables or "").strip()
    if not text:
        raise _error("option table (or tables: a comma-separated list, or * for all watchable tables) is missing")
    if text == ALL_TABLES:
        return ()
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for name in names:
        for part in name.split("."):
            quote_identifier(part, "table")
    return names


def _shards(text: str | None) -> tuple[Any, ...]:
    if not text:
        return ()
    try:
        values = json.loads(text)
    except ValueError:
        raise _error(f"option shards must be a JSON list of shard values, got {text!r}") from None
    if not isinstance(values, list) or not values or any(v is None or isinstance(v, (list, dict)) for v in values):
        raise _error(f"option shards must be a non-empty JSON list of scalar, non-null values, got {text!r}")
    return tuple(values)


def _positive(get: Any, name: str, default: int | None) -> int | None:
    text = get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise _error(f"option {name} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise _error(f"option {name} must be a positive integer, got {value}")
    return value
