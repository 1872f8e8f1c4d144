"""The ``[tables]`` section of the ``watch`` configuration: which tables, and each table's settings.

::

    [tables]
    include = "all"                          # "all" (default) or a list of table names or patterns
    exclude = ["Audit*"]                     # only with "all" or include patterns

    [tables.Singers]
    commit_timestamp_column = "LastUpdated"
    hint = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"   # or /*@ FORCE_INDEX=... */: either form, any dialect
    shards = { kind = "fixed", column = "ShardId", values = "-18..18" }

The values are checked by the configuration's reader (:mod:`watcher.cli.config`), so every
error names the file and the key, as for the other sections.

Example:
    >>> from watcher.cli.config import parse_config
    >>> cfg = parse_config('[tables.Singers]\\nshards = { kind = "not_null", column = "ShardId" }', "w.toml")
    >>> cfg.tables["Singers"].shards
    ShardSettings(kind='not_null', column='ShardId', values=None, single=False, interval=None, previous_seconds=None)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..capture.table_set import TableSelection
from ..errors import ConfigurationError, InvalidIdentifierError
from ..sqlnames import validate_identifier

if TYPE_CHECKING:
    from .config import _Reader

__all__ = ["ShardSettings", "TableSettings", "read_tables"]

_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_VALUES_EXPECTED = "expected a list of integers or a range like '-18..18' (a list of strings, or one value, also works)"

_TABLE_KEYS = ("commit_timestamp_column", "hint", "shards")
#: shard kind -> (keys it requires, keys it allows besides `kind`)
_SHARD_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fixed": (("column", "values"), ("column", "values")),
    "not_null": (("column",), ("column",)),
    "time": (("column", "interval"), ("column", "interval", "previous_seconds")),
}


@dataclass(frozen=True)
class ShardSettings:
    """A table's shard provider: ``fixed`` (values, or one value), ``not_null`` or ``time``."""

    kind: str
    column: str
    values: tuple[Any, ...] | None = None
    single: bool = False
    interval: str | None = None
    previous_seconds: int | None = None

    def provider(self) -> Any:
        """The :class:`watcher.capture.shards.ShardProvider` these settings describe.

        >>> ShardSettings("fixed", "ShardId", (1, 2)).provider()
        FixedShardProvider('ShardId', [1, 2])
        """
        from ..capture import shards

        if self.kind == "fixed":
            assert self.values is not None
            return shards.FixedShardProvider(self.column, self.values[0] if self.single else list(self.values))
        if self.kind == "not_null":
            return shards.NotNullShardProvider(self.column)
        assert self.interval is not None
        return shards.TimebasedShardProvider(self.column, shards.Interval[self.interval], self.previous_seconds)


@dataclass(frozen=True)
class TableSettings:
    """Per-table settings (anything not given: the watcher's default)."""

    name: str
    commit_timestamp_column: str | None = None
    hint: str = ""
    shards: ShardSettings | None = None


def read_tables(r: _Reader, value: Any) -> tuple[tuple[str, ...] | None, tuple[str, ...], dict[str, TableSettings]]:
    """The ``[tables]`` section: include (None: all), exclude, and each ``[tables.<Name>]``'s settings."""
    if value is None:
        return None, (), {}
    if not isinstance(value, dict):
        raise r.fail("tables", f"expected a table ([tables]), got {r.kind(value)}")
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    settings: dict[str, TableSettings] = {}
    for key, item in value.items():
        if isinstance(item, dict):  # [tables.<Name>]: a table's own settings
            if (table := r.attempt(None, _table, r, key, item)) is not None:
                settings[key] = table
        elif key == "include":
            include = r.attempt(None, r.include, item)
        elif key == "exclude":
            exclude = r.attempt((), r.names, "tables.exclude", item)
        else:
            r.report(r.fail(f"tables.{key}", f"unknown key{r.did_you_mean(key, ('include', 'exclude'))}; [tables] takes "
                                          "include, exclude and one [tables.<TableName>] table per configured table"))
    selection = TableSelection(include, exclude)
    if exclude and selection.fixed:
        raise r.fail("tables.exclude", "only applies with include = \"all\" or include patterns; with a list of "
                                       "tables, leave the excluded ones out of include")
    for name in settings:
        if include is not None and not TableSelection(include).matches(name):
            r.report(r.fail(f"tables.{name}", f"configured but not watched: add it to tables.include ({', '.join(include)})"))
        elif not TableSelection(None, exclude).matches(name):
            r.report(r.fail(f"tables.{name}", "configured but listed in tables.exclude"))
    return include, exclude, settings


def _table(r: _Reader, name: str, section: dict[str, Any]) -> TableSettings:
    key = f"tables.{name}"
    try:
        validate_identifier(name, "table name")
    except InvalidIdentifierError as exc:
        raise r.fail(key, str(exc)) from None
    r.keys(key, section, _TABLE_KEYS)
    column = (r.attempt(None, r.identifier, f"{key}.commit_timestamp_column", section["commit_timestamp_column"],
                        "column name") if "commit_timestamp_column" in section else None)
    hint = r.attempt("", _hint, r, f"{key}.hint", section["hint"]) if "hint" in section else ""
    shards = r.attempt(None, _shards, r, f"{key}.shards", section["shards"]) if "shards" in section else None
    return TableSettings(name, column, hint, shards)


#: What a hint may look like: the watcher sends either form in its database's dialect.
_HINT_EXPECTED = ("expected a table hint like @{{FORCE_INDEX=IndexName}} (GoogleSQL) or /*@ FORCE_INDEX=IndexName */ "
                  "(PostgreSQL; either form works in both dialects), got {hint!r}")


def _hint(r: _Reader, key: str, value: Any) -> str:
    from ..dialects.hints import hint_entries

    hint = r.text(key, value).strip()
    try:
        if hint_entries(hint):
            return hint
    except ConfigurationError:
        pass
    raise r.fail(key, _HINT_EXPECTED.format(hint=hint))


def _shards(r: _Reader, key: str, value: Any) -> ShardSettings:
    if not isinstance(value, dict):
        raise r.fail(key, f"expected a table like {{ kind = \"fixed\", column = \"ShardId\", values = \"-18..18\" }}, "
                          f"got {r.kind(value)}")
    kind = value.get("kind")
    if kind not in _SHARD_KINDS:
        problem = "missing" if kind is None else f"unknown kind {kind!r}{r.did_you_mean(str(kind), _SHARD_KINDS)}"
        raise r.fail(f"{key}.kind", f"{problem}; expected one of {', '.join(_SHARD_KINDS)}")
    required, allowed = _SHARD_KINDS[kind]
    r.keys(key, value, ("kind", *allowed))
    for k in required:
        if k not in value:
            raise r.fail(f"{key}.{k}", f"missing: a {kind} shard provider needs {', '.join(required)}")
    column = r.identifier(f"{key}.column", value["column"], "column name")
    return _SHARD_READERS[kind](r, key, kind, column, value)


def _shards_fixed(r: _Reader, key: str, kind: str, column: str, value: dict[str, Any]) -> ShardSettings:
    values, single = _shard_values(r, f"{key}.values", value["values"])
    return ShardSettings(kind, column, values=values, single=single)


def _shards_not_null(r: _Reader, key: str, kind: str, column: str, value: dict[str, Any]) -> ShardSettings:
    return ShardSettings(kind, column)


def _shards_time(r: _Reader, key: str, kind: str, column: str, value: dict[str, Any]) -> ShardSettings:
    from ..capture.shards import Interval

    interval = value["interval"]
    names = [i.name for i in Interval]
    if not isinstance(interval, str) or interval.upper() not in names:
        hint = r.did_you_mean(str(interval).upper(), names)
        raise r.fail(f"{key}.interval", f"expected one of {', '.join(names)}, got {interval!r}{hint}")
    previous = (r.integer(f"{key}.previous_seconds", value["previous_seconds"], minimum=1)
                if "previous_seconds" in value else None)
    return ShardSettings(kind, column, interval=interval.upper(), previous_seconds=previous)


def _shard_values(r: _Reader, key: str, value: Any) -> tuple[tuple[Any, ...], bool]:
    if isinstance(value, str):
        m = _RANGE.match(value)
        if m:
            low, high = int(m.group(1)), int(m.group(2))
            if low > high:
                raise r.fail(key, f"the range {value!r} is empty: write the lower bound first, e.g. '{high}..{low}'")
            return tuple(range(low, high + 1)), False
        if ".." in value:
            raise r.fail(key, _VALUES_EXPECTED)
        return (value,), True  # one string shard value
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,), True
    if isinstance(value, list) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value) or all(isinstance(v, str) for v in value):
            if len(set(value)) != len(value):
                raise r.fail(key, "a shard value is listed twice")
            return tuple(value), False
    raise r.fail(key, _VALUES_EXPECTED)


#: shard kind -> the function reading its keys
_SHARD_READERS: dict[str, Callable[[_Reader, str, str, str, dict[str, Any]], ShardSettings]] = {
    "fixed": _shards_fixed,
    "not_null": _shards_not_null,
    "time": _shards_time,
}
