"""Partial rows: versions that hold only the written columns, filled from the key's previous rows.

A history table may log an UPDATE mutation of two columns as just those two columns
(``value_capture_type`` NEW_VALUES, :mod:`watcher.staging.contract`), and a change stream of
capture type NEW_VALUES or OLD_AND_NEW_VALUES gives an INSERT's or UPDATE's key and written columns only. The changelog keeps
full rows (its ``new_values`` and the current state are the whole row after the change), so
such a row is completed from the key's rows before it, in the per-key window's order: the
latest full row (NEW_ROW, a DELETE, or the current state) with every partial row after it
applied in turn, a later value of a column replacing an earlier one. A partial row with no
full row before it keeps the columns it has.

How, in Spark SQL over the sorted per-key rows: a running window keeps the latest full row
and its position, and lists the partial rows with their positions (only partial rows are
listed, so keys without any cost an empty list); a partial row's JSON is then the fold of
the partial rows after that position over the full row's ``"column":value`` entries
(:data:`watcher.changelog.old_values.ENTRY_PATTERN`), joined back into an object.

Example:
    >>> "aggregate" in filled_json_sql()
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .classify import sql_literal
from .old_values import ENTRY_PATTERN

#: What a position column stands in for null with, so that positions compare (nulls sort first).
_NULL_AS = {"commit_timestamp": "''", "batch_id": "''", "version_seq": "-1", "_src": "-1", "_rank": "-1", "seq": "-1"}


def _entries(text: str) -> str:
    return f"regexp_extract_all({text}, {sql_literal(ENTRY_PATTERN)}, 0)"


def _name(entry: str) -> str:
    return f"substring_index({entry}, '\":', 1)"


def _merge(acc: str, new_json: str) -> str:
    """SQL: the entries ``acc`` with those of ``new_json`` applied (replaced in place, new ones appended)."""
    new = _entries(new_json)
    return (f"concat(transform({acc}, e -> coalesce(try_element_at(filter({new}, y -> {_name('y')} = {_name('e')}), 1), e)), "
            f"filter({new}, y -> NOT exists({acc}, e -> {_name('e')} = {_name('y')})))")


def position_sql(order: Sequence[str]) -> str:
    """SQL: a row's place in its key's order, as a comparable struct.

    >>> position_sql(["commit_timestamp", "seq"])
    "struct(coalesce(commit_timestamp, '') AS commit_timestamp, coalesce(seq, -1) AS seq)"
    """
    return "struct(" + ", ".join(f"coalesce({c}, {_NULL_AS[c]}) AS {c}" for c in order) + ")"


def filled_json_sql(partial: str = "_partial", row_json: str = "_json", full: str = "_full_json",
                    part: str = "j") -> str:
    """SQL: the row's JSON, a partial row's filled from ``full``/``_full_pos``/``_parts`` (:func:`fill`);
    ``part`` names the field of ``_parts`` that holds the partial rows' texts of ``row_json``."""
    later = "filter(_parts, x -> _full_pos IS NULL OR x.p > _full_pos)"
    folded = f"aggregate({later}, {_entries(f'coalesce({full}, {sql_literal(chr(123) + chr(125))})')}, " \
             f"(acc, x) -> {_merge('acc', f'x.{part}')})"
    return f"CASE WHEN {partial} THEN concat('{{', array_join({folded}, ','), '}}') ELSE {row_json} END"


def fill(rows: Any, window: Any, order: Sequence[str]) -> Any:
    """``rows`` (sorted per key in ``window``'s order, named by ``order``) with partial rows' ``_json``
    filled, and their ``_types_json`` alike (so that a filled row names the type of every column it holds)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    running = window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    pos = position_sql(order)
    helpers = {
        "_full_json": F.expr("CASE WHEN NOT _partial THEN _json END"),
        "_full_types": F.expr("CASE WHEN NOT _partial THEN _types_json END"),
        "_full_pos": F.expr(f"CASE WHEN NOT _partial THEN {pos} END"),
    }
    parts = f"CASE WHEN _partial THEN struct({pos} AS p, _json AS j, _types_json AS t) END"
    rows = rows.select(
        "*", *[F.last(column, ignorenulls=True).over(running).alias(name) for name, column in helpers.items()],
        F.collect_list(F.expr(parts)).over(running).alias("_parts"))
    return (rows.withColumns({"_json": F.expr(filled_json_sql()),
                              "_types_json": F.expr(filled_json_sql(row_json="_types_json", full="_full_types",
                                                                    part="t"))})
            .drop("_full_json", "_full_types", "_full_pos", "_parts"))
