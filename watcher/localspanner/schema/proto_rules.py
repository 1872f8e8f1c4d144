"""Schema rules of proto bundles: CREATE / ALTER / DROP PROTO BUNDLE, and PROTO / ENUM column types.

A column type written as a dotted name (``examples.music.SingerInfo``) is parsed as a proto
type; :func:`resolve_node` looks it up in the catalog's bundle and makes it PROTO (a message)
or ENUM (an enum), or refuses it. The bundle takes its descriptors from the statement's
request (``proto_descriptors``); a type may be removed or changed only while no column uses it.

Example:
    >>> from google.protobuf import descriptor_pb2
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> f = descriptor_pb2.FileDescriptorProto(name="m.proto", package="m")
    >>> _ = f.enum_type.add(name="Genre").value.add(name="POP", number=0)
    >>> fds = descriptor_pb2.FileDescriptorSet(file=[f]).SerializeToString()
    >>> cat, _ = apply_statements(Catalog(), ["CREATE PROTO BUNDLE (m.Genre)",
    ...     "CREATE TABLE T (K INT64, G m.Genre) PRIMARY KEY (K)"], proto_descriptors=fds)
    >>> cat.table("T").column("G").type.code.name, cat.proto_bundle.types
    ('ENUM', ('m.Genre',))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Protocol

from .. import errors
from ..datamodel.types import SpannerType, TypeCode
from ..ddl import nodes
from .catalog import Catalog, Column
from .proto_bundle import ProtoBundle, check_descriptors, kind_in


class _Context(Protocol):
    """What of ``schema_updater._Context`` the rules use."""

    catalog: Catalog
    statement: str
    proto_descriptors: bytes | None


def create(ctx: _Context, node: nodes.CreateProtoBundle) -> Catalog:
    if ctx.catalog.proto_bundle is not None:
        raise errors.proto_bundle_exists(ctx.statement)
    descriptors = _descriptors(ctx, required=True)
    _check_in_descriptors(ctx, descriptors, node.types)
    return _with_bundle(ctx.catalog, ProtoBundle(_unique(node.types), descriptors))


def alter(ctx: _Context, node: nodes.AlterProtoBundle) -> Catalog:
    bundle = ctx.catalog.proto_bundle
    if bundle is None:
        raise errors.proto_bundle_missing(ctx.statement)
    descriptors = _descriptors(ctx, required=bool(node.insert or node.update)) or bundle.descriptors
    for fqn in node.insert:
        if bundle.has(fqn):
            raise errors.proto_bundle_type_present(ctx.statement, fqn)
    for fqn in (*node.update, *node.delete):
        if not bundle.has(fqn):
            raise errors.proto_bundle_type_absent(ctx.statement, fqn)
    types = [t for t in bundle.types if t not in node.delete] + list(node.insert)
    _check_in_descriptors(ctx, descriptors, types)
    used = dict(_used_types(ctx.catalog))
    for fqn in node.delete:
        if fqn in used:
            raise errors.proto_type_in_use(ctx.statement, fqn, used[fqn][0])
    for fqn, (column, code) in used.items():
        if fqn in types and kind_in(descriptors, fqn) != code:  # a message became an enum, or back
            raise errors.proto_type_in_use(ctx.statement, fqn, column)
    return _with_bundle(ctx.catalog, ProtoBundle(_unique(types), descriptors))


def drop(ctx: _Context, node: nodes.DropProtoBundle) -> Catalog:
    if ctx.catalog.proto_bundle is None:
        raise errors.proto_bundle_missing(ctx.statement)
    for fqn, (column, _) in _used_types(ctx.catalog):
        raise errors.proto_type_in_use(ctx.statement, fqn, column)
    return _with_bundle(ctx.catalog, None)


def resolve_node(ctx: _Context, node: Any) -> Any:
    """The node with the proto types of its column(s) (the rules for proto bundles: ``proto_rules.py``) made PROTO or ENUM by the bundle."""
    if isinstance(node, nodes.CreateTable):
        return dataclasses.replace(node, columns=tuple(_resolve_column(ctx, node.name, c) for c in node.columns))
    if isinstance(node, nodes.AlterTableAddColumn):
        return dataclasses.replace(node, column=_resolve_column(ctx, node.table, node.column))
    if isinstance(node, nodes.AlterColumnType):
        return dataclasses.replace(node, type=_resolve(ctx, f"{node.table}.{node.column}", node.type))
    return node


def _resolve_column(ctx: _Context, table: str, column: Column) -> Column:
    resolved = _resolve(ctx, f"{table}.{column.name}", column.type)
    return column if resolved is column.type else dataclasses.replace(column, type=resolved)


def _resolve(ctx: _Context, where: str, t: SpannerType) -> SpannerType:
    if t.element is not None:
        element = _resolve(ctx, where, t.element)
        return t if element is t.element else dataclasses.replace(t, element=element)
    if not t.proto_fqn:
        return t
    bundle = ctx.catalog.proto_bundle
    kind = bundle.kind(t.proto_fqn) if bundle is not None else None
    if kind is None:
        raise errors.proto_type_unknown(ctx.statement, t.proto_fqn, where)
    return SpannerType(kind, proto_fqn=t.proto_fqn)


def _used_types(catalog: Catalog) -> Iterator[tuple[str, tuple[str, TypeCode]]]:
    """(fqn, (table.column, PROTO or ENUM)) for every column of a proto type."""
    for table in catalog.tables:
        for column in table.columns:
            t = column.type.element or column.type
            if t.proto_fqn:
                yield t.proto_fqn, (f"{table.name}.{column.name}", t.code)


def _descriptors(ctx: _Context, *, required: bool) -> bytes:
    if not ctx.proto_descriptors:
        if required:
            raise errors.proto_descriptors_missing(ctx.statement)
        return b""
    check_descriptors(ctx.proto_descriptors)
    return ctx.proto_descriptors


def _check_in_descriptors(ctx: _Context, descriptors: bytes, types: Any) -> None:
    for fqn in types:
        if kind_in(descriptors, fqn) is None:
            raise errors.proto_type_not_in_descriptors(ctx.statement, fqn)


def _unique(types: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(types))


def _with_bundle(catalog: Catalog, bundle: ProtoBundle | None) -> Catalog:
    return dataclasses.replace(catalog, version=catalog.version + 1, proto_bundle=bundle)
