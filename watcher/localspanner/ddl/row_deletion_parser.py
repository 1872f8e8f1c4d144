"""The ROW DELETION POLICY clause (Spanner's TTL) of CREATE TABLE and ALTER TABLE.

``ROW DELETION POLICY (OLDER_THAN(column, INTERVAL n DAY))`` ends a CREATE TABLE (after
its PRIMARY KEY and INTERLEAVE clauses); ``ALTER TABLE t ADD | REPLACE ROW DELETION
POLICY (...)`` sets one, ``ALTER TABLE t DROP ROW DELETION POLICY`` removes it. DAY is
the only unit and ``n`` a non-negative integer, as on Spanner. Whether the column exists
and is a TIMESTAMP is the schema's rule (``row_deletion_rules``).

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> node = parse_ddl("ALTER TABLE T REPLACE ROW DELETION POLICY (OLDER_THAN(Ts, INTERVAL 7 DAY))")
    >>> node.verb, node.policy
    ('REPLACE', RowDeletionPolicy(column='Ts', days=7))
    >>> print_clause(node.policy, str)
    'ROW DELETION POLICY (OLDER_THAN(Ts, INTERVAL 7 DAY))'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..schema.catalog import RowDeletionPolicy
from . import nodes
from .lexer import NUMBER

#: The words that start the clause.
STARTS = ("ROW", "DELETION", "POLICY")


def clause(p: Any) -> RowDeletionPolicy:
    """``ROW DELETION POLICY (OLDER_THAN(column, INTERVAL n DAY))``, the only clause after INTERLEAVE."""
    if not p.accept(*STARTS):
        raise p.fail("ROW DELETION POLICY")
    p.expect_symbol("(")
    p.expect("OLDER_THAN")
    p.expect_symbol("(")
    column = p.name("column name")
    p.expect_symbol(",")
    p.expect("INTERVAL")
    if p.tok.kind != NUMBER or not p.tok.text.isdigit():
        raise p.fail("a non-negative number of days")
    days = int(p.tok.text)
    p.advance()
    p.expect("DAY")
    p.expect_symbol(")")
    p.expect_symbol(")")
    return RowDeletionPolicy(column, days)


def alter(p: Any, table: str, verb: str) -> nodes.AlterTableRowDeletionPolicy:
    """After ``ALTER TABLE t ADD | REPLACE | DROP``, the parser ``p`` standing on ROW."""
    if verb == "DROP":
        p.expect(*STARTS)
        return nodes.AlterTableRowDeletionPolicy(table, verb)
    return nodes.AlterTableRowDeletionPolicy(table, verb, clause(p))


def print_clause(policy: RowDeletionPolicy, quote: Callable[[str], str]) -> str:
    """The clause as GetDatabaseDdl prints it."""
    return f"ROW DELETION POLICY (OLDER_THAN({quote(policy.column)}, INTERVAL {policy.days} DAY))"


def print_alter(node: nodes.AlterTableRowDeletionPolicy, quote: Callable[[str], str]) -> str:
    """The ALTER TABLE statement of ``node``."""
    head = f"ALTER TABLE {quote(node.table)} {node.verb} "
    return head + ("ROW DELETION POLICY" if node.policy is None else print_clause(node.policy, quote))
