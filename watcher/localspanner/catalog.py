"""The schema of one database as immutable data: tables, columns, indexes.

A :class:`Catalog` never changes; a schema change produces a new one
(``schema_updater.apply_ddl``). Spanner names are case-insensitive but keep the case
they were declared with, so every lookup here ignores case.

Example:
    >>> from watcher.localspanner import types as T
    >>> t = Table("Singers", (Column("SingerId", T.INT64, not_null=True),), (KeyPart("SingerId"),))
    >>> Catalog(tables=(t,)).table("singers").name
    'Singers'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .types import SpannerType


@dataclass(frozen=True)
class Column:
    """A table column. ``generated`` and ``default`` hold GoogleSQL expression text."""

    name: str
    type: SpannerType
    not_null: bool = False
    default: str | None = None
    generated: str | None = None
    stored: bool = False
    allow_commit_timestamp: bool = False

    @property
    def is_generated(self) -> bool:
        return self.generated is not None


@dataclass(frozen=True)
class KeyPart:
    """One column of a primary key or index key."""

    column: str
    descending: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[KeyPart, ...]
    parent: str | None = None
    on_delete_cascade: bool = False

    def column(self, name: str) -> Column | None:
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    @property
    def key_columns(self) -> tuple[Column, ...]:
        cols = []
        for part in self.primary_key:
            c = self.column(part.column)
            assert c is not None, f"key column {part.column} missing from {self.name}"
            cols.append(c)
        return tuple(cols)

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(p.column for p in self.primary_key)

    @property
    def commit_timestamp_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.allow_commit_timestamp)


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    key: tuple[KeyPart, ...]
    storing: tuple[str, ...] = ()
    unique: bool = False
    null_filtered: bool = False
    interleave_in: str | None = None


@dataclass(frozen=True, eq=False)
class Catalog:
    """All tables (in creation order, parents before children) and indexes of a database.

    Compared and hashed by identity: each schema change makes a new catalog, and caches
    (prepared mutation shapes, translated statements) key on it cheaply.
    """

    tables: tuple[Table, ...] = ()
    indexes: tuple[Index, ...] = ()
    version: int = 0
    _by_name: dict[str, Table] = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {t.name.lower(): t for t in self.tables})

    def table(self, name: str) -> Table | None:
        return self._by_name.get(name.lower())

    def index(self, name: str) -> Index | None:
        low = name.lower()
        for i in self.indexes:
            if i.name.lower() == low:
                return i
        return None

    def indexes_of(self, table: str) -> tuple[Index, ...]:
        low = table.lower()
        return tuple(i for i in self.indexes if i.table.lower() == low)

    def children_of(self, table: str) -> tuple[Table, ...]:
        low = table.lower()
        return tuple(t for t in self.tables if t.parent is not None and t.parent.lower() == low)
