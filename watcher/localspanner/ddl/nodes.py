"""Spanner GoogleSQL DDL statements as typed, immutable data.

``parser.parse_ddl`` turns statement text into one of these nodes,
``schema_updater.apply_ddl`` applies a node to a catalog and ``printer.print_statement``
turns a node back into canonical text. Columns and key parts reuse the catalog's own
:class:`~watcher.localspanner.schema.catalog.Column` and :class:`~watcher.localspanner.schema.catalog.KeyPart`,
so a ``CREATE TABLE`` node carries exactly what the new table will hold.

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> DropTable("Singers", if_exists=True).if_exists
    True
    >>> CreateTable("T", (Column("K", T.INT64, not_null=True),), (KeyPart("K"),)).parent is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from ..datamodel.types import SpannerType
from ..schema.catalog import CheckConstraint, Column, ForeignKey, KeyPart, RowDeletionPolicy, Sequence, TrackedTable

__all__ = [
    "AlterColumnSetDefault",
    "AlterColumnSetOptions",
    "AlterColumnType",
    "AlterProtoBundle",
    "AlterDatabase",
    "AlterSequence",
    "AlterTableAddColumn",
    "AlterChangeStreamDropForAll",
    "AlterChangeStreamSetFor",
    "AlterChangeStreamSetOptions",
    "AlterTableAddConstraint",
    "AlterTableDropColumn",
    "AlterTableDropConstraint",
    "CheckConstraint",
    "ForeignKey",
    "ChangeStreamFor",
    "Column",
    "CreateChangeStream",
    "CreateDatabase",
    "CreateIndex",
    "CreateSearchIndex",
    "CreateSequence",
    "CreateProtoBundle",
    "CreateRole",
    "DropRole",
    "GrantPrivileges",
    "GrantRole",
    "PrivilegeSpec",
    "CreateTable",
    "CreateView",
    "DropChangeStream",
    "DropIndex",
    "DropSearchIndex",
    "DropSequence",
    "DropProtoBundle",
    "DropTable",
    "DropView",
    "KeyPart",
    "Node",
    "TrackedTable",
]


@dataclass(frozen=True)
class CreateDatabase:
    """``CREATE DATABASE name``: only valid as the create_statement of CreateDatabase."""

    name: str


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE [IF NOT EXISTS] name (...) PRIMARY KEY (...) [, INTERLEAVE IN PARENT p ON DELETE ...]``.

    ``on_delete_cascade`` only means something when ``parent`` is set; an interleaved
    table without an ON DELETE clause gets NO ACTION, as on Spanner.
    """

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[KeyPart, ...]
    parent: str | None = None
    on_delete_cascade: bool = False
    if_not_exists: bool = False
    #: ``[CONSTRAINT name] CHECK (expr)`` and ``[CONSTRAINT name] FOREIGN KEY ...`` elements, as written
    #: (an unnamed one has the name ``''`` and gets its name when applied).
    checks: tuple[CheckConstraint, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    row_deletion_policy: RowDeletionPolicy | None = None


@dataclass(frozen=True)
class CreateIndex:
    """``CREATE [UNIQUE] [NULL_FILTERED] INDEX [IF NOT EXISTS] name ON table (key) [STORING (...)] [, INTERLEAVE IN t]``."""

    name: str
    table: str
    key: tuple[KeyPart, ...]
    storing: tuple[str, ...] = ()
    unique: bool = False
    null_filtered: bool = False
    interleave_in: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTableAddColumn:
    """``ALTER TABLE table ADD COLUMN [IF NOT EXISTS] column_definition``."""

    table: str
    column: Column
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTableRowDeletionPolicy:
    """``ALTER TABLE table ADD | REPLACE ROW DELETION POLICY (...)`` or ``... DROP ROW DELETION POLICY``.

    ``verb`` is ADD, REPLACE or DROP; ``policy`` is None for DROP.
    """

    table: str
    verb: str
    policy: RowDeletionPolicy | None = None


@dataclass(frozen=True)
class AlterTableDropColumn:
    """``ALTER TABLE table DROP COLUMN column``."""

    table: str
    column: str


@dataclass(frozen=True)
class AlterTableAddConstraint:
    """``ALTER TABLE table ADD [CONSTRAINT name] CHECK (...) | FOREIGN KEY (...) REFERENCES ...``."""

    table: str
    constraint: CheckConstraint | ForeignKey


@dataclass(frozen=True)
class AlterTableDropConstraint:
    """``ALTER TABLE table DROP CONSTRAINT name``."""

    table: str
    name: str


@dataclass(frozen=True)
class AlterColumnSetOptions:
    """``ALTER TABLE table ALTER COLUMN column SET OPTIONS (allow_commit_timestamp = true|false|null)``.

    ``allow_commit_timestamp`` is None for ``= null`` (back to the default, false).
    """

    table: str
    column: str
    allow_commit_timestamp: bool | None


@dataclass(frozen=True)
class AlterColumnSetDefault:
    """``ALTER TABLE table ALTER COLUMN column SET DEFAULT (expr)`` or ``... DROP DEFAULT`` (default None)."""

    table: str
    column: str
    default: str | None


@dataclass(frozen=True)
class AlterColumnType:
    """``ALTER TABLE table ALTER COLUMN column type [NOT NULL] [DEFAULT (expr)] [OPTIONS (...)]``.

    The statement redefines the column: its type, nullability and default are replaced.
    ``allow_commit_timestamp`` is None when the statement has no OPTIONS clause (the
    column keeps its option), else the value given (``= null`` is stored as False).
    """

    table: str
    column: str
    type: SpannerType
    not_null: bool = False
    default: str | None = None
    allow_commit_timestamp: bool | None = None


@dataclass(frozen=True)
class DropTable:
    """``DROP TABLE [IF EXISTS] name``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class DropIndex:
    """``DROP INDEX [IF EXISTS] name``."""

    name: str
    if_exists: bool = False


#: An option as written: ``'text'``, ``true``/``false``, or None for ``null``.
OptionValue = str | bool | None


@dataclass(frozen=True)
class ChangeStreamFor:
    """The FOR clause of a change stream: ``FOR ALL`` or ``FOR T1, T2(c1, c2), T3()``."""

    all: bool = False
    tables: tuple[TrackedTable, ...] = ()


@dataclass(frozen=True)
class CreateChangeStream:
    """``CREATE CHANGE STREAM name [FOR ...] [OPTIONS (...)]``; ``watch`` None watches nothing."""

    name: str
    watch: ChangeStreamFor | None = None
    options: tuple[tuple[str, OptionValue], ...] = ()


@dataclass(frozen=True)
class AlterChangeStreamSetFor:
    """``ALTER CHANGE STREAM name SET FOR ...``: replaces what the stream watches."""

    name: str
    watch: ChangeStreamFor


@dataclass(frozen=True)
class AlterChangeStreamDropForAll:
    """``ALTER CHANGE STREAM name DROP FOR ALL``: the stream watches nothing from now on."""

    name: str


@dataclass(frozen=True)
class AlterChangeStreamSetOptions:
    """``ALTER CHANGE STREAM name SET OPTIONS (...)``: the options named change, ``= null`` resets one."""

    name: str
    options: tuple[tuple[str, OptionValue], ...]


@dataclass(frozen=True)
class DropChangeStream:
    """``DROP CHANGE STREAM name``."""

    name: str


@dataclass(frozen=True)
class AlterDatabase:
    """``ALTER DATABASE name SET OPTIONS (option = 'value' | integer | NULL, ...)``: database options, in the order given."""

    name: str
    options: tuple[tuple[str, str | int | None], ...]


#: The SQL SECURITY modes of a view.
VIEW_SECURITY = ("INVOKER", "DEFINER")


@dataclass(frozen=True)
class CreateView:
    """``CREATE [OR REPLACE] VIEW name SQL SECURITY INVOKER|DEFINER AS query``.

    ``definition`` is the query text as written (trimmed); it is translated when applied.
    """

    name: str
    definition: str
    security: str = "INVOKER"
    or_replace: bool = False


@dataclass(frozen=True)
class CreateSearchIndex:
    """``CREATE SEARCH INDEX name ON table (tokenlist columns) [STORING (...)] [PARTITION BY ...]
    [ORDER BY ...] [OPTIONS (...)]``."""

    name: str
    table: str
    columns: tuple[str, ...]
    storing: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    order_by: tuple[KeyPart, ...] = ()
    options: tuple[tuple[str, OptionValue], ...] = ()


@dataclass(frozen=True)
class DropSearchIndex:
    """``DROP SEARCH INDEX [IF EXISTS] name``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class DropView:
    """``DROP VIEW name``."""

    name: str


#: A sequence option's value as written: a string, an integer, or NULL.
SequenceOptionValue = str | int | None


@dataclass(frozen=True)
class CreateSequence:
    """``CREATE SEQUENCE [IF NOT EXISTS] name OPTIONS (...)`` or with clauses
    (``BIT_REVERSED_POSITIVE SKIP RANGE a, b START COUNTER WITH n``): the sequence it creates."""

    sequence: Sequence
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterSequence:
    """``ALTER SEQUENCE name SET OPTIONS (name = value | NULL, ...)``, the options in the order given."""

    name: str
    options: tuple[tuple[str, SequenceOptionValue], ...]


@dataclass(frozen=True)
class DropSequence:
    """``DROP SEQUENCE [IF EXISTS] name``."""

    name: str
    if_exists: bool = False
@dataclass(frozen=True)
class CreateProtoBundle:
    """``CREATE PROTO BUNDLE (fqn, ...)``: the proto types columns may use, from the request's descriptors."""

    types: tuple[str, ...]


@dataclass(frozen=True)
class AlterProtoBundle:
    """``ALTER PROTO BUNDLE [INSERT (fqn, ...)] [UPDATE (fqn, ...)] [DELETE (fqn, ...)]``."""

    insert: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()


@dataclass(frozen=True)
class DropProtoBundle:
    """``DROP PROTO BUNDLE``."""


@dataclass(frozen=True)
class CreateRole:
    """``CREATE ROLE name``."""

    name: str


@dataclass(frozen=True)
class DropRole:
    """``DROP ROLE name``."""

    name: str


@dataclass(frozen=True)
class PrivilegeSpec:
    """One privilege of a GRANT or REVOKE: ``SELECT`` or ``SELECT(a, b)`` (``columns`` None: the whole object)."""

    privilege: str
    columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GrantPrivileges:
    """``GRANT privileges ON kind names TO ROLE roles`` (``revoke``: ``REVOKE ... FROM ROLE roles``).

    ``kind`` is one of ``roles.PRIVILEGES_OF`` (TABLE, VIEW, CHANGE STREAM, TABLE FUNCTION).
    """

    privileges: tuple[PrivilegeSpec, ...]
    kind: str
    names: tuple[str, ...]
    roles: tuple[str, ...]
    revoke: bool = False


@dataclass(frozen=True)
class GrantRole:
    """``GRANT ROLE roles TO ROLE grantees`` (``revoke``: ``REVOKE ROLE ... FROM ROLE ...``)."""

    roles: tuple[str, ...]
    grantees: tuple[str, ...]
    revoke: bool = False


Node = (
    CreateDatabase
    | CreateTable
    | CreateIndex
    | AlterTableAddColumn
    | AlterTableDropColumn
    | AlterTableRowDeletionPolicy
    | AlterTableAddConstraint
    | AlterTableDropConstraint
    | AlterColumnSetOptions
    | AlterColumnSetDefault
    | AlterColumnType
    | DropTable
    | DropIndex
    | CreateChangeStream
    | AlterChangeStreamSetFor
    | AlterChangeStreamDropForAll
    | AlterChangeStreamSetOptions
    | DropChangeStream
    | CreateView
    | DropView
    | AlterDatabase
    | CreateSearchIndex
    | DropSearchIndex
    | CreateSequence
    | AlterSequence
    | DropSequence
    | CreateProtoBundle
    | AlterProtoBundle
    | DropProtoBundle
    | CreateRole
    | DropRole
    | GrantPrivileges
    | GrantRole
)
