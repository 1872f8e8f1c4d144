"""Old values (value_capture_type OLD_AND_NEW_VALUES): what a change replaced.

* UPDATE: the previous values of the columns whose value changed (a column new to the
  row shows ``null``), keyed by column;
* DELETE: the whole previous row (when the key was live before);
* INSERT, UPSERT: ``{}``.

``new_values`` is always the full row after the change (for a DELETE: the row as last
staged, e.g. with its soft-delete flag set). Values compare by their typed-JSON text,
which is exact for every Spanner type.

Example:
    >>> "filter" in old_values_sql()
    True
"""

from __future__ import annotations

from .typed_json import entries_json_sql, json_object_sql

_CHANGED = ("filter(transform(array_distinct(concat(coalesce(map_keys(_prev_vals), array()), map_keys(vals))), "
            "c -> named_struct('k', c, 'v', try_element_at(_prev_vals, c), 'n', try_element_at(vals, c), "
            "'t', try_element_at(column_types, c))), "
            "e -> NOT (e.v <=> e.n))")


def old_values_sql() -> str:
    """SQL for old_values over the per-key window columns (mod_type, vals, _prev_vals, ...)."""
    return (f"CASE WHEN mod_type = 'UPDATE' AND _prev_vals IS NOT NULL THEN {entries_json_sql(_CHANGED)} "
            f"WHEN mod_type = 'DELETE' AND _prev_vals IS NOT NULL AND NOT _prev_deleted "
            f"THEN {json_object_sql('_prev_vals', 'column_types')} "
            f"ELSE '{{}}' END")
