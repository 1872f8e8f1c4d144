"""DataFrame steps written as SQL text, so that building a plan costs few calls into the driver's JVM.

Every pyspark Column operation (``F.col``, ``F.expr``, ``F.lit``, ``.alias``, ``.cast``, ``.isin``)
is a call from Python into the driver's JVM, and pyspark adds several more to each (by default
it records the call site for error messages: the active session, a setting, the origin set and
cleared). An incremental changelog run built thousands of them, which on small input cost as much
as its Spark work. A ``selectExpr`` of SQL strings costs one call per column and a ``where`` of a
SQL string one call, whatever the expressions hold.

Example:
    >>> quote("table_name"), quote("a`b")
    ('`table_name`', '`a``b`')
    >>> in_list("table_name", ["T2", "T1"])
    "`table_name` IN ('T1', 'T2')"
    >>> in_list("table_name", [])
    'FALSE'
    >>> select_list({"n": "count(1)", "keys": "keys"})
    ['count(1) AS `n`', '`keys`']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .classify import sql_literal


def quote(name: str) -> str:
    """``name`` as a SQL identifier (backquoted)."""
    return "`" + name.replace("`", "``") + "`"


def in_list(column: str, values: Iterable[str]) -> str:
    """SQL: ``column`` is one of ``values`` (FALSE when there are none)."""
    items = sorted(set(values))
    return f"{quote(column)} IN ({', '.join(sql_literal(v) for v in items)})" if items else "FALSE"


def select_list(columns: Mapping[str, str]) -> list[str]:
    """``name -> SQL`` as ``selectExpr`` items (a column kept as itself is not aliased, so that Spark
    still knows it as the same column: a frame partitioned by it stays so)."""
    return [quote(name) if sql in (name, quote(name)) else f"{sql} AS {quote(name)}" for name, sql in columns.items()]


def select(frame: Any, columns: Mapping[str, str]) -> Any:
    """``frame`` with exactly ``columns`` (name -> SQL over ``frame``), in that order: one step."""
    return frame.selectExpr(*select_list(columns))


def with_columns(frame: Any, columns: Mapping[str, str], *, keep: Iterable[str] | None = None) -> Any:
    """``frame``'s columns (or those in ``keep``), each replaced or followed by ``columns`` (name -> SQL): one step.

    Columns that are all new are added after ``*``: pyspark hands a list to the JVM one item per
    call, so naming every kept column again would cost a call each.
    """
    if keep is None and not set(columns) & set(frame.columns):
        return frame.selectExpr("*", *select_list(columns))
    names = list(frame.columns if keep is None else keep)
    kept = {name: columns.get(name, name) for name in names}
    return select(frame, {**kept, **{name: sql for name, sql in columns.items() if name not in kept}})
