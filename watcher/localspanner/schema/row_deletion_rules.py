"""Row deletion policies (Spanner's TTL) in the schema: defining, replacing, dropping, and what they protect.

Rules (each failure names the table and column): the policy's column exists and is a
TIMESTAMP; a table has at most one policy (ADD on a table that has one fails, REPLACE
and DROP on a table without one fail); every interleaved child of a table with a
policy is ON DELETE CASCADE, and so is every enforced foreign key referencing it,
since the policy's deletes would otherwise fail; the
policy's column cannot be dropped or change its type while the policy names it.
The deletes themselves are :mod:`..database.row_deletion`'s.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE T (K INT64, Ts TIMESTAMP) PRIMARY KEY (K)",
    ...     "ALTER TABLE T ADD ROW DELETION POLICY (OLDER_THAN(ts, INTERVAL 3 DAY))",
    ... ])
    >>> cat.table("T").row_deletion_policy
    RowDeletionPolicy(column='Ts', days=3)
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from .. import errors
from ..datamodel.types import TypeCode
from ..ddl import nodes
from .catalog import Catalog, Index, RowDeletionPolicy, Table


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str

    def invalid(self, detail: str) -> errors.SpannerError: ...
    def table(self, name: str) -> Table: ...


def resolve(ctx: _Context, table: Table, policy: RowDeletionPolicy | None) -> Table:
    """``table`` with ``policy`` checked and set (its column named as declared)."""
    if policy is None:
        return dataclasses.replace(table, row_deletion_policy=None)
    column = table.column(policy.column)
    if column is None:
        raise ctx.invalid(errors.row_deletion_column_missing(table.name, policy.column))
    if column.type.code != TypeCode.TIMESTAMP:
        raise ctx.invalid(errors.row_deletion_column_not_timestamp(table.name, column.name, column.type))
    for child in ctx.catalog.children_of(table.name):
        if not child.on_delete_cascade:
            raise ctx.invalid(errors.row_deletion_child_no_action(table.name, child.name))
    blocking = [fk.name for _, fk in ctx.catalog.foreign_keys_to(table.name) if fk.enforced and not fk.on_delete_cascade]
    if blocking:
        raise ctx.invalid(errors.row_deletion_referenced(table.name, blocking))
    return dataclasses.replace(table, row_deletion_policy=RowDeletionPolicy(column.name, policy.days))


def alter(ctx: _Context, node: nodes.AlterTableRowDeletionPolicy) -> tuple[list[Table], list[Index]]:
    """``ALTER TABLE t ADD | REPLACE | DROP ROW DELETION POLICY``."""
    table = ctx.table(node.table)
    current = table.row_deletion_policy
    if node.verb == "ADD" and current is not None:
        raise ctx.invalid(errors.row_deletion_policy_exists(table.name, current.column))
    if node.verb != "ADD" and current is None:
        raise ctx.invalid(errors.row_deletion_policy_missing(table.name))
    new = resolve(ctx, table, node.policy)
    low = table.name.lower()
    return [new if t.name.lower() == low else t for t in ctx.catalog.tables], list(ctx.catalog.indexes)


def check_column_change(ctx: _Context, table: Table, column: str) -> None:
    """Dropping or retyping ``column`` fails while ``table``'s policy names it."""
    policy = table.row_deletion_policy
    if policy is not None and policy.column.lower() == column.lower():
        raise ctx.invalid(errors.row_deletion_column_in_use(table.name, policy.column))


def check_new_child(ctx: _Context, child: Table) -> None:
    """An interleaved child of a table with a policy must be ON DELETE CASCADE."""
    parent = ctx.catalog.table(child.parent) if child.parent else None
    if parent is not None and parent.row_deletion_policy is not None and not child.on_delete_cascade:
        raise ctx.invalid(errors.row_deletion_child_no_action(parent.name, child.name))
