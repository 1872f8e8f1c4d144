"""Old values (value_capture_type OLD_AND_NEW_VALUES): what a change replaced.

* UPDATE: the previous values of the columns whose value changed (a column new to the
  row shows ``null``), keyed by column;
* DELETE: the whole previous row (when the key was live before), as it was staged;
* INSERT, UPSERT: ``{}``.

``new_values`` is always the full row after the change (for a DELETE: the row as last
staged, e.g. with its soft-delete flag set). Values compare by their typed-JSON text,
which is exact for every Spanner type.

The SQL reads the per-key window's columns: ``_prev_json`` (the previous row's JSON text),
and, parsed from the JSON texts only for updates, ``_prev_vals``/``_vals``/``_types``
(``map<string, string>``).

Example:
    >>> "filter" in old_values_sql()
    True
"""

from __future__ import annotations

from .typed_json import columns_json_sql

#: The columns whose value differs from the previous row's (null-safe), in the previous row's order.
_CHANGED = ("filter(array_distinct(concat(coalesce(map_keys(_prev_vals), array()), map_keys(_vals))), "
            "c -> NOT (try_element_at(_prev_vals, c) <=> try_element_at(_vals, c)))")


def old_values_sql() -> str:
    """SQL for old_values over the per-key window columns (mod_type, _prev_json, _prev_vals, ...)."""
    return (f"CASE WHEN mod_type = 'UPDATE' AND _prev_json IS NOT NULL "
            f"THEN {columns_json_sql(_CHANGED, '_prev_vals', '_types')} "
            f"WHEN mod_type = 'DELETE' AND _prev_json IS NOT NULL AND NOT _prev_deleted THEN _prev_json "
            f"ELSE '{{}}' END")
