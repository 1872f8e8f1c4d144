"""Canonical DDL text for nodes and catalogs: what GetDatabaseDdl returns.

The layout follows Spanner's: one column per line with a trailing comma, the
``allow_commit_timestamp`` option on its own lines, ``PRIMARY KEY(...)`` right after
the closing parenthesis and the interleave clause on the next line. Names are
back-quoted only when they need it. Printing then parsing gives back an equal node.

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> print(print_statement(parse_ddl("create table T (K int64 not null) primary key (K)")))
    CREATE TABLE T (
      K INT64 NOT NULL,
    ) PRIMARY KEY(K)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..catalog import Catalog, ChangeStream, Column, Index, KeyPart, Table
from . import nodes
from .change_stream_options import print_value
from .lexer import quote_identifier as q

_DATABASE_ID = re.compile(r"[a-z][a-z0-9_-]*\Z")


def print_catalog(catalog: Catalog) -> list[str]:
    """The statements that recreate ``catalog``: tables in creation order, each followed by its indexes,
    then the views and the change streams in creation order.

    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> from watcher.localspanner.schema_updater import apply_ddl
    >>> cat = apply_ddl(Catalog(), parse_ddl("CREATE TABLE T (K INT64) PRIMARY KEY (K)"))
    >>> cat = apply_ddl(cat, parse_ddl("CREATE UNIQUE INDEX TK ON T (K DESC)"))
    >>> print_catalog(cat)[1]
    'CREATE UNIQUE INDEX TK ON T(K DESC)'
    """
    out: list[str] = []
    if catalog.proto_bundle is not None:  # first: columns name its types
        out.append(_create_proto_bundle(nodes.CreateProtoBundle(catalog.proto_bundle.types)))
    for table in catalog.tables:
        out.append(_create_table(_table_node(table)))
        out.extend(_create_index(_index_node(index)) for index in catalog.indexes_of(table.name))
    out.extend(_create_view(nodes.CreateView(v.name, v.definition, v.security)) for v in catalog.views)
    out.extend(_create_change_stream(change_stream_node(s)) for s in catalog.change_streams)
    return out


def change_stream_node(stream: ChangeStream) -> nodes.CreateChangeStream:
    """The CREATE statement of an existing change stream (its explicit options only)."""
    watch = nodes.ChangeStreamFor(stream.all, stream.tables) if stream.all or stream.tables else None
    return nodes.CreateChangeStream(stream.name, watch, stream.options)


def print_statement(node: nodes.Node) -> str:
    """Canonical text of one DDL statement.

    >>> print_statement(nodes.DropIndex("Order", if_exists=True))
    'DROP INDEX IF EXISTS `Order`'
    """
    printer = _PRINTERS.get(type(node))
    if printer is None:
        raise TypeError(f"not a DDL node: {node!r}")
    return printer(node)


def column_definition(column: Column) -> str:
    """``Name TYPE [NOT NULL] [DEFAULT (...) | AS (...) [STORED]] [OPTIONS (...)]``."""
    parts = [q(column.name), str(column.type)]
    if column.not_null:
        parts.append("NOT NULL")
    if column.generated is not None:
        parts.append(f"AS ({column.generated})" + (" STORED" if column.stored else ""))
    elif column.default is not None:
        parts.append(f"DEFAULT ({column.default})")
    if column.allow_commit_timestamp:
        parts.append(_options(True))
    return " ".join(parts)


def _options(allow_commit_timestamp: bool) -> str:
    return f"OPTIONS (\n    allow_commit_timestamp = {str(allow_commit_timestamp).lower()}\n  )"


def _key(parts: tuple[KeyPart, ...]) -> str:
    return ", ".join(q(p.column) + (" DESC" if p.descending else "") for p in parts)


def _table_node(table: Table) -> nodes.CreateTable:
    return nodes.CreateTable(table.name, table.columns, table.primary_key, table.parent, table.on_delete_cascade)


def _index_node(index: Index) -> nodes.CreateIndex:
    return nodes.CreateIndex(index.name, index.table, index.key, index.storing, index.unique,
                             index.null_filtered, index.interleave_in)


def _create_table(node: nodes.CreateTable) -> str:
    head = "CREATE TABLE " + ("IF NOT EXISTS " if node.if_not_exists else "") + q(node.name)
    columns = "".join(f"  {column_definition(c)},\n" for c in node.columns)
    text = f"{head} (\n{columns}) PRIMARY KEY({_key(node.primary_key)})"
    if node.parent is not None:
        action = "CASCADE" if node.on_delete_cascade else "NO ACTION"
        text += f",\n  INTERLEAVE IN PARENT {q(node.parent)} ON DELETE {action}"
    return text


def _create_index(node: nodes.CreateIndex) -> str:
    words = ["CREATE"] + ["UNIQUE"] * node.unique + ["NULL_FILTERED"] * node.null_filtered + ["INDEX"]
    if node.if_not_exists:
        words.append("IF NOT EXISTS")
    text = f"{' '.join(words)} {q(node.name)} ON {q(node.table)}({_key(node.key)})"
    if node.storing:
        text += f" STORING ({', '.join(q(c) for c in node.storing)})"
    if node.interleave_in is not None:
        text += f", INTERLEAVE IN {q(node.interleave_in)}"
    return text


def _alter_column_type(node: nodes.AlterColumnType) -> str:
    parts = [f"ALTER TABLE {q(node.table)} ALTER COLUMN {q(node.column)} {node.type}"]
    if node.not_null:
        parts.append("NOT NULL")
    if node.default is not None:
        parts.append(f"DEFAULT ({node.default})")
    if node.allow_commit_timestamp is not None:
        parts.append(_options(node.allow_commit_timestamp))
    return " ".join(parts)


def _set_options(node: nodes.AlterColumnSetOptions) -> str:
    value = "null" if node.allow_commit_timestamp is None else str(node.allow_commit_timestamp).lower()
    return f"ALTER TABLE {q(node.table)} ALTER COLUMN {q(node.column)} SET OPTIONS (allow_commit_timestamp = {value})"


def _set_default(node: nodes.AlterColumnSetDefault) -> str:
    head = f"ALTER TABLE {q(node.table)} ALTER COLUMN {q(node.column)}"
    return f"{head} DROP DEFAULT" if node.default is None else f"{head} SET DEFAULT ({node.default})"


def _watch(watch: nodes.ChangeStreamFor) -> str:
    if watch.all:
        return "FOR ALL"
    parts = [q(t.table) + ("" if t.columns is None else f"({', '.join(q(c) for c in t.columns)})") for t in watch.tables]
    return "FOR " + ", ".join(parts)


def _stream_options(options: tuple[tuple[str, nodes.OptionValue], ...]) -> str:
    body = ",\n".join(f"  {name} = {'null' if v is None else print_value(v)}" for name, v in options)
    return f"OPTIONS (\n{body}\n)"


def _create_change_stream(node: nodes.CreateChangeStream) -> str:
    text = f"CREATE CHANGE STREAM {q(node.name)}"
    if node.watch is not None:
        text += " " + _watch(node.watch)
    if node.options:
        text += " " + _stream_options(node.options)
    return text


def _alter_database(node: nodes.AlterDatabase) -> str:
    # A database id may hold '-' and still be written bare (GetDatabaseDdl prints it so).
    name = node.name if _DATABASE_ID.match(node.name) else q(node.name)
    body = ",\n".join(f"  {o} = {'NULL' if v is None else print_value(v)}" for o, v in node.options)
    return f"ALTER DATABASE {name} SET OPTIONS (\n{body}\n)"


def _create_view(node: nodes.CreateView) -> str:
    head = "CREATE OR REPLACE VIEW" if node.or_replace else "CREATE VIEW"
    return f"{head} {q(node.name)} SQL SECURITY {node.security} AS {node.definition}"


def _proto_types(types: tuple[str, ...]) -> str:
    return "(\n" + "".join(f"  {t if '.' in t else q(t)},\n" for t in types) + ")"


def _create_proto_bundle(node: nodes.CreateProtoBundle) -> str:
    return f"CREATE PROTO BUNDLE {_proto_types(node.types)}"


def _alter_proto_bundle(node: nodes.AlterProtoBundle) -> str:
    clauses = [f"{word} {_proto_types(types)}" for word, types in
               (("INSERT", node.insert), ("UPDATE", node.update), ("DELETE", node.delete)) if types]
    return "ALTER PROTO BUNDLE " + " ".join(clauses)


_PRINTERS: dict[type, Callable] = {
    nodes.CreateDatabase: lambda n: f"CREATE DATABASE {q(n.name)}",
    nodes.CreateTable: _create_table,
    nodes.CreateIndex: _create_index,
    nodes.AlterTableAddColumn: lambda n: (
        f"ALTER TABLE {q(n.table)} ADD COLUMN {'IF NOT EXISTS ' if n.if_not_exists else ''}{column_definition(n.column)}"
    ),
    nodes.AlterTableDropColumn: lambda n: f"ALTER TABLE {q(n.table)} DROP COLUMN {q(n.column)}",
    nodes.AlterColumnSetOptions: _set_options,
    nodes.AlterColumnSetDefault: _set_default,
    nodes.AlterColumnType: _alter_column_type,
    nodes.DropTable: lambda n: f"DROP TABLE {'IF EXISTS ' if n.if_exists else ''}{q(n.name)}",
    nodes.DropIndex: lambda n: f"DROP INDEX {'IF EXISTS ' if n.if_exists else ''}{q(n.name)}",
    nodes.CreateChangeStream: _create_change_stream,
    nodes.AlterChangeStreamSetFor: lambda n: f"ALTER CHANGE STREAM {q(n.name)} SET {_watch(n.watch)}",
    nodes.AlterChangeStreamDropForAll: lambda n: f"ALTER CHANGE STREAM {q(n.name)} DROP FOR ALL",
    nodes.AlterChangeStreamSetOptions: lambda n: f"ALTER CHANGE STREAM {q(n.name)} SET {_stream_options(n.options)}",
    nodes.DropChangeStream: lambda n: f"DROP CHANGE STREAM {q(n.name)}",
    nodes.CreateView: _create_view,
    nodes.AlterDatabase: _alter_database,
    nodes.DropView: lambda n: f"DROP VIEW {q(n.name)}",
    nodes.CreateProtoBundle: _create_proto_bundle,
    nodes.AlterProtoBundle: _alter_proto_bundle,
    nodes.DropProtoBundle: lambda n: "DROP PROTO BUNDLE",
}
