"""Applies DDL nodes to a catalog, validating them as Spanner does.

Each statement gives a new immutable :class:`~watcher.localspanner.schema.catalog.Catalog`
with ``version`` one higher. A statement that ``IF [NOT] EXISTS`` turns into a no-op
returns the catalog it was given (same object, same version). Names that refer to
existing objects are stored with the case they were declared with, so the catalog and
GetDatabaseDdl show ``Singers`` even when a statement wrote ``singers``.

Rules checked (each failure names the table, column or index): names are
``[A-Za-z][A-Za-z0-9_]*`` of at most 128 characters and unique (tables and indexes
share one case-insensitive namespace); referenced tables, columns and indexes exist;
key columns exist, are unique and are not ARRAY, JSON or PROTO (ENUM may be); ``allow_commit_timestamp``
only on TIMESTAMP; generated columns may only name columns of their table (a
best-effort look at the identifiers in the expression) and DEFAULT none; an
interleaved table starts its key with its parent's key (same names, types, order and
nullability); tables with indexes or interleaved children cannot be dropped; key
columns and indexed columns cannot be dropped; STORING columns exist and are not key
columns; ALTER COLUMN changes only lengths, STRING<->BYTES, PROTO<->BYTES, ENUM<->INT64 and NOT NULL (not on key
columns). Data-dependent checks (e.g. NOT NULL added to a column holding NULLs) are
the storage layer's.

Example:
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE Singers (SingerId INT64 NOT NULL, LastUpdated TIMESTAMP) PRIMARY KEY (SingerId)",
    ...     "ALTER TABLE Singers ALTER COLUMN LastUpdated SET OPTIONS (allow_commit_timestamp = true)",
    ... ])
    >>> cat.version, [c.name for c in cat.table("singers").commit_timestamp_columns]
    (2, ['LastUpdated'])
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

from .. import errors
from ..datamodel.types import SpannerType, TypeCode
from ..ddl import nodes
from ..ddl.expressions import referenced_names
from ..ddl.parser import parse_ddl
from ..ddl.printer import print_statement
from . import (
    change_stream_rules,
    constraint_rules,
    proto_rules,
    role_rules,
    row_deletion_rules,
    search_index_rules,
    sequence_rules,
    view_rules,
)
from .catalog import Catalog, ChangeStream, Column, Index, KeyPart, Table

MAX_NAME_LENGTH = 128
MAX_COLUMNS_PER_TABLE = 1024
MAX_KEY_COLUMNS = 16
MAX_INTERLEAVE_DEPTH = 7

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_NOT_KEYABLE = frozenset({TypeCode.ARRAY, TypeCode.JSON, TypeCode.STRUCT, TypeCode.TOKENLIST, TypeCode.PROTO})
# Type codes an ALTER COLUMN may switch between (besides keeping the code).
_CONVERTIBLE = {frozenset({TypeCode.STRING, TypeCode.BYTES}), frozenset({TypeCode.PROTO, TypeCode.BYTES}),
                frozenset({TypeCode.ENUM, TypeCode.INT64})}


def apply_ddl(catalog: Catalog, node: nodes.Node, *, created_nanos: int = 0, proto_descriptors: bytes | None = None) -> Catalog:
    """Apply one statement node to ``catalog`` and return the new catalog.

    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> apply_ddl(Catalog(), parse_ddl("CREATE TABLE T (K INT64) PRIMARY KEY (K)")).table("t").name
    'T'

    Raises:
        SpannerError: the statement breaks a schema rule (FAILED_PRECONDITION) or names
            something that does not exist (NOT_FOUND); the message names the statement.
    """
    return _apply(catalog, node, print_statement(node), created_nanos, proto_descriptors)


def apply_statement(catalog: Catalog, statement: str, *, created_nanos: int = 0,
                    proto_descriptors: bytes | None = None,
                    parse: Callable[[str], nodes.Node] = parse_ddl) -> tuple[Catalog, nodes.Node]:
    """Parse and apply one statement; errors quote ``statement`` as the user wrote it.

    ``created_nanos`` is the commit timestamp the change will get: a change stream created
    by the statement keeps it. ``proto_descriptors`` (a serialized FileDescriptorSet) came
    with the request; CREATE and ALTER PROTO BUNDLE take their types' descriptors from it.
    ``parse`` reads the statement (a PostgreSQL database's DDL has its own parser).

    >>> cat, node = apply_statement(Catalog(), "CREATE TABLE T (K INT64) PRIMARY KEY (K)")
    >>> type(node).__name__, cat.version
    ('CreateTable', 1)
    """
    node = parse(statement)
    return _apply(catalog, node, statement, created_nanos, proto_descriptors), node


def apply_statements(catalog: Catalog, statements: Iterable[str], *, created_nanos: int = 0,
                     proto_descriptors: bytes | None = None) -> tuple[Catalog, list[nodes.Node]]:
    """Parse and apply ``statements`` in order; return the final catalog and the parsed nodes.

    Raises on the first bad statement; the caller decides what the earlier ones mean.

    >>> cat, done = apply_statements(Catalog(), ["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "DROP TABLE T"])
    >>> cat.tables, cat.version, [type(n).__name__ for n in done]
    ((), 2, ['CreateTable', 'DropTable'])
    """
    applied: list[nodes.Node] = []
    for statement in statements:
        catalog, node = apply_statement(catalog, statement, created_nanos=created_nanos, proto_descriptors=proto_descriptors)
        applied.append(node)
    return catalog, applied


def _apply(catalog: Catalog, node: nodes.Node, statement: str, created_nanos: int = 0,
           proto_descriptors: bytes | None = None) -> Catalog:
    ctx = _Context(catalog, statement, created_nanos, proto_descriptors)
    result = _HANDLERS[type(node)](ctx, proto_rules.resolve_node(ctx, node))
    if result is None:
        return catalog
    if isinstance(result, list):  # a change stream statement: tables and indexes stay
        return role_rules.prune(dataclasses.replace(catalog, version=catalog.version + 1, change_streams=tuple(result)))
    if isinstance(result, Catalog):  # a view, proto bundle or role statement: builds its catalog itself
        return role_rules.prune(result)
    tables, indexes = result
    new = dataclasses.replace(catalog, tables=tuple(tables), indexes=tuple(indexes), version=catalog.version + 1)
    return role_rules.prune(view_rules.refresh(statement, new))


class _Context:
    """The catalog a statement applies to, plus error helpers that name the statement."""

    def __init__(self, catalog: Catalog, statement: str, created_nanos: int = 0,
                 proto_descriptors: bytes | None = None) -> None:
        self.catalog = catalog
        self.statement = statement
        self.created_nanos = created_nanos
        self.proto_descriptors = proto_descriptors

    def invalid(self, detail: str) -> errors.SpannerError:
        return errors.ddl_invalid(self.statement, detail)

    def wrap(self, error: errors.SpannerError) -> errors.SpannerError:
        return errors.ddl_statement_failed(error, self.statement)

    def table(self, name: str) -> Table:
        table = self.catalog.table(name)
        if table is None:
            raise self.wrap(errors.table_not_found(name))
        return table

    def column(self, table: Table, name: str) -> Column:
        column = table.column(name)
        if column is None:
            raise self.wrap(errors.column_not_found(table.name, name))
        return column

    def index(self, name: str) -> Index:
        index = self.catalog.index(name)
        if index is None:
            raise self.wrap(errors.index_not_found(name))
        return index

    def check_new_name(self, kind: str, name: str) -> None:
        self.check_name(kind, name)
        existing = ("table" if self.catalog.table(name) else "index" if self.catalog.index(name)
                    else "change stream" if self.catalog.change_stream(name)
                    else "view" if self.catalog.view(name)
                    else "search index" if self.catalog.search_index(name)
                    else "sequence" if self.catalog.sequence(name)
                    else "constraint" if self.catalog.constraint(name) else None)
        if existing is not None:
            raise self.wrap(errors.duplicate_name(existing, name))

    def check_name(self, kind: str, name: str) -> None:
        if not _NAME.match(name) or len(name) > MAX_NAME_LENGTH:
            raise self.invalid(errors.invalid_name(kind, name, MAX_NAME_LENGTH))


_Result = tuple[list[Table], list[Index]] | list[ChangeStream] | Catalog | None


def _replace_table(catalog: Catalog, table: Table) -> tuple[list[Table], list[Index]]:
    low = table.name.lower()
    return [table if t.name.lower() == low else t for t in catalog.tables], list(catalog.indexes)


# --- columns ------------------------------------------------------------------------------

def _check_column(ctx: _Context, table: str, column: Column, columns: Iterable[Column]) -> Column:
    ctx.check_name("column", column.name)
    if _has_struct(column.type):
        raise ctx.invalid(errors.struct_column(f"{table}.{column.name}", column.type))
    if column.type.code == TypeCode.TOKENLIST and column.generated is None:
        raise ctx.invalid(errors.tokenlist_not_generated(f"{table}.{column.name}"))
    if column.type.element is not None and column.type.element.code == TypeCode.TOKENLIST:
        raise ctx.invalid(errors.tokenlist_in_array(f"{table}.{column.name}"))
    if column.allow_commit_timestamp and column.type.code != TypeCode.TIMESTAMP:
        raise ctx.invalid(errors.commit_timestamp_option_type(f"{table}.{column.name}", column.type))
    names = {c.name.lower(): c.name for c in columns}
    if column.generated is not None:
        for ref in referenced_names(column.generated):
            if ref.lower() not in names:
                raise ctx.invalid(errors.generated_unknown_reference(f"{table}.{column.name}", ref))
            if ref.lower() == column.name.lower():
                raise ctx.invalid(errors.generated_references_itself(f"{table}.{column.name}"))
    if column.default is not None:
        for ref in referenced_names(column.default):
            if ref.lower() in names:
                raise ctx.invalid(errors.default_references_column(f"{table}.{column.name}", names[ref.lower()]))
    return sequence_rules.check_column(ctx, table, column)


def _has_struct(t: SpannerType) -> bool:
    return t.code == TypeCode.STRUCT or (t.element is not None and _has_struct(t.element))


def _resolve_key(ctx: _Context, table: Table, parts: Iterable[KeyPart], what: str) -> tuple[KeyPart, ...]:
    """Key parts with declared column names; every column exists once and may be a key."""
    out: list[KeyPart] = []
    for part in parts:
        column = table.column(part.column)
        if column is None:
            raise ctx.invalid(errors.key_unknown_column(what, part.column, table.name))
        if any(p.column == column.name for p in out):
            raise ctx.invalid(errors.key_column_twice(what, f"{table.name}.{column.name}"))
        if column.type.code in _NOT_KEYABLE:
            raise ctx.invalid(errors.key_column_not_keyable(what, f"{table.name}.{column.name}", column.type))
        out.append(KeyPart(column.name, part.descending))
    if len(out) > MAX_KEY_COLUMNS:
        raise ctx.invalid(errors.too_many_key_columns(what, len(out), MAX_KEY_COLUMNS))
    return tuple(out)


# --- tables ------------------------------------------------------------------------------------

def _create_table(ctx: _Context, node: nodes.CreateTable) -> _Result:
    if node.if_not_exists and ctx.catalog.table(node.name) is not None:
        return None
    ctx.check_new_name("table", node.name)
    seen: set[str] = set()
    columns = []
    for column in node.columns:
        if column.name.lower() in seen:
            raise ctx.invalid(errors.duplicate_column(f"{node.name}.{column.name}"))
        seen.add(column.name.lower())
        columns.append(_check_column(ctx, node.name, column, node.columns))
    if len(columns) > MAX_COLUMNS_PER_TABLE:
        raise ctx.invalid(errors.too_many_columns(node.name, len(columns), MAX_COLUMNS_PER_TABLE))
    table = Table(node.name, tuple(columns), ())
    key = _resolve_key(ctx, table, node.primary_key, errors.primary_key_subject(node.name))
    parent_name = None
    if node.parent is not None:
        parent = ctx.table(node.parent)
        _check_interleave(ctx, node.name, key, table, parent)
        parent_name = parent.name
    table = Table(node.name, tuple(columns), key, parent_name, node.on_delete_cascade and parent_name is not None)
    table = constraint_rules.resolve(ctx, table, (*node.checks, *node.foreign_keys))
    table = row_deletion_rules.resolve(ctx, table, node.row_deletion_policy)
    row_deletion_rules.check_new_child(ctx, table)
    return [*ctx.catalog.tables, table], list(ctx.catalog.indexes)


def _check_interleave(ctx: _Context, name: str, key: tuple[KeyPart, ...], child: Table, parent: Table) -> None:
    depth, ancestor = 1, parent
    while ancestor.parent is not None:
        depth += 1
        ancestor = ctx.table(ancestor.parent)
    if depth > MAX_INTERLEAVE_DEPTH:
        raise ctx.invalid(errors.interleave_too_deep(name, depth, MAX_INTERLEAVE_DEPTH))
    if len(key) < len(parent.primary_key):
        raise ctx.invalid(errors.interleave_key_prefix(name, parent.name, parent.key_names))
    for mine, theirs in zip(key, parent.primary_key, strict=False):
        mine_col, theirs_col = child.column(mine.column), parent.column(theirs.column)
        assert mine_col is not None and theirs_col is not None
        problem = (
            errors.KEY_DIFFERENT_NAME if mine.column.lower() != theirs.column.lower()
            else errors.key_different_type(mine_col.type, theirs_col.type) if not mine_col.type.same_kind(theirs_col.type)
            else errors.KEY_DIFFERENT_ORDER if mine.descending != theirs.descending
            else errors.KEY_DIFFERENT_NULLABILITY if mine_col.not_null != theirs_col.not_null
            else None
        )
        if problem:
            raise ctx.invalid(errors.interleave_key_mismatch(f"{name}.{mine.column}", problem, f"{parent.name}.{theirs.column}"))


def _drop_table(ctx: _Context, node: nodes.DropTable) -> _Result:
    if node.if_exists and ctx.catalog.table(node.name) is None:
        return None
    table = ctx.table(node.name)
    indexes = ctx.catalog.indexes_of(table.name)
    if indexes:
        raise ctx.invalid(errors.drop_table_with_indexes(table.name, (i.name for i in indexes)))
    change_stream_rules.check_drop_table(ctx.catalog, ctx.statement, table)
    search_index_rules.check_drop_table(ctx, table)
    view_rules.check_no_dependents(ctx.catalog, ctx.statement, "TABLE", table.name)
    constraint_rules.check_drop_table(ctx, table)
    children = ctx.catalog.children_of(table.name)
    if children:
        raise ctx.invalid(errors.drop_table_with_children(table.name, children[0].name))
    return [t for t in ctx.catalog.tables if t is not table], list(ctx.catalog.indexes)


# --- indexes -----------------------------------------------------------------------------------

def _create_index(ctx: _Context, node: nodes.CreateIndex) -> _Result:
    if node.if_not_exists and ctx.catalog.index(node.name) is not None:
        return None
    ctx.check_new_name("index", node.name)
    table = ctx.table(node.table)
    if not node.key:
        raise ctx.invalid(errors.index_without_key(node.name))
    key = _resolve_key(ctx, table, node.key, errors.index_subject(node.name))
    storing: list[str] = []
    for name in node.storing:
        column = table.column(name)
        if column is None:
            raise ctx.invalid(errors.index_stores_unknown_column(node.name, name, table.name))
        if column.name in table.key_names or any(p.column == column.name for p in key):
            raise ctx.invalid(errors.index_stores_key_column(node.name, f"{table.name}.{column.name}"))
        if column.name in storing:
            raise ctx.invalid(errors.index_stores_column_twice(node.name, f"{table.name}.{column.name}"))
        storing.append(column.name)
    interleave = None
    if node.interleave_in is not None:
        interleave = _check_index_interleave(ctx, node.name, table, key, ctx.table(node.interleave_in))
    index = Index(node.name, table.name, key, tuple(storing), node.unique, node.null_filtered, interleave)
    return list(ctx.catalog.tables), [*ctx.catalog.indexes, index]


def _check_index_interleave(ctx: _Context, name: str, table: Table, key: tuple[KeyPart, ...], parent: Table) -> str:
    ancestor: Table | None = table
    while ancestor is not None and ancestor.name != parent.name:
        ancestor = ctx.catalog.table(ancestor.parent) if ancestor.parent else None
    if ancestor is None:
        raise ctx.invalid(errors.index_interleave_not_ancestor(name, table.name, parent.name))
    prefix = [p.column.lower() for p in key[: len(parent.primary_key)]]
    if prefix != [c.lower() for c in parent.key_names]:
        raise ctx.invalid(errors.index_interleave_key_prefix(name, parent.name, parent.key_names))
    return parent.name


def _drop_index(ctx: _Context, node: nodes.DropIndex) -> _Result:
    if node.if_exists and ctx.catalog.index(node.name) is None:
        return None
    index = ctx.index(node.name)
    return list(ctx.catalog.tables), [i for i in ctx.catalog.indexes if i is not index]


# --- columns of existing tables --------------------------------------------------------------------

def _add_column(ctx: _Context, node: nodes.AlterTableAddColumn) -> _Result:
    table = ctx.table(node.table)
    column = node.column
    if table.column(column.name) is not None:
        if node.if_not_exists:
            return None
        raise ctx.invalid(errors.duplicate_column(f"{table.name}.{column.name}"))
    column = _check_column(ctx, table.name, column, (*table.columns, column))
    if column.not_null and column.default is None and column.generated is None:
        raise ctx.invalid(errors.not_null_without_default(f"{table.name}.{column.name}"))
    if len(table.columns) >= MAX_COLUMNS_PER_TABLE:
        raise ctx.invalid(errors.columns_full(table.name, MAX_COLUMNS_PER_TABLE))
    return _replace_table(ctx.catalog, dataclasses.replace(table, columns=(*table.columns, column)))


def _drop_column(ctx: _Context, node: nodes.AlterTableDropColumn) -> _Result:
    table = ctx.table(node.table)
    column = ctx.column(table, node.column)
    if column.name in table.key_names:
        raise ctx.invalid(errors.drop_key_column(f"{table.name}.{column.name}"))
    change_stream_rules.check_drop_column(ctx.catalog, ctx.statement, table, column.name)
    row_deletion_rules.check_column_change(ctx, table, column.name)
    search_index_rules.check_drop_column(ctx, table, column.name)
    constraint_rules.check_drop_column(ctx, table, column.name)
    for index in ctx.catalog.indexes_of(table.name):
        if column.name in index.storing or any(p.column == column.name for p in index.key):
            raise ctx.invalid(errors.drop_column_used_by_index(f"{table.name}.{column.name}", index.name))
    for other in table.columns:
        if other.generated and column.name.lower() in {r.lower() for r in referenced_names(other.generated)}:
            raise ctx.invalid(errors.drop_column_used_by_generated(f"{table.name}.{column.name}", other.name))
    columns = tuple(c for c in table.columns if c is not column)
    return _replace_table(ctx.catalog, dataclasses.replace(table, columns=columns))


def _set_options(ctx: _Context, node: nodes.AlterColumnSetOptions) -> _Result:
    table = ctx.table(node.table)
    column = ctx.column(table, node.column)
    new = dataclasses.replace(column, allow_commit_timestamp=bool(node.allow_commit_timestamp))
    _check_column(ctx, table.name, new, table.columns)
    return _replace_column(ctx.catalog, table, new)


def _set_default(ctx: _Context, node: nodes.AlterColumnSetDefault) -> _Result:
    table = ctx.table(node.table)
    column = ctx.column(table, node.column)
    if column.is_generated:
        raise ctx.invalid(errors.generated_with_default(f"{table.name}.{column.name}"))
    new = dataclasses.replace(column, default=node.default)
    _check_column(ctx, table.name, new, table.columns)
    return _replace_column(ctx.catalog, table, new)


def _alter_column_type(ctx: _Context, node: nodes.AlterColumnType) -> _Result:
    table = ctx.table(node.table)
    column = ctx.column(table, node.column)
    where = f"{table.name}.{column.name}"
    if column.is_generated:
        raise ctx.invalid(errors.alter_generated_column(where))
    if not _convertible(column.type, node.type):
        raise ctx.invalid(errors.column_type_change(where, column.type, node.type))
    if column.name in table.key_names and (str(column.type) != str(node.type) or column.not_null != node.not_null):
        raise ctx.invalid(errors.key_column_change(where))
    constraint_rules.check_alter_column(ctx, table, column.name, not column.type.same_kind(node.type))
    if column.type.code != node.type.code:
        row_deletion_rules.check_column_change(ctx, table, column.name)
    allow = column.allow_commit_timestamp if node.allow_commit_timestamp is None else node.allow_commit_timestamp
    new = dataclasses.replace(column, type=node.type, not_null=node.not_null, default=node.default, allow_commit_timestamp=allow)
    _check_column(ctx, table.name, new, table.columns)
    return _replace_column(ctx.catalog, table, new)


def _convertible(old: SpannerType, new: SpannerType) -> bool:
    if old.code == TypeCode.ARRAY or new.code == TypeCode.ARRAY:
        return old.code == new.code and _convertible(old.element, new.element)  # type: ignore[arg-type]
    return old.code == new.code or frozenset({old.code, new.code}) in _CONVERTIBLE


def _replace_column(catalog: Catalog, table: Table, column: Column) -> tuple[list[Table], list[Index]]:
    low = column.name.lower()
    columns = tuple(column if c.name.lower() == low else c for c in table.columns)
    return _replace_table(catalog, dataclasses.replace(table, columns=columns))


def _create_database(ctx: _Context, node: nodes.CreateDatabase) -> _Result:
    raise ctx.invalid(errors.SCHEMA_CREATE_DATABASE_IN_UPDATE)


def _alter_database(ctx: _Context, node: nodes.AlterDatabase) -> _Result:
    raise ctx.invalid(errors.SCHEMA_ALTER_DATABASE_IN_UPDATER)


_HANDLERS: dict[type, Callable[..., _Result]] = {
    nodes.AlterDatabase: _alter_database,
    nodes.CreateDatabase: _create_database,
    nodes.CreateTable: _create_table,
    nodes.CreateIndex: _create_index,
    nodes.AlterTableAddColumn: _add_column,
    nodes.AlterTableDropColumn: _drop_column,
    nodes.AlterTableAddConstraint: constraint_rules.add,
    nodes.AlterTableDropConstraint: constraint_rules.drop,
    nodes.AlterTableRowDeletionPolicy: row_deletion_rules.alter,
    nodes.AlterColumnSetOptions: _set_options,
    nodes.AlterColumnSetDefault: _set_default,
    nodes.AlterColumnType: _alter_column_type,
    nodes.DropTable: _drop_table,
    nodes.DropIndex: _drop_index,
    nodes.CreateChangeStream: change_stream_rules.create,
    nodes.AlterChangeStreamSetFor: change_stream_rules.set_for,
    nodes.AlterChangeStreamDropForAll: change_stream_rules.drop_for_all,
    nodes.AlterChangeStreamSetOptions: change_stream_rules.set_options,
    nodes.DropChangeStream: change_stream_rules.drop,
    nodes.CreateView: view_rules.create,
    nodes.DropView: view_rules.drop,
    nodes.CreateSearchIndex: search_index_rules.create,
    nodes.DropSearchIndex: search_index_rules.drop,
    nodes.CreateSequence: sequence_rules.create,
    nodes.AlterSequence: sequence_rules.alter,
    nodes.DropSequence: sequence_rules.drop,
    nodes.CreateProtoBundle: proto_rules.create,
    nodes.AlterProtoBundle: proto_rules.alter,
    nodes.DropProtoBundle: proto_rules.drop,
    nodes.CreateRole: role_rules.create,
    nodes.DropRole: role_rules.drop,
    nodes.GrantPrivileges: role_rules.grant_privileges,
    nodes.GrantRole: role_rules.grant_role,
}
