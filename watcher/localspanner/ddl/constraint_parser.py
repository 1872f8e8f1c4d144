"""The CHECK and FOREIGN KEY clauses of CREATE TABLE and ALTER TABLE.

``[CONSTRAINT name] CHECK (expr)`` and ``[CONSTRAINT name] FOREIGN KEY (cols) REFERENCES
table (cols) [ON DELETE CASCADE | NO ACTION] [[NOT] ENFORCED]``. The CHECK expression is
kept as text, like DEFAULT and generated columns. A constraint without a name gets one
when the statement is applied (``constraint_rules``).

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> node = parse_ddl("ALTER TABLE Orders ADD CONSTRAINT FK_C FOREIGN KEY (CustId) REFERENCES Customers (Id) ON DELETE CASCADE")
    >>> fk = node.constraint
    >>> fk.name, fk.columns, fk.referenced_table, fk.referenced_columns, fk.on_delete_cascade
    ('FK_C', ('CustId',), 'Customers', ('Id',), True)
"""

from __future__ import annotations

from typing import Any

from ..schema.catalog import CheckConstraint, ForeignKey
from . import nodes

#: The words that start a constraint element of a table.
STARTS = ("CONSTRAINT", "CHECK", "FOREIGN")


def element(p: Any) -> CheckConstraint | ForeignKey:
    """One constraint: the parser ``p`` stands on CONSTRAINT, CHECK or FOREIGN."""
    name = ""
    if p.accept("CONSTRAINT"):
        name = p.name("constraint name")
    if p.accept("CHECK"):
        return CheckConstraint(name, p.expression())
    if not p.accept("FOREIGN", "KEY"):
        raise p.fail("CHECK or FOREIGN KEY")
    columns = p.comma_list(lambda: p.name("column name"))
    p.expect("REFERENCES")
    referenced = p.name("table name")
    referenced_columns = p.comma_list(lambda: p.name("column name"))
    cascade = False
    if p.accept("ON", "DELETE"):
        if p.accept("CASCADE"):
            cascade = True
        elif not p.accept("NO", "ACTION"):
            raise p.fail("CASCADE or NO ACTION")
    enforced = True
    if p.accept("NOT", "ENFORCED"):
        enforced = False
    else:
        p.accept("ENFORCED")
    return ForeignKey(name, tuple(columns), referenced, tuple(referenced_columns), cascade, enforced)


def alter_add(p: Any, table: str) -> nodes.AlterTableAddConstraint:
    """``ALTER TABLE table ADD`` followed by a constraint."""
    return nodes.AlterTableAddConstraint(table, element(p))


def alter_drop(p: Any, table: str) -> nodes.AlterTableDropConstraint:
    """``ALTER TABLE table DROP CONSTRAINT name`` (after DROP CONSTRAINT)."""
    return nodes.AlterTableDropConstraint(table, p.name("constraint name"))


def print_element(c: CheckConstraint | ForeignKey, q: Any) -> str:
    """The element as GetDatabaseDdl prints it; ``q`` quotes an identifier when needed.

    >>> print_element(CheckConstraint("C", "A > 0"), str)
    'CONSTRAINT C CHECK (A > 0)'
    """
    head = f"CONSTRAINT {q(c.name)} " if c.name else ""
    if isinstance(c, CheckConstraint):
        return f"{head}CHECK ({c.expression})"
    text = (f"{head}FOREIGN KEY ({', '.join(q(x) for x in c.columns)}) REFERENCES {q(c.referenced_table)} "
            f"({', '.join(q(x) for x in c.referenced_columns)})")
    if c.on_delete_cascade:
        text += " ON DELETE CASCADE"
    if not c.enforced:
        text += " NOT ENFORCED"
    return text
