"""Classification: INSERT, UPDATE, DELETE, or UPSERT when the truth is not knowable.

Each new change is compared with the row before it for the same key (in the current
state, or an earlier change of the same run). The rules, first match wins:

====================================  =========  ==============================================
condition                             mod_type   why
====================================  =========  ==============================================
input carries a mod_type              as given   history-table and reconcile input know it
older than the key's current state    UPSERT     a late change: its neighbours are not known
row is soft-deleted                   DELETE     the table's configured soft-delete column is set
previous row exists and is live       UPDATE
previous row exists and was deleted   INSERT     the key comes back
table complete before this commit     INSERT     a backfill/reconcile would have shown the key
otherwise                             UPSERT     first sighting: it may have existed unseen
====================================  =========  ==============================================

A soft-delete column marks a row deleted when its value is set and not ``false`` (a BOOL
flag or a ``DeletedAt`` timestamp both work).

Example:
    >>> [mod for _, mod in RULES][:3]
    ['in_mod_type', "'UPSERT'", "'DELETE'"]
"""

from __future__ import annotations

from collections.abc import Mapping

MOD_TYPES = ("INSERT", "UPDATE", "DELETE", "UPSERT")
#: Values of an input mod_type the job accepts (history tables, reconcile).
INPUT_MOD_TYPES = ("INSERT", "UPDATE", "DELETE")

#: (condition, result) in SQL over the per-key window columns, first match wins.
RULES: tuple[tuple[str, str], ...] = (
    ("in_mod_type IS NOT NULL", "in_mod_type"),
    ("_is_late", "'UPSERT'"),
    ("_soft_deleted", "'DELETE'"),
    ("_prev_ts IS NOT NULL AND NOT _prev_deleted", "'UPDATE'"),
    ("_prev_ts IS NOT NULL AND _prev_deleted", "'INSERT'"),
    ("_complete_ts IS NOT NULL AND commit_timestamp > _complete_ts", "'INSERT'"),
    ("TRUE", "'UPSERT'"),
)


def mod_type_sql(rules: tuple[tuple[str, str], ...] = RULES) -> str:
    """The rules as one CASE expression."""
    return "CASE " + " ".join(f"WHEN {cond} THEN {result}" for cond, result in rules) + " END"


def sql_literal(text: str) -> str:
    """A SQL string literal of ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def map_literal_sql(mapping: Mapping[str, str]) -> str:
    """A SQL map literal (string -> string); an empty, typed map when ``mapping`` is empty."""
    if not mapping:
        return "map_from_arrays(array_repeat('', 0), array_repeat('', 0))"
    return "map(" + ", ".join(f"{sql_literal(k)}, {sql_literal(v)}" for k, v in sorted(mapping.items())) + ")"


def _json_path(column: str) -> str:
    return "$['" + column + "']"


def soft_deleted_sql(soft_delete_columns: Mapping[str, str], row_json: str = "_json") -> str:
    """SQL: the row's soft-delete column (configured per table) is set and not false.

    ``row_json`` is the row's JSON object text; the column is read from it by a literal JSON
    path per table, so rows need not be parsed into maps.
    """
    if not soft_delete_columns:
        return "FALSE"
    cases = " ".join(f"WHEN {sql_literal(table)} THEN get_json_object({row_json}, {sql_literal(_json_path(column))})"
                     for table, column in sorted(soft_delete_columns.items()))
    value = f"(CASE table_name {cases} END)"
    return f"coalesce({value} IS NOT NULL AND lower({value}) <> 'false', FALSE)"


def row_deleted_sql(soft_delete_columns: Mapping[str, str]) -> str:
    """SQL: after this new row the key is deleted (state rows carry it as ``is_deleted``)."""
    return f"coalesce(in_mod_type = 'DELETE', FALSE) OR {soft_deleted_sql(soft_delete_columns)}"


def complete_ts_sql(markers: Mapping[str, str]) -> str:
    """SQL: the read timestamp from which the row's table is complete (null if not)."""
    return f"try_element_at({map_literal_sql(markers)}, table_name)"
