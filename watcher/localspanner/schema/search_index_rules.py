"""Full-text search indexes in the schema: CREATE / DROP SEARCH INDEX and what they protect.

A search index names TOKENLIST columns of one table (and optionally stores, partitions
and orders by other columns). The local server keeps it in the catalog, prints it back
in GetDatabaseDdl and persists it; it answers no SEARCH queries, so it needs no storage.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE A (K INT64, T STRING(MAX), Tok TOKENLIST AS (TOKENIZE_FULLTEXT(T)) HIDDEN) PRIMARY KEY (K)",
    ...     "CREATE SEARCH INDEX AIdx ON A(Tok)",
    ... ])
    >>> [i.name for i in cat.search_indexes_of("a")]
    ['AIdx']
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from .. import errors
from ..datamodel.types import TypeCode
from ..ddl import nodes
from .catalog import Catalog, SearchIndex, Table


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str

    def check_new_name(self, kind: str, name: str) -> None: ...
    def table(self, name: str) -> Table: ...
    def invalid(self, detail: str) -> errors.SpannerError: ...
    def wrap(self, error: errors.SpannerError) -> errors.SpannerError: ...


def create(ctx: _Context, node: nodes.CreateSearchIndex) -> Catalog:
    ctx.check_new_name("search index", node.name)
    table = ctx.table(node.table)

    def column_name(name: str) -> str:
        column = table.column(name)
        if column is None:
            raise ctx.invalid(errors.search_index_unknown_column(node.name, name, table.name))
        return column.name

    columns = tuple(column_name(c) for c in node.columns)
    for name in columns:
        column = table.column(name)
        assert column is not None
        if column.type.code != TypeCode.TOKENLIST:
            raise ctx.invalid(errors.search_index_column_not_tokenlist(node.name, f"{table.name}.{name}", column.type))
    index = SearchIndex(node.name, table.name, columns, tuple(column_name(c) for c in node.storing),
                        tuple(column_name(c) for c in node.partition_by),
                        tuple(dataclasses.replace(p, column=column_name(p.column)) for p in node.order_by),
                        node.options)
    return _with(ctx.catalog, (*ctx.catalog.search_indexes, index))


def drop(ctx: _Context, node: nodes.DropSearchIndex) -> Catalog | None:
    index = ctx.catalog.search_index(node.name)
    if index is None:
        if node.if_exists:
            return None
        raise ctx.wrap(errors.search_index_not_found(node.name))
    return _with(ctx.catalog, tuple(i for i in ctx.catalog.search_indexes if i is not index))


def check_drop_table(ctx: _Context, table: Table) -> None:
    found = ctx.catalog.search_indexes_of(table.name)
    if found:
        raise ctx.invalid(errors.drop_table_with_search_indexes(table.name, [i.name for i in found]))


def check_drop_column(ctx: _Context, table: Table, column: str) -> None:
    for index in ctx.catalog.search_indexes_of(table.name):
        used = (*index.columns, *index.storing, *index.partition_by, *(p.column for p in index.order_by))
        if column.lower() in {c.lower() for c in used}:
            raise ctx.invalid(errors.drop_column_used_by_search_index(f"{table.name}.{column}", index.name))


def _with(catalog: Catalog, search_indexes: tuple[SearchIndex, ...]) -> Catalog:
    return dataclasses.replace(catalog, search_indexes=search_indexes, version=catalog.version + 1)
