"""Shard providers: narrow each poll to a slice of the table, and name the slice.

A shard provider adds a filter to the poll query (after the commit-timestamp condition)
and gives the value under which the poll loop's progress is stored. The poll query then
reads only the rows of its shards, which with a NULL_FILTERED index on
(shard column, commit timestamp) keeps a poll's cost proportional to what it returns.

All providers are immutable and thread-safe.

Example:
    >>> p = FixedShardProvider("ShardId", range(-2, 3))
    >>> p.shard_filter().sql
    ' AND `ShardId` IS NOT NULL AND `ShardId` IN UNNEST(@shard)'
    >>> NotNullShardProvider("ShardId").shard_filter().sql
    ' AND `ShardId` IS NOT NULL'

A provider writes its filter in the dialect of the watched database (GoogleSQL by default):

    >>> from watcher.dialects import POSTGRESQL
    >>> p.shard_filter(POSTGRESQL).sql
    ' AND "ShardId" IS NOT NULL AND "ShardId" = ANY(@shard)'
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import decimal
import enum
import hashlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.cloud.spanner_v1 import param_types

from ..dialects import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of
from ..errors import ConfigurationError
from ..request_settings import RequestSettings, settings_or_default
from ..sqlnames import find_name, validate_identifier

SHARD_PARAM = "shard"
P = TypeVar("P")


@dataclass(frozen=True)
class ShardFilter:
    """SQL to append to a poll's WHERE clause (starting with `` AND ``), with its parameters."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)


class ShardProvider(ABC):
    """Restricts a poll loop to some shards of a table."""

    @abstractmethod
    def shard_filter(self, dialect: Dialect = GOOGLE_SQL) -> ShardFilter:
        """The filter for the next poll, in ``dialect`` (names quoted by it, parameters written ``@name``)."""

    @property
    def shard_value(self) -> Any:
        """The value progress is stored under (None: one checkpoint for the whole table)."""
        return None


def shard_filter_for(provider: ShardProvider, dialect: Dialect, columns: Iterable[str] = ()) -> ShardFilter:
    """``provider``'s filter in ``dialect``; a provider written before dialects (``shard_filter(self)``)
    serves GoogleSQL databases only, and says so for another.

    ``columns`` (the table's, as the database spells them) let a shard column given in another case be
    found under its real name: a PostgreSQL table created without quotes has lower-case names.

    >>> from watcher.dialects import POSTGRESQL
    >>> shard_filter_for(NotNullShardProvider("ShardId"), POSTGRESQL, ["id", "shardid"]).sql
    ' AND "shardid" IS NOT NULL'
    """
    provider = with_column_as_spelled(provider, columns)
    if "dialect" in inspect.signature(provider.shard_filter).parameters:
        return provider.shard_filter(dialect)
    if dialect is not GOOGLE_SQL:
        raise ConfigurationError(f"shard provider {provider!r} writes GoogleSQL only (its shard_filter takes no "
                                 f"dialect), and the database is {dialect.name}")
    return provider.shard_filter()


def with_column_as_spelled(provider: P, columns: Iterable[str]) -> P:
    """``provider``, or a copy of it whose shard column is spelled as in ``columns`` (when it is there in
    another case only).

    >>> with_column_as_spelled(FixedShardProvider("ShardId", 1), ["shardid"]).column
    'shardid'
    """
    column = getattr(provider, "column", None)
    spelled = {c: c for c in columns}
    real = find_name(spelled, column) if isinstance(column, str) and spelled else None
    if real is None or real == column:
        return provider
    renamed = copy.copy(provider)
    renamed.column = real  # type: ignore[attr-defined]
    return renamed


def param_type_of(value: Any) -> Any:
    """The Spanner parameter type of a Python value (for shard values)."""
    for py_type, spanner_type in _PARAM_TYPES:
        if isinstance(value, py_type):
            return spanner_type
    raise ConfigurationError(f"unsupported shard value {value!r} of type {type(value).__name__}")


_PARAM_TYPES: tuple[tuple[type, Any], ...] = (
    (bool, param_types.BOOL),  # before int: bool is an int
    (int, param_types.INT64),
    (float, param_types.FLOAT64),
    (str, param_types.STRING),
    (bytes, param_types.BYTES),
    (dt.datetime, param_types.TIMESTAMP),  # before date: datetime is a date
    (dt.date, param_types.DATE),
    (decimal.Decimal, param_types.NUMERIC),
)


class FixedShardProvider(ShardProvider):
    """A fixed shard value, or a fixed set of them, in a (usually computed) shard column.

    A scalar gives `` AND `col` = @shard``; a list (or range) gives
    `` AND `col` IS NOT NULL AND `col` IN UNNEST(@shard)``, which a NULL_FILTERED index
    on the column can serve.

    >>> FixedShardProvider("ShardId", 3).shard_filter().sql
    ' AND `ShardId` = @shard'
    """

    def __init__(self, column: str, values: Any, *, value_type: Any = None) -> None:
        self.column = validate_identifier(column, "shard column")
        self.is_array = isinstance(values, (list, tuple, range, set, frozenset))
        if self.is_array:
            items = list(values)
            if not items:
                raise ConfigurationError(f"FixedShardProvider for column {column} needs at least one shard value")
            if any(v is None for v in items):
                raise ConfigurationError(f"FixedShardProvider for column {column}: shard values cannot be NULL")
            self.values: tuple[Any, ...] = tuple(items)
            element = value_type or param_type_of(items[0])
            self._type = param_types.Array(element)
            self.element_type = element
        else:
            if values is None:
                raise ConfigurationError(f"FixedShardProvider for column {column}: the shard value cannot be NULL")
            self.values = (values,)
            self._type = value_type or param_type_of(values)
            self.element_type = self._type
        self._value = list(self.values) if self.is_array else self.values[0]

    def shard_filter(self, dialect: Dialect = GOOGLE_SQL) -> ShardFilter:
        quoted = dialect.quote(self.column, "shard column")
        if self.is_array:
            sql = f" AND {quoted} IS NOT NULL AND {dialect.in_array(quoted, SHARD_PARAM)}"
        else:
            sql = f" AND {quoted} = @{SHARD_PARAM}"
        return ShardFilter(sql, {SHARD_PARAM: self._value}, {SHARD_PARAM: self._type})

    @property
    def shard_value(self) -> Any:
        return self._value

    def __repr__(self) -> str:
        return f"FixedShardProvider({self.column!r}, {self._value!r})"


class NotNullShardProvider(ShardProvider):
    """Only rows whose shard column is not NULL: the rows a NULL_FILTERED index holds."""

    def __init__(self, column: str) -> None:
        self.column = validate_identifier(column, "shard column")

    def shard_filter(self, dialect: Dialect = GOOGLE_SQL) -> ShardFilter:
        return ShardFilter(f" AND {dialect.quote(self.column, 'shard column')} IS NOT NULL")

    def __repr__(self) -> str:
        return f"NotNullShardProvider({self.column!r})"


@dataclass(frozen=True)
class _IntervalSpec:
    spanner_format: str      # FORMAT_TIMESTAMP format of the shard id
    refresh_format: str      # strftime format whose change tells a writer to refresh its cached id
    cyclic: bool
    previous_seconds: int    # how far back the "previous" shard is looked up


class Interval(enum.Enum):
    """Periods of a time-based shard. Cyclic ones come back (hour 13 every day)."""

    DAY = _IntervalSpec("%F", "%Y-%m-%d", False, 60)
    WEEK = _IntervalSpec("%Y-%W", "%Y-%m-%d", False, 60)
    # The Java library's MONTH format is '%yyyy-%m' (a two-digit year followed by 'yyy');
    # '%Y-%m' names the same months without the oddity.
    MONTH = _IntervalSpec("%Y-%m", "%Y-%m-%d", False, 60)
    YEAR = _IntervalSpec("%Y", "%Y-%m-%d", False, 60)
    MINUTE_OF_HOUR = _IntervalSpec("%M", "%M", True, 45)
    HOUR_OF_DAY = _IntervalSpec("%H", "%H", True, 60)
    DAY_OF_WEEK = _IntervalSpec("%u", "%Y-%m-%d", True, 60)
    DAY_OF_MONTH = _IntervalSpec("%d", "%Y-%m-%d", True, 60)
    WEEK_OF_YEAR = _IntervalSpec("%W", "%Y-%m-%d", True, 60)
    DAY_OF_YEAR = _IntervalSpec("%j", "%Y-%m-%d", True, 60)

    @property
    def spec(self) -> _IntervalSpec:
        return self.value

    def shard_id_expression(self, previous_seconds: int | None = None) -> str:
        """The GoogleSQL expression for the current (or, given seconds, an earlier) shard id."""
        fmt = self.spec.spanner_format
        if previous_seconds is None:
            return f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', CURRENT_TIMESTAMP(), 'UTC')))"
        return f"TO_BASE64(SHA512(FORMAT_TIMESTAMP('{fmt}', TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL {int(previous_seconds)} SECOND), 'UTC')))"

    def shard_id(self, now: dt.datetime) -> str:
        """The shard id for time ``now``, computed here exactly as the database computes it.

        >>> now = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
        >>> Interval.DAY.shard_id(now) == base64.b64encode(hashlib.sha512(b"2024-05-01").digest()).decode()
        True
        """
        text = _utc(now).strftime(self.spec.spanner_format.replace("%F", "%Y-%m-%d"))
        return base64.b64encode(hashlib.sha512(text.encode("utf-8")).digest()).decode("ascii")

    def period_key(self, now: dt.datetime) -> str:
        """Changes when a writer's cached shard id must be refreshed."""
        return _utc(now).strftime(self.spec.refresh_format)


def _utc(now: dt.datetime) -> dt.datetime:
    return (now if now.tzinfo else now.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


class TimebasedShardProvider(ShardProvider):
    """Rows whose shard column holds the current or the previous period's shard id.

    Writers put ``interval.shard_id(now)`` (or ``SELECT`` of :meth:`Interval.shard_id_expression`)
    into the shard column; :class:`ShardIdCache` keeps a writer's id fresh. The poll looks at
    the current period and the one ``previous_seconds`` ago, so a change written just before
    a period ended is still seen. Progress is stored for the whole table.

    In a GoogleSQL database the ids are computed by the database at the poll (FORMAT_TIMESTAMP,
    SHA512, TO_BASE64 of its CURRENT_TIMESTAMP). Spanner's PostgreSQL interface has no equivalent that
    gives the same text (no time zone for ``to_char``, no Monday-first week number), so there the ids are
    computed here, by :meth:`Interval.shard_id` of ``clock()``, and sent as an array parameter: the same
    ids for the same time, so the rows matched are the same.

    >>> TimebasedShardProvider("ShardId", Interval.DAY).shard_filter().sql.startswith(" AND `ShardId` IN (TO_BASE64(")
    True
    >>> from watcher.dialects import POSTGRESQL
    >>> TimebasedShardProvider("ShardId", Interval.DAY).shard_filter(POSTGRESQL).sql
    ' AND "ShardId" IS NOT NULL AND "ShardId" = ANY(@shard)'
    """

    def __init__(self, column: str, interval: Interval = Interval.DAY, previous_seconds: int | None = None, *,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        if not isinstance(interval, Interval):
            raise ConfigurationError(f"interval must be an Interval, got {interval!r}")
        seconds = interval.spec.previous_seconds if previous_seconds is None else previous_seconds
        if seconds <= 0:
            raise ConfigurationError(f"previous_seconds must be positive, got {seconds}")
        self.column = validate_identifier(column, "shard column")
        self.interval = interval
        self.previous_seconds = seconds
        #: The time the ids are computed for where the database does not compute them.
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))

    def shard_ids(self, now: dt.datetime) -> list[str]:
        """The current and the previous period's ids at ``now`` (one, when both periods are the same).

        >>> t = dt.datetime(2024, 3, 6, 0, 0, 30, tzinfo=dt.timezone.utc)
        >>> p = TimebasedShardProvider("S", Interval.DAY)
        >>> p.shard_ids(t) == [Interval.DAY.shard_id(t), Interval.DAY.shard_id(t - dt.timedelta(days=1))]
        True
        >>> len(p.shard_ids(t + dt.timedelta(minutes=1)))
        1
        """
        previous = now - dt.timedelta(seconds=self.previous_seconds)
        return list(dict.fromkeys([self.interval.shard_id(now), self.interval.shard_id(previous)]))

    def shard_filter(self, dialect: Dialect = GOOGLE_SQL) -> ShardFilter:
        return _TIMEBASED_FILTERS[dialect.name](self, dialect, dialect.quote(self.column, "shard column"))

    def __repr__(self) -> str:
        return f"TimebasedShardProvider({self.column!r}, Interval.{self.interval.name})"


def _ids_by_the_database(provider: TimebasedShardProvider, _dialect: Dialect, quoted: str) -> ShardFilter:
    interval = provider.interval
    return ShardFilter(f" AND {quoted} IN ({interval.shard_id_expression()}, "
                       f"{interval.shard_id_expression(provider.previous_seconds)})")


def _ids_as_parameter(provider: TimebasedShardProvider, dialect: Dialect, quoted: str) -> ShardFilter:
    return ShardFilter(f" AND {quoted} IS NOT NULL AND {dialect.in_array(quoted, SHARD_PARAM)}",
                       {SHARD_PARAM: provider.shard_ids(provider.clock())},
                       {SHARD_PARAM: param_types.Array(param_types.STRING)})


#: How each dialect's poll finds the time-based shard ids: computed by the database, or sent to it.
_TIMEBASED_FILTERS: dict[str, Callable[[TimebasedShardProvider, Dialect, str], ShardFilter]] = {
    GOOGLE_SQL.name: _ids_by_the_database,
    POSTGRESQL.name: _ids_as_parameter,
}


class ShardIdCache:
    """A writer's current time-based shard id, refreshed when its period changes.

    ``fetch(now)`` gives a fresh id (by default computed locally; pass
    ``fetch_from_database(database, interval)`` to ask the database, as the Java library does).
    Time is an argument, so the refresh logic is testable.

    >>> cache = ShardIdCache(Interval.HOUR_OF_DAY)
    >>> t = dt.datetime(2024, 1, 1, 10, 59, tzinfo=dt.timezone.utc)
    >>> cache.get(t) == Interval.HOUR_OF_DAY.shard_id(t), cache.needs_refresh(t + dt.timedelta(minutes=1))
    (True, True)
    """

    def __init__(self, interval: Interval, fetch: Callable[[dt.datetime], str] | None = None) -> None:
        self.interval = interval
        self._fetch = fetch or interval.shard_id
        self._value: str | None = None
        self._period: str | None = None

    def needs_refresh(self, now: dt.datetime) -> bool:
        return self._value is None or self.interval.period_key(now) != self._period

    def get(self, now: dt.datetime) -> str:
        if self.needs_refresh(now):
            self._value = self._fetch(now)
            self._period = self.interval.period_key(now)
        assert self._value is not None
        return self._value


def fetch_from_database(database: Any, interval: Interval, *,
                        request_settings: RequestSettings | None = None) -> Callable[[dt.datetime], str]:
    """A ``fetch`` for :class:`ShardIdCache` that asks the database for the current shard id
    (its query carries ``request_settings``' request tag): a GoogleSQL database computes it, a
    PostgreSQL one gives its current time, whose id is computed here."""
    options = settings_or_default(request_settings).request_options(with_priority=False)
    sql, finish = _DATABASE_SHARD_ID[dialect_of(database).name](interval)

    def fetch(_now: dt.datetime) -> str:
        with database.snapshot() as snap:
            rows = list(snap.execute_sql(sql, request_options=options))
        return finish(rows[0][0])

    return fetch


#: Per dialect: the query that gives an interval's current shard id, or the time to compute it from, and
#: what turns its one value into the id.
_DATABASE_SHARD_ID: dict[str, Callable[[Interval], tuple[str, Callable[[Any], str]]]] = {
    GOOGLE_SQL.name: lambda interval: (f"SELECT {interval.shard_id_expression()}", str),
    POSTGRESQL.name: lambda interval: (POSTGRESQL.current_timestamp_sql, interval.shard_id),
}


def split_shards(values: Iterable[Any], parts: int) -> list[list[Any]]:
    """Split shard values evenly over ``parts`` watchers (as the benchmark application does).

    >>> split_shards(range(-2, 3), 2)
    [[-2, -1, 0], [1, 2]]
    """
    items = list(values)
    if parts < 1 or parts > len(items):
        raise ConfigurationError(f"cannot split {len(items)} shard values over {parts} watchers")
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out
