"""CHECK and FOREIGN KEY constraints in the schema: defining, adding, dropping, and what they protect.

Rules (each failure names the constraint): names share the schema's namespace with
tables and indexes, and an unnamed constraint gets one (``CK_<table>_<hash>_1``,
``FK_<table>_<referenced>_<hash>_1``, stable for the same definition); a CHECK may only
use columns of its table, none with ``allow_commit_timestamp``; a foreign key names
existing columns of both tables, as many on each side, of the same types, none of them
ARRAY, JSON or STRUCT; ``ON DELETE CASCADE`` needs an enforced key. A table another
table's foreign key references cannot be dropped, and a column a constraint uses cannot
be dropped or change its kind of type. Whether existing rows satisfy a new constraint is checked by
the storage when the change is written (``schema_changes.py``).

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE C (Id INT64, CONSTRAINT Pos CHECK (Id > 0)) PRIMARY KEY (Id)",
    ...     "CREATE TABLE O (Id INT64, CId INT64, FOREIGN KEY (CId) REFERENCES C (Id)) PRIMARY KEY (Id)",
    ... ])
    >>> [c.name for c in cat.table("C").checks], [fk.name for fk in cat.table("O").foreign_keys]
    (['Pos'], ['FK_O_C_D750EB4B962BFB5D_1'])
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from typing import Protocol

from .. import errors
from ..datamodel.types import TypeCode
from ..ddl import nodes
from ..ddl.expressions import referenced_names
from .catalog import Catalog, CheckConstraint, ForeignKey, Index, Table

_NOT_REFERENCEABLE = frozenset({TypeCode.ARRAY, TypeCode.JSON, TypeCode.STRUCT, TypeCode.TOKENLIST})

Constraint = CheckConstraint | ForeignKey


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str

    def check_new_name(self, kind: str, name: str) -> None: ...
    def invalid(self, detail: str) -> errors.SpannerError: ...
    def wrap(self, error: errors.SpannerError) -> errors.SpannerError: ...
    def table(self, name: str) -> Table: ...


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16].upper()


def generated_name(table: str, c: Constraint) -> str:
    """The name Spanner-style DDL gives a constraint declared without one.

    >>> generated_name("T", CheckConstraint("", "A > 0"))
    'CK_T_0650415DCD6188A8_1'
    """
    if isinstance(c, CheckConstraint):
        return f"CK_{table}_{_hash(table, c.expression)}_1"
    return f"FK_{table}_{c.referenced_table}_{_hash(table, *c.columns, c.referenced_table, *c.referenced_columns)}_1"


def resolve(ctx: _Context, table: Table, constraints: Iterable[Constraint], taken: set[str] | None = None) -> Table:
    """``table`` with ``constraints`` added: named, checked, columns spelled as declared."""
    taken = set() if taken is None else taken
    checks, fks = list(table.checks), list(table.foreign_keys)
    for c in constraints:
        name = c.name or generated_name(table.name, c)
        if name.lower() in taken:
            raise ctx.wrap(errors.duplicate_name("constraint", name))
        ctx.check_new_name("constraint", name)
        taken.add(name.lower())
        c = dataclasses.replace(c, name=name)
        if isinstance(c, CheckConstraint):
            checks.append(_check(ctx, table, c))
        else:
            fks.append(_foreign_key(ctx, table, c))
    return dataclasses.replace(table, checks=tuple(checks), foreign_keys=tuple(fks))


def _check(ctx: _Context, table: Table, c: CheckConstraint) -> CheckConstraint:
    for ref in referenced_names(c.expression):
        column = table.column(ref)
        if column is None:
            raise ctx.invalid(errors.check_unknown_column(c.name, table.name, ref))
        if column.allow_commit_timestamp:
            raise ctx.invalid(errors.check_on_commit_timestamp(c.name, column.name))
    return c


def _foreign_key(ctx: _Context, table: Table, fk: ForeignKey) -> ForeignKey:
    referenced = table if fk.referenced_table.lower() == table.name.lower() else ctx.table(fk.referenced_table)
    if len(fk.columns) != len(fk.referenced_columns):
        raise ctx.invalid(errors.foreign_key_column_count(fk.name, len(fk.columns), len(fk.referenced_columns)))
    if fk.on_delete_cascade and not fk.enforced:
        raise ctx.invalid(errors.foreign_key_cascade_not_enforced(fk.name))
    if referenced.row_deletion_policy is not None and fk.enforced and not fk.on_delete_cascade:
        raise ctx.invalid(errors.foreign_key_to_row_deletion_policy(fk.name, referenced.name))
    mine, theirs = [], []
    for a, b in zip(fk.columns, fk.referenced_columns, strict=True):
        col, ref = table.column(a), referenced.column(b)
        if col is None:
            raise ctx.wrap(errors.column_not_found(table.name, a))
        if ref is None:
            raise ctx.wrap(errors.column_not_found(referenced.name, b))
        for c in (col, ref):
            if c.type.code in _NOT_REFERENCEABLE:
                raise ctx.invalid(errors.foreign_key_unkeyable_column(fk.name, c.name))
        if not col.type.same_kind(ref.type):
            raise ctx.invalid(errors.foreign_key_type_mismatch(fk.name, f"{table.name}.{col.name}", f"{referenced.name}.{ref.name}"))
        mine.append(col.name)
        theirs.append(ref.name)
    return dataclasses.replace(fk, columns=tuple(mine), referenced_table=referenced.name, referenced_columns=tuple(theirs))


def _replace(catalog: Catalog, table: Table) -> tuple[list[Table], list[Index]]:
    low = table.name.lower()
    return [table if t.name.lower() == low else t for t in catalog.tables], list(catalog.indexes)


def add(ctx: _Context, node: nodes.AlterTableAddConstraint) -> tuple[list[Table], list[Index]]:
    """``ALTER TABLE t ADD [CONSTRAINT name] CHECK | FOREIGN KEY ...``."""
    return _replace(ctx.catalog, resolve(ctx, ctx.table(node.table), [node.constraint]))


def drop(ctx: _Context, node: nodes.AlterTableDropConstraint) -> tuple[list[Table], list[Index]]:
    """``ALTER TABLE t DROP CONSTRAINT name``: a CHECK or FOREIGN KEY of that table."""
    table = ctx.table(node.table)
    low = node.name.lower()
    if not any(c.name.lower() == low for c in table.checks) and not any(f.name.lower() == low for f in table.foreign_keys):
        raise ctx.wrap(errors.constraint_not_found(table.name, node.name))
    new = dataclasses.replace(table, checks=tuple(c for c in table.checks if c.name.lower() != low),
                              foreign_keys=tuple(f for f in table.foreign_keys if f.name.lower() != low))
    return _replace(ctx.catalog, new)


def check_drop_table(ctx: _Context, table: Table) -> None:
    """A table another table's foreign key references cannot be dropped."""
    for referencing, fk in ctx.catalog.foreign_keys_to(table.name):
        if referencing.name.lower() != table.name.lower():
            raise ctx.invalid(errors.drop_referenced_table(table.name, fk.name, referencing.name))


def _users(catalog: Catalog, table: Table, column: str) -> Iterable[Constraint]:
    low = column.lower()
    for c in table.checks:
        if low in {r.lower() for r in referenced_names(c.expression)}:
            yield c
    for fk in table.foreign_keys:
        if low in {x.lower() for x in fk.columns}:
            yield fk
    for _, fk in catalog.foreign_keys_to(table.name):
        if low in {x.lower() for x in fk.referenced_columns}:
            yield fk


def check_drop_column(ctx: _Context, table: Table, column: str) -> None:
    """A column a CHECK or a foreign key (either side) uses cannot be dropped."""
    for c in _users(ctx.catalog, table, column):
        raise ctx.invalid(errors.drop_constrained_column(f"{table.name}.{column}", c.name))


def check_alter_column(ctx: _Context, table: Table, column: str, type_changes: bool) -> None:
    """A column a foreign key uses keeps its kind of type (a STRING or BYTES length may change)."""
    if not type_changes:
        return
    for c in _users(ctx.catalog, table, column):
        if isinstance(c, ForeignKey):
            raise ctx.invalid(errors.alter_constrained_column(f"{table.name}.{column}", c.name))
