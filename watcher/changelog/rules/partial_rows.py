"""Partial rows: versions that hold only the written columns, filled from the key's previous rows.

A history table may log an UPDATE mutation of two columns as just those two columns
(``value_capture_type`` NEW_VALUES, :mod:`watcher.staging.contract`), and a change stream of
capture type NEW_VALUES or OLD_AND_NEW_VALUES gives an INSERT's or UPDATE's key and written columns only. The changelog keeps
full rows (its ``new_values`` and the current state are the whole row after the change), so
such a row is completed from the key's rows before it, in the per-key window's order: the
latest full row (NEW_ROW, a DELETE, or the current state) with every partial row after it
applied in turn, a later value of a column replacing an earlier one. A partial row with no
full row before it keeps the columns it has.

How, in Spark SQL over the sorted per-key rows, inside the per-key window's one Window operator
(:func:`window_columns`; a second operator would buffer and copy every wide row once more): a
window over the rows *before* each row keeps the latest full row and its position, and lists
the partial rows with their positions (only partial rows are listed, so keys without any cost an
empty list). A partial row's JSON is then the fold of the listed partial rows after that
position, and its own, over the full row's ``"column":value`` entries
(:data:`watcher.changelog.rules.old_values.ENTRY_PATTERN`), joined back into an object; the previous
row's JSON, when that row is partial, is the same fold without the row's own entries
(:func:`filled_sql`).

Example:
    >>> all("aggregate" in sql for sql in filled_sql())
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from .classify import sql_literal
from .old_values import entries_sql, entry_name_sql

#: What a position column stands in for null with, so that positions compare (nulls sort first).
_NULL_AS = {"commit_timestamp": "''", "batch_id": "''", "version_seq": "-1", "_src": "-1", "_rank": "-1", "seq": "-1"}


def _merge(acc: str, new_json: str) -> str:
    """SQL: the entries ``acc`` with those of ``new_json`` applied (replaced in place, new ones appended)."""
    new = entries_sql(new_json)
    return (f"concat(transform({acc}, e -> coalesce(try_element_at(filter({new}, y -> {entry_name_sql('y')} = {entry_name_sql('e')}), 1), e)), "
            f"filter({new}, y -> NOT exists({acc}, e -> {entry_name_sql('e')} = {entry_name_sql('y')})))")


def position_sql(order: Sequence[str]) -> str:
    """SQL: a row's place in its key's order, as a comparable struct.

    >>> position_sql(["commit_timestamp", "seq"])
    "struct(coalesce(commit_timestamp, '') AS commit_timestamp, coalesce(seq, -1) AS seq)"
    """
    return "struct(" + ", ".join(f"coalesce({c}, {_NULL_AS[c]}) AS {c}" for c in order) + ")"


#: The window columns :func:`filled_sql` reads (the job drops them once the rows are filled;
#: ``_prev_partial`` it keeps a little longer, with its other scratch columns).
HELPERS = ("_before_full_json", "_before_full_types", "_before_full_pos", "_before_parts", "_prev_partial")


def _fold(own: str | None, full: str = "_before_full_json", part: str = "j") -> str:
    """SQL: the filled JSON from the rows before (``own``: the row's own partial JSON, or None;
    ``full`` the latest full row's text, ``part`` the field of ``_before_parts`` to fold)."""
    later = f"transform(filter(_before_parts, x -> _before_full_pos IS NULL OR x.p > _before_full_pos), x -> x.{part})"
    if own is not None:
        later = f"concat({later}, array({own}))"
    start = entries_sql(f"coalesce({full}, {sql_literal(chr(123) + chr(125))})")
    return f"concat('{{', array_join(aggregate({later}, {start}, (acc, j) -> {_merge('acc', 'j')}), ','), '}}')"


def filled_sql(row_json: str = "_json", row_types: str = "_types_json") -> tuple[str, str, str]:
    """SQL: the row's JSON, its types (so that a filled row names the type of every column it
    holds) and the previous row's JSON (``_prev_json``), each filled when partial (:func:`window_columns`)."""
    return (f"CASE WHEN _partial THEN {_fold(row_json)} ELSE {row_json} END",
            f"CASE WHEN _partial THEN {_fold(row_types, '_before_full_types', 't')} ELSE {row_types} END",
            f"CASE WHEN _prev_partial THEN {_fold(None)} ELSE _prev_json END")


#: The frame of the rows before a row (its key's rows, in the per-key order).
BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"


def window_columns(over: str, before: str, order: Sequence[str]) -> dict[str, str]:
    """The window columns :func:`filled_sql` needs, as SQL (name -> expression): what the rows before
    each row hold (its latest full row, and the partial rows), and whether the previous row is partial.

    ``over`` is the per-key window (``OVER (...)``, sorted per key as ``order`` names), ``before``
    the same with the :data:`BEFORE` frame. They share the window's Window operator with its other columns.

    >>> sorted(window_columns("OVER w", "OVER b", ["seq"])) == sorted(HELPERS)
    True
    """
    pos = position_sql(order)
    return {"_before_full_json": f"last(CASE WHEN NOT _partial THEN _json END, TRUE) {before}",
            "_before_full_types": f"last(CASE WHEN NOT _partial THEN _types_json END, TRUE) {before}",
            "_before_full_pos": f"last(CASE WHEN NOT _partial THEN {pos} END, TRUE) {before}",
            "_before_parts": f"collect_list(CASE WHEN _partial THEN struct({pos} AS p, _json AS j, _types_json AS t) END) "
                             f"{before}",
            "_prev_partial": f"lag(_partial) {over}"}
