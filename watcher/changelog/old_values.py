"""Old values (value_capture_type OLD_AND_NEW_VALUES): what a change replaced.

* UPDATE: the previous values of the columns whose value changed (a column new to the
  row shows ``null``), keyed by column;
* DELETE: the whole previous row (when the key was live before), as it was staged;
* INSERT, UPSERT: ``{}``.

``new_values`` is always the full row after the change (for a DELETE: the row as last
staged, e.g. with its soft-delete flag set). Values compare by their typed-JSON text,
which is exact for every Spanner type.

The SQL reads the per-key window's columns: ``_prev_json`` (the previous row's JSON text),
and, parsed from the JSON texts only for updates, ``_prev_vals``/``_vals``
(``map<string, string>``), ``_unquoted`` (the columns whose typed JSON is not a string)
and, only when the two rows have different columns, ``_types``. When both rows have the
same columns (nearly always), the changed entries are a set difference of the two rows'
entries, computed by Spark's generated code; only their rendering runs per column.

Example:
    >>> "array_except" in old_values_sql()
    True
"""

from __future__ import annotations

from .typed_json import FLOAT_WORDS, UNQUOTED_KINDS, columns_json_sql, quote_sql

#: The columns whose value differs from the previous row's (null-safe), in the previous row's order.
_CHANGED = ("filter(array_distinct(concat(coalesce(map_keys(_prev_vals), array()), map_keys(_vals))), "
            "c -> NOT (try_element_at(_prev_vals, c) <=> try_element_at(_vals, c)))")
#: Same columns in both rows: the previous row's entries that the new row does not have.
_CHANGED_ENTRIES = "array_except(map_entries(_prev_vals), map_entries(_vals))"


def unquoted_columns_sql(types_json: str) -> str:
    """SQL: the columns of a staged ``types`` object whose typed JSON is not a string (BOOL, FLOAT, ARRAY)."""
    kinds = "|".join(UNQUOTED_KINDS)
    return f"regexp_extract_all({types_json}, '(?i)\"([^\"\\\\\\\\]*)\":\"(?:{kinds})', 1)"


def _entry_json(name: str, value: str) -> str:
    words = ", ".join(f"'{w}'" for w in FLOAT_WORDS)
    return (f"concat({quote_sql(name)}, ':', CASE WHEN {value} IS NULL THEN 'null' "
            f"WHEN array_contains(_unquoted, {name}) AND {value} NOT IN ({words}) THEN {value} "
            f"ELSE {quote_sql(value)} END)")


def old_values_sql() -> str:
    """SQL for old_values over the per-key window columns (mod_type, _prev_json, _prev_vals, ...)."""
    same_columns = (f"concat('{{', array_join(transform({_CHANGED_ENTRIES}, e -> {_entry_json('e.key', 'e.value')}), "
                    f"','), '}}')")
    return (f"CASE WHEN mod_type = 'UPDATE' AND _prev_json IS NOT NULL THEN "
            f"CASE WHEN _types IS NULL THEN {same_columns} "
            f"ELSE {columns_json_sql(_CHANGED, '_prev_vals', '_types')} END "
            f"WHEN mod_type = 'DELETE' AND _prev_json IS NOT NULL AND NOT _prev_deleted THEN _prev_json "
            f"ELSE '{{}}' END")
