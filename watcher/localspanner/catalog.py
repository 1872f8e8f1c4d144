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

from .ddl.change_stream_options import SPECS
from .proto_bundle import ProtoBundle
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


@dataclass(frozen=True)
class TrackedTable:
    """A table a change stream names in its FOR clause.

    ``columns`` None means every column (``FOR T``); ``()`` means the key only (``FOR T()``).
    """

    table: str
    columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ChangeStream:
    """A change stream: what it watches, its options, and when it was created.

    ``all`` is ``FOR ALL``; otherwise ``tables`` lists what the FOR clause names (a stream
    without a FOR clause watches nothing). ``options`` holds only the options set
    explicitly, in the order given (``ddl/change_stream_options.py`` has the defaults).
    ``created_nanos`` is the commit timestamp of the schema change that created it: reads
    of the stream may not start before it.
    """

    name: str
    all: bool = False
    tables: tuple[TrackedTable, ...] = ()
    options: tuple[tuple[str, str | bool], ...] = ()
    created_nanos: int = 0

    def option(self, name: str) -> str | bool:
        """The option's value: as set, else Spanner's default (``ddl/change_stream_options.SPECS``)."""
        return dict(self.options).get(name, SPECS[name].default)

    def tracked(self, table: str) -> TrackedTable | None:
        """What the FOR clause says about ``table`` (None when it is not named)."""
        low = table.lower()
        return next((t for t in self.tables if t.table.lower() == low), None)

    def names_column(self, table: str, column: str) -> bool:
        """True when the FOR clause names ``table.column`` explicitly."""
        tracked = self.tracked(table)
        return tracked is not None and tracked.columns is not None and column.lower() in {c.lower() for c in tracked.columns}


@dataclass(frozen=True)
class ViewColumn:
    """One output column of a view: its name and the type its query gives it."""

    name: str
    type: SpannerType | None


@dataclass(frozen=True)
class View:
    """A view: its defining query as written, its SQL SECURITY, and what that query yields.

    ``columns`` and ``depends_on`` (the tables and views the query reads, declared names)
    are computed when the view is created; queries over the view inline ``definition``.
    """

    name: str
    definition: str
    security: str = "INVOKER"
    columns: tuple[ViewColumn, ...] = ()
    depends_on: tuple[str, ...] = ()

    def column(self, name: str) -> ViewColumn | None:
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


@dataclass(frozen=True, eq=False)
class Catalog:
    """All tables (in creation order, parents before children), indexes, change streams and views of a database.

    Compared and hashed by identity: each schema change makes a new catalog, and caches
    (prepared mutation shapes, translated statements) key on it cheaply.
    """

    tables: tuple[Table, ...] = ()
    indexes: tuple[Index, ...] = ()
    version: int = 0
    change_streams: tuple[ChangeStream, ...] = ()
    views: tuple[View, ...] = ()
    proto_bundle: ProtoBundle | None = None
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

    def view(self, name: str) -> View | None:
        low = name.lower()
        return next((v for v in self.views if v.name.lower() == low), None)

    def views_using(self, name: str) -> tuple[View, ...]:
        """The views whose query reads the table or view ``name``."""
        low = name.lower()
        return tuple(v for v in self.views if low in {d.lower() for d in v.depends_on})

    def change_stream(self, name: str) -> ChangeStream | None:
        low = name.lower()
        return next((s for s in self.change_streams if s.name.lower() == low), None)

    def indexes_of(self, table: str) -> tuple[Index, ...]:
        low = table.lower()
        return tuple(i for i in self.indexes if i.table.lower() == low)

    def children_of(self, table: str) -> tuple[Table, ...]:
        low = table.lower()
        return tuple(t for t in self.tables if t.parent is not None and t.parent.lower() == low)
