"""Refusing a NULL written by DML to a rowid key column (``sqlite_names.rowid_key``).

SQLite stores a NULL written to an ``INTEGER PRIMARY KEY`` column as a new rowid instead
of refusing it, so an INSERT into such a table passes its key value through
``ls_rowid_key(value, table, column)``: the value itself, or Spanner's error for a NULL
in a NOT NULL column (carried past SQLite by :func:`~.udf.fail_with`).

Example:
    >>> rowid_key(7, "T", "K")
    7
    >>> from .udf import UdfError, take_raised
    >>> try:
    ...     rowid_key(None, "T", "K")
    ... except UdfError:
    ...     take_raised().message
    'T.K must not be NULL in table T.'
"""

from __future__ import annotations

from ..errors import null_in_not_null_column
from .udf import UdfSpec, fail_with

#: The SQL function the DML translator wraps a rowid key value in.
FUNCTION = "ls_rowid_key"


def rowid_key(value: object, table: str, column: str) -> object:
    """``value``, unless it is NULL: then the statement fails with Spanner's NOT NULL error."""
    if value is None:
        fail_with(null_in_not_null_column(table, column))
    return value


def wrap(sql: str, table: str, column: str) -> str:
    """``sql`` (a key value's expression) checked by :func:`rowid_key`.

    >>> wrap("?1", "T", "K")
    "ls_rowid_key(?1, 'T', 'K')"
    """
    return f"{FUNCTION}({sql}, {_literal(table)}, {_literal(column)})"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SPECS = (UdfSpec(FUNCTION, 3, rowid_key),)

__all__ = ["FUNCTION", "SPECS", "rowid_key", "wrap"]
