"""The ACTION column of ``THEN RETURN WITH ACTION``: which rows of an INSERT OR UPDATE were updated.

SQLite's RETURNING cannot tell an upsert's inserted rows from its updated ones. The
translated statement therefore calls :func:`mark_update` in the WHERE of its ``ON CONFLICT
DO UPDATE`` (evaluated only for a row that already exists, just before it is updated) and
:func:`take_action` in its RETURNING list (evaluated right after each row is written), which
reports ``'UPDATE'`` for a marked row and the statement's own verb otherwise. SQLite runs both
on the calling thread, row by row, so a thread-local flag pairs them up.

Example:
    >>> mark_update(), take_action("INSERT"), take_action("INSERT")
    (1, 'UPDATE', 'INSERT')
"""

from __future__ import annotations

import threading

from .udf import UdfSpec

_flag = threading.local()


def mark_update() -> int:
    """Note that the row being written is an update (always true, for use in a WHERE)."""
    _flag.updated = True
    return 1


def take_action(verb: str) -> str:
    """``'UPDATE'`` when the row just written was marked, else ``verb``; clears the mark."""
    updated = getattr(_flag, "updated", False)
    _flag.updated = False
    return "UPDATE" if updated else verb


SPECS = (
    UdfSpec("ls_dml_mark_update", 0, mark_update, deterministic=False),
    UdfSpec("ls_dml_action", 1, take_action, deterministic=False),
)
