"""What a DatabaseWatcher's arguments mean: which tables (``tables``/``include``/``exclude``) and each table's settings.

The choice of tables is checked here, once, at the public boundary, with messages naming the
argument; a setting may be one value for every table, a mapping table -> value (names matched
ignoring case, as Spanner names are) or, for the commit-timestamp column, a function of the table.

Example:
    >>> per_table({"singers": "@{FORCE_INDEX=Idx}"}, "Singers", "")
    '@{FORCE_INDEX=Idx}'
    >>> per_table({"Albums": "x"}, "Singers", ""), per_table(str.upper, "Singers")
    ('', 'SINGERS')
    >>> include, selection = table_selection(ALL, None, ["Audit*"], 10.0)
    >>> include, selection.matches("AuditLog"), selection.matches("Singers")
    (None, False, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError
from ..sqlnames import find_name
from .shards import ShardProvider
from .table_set import TableSelection

__all__ = ["ALL", "PerTable", "per_table", "table_selection"]


class _All:
    def __repr__(self) -> str:
        return "ALL"


#: Watch every table that has a commit-timestamp column.
ALL = _All()

#: A setting given per table: table name -> value.
PerTable = Mapping[str, Any]


def table_selection(tables: Any, include: Iterable[str] | None, exclude: Iterable[str],
                    discover_interval: float | None) -> tuple[list[str] | None, TableSelection]:
    """The ``include`` list (None: all tables) and the :class:`TableSelection` of a DatabaseWatcher's arguments.

    Raises ConfigurationError for arguments that contradict each other or select nothing.
    """
    if tables is not ALL and include is not None:
        raise ConfigurationError("give the tables either as `tables` or as `include`, not both")
    if tables is not ALL:
        include = list(tables)
    if include is not None:
        include = list(include)
        if not include:
            raise ConfigurationError("include=[] watches nothing; give at least one table, or tables=ALL")
    selection = TableSelection(include, exclude)
    if exclude and selection.fixed:
        raise ConfigurationError("exclude only applies to tables=ALL or include patterns; "
                                 "with a list of names, list just the tables to watch")
    if discover_interval is not None and discover_interval < 0:
        raise ConfigurationError(f"discover_interval must be >= 0 seconds (0: never), got {discover_interval}")
    return include, selection


def per_table(value: Any, table: str, default: Any = None) -> Any:
    """``table``'s setting from one value for all, a mapping table -> value, or a function of the table."""
    if isinstance(value, Mapping):
        found = find_name(value, table)
        return default if found is None else found
    if callable(value) and not isinstance(value, ShardProvider):
        return value(table)
    return value if value is not None else default
