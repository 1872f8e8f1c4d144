"""Schema rules for change streams: creating, altering and dropping them, and what they protect.

Applied by ``schema_updater`` (each function takes its statement context). Checked as
Spanner does: the stream's name is new in the schema namespace it shares with tables
and indexes; every table and column named in FOR exists, appears once, and is not a
key column (key columns are always tracked); options are known and well formed
(``ddl/change_stream_options.py``). A table or column that a stream names explicitly
cannot be dropped (``FOR ALL`` protects nothing: it follows the schema). A stream keeps
the commit timestamp of the schema change that created it; ALTER keeps it.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)",
    ...     "CREATE CHANGE STREAM S FOR T(V) OPTIONS (retention_period = '36h')",
    ... ], created_nanos=5)
    >>> s = cat.change_stream("s"); s.tables[0].columns, s.options, s.created_nanos
    (('V',), (('retention_period', '36h'),), 5)
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from .. import errors
from ..ddl import change_stream_options, nodes
from .catalog import Catalog, ChangeStream, Table, TrackedTable


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str
    created_nanos: int

    def check_new_name(self, kind: str, name: str) -> None: ...

#: What a change stream handler returns: the new list of change streams.
Streams = list[ChangeStream]


def create(ctx: _Context, node: nodes.CreateChangeStream) -> Streams:
    ctx.check_new_name("change stream", node.name)
    tables = _resolve_watch(ctx, node.name, node.watch)
    options = change_stream_options.validate(ctx.statement, node.name, node.options)
    explicit = change_stream_options.merge((), options)
    stream = ChangeStream(node.name, bool(node.watch and node.watch.all), tables, explicit, ctx.created_nanos)
    return [*ctx.catalog.change_streams, stream]


def set_for(ctx: _Context, node: nodes.AlterChangeStreamSetFor) -> Streams:
    stream = _existing(ctx, node.name)
    tables = _resolve_watch(ctx, stream.name, node.watch)
    return _replace(ctx.catalog, dataclasses.replace(stream, all=node.watch.all, tables=tables))


def drop_for_all(ctx: _Context, node: nodes.AlterChangeStreamDropForAll) -> Streams:
    stream = _existing(ctx, node.name)
    return _replace(ctx.catalog, dataclasses.replace(stream, all=False, tables=()))


def set_options(ctx: _Context, node: nodes.AlterChangeStreamSetOptions) -> Streams:
    stream = _existing(ctx, node.name)
    changes = change_stream_options.validate(ctx.statement, stream.name, node.options)
    return _replace(ctx.catalog, dataclasses.replace(stream, options=change_stream_options.merge(stream.options, changes)))


def drop(ctx: _Context, node: nodes.DropChangeStream) -> Streams:
    stream = _existing(ctx, node.name)
    return [s for s in ctx.catalog.change_streams if s is not stream]


def check_drop_table(catalog: Catalog, statement: str, table: Table) -> None:
    """Refuse to drop a table that a change stream names in its FOR clause."""
    for stream in catalog.change_streams:
        if stream.tracked(table.name) is not None:
            raise errors.change_stream_blocks_drop_table(statement, table.name, stream.name)


def check_drop_column(catalog: Catalog, statement: str, table: Table, column: str) -> None:
    """Refuse to drop a column that a change stream names in its FOR clause."""
    for stream in catalog.change_streams:
        if stream.names_column(table.name, column):
            raise errors.change_stream_blocks_drop_column(statement, table.name, column, stream.name)


def _existing(ctx: _Context, name: str) -> ChangeStream:
    stream = ctx.catalog.change_stream(name)
    if stream is None:
        raise errors.change_stream_not_found(ctx.statement, name)
    return stream


def _replace(catalog: Catalog, stream: ChangeStream) -> Streams:
    return [stream if s.name == stream.name else s for s in catalog.change_streams]


def _resolve_watch(ctx: _Context, stream: str, watch: nodes.ChangeStreamFor | None) -> tuple[TrackedTable, ...]:
    """The FOR clause's tables and columns with their declared names, checked."""
    if watch is None or watch.all:
        return ()
    out: list[TrackedTable] = []
    for tracked in watch.tables:
        table = ctx.catalog.table(tracked.table)
        if table is None:
            raise errors.change_stream_unknown_table(ctx.statement, stream, tracked.table)
        if any(t.table == table.name for t in out):
            raise errors.change_stream_table_twice(ctx.statement, stream, table.name)
        columns: list[str] | None = None if tracked.columns is None else []
        for name in tracked.columns or ():
            column = table.column(name)
            if column is None:
                raise errors.change_stream_unknown_column(ctx.statement, stream, table.name, name)
            if column.name in table.key_names:
                raise errors.change_stream_key_column(ctx.statement, stream, table.name, column.name)
            assert columns is not None
            if column.name in columns:
                raise errors.change_stream_column_twice(ctx.statement, stream, table.name, column.name)
            columns.append(column.name)
        out.append(TrackedTable(table.name, None if columns is None else tuple(columns)))
    return tuple(out)
