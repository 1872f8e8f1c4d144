"""Which tables a DatabaseWatcher watches, and how the set changes while it runs.

A :class:`TableSelection` is the ``include`` / ``exclude`` choice: table names or glob-like
patterns (``*`` any run of characters, ``?`` one character, ``[abc]`` one of them), matched
ignoring case as Spanner names are. A :class:`Discovery` is one look at the database's
tables with a commit-timestamp column, together with the read timestamp it was taken at;
:func:`churn` compares two of them.

Why the read timestamp matters: INFORMATION_SCHEMA has no creation time, but a strong read
at timestamp R that did not list a table proves that every row of that table was committed
after R (a write needs the table, and no commit after a returned strong read gets a
timestamp <= R). A table first seen by a later discovery therefore starts from the read
timestamp of the last discovery that did not see it, and none of its first rows is missed.

Example:
    >>> sel = TableSelection(exclude=["Audit*"])
    >>> [t for t in ["Singers", "AuditLog", "auditTrail"] if sel.matches(t)]
    ['Singers']
    >>> TableSelection(include=["Sing*", "Albums"]).fixed
    False
    >>> before = Discovery(("A",), from_nanos(1_000))
    >>> churn(before, Discovery(("a", "B"), from_nanos(2_000)), TableSelection())
    (['B'], [])
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from ..dialects import dialect_of
from ..dialects.schema import watchable_tables_query
from ..errors import ConfigurationError, TableNotFoundError
from ..model import as_nanos_timestamp, from_nanos
from ..request_settings import RequestSettings, settings_or_default
from ..spanner_client import read_timestamp
from ..sqlnames import has_name

__all__ = ["Discovery", "TableEvent", "TableSelection", "churn", "discover_tables", "from_nanos", "is_pattern", "select_tables"]

_PATTERN_CHARS = frozenset("*?[")


def is_pattern(name: str) -> bool:
    """True when ``name`` is a glob-like pattern rather than one table's name.

    >>> is_pattern("Singers"), is_pattern("Sing*")
    (False, True)
    """
    return any(ch in _PATTERN_CHARS for ch in name)


def _matches(pattern: str, table: str) -> bool:
    if is_pattern(pattern):
        return fnmatch.fnmatchcase(table.casefold(), pattern.casefold())
    return pattern.casefold() == table.casefold()


@dataclass(frozen=True)
class TableSelection:
    """``include`` (None: every table with a commit-timestamp column) minus ``exclude``.

    Names without pattern characters in ``include`` must exist when the watcher starts;
    patterns may match nothing yet (a table created later joins when it is discovered).
    """

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> None:
        object.__setattr__(self, "include", None if include is None else tuple(include))
        object.__setattr__(self, "exclude", tuple(exclude))
        for name in (*(self.include or ()), *self.exclude):
            if not isinstance(name, str) or not name.strip():
                raise ConfigurationError(f"table names and patterns must be non-empty strings, got {name!r}")

    @property
    def fixed(self) -> bool:
        """True when the selection is a list of plain names: no table can join later."""
        return self.include is not None and not any(is_pattern(n) for n in self.include)

    @property
    def named(self) -> tuple[str, ...]:
        """The plain names in ``include`` (tables that must exist at start)."""
        return tuple(n for n in self.include or () if not is_pattern(n))

    def matches(self, table: str) -> bool:
        """True when ``table`` is selected."""
        if any(_matches(p, table) for p in self.exclude):
            return False
        return self.include is None or any(_matches(p, table) for p in self.include)


@dataclass(frozen=True)
class Discovery:
    """The watchable tables of a database as a strong read at ``read_timestamp`` saw them."""

    tables: tuple[str, ...]
    read_timestamp: dt.datetime

    def has(self, table: str) -> bool:
        return has_name(self.tables, table)


def discover_tables(database: object, *, request_settings: RequestSettings | None = None) -> Discovery:
    """Read the tables with a commit-timestamp column, and the timestamp the read was taken at.

    The queries carry ``request_settings``' request tag (no priority).
    """
    options = settings_or_default(request_settings).request_options(with_priority=False)
    dialect = dialect_of(database)
    tables = watchable_tables_query(dialect)
    with database.snapshot() as snap:  # type: ignore[attr-defined]
        results = snap.execute_sql(tables.sql, request_options=options)
        rows = list(results)
        read_ts = read_timestamp(results)
    if read_ts is None:  # a server that does not return it: a strong read before this one is a lower bound
        with database.snapshot() as snap:  # type: ignore[attr-defined]
            read_ts = list(snap.execute_sql(dialect.current_timestamp_sql, request_options=options))[0][0]
        with database.snapshot() as snap:  # type: ignore[attr-defined]
            rows = list(snap.execute_sql(tables.sql, request_options=options))
    return Discovery(tuple(r[0] for r in rows), as_nanos_timestamp(read_ts))


def select_tables(selection: TableSelection, discovery: Discovery | None, database_name: str) -> list[str]:
    """The tables to watch: the plain names of ``include``, then the discovered tables the selection takes.

    ``discovery`` None (a selection of plain names) gives just those names; a selection that
    takes no table raises TableNotFoundError naming the database.
    """
    names = list(selection.named)
    if discovery is None:
        return names
    names += [t for t in discovery.tables if selection.matches(t) and not has_name(names, t)]
    if not names:
        raise TableNotFoundError(database_name, "no table with a column with allow_commit_timestamp=true "
                                                f"to watch{'' if selection.include is None else ' matches ' + ', '.join(selection.include)}")
    return names


def churn(previous: Discovery, current: Discovery, selection: TableSelection) -> tuple[list[str], list[str]]:
    """Selected tables that ``current`` has and ``previous`` had not, and the other way round."""
    added = [t for t in current.tables if not previous.has(t) and selection.matches(t)]
    dropped = [t for t in previous.tables if not current.has(t) and selection.matches(t)]
    return added, dropped


@dataclass(frozen=True)
class TableEvent:
    """A table that joined (``kind`` "added") or left ("dropped") a running DatabaseWatcher.

    ``start`` is where an added table's watcher starts (when it has no checkpoint yet);
    ``reason`` says why a dropped table's watcher ended.
    """

    kind: str
    table: str
    at: dt.datetime
    start: dt.datetime | None = None
    reason: str = ""


class TableSet:
    """What a DatabaseWatcher knows of its database's tables between two looks (its owner locks).

    Example:
        >>> tables = TableSet(TableSelection(exclude=["Tmp*"]))
        >>> tables.observe(Discovery(("A", "B"), from_nanos(1_000)), watched=["A", "B"])
        ({}, [])
        >>> to_start, gone = tables.observe(Discovery(("A", "C", "TmpX"), from_nanos(2_000)), watched=["A", "B"])
        >>> {t: s.nanosecond for t, s in to_start.items()}, gone   # C starts where the look that missed it read
        ({'C': 1000}, ['B'])
        >>> tables.started("C"); tables.pending
        {}
    """

    def __init__(self, selection: TableSelection) -> None:
        self.selection = selection
        self.last: Discovery | None = None
        self.pending: dict[str, dt.datetime] = {}  # found, not started yet -> where it starts
        self.looks = 0

    def start_of(self, table: str) -> dt.datetime | None:
        """Where ``table``, not watched yet, starts: where it was found pending, or the read timestamp
        of the last look when that look did not see it (None: no look yet, the watcher's default)."""
        found = next((ts for name, ts in self.pending.items() if name.casefold() == table.casefold()), None)
        if found is None and self.last is not None and not self.last.has(table):
            return self.last.read_timestamp
        return found

    def observe(self, current: Discovery, watched: Iterable[str]) -> tuple[dict[str, dt.datetime], list[str]]:
        """Take a new look into account: the tables to start (-> where) and the watched tables gone."""
        watched = list(watched)
        previous = self.last or current
        added, gone = churn(previous, current, self.selection)
        for name in added:
            if not has_name(watched, name):
                self.pending.setdefault(name, previous.read_timestamp)
        self.looks += 1
        self.last = current
        return dict(self.pending), [name for name in gone if has_name(watched, name)]

    def started(self, table: str) -> None:
        """``table`` has a running watcher now."""
        for name in [n for n in self.pending if n.casefold() == table.casefold()]:
            del self.pending[name]
