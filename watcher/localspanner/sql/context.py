"""Shared state of one translation: the catalog, parameters, and the pieces it produces.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> Typed("1", T.INT64, literal=1).is_literal
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..datamodel.types import SpannerType
from ..schema.catalog import Catalog

NOW_PARAM = "_ls_now"
TODAY_PARAM = "_ls_today"
#: A SPANNER_SYS table's rows are bound as JSON to the parameter of this prefix and its name.
SYSTEM_VIEW_PARAM_PREFIX = "_ls_sys_"
#: For a role that sees INFORMATION_SCHEMA filtered, a view's rows are bound as JSON to this prefix and its name.
INFORMATION_VIEW_PARAM_PREFIX = "_ls_info_"

_NO_LITERAL = object()


@dataclass(frozen=True)
class Typed:
    """A translated expression: SQLite text and its Spanner type (None: unknown, e.g. NULL).

    ``literal`` holds the stored value of a constant, so that string literals can be
    coerced to TIMESTAMP, DATE, NUMERIC... where GoogleSQL does so.
    """

    sql: str
    type: SpannerType | None
    literal: Any = _NO_LITERAL
    is_null: bool = False
    is_string_literal: bool = False
    is_aggregate: bool = False

    @property
    def is_literal(self) -> bool:
        return self.literal is not _NO_LITERAL


@dataclass(frozen=True)
class OutputColumn:
    """One column of a translated query: Spanner name, type, and its SQLite output name."""

    name: str
    type: SpannerType | None
    sql_name: str
    expr_sql: str = ""


@dataclass(frozen=True)
class CompiledQuery:
    sql: str
    columns: tuple[OutputColumn, ...]


@dataclass
class Context:
    """What one translation reads (catalog, parameter types) and records (parameters used)."""

    catalog: Catalog
    sql: str
    param_types: dict[str, SpannerType] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()
    expected: dict[str, SpannerType] = field(default_factory=dict)
    used_params: set[str] = field(default_factory=set)
    uses_now: bool = False
    uses_today: bool = False
    #: The SPANNER_SYS tables read (names as in ``spanner_sys.VIEWS``), their rows bound at execution.
    system_views: set[str] = field(default_factory=set)
    #: True: INFORMATION_SCHEMA views are read from rows bound at execution (``information_views``), as the
    #: statement's role sees them, not from the tables that hold every row.
    bound_information: bool = False
    information_views: set[str] = field(default_factory=set)
    deterministic: bool = False
    #: A column DEFAULT may call volatile functions (NEW_UUID()), evaluated once per row written.
    volatile_ok: bool = False
    table_hints: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    forced_indexes: list[str] = field(default_factory=list)
    ctes: list[dict[str, CompiledQuery]] = field(default_factory=list)
    alias_counter: int = 0
    views_open: list[str] = field(default_factory=list)  # the views being inlined, innermost last

    def fresh(self, prefix: str) -> str:
        self.alias_counter += 1
        return f"_ls_{prefix}{self.alias_counter}"

    def unsupported(self, what: str) -> errors.SpannerError:
        return errors.sql_unsupported(self.sql, what)

    def invalid(self, detail: str) -> errors.SpannerError:
        return errors.sql_invalid(self.sql, detail)

    def expect_param(self, name: str, t: SpannerType | None) -> None:
        """Remember the type the statement wants for an untyped parameter (lenient binding)."""
        if t is not None and name not in self.declared and name not in self.expected:
            self.expected[name] = t

    def cte(self, name: str) -> CompiledQuery | None:
        low = name.lower()
        for frame in reversed(self.ctes):
            if low in frame:
                return frame[low]
        return None
