"""Name resolution for the translator: which FROM item a column name refers to.

A :class:`Scope` holds the FROM items (:class:`Source`) of one SELECT and points to the
scope of the enclosing query, so correlated subqueries resolve outer names. Names are
case-insensitive, as in Spanner.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> s = Scope([Source("s", [SourceColumn("SingerId", T.INT64, '"s"."SingerId"')])])
    >>> s.resolve(None, "singerid").sql
    '"s"."SingerId"'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import errors
from ..datamodel.types import SpannerType


class ResolveError(Exception):
    """A name that is unknown or ambiguous; the translator turns it into a SpannerError."""


@dataclass(frozen=True)
class SourceColumn:
    """A column of a FROM item: its Spanner name, type and how SQLite refers to it."""

    name: str
    type: SpannerType | None
    sql: str


@dataclass
class Source:
    """A FROM item (table, CTE, subquery, UNNEST) under its alias."""

    alias: str | None
    columns: list[SourceColumn]
    value_column: SourceColumn | None = None  # an UNNEST alias names the element itself
    hidden: frozenset[str] = frozenset()  # lower-case names left out of SELECT *

    def column(self, name: str) -> SourceColumn | None:
        low = name.lower()
        found = [c for c in self.columns if c.name.lower() == low]
        if len(found) > 1:
            raise ResolveError(errors.ambiguous_column(name))
        return found[0] if found else None


@dataclass
class Scope:
    sources: list[Source] = field(default_factory=list)
    parent: Scope | None = None

    def source(self, alias: str) -> Source | None:
        low = alias.lower()
        scope: Scope | None = self
        while scope is not None:
            for s in scope.sources:
                if s.alias is not None and s.alias.lower() == low:
                    return s
            scope = scope.parent
        return None

    def resolve(self, qualifier: str | None, name: str) -> SourceColumn:
        """The column ``qualifier.name`` (or bare ``name``), innermost scope first."""
        scope: Scope | None = self
        while scope is not None:
            hit = scope._resolve_here(qualifier, name)
            if hit is not None:
                return hit
            scope = scope.parent
        raise ResolveError(errors.unrecognized_name(name if qualifier is None else f"{qualifier}.{name}"))

    def _resolve_here(self, qualifier: str | None, name: str) -> SourceColumn | None:
        if qualifier is not None:
            for s in self.sources:
                if s.alias is not None and s.alias.lower() == qualifier.lower():
                    col = s.column(name)
                    if col is None:
                        raise ResolveError(errors.name_not_found_inside(name, qualifier))
                    return col
            return None
        hits: list[SourceColumn] = []
        for s in self.sources:
            if s.value_column is not None and s.alias is not None and s.alias.lower() == name.lower():
                hits.append(s.value_column)
                continue
            col = s.column(name)
            if col is not None:
                hits.append(col)
        if len(hits) > 1:
            raise ResolveError(errors.ambiguous_column(name))
        return hits[0] if hits else None

    def star(self, qualifier: str | None = None) -> list[SourceColumn]:
        """The columns ``*`` (or ``qualifier.*``) expands to, in FROM order."""
        chosen = self.sources
        if qualifier is not None:
            chosen = [s for s in self.sources if s.alias is not None and s.alias.lower() == qualifier.lower()]
            if not chosen:
                raise ResolveError(errors.unrecognized_name(qualifier))
        out: list[SourceColumn] = []
        for s in chosen:
            cols = [s.value_column] if s.value_column is not None else s.columns
            out.extend(c for c in cols if c.name.lower() not in s.hidden)
        return out
