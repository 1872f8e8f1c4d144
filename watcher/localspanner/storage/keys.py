"""Key sets as SQL conditions over a table's (or an index's) key columns, in key order.

Spanner key ranges follow the key's own order, column by column, so a DESC column
reverses the comparison for that column; a bound may be a key prefix. NULL sorts
first, as in Spanner.

Example:
    >>> from watcher.localspanner.schema.catalog import KeyPart
    >>> sql, params = range_condition((KeyPart("A"), KeyPart("B", descending=True)), [1], ">=")
    >>> sql, params
    ('("A" > ?) OR ("A" IS ?)', [1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..schema.catalog import KeyPart
from .sqlite_names import quote


def _strict(part: KeyPart, value: Any, greater: bool) -> tuple[str, list[Any]]:
    """``column`` strictly after (greater=True) or before ``value`` in key order."""
    col = quote(part.column)
    after = greater != part.descending
    if value is None:
        # NULL is the smallest value: nothing is before it, everything non-NULL is after it.
        return (f"{col} IS NOT NULL", []) if after else ("0", [])
    if after:
        return f"{col} > ?", [value]
    return f"({col} < ? OR {col} IS NULL)", [value]


def range_condition(parts: Sequence[KeyPart], bound: list[Any], op: str) -> tuple[str, list[Any]]:
    """Rows whose key compares to the key prefix ``bound`` by ``op`` (one of > >= < <=), in key order."""
    greater = op.startswith(">")
    inclusive = op.endswith("=")
    alternatives: list[str] = []
    params: list[Any] = []
    for i, value in enumerate(bound):
        eq = [f"{quote(parts[j].column)} IS ?" for j in range(i)]
        cond, p = _strict(parts[i], value, greater)
        alternatives.append("(" + " AND ".join(eq + [cond]) + ")")
        params.extend(bound[:i])
        params.extend(p)
    if inclusive:
        eq = [f"{quote(parts[j].column)} IS ?" for j in range(len(bound))]
        alternatives.append("(" + (" AND ".join(eq) or "1") + ")")
        params.extend(bound)
    return " OR ".join(alternatives) or "0", params


def point_condition(parts: Sequence[KeyPart], key: list[Any]) -> tuple[str, list[Any]]:
    """Rows whose key starts with (or equals) ``key``."""
    conds = [f"{quote(parts[i].column)} IS ?" for i in range(len(key))]
    return "(" + (" AND ".join(conds) or "1") + ")", list(key)
