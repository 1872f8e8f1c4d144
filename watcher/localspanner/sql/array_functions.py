"""ARRAY functions over stored arrays (JSON text of the elements' JSON items, see values.py).

Each takes the stored array and, where elements must be read as values, the element's
storage code name (``'BYTES'``, ``'NUMERIC'``...), and returns a stored value: another
stored array, an element in stored form, or a scalar. A NULL array gives NULL.

Example:
    >>> array_to_string('["Ann", null, "Lee"]', " ", None, 0, "STRING")
    'Ann Lee'
    >>> array_slice('[1, 2, 3, 4, 5]', 1, -2)
    '[2, 3, 4]'
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from typing import Any

from ..datamodel.scalar_values import NAN_TEXT
from . import time_functions
from .udf import UdfSpec, fail

MAX_GENERATED_ARRAY = 16_000


def _items(array: str) -> list[Any]:
    return json.loads(array)


def _dump(items: list[Any]) -> str:
    return json.dumps(items, ensure_ascii=False)


def _value(item: Any, code: str) -> Any:
    """The stored form of one JSON item (the inverse of composite_values.json_item for scalars)."""
    if item is None:
        return None
    if code == "BYTES":
        return base64.b64decode(item)
    if code == "BOOL":
        return int(item)
    if code in ("FLOAT64", "FLOAT32") and isinstance(item, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[item]
    return item


def _order_key(value: Any, code: str) -> Any:
    return decimal.Decimal(value) if code == "NUMERIC" else value


def array_to_string(array: str | None, delimiter: str | bytes | None, null_text: str | bytes | None,
                    has_null_text: int, code: str) -> str | bytes | None:
    """ARRAY_TO_STRING: NULL elements skipped, or written as ``null_text`` when one is given."""
    if array is None or delimiter is None or (has_null_text and null_text is None):
        return None
    parts = [_value(i, code) for i in _items(array)]
    if has_null_text:
        parts = [null_text if p is None else p for p in parts]
    kept = [p for p in parts if p is not None]
    if code == "BYTES":
        return bytes(delimiter).join(bytes(p) for p in kept)  # type: ignore[arg-type]
    return str(delimiter).join(kept)


def array_concat(*arrays: str | None) -> str | None:
    if any(a is None for a in arrays):
        return None
    return _dump([item for a in arrays for item in _items(a)])  # type: ignore[arg-type]


def array_reverse(array: str | None) -> str | None:
    return None if array is None else _dump(_items(array)[::-1])


def array_end(array: str | None, which: str, code: str) -> Any:
    """ARRAY_FIRST / ARRAY_LAST: an error on an empty array."""
    if array is None:
        return None
    items = _items(array)
    if not items:
        word = "first" if which == "FIRST" else "last"
        fail(f"ARRAY_{which} cannot get the {word} element of an empty array")
    return _value(items[0] if which == "FIRST" else items[-1], code)


def array_includes(array: str | None, search: str | None, mode: str) -> int | None:
    """ARRAY_INCLUDES (``search`` a one-element array), ARRAY_INCLUDES_ANY and ARRAY_INCLUDES_ALL."""
    if array is None or search is None:
        return None
    wanted = _items(search)
    if mode == "ONE" and wanted[0] is None:
        return None
    present = {json.dumps(i) for i in _items(array) if i is not None}
    hits = [json.dumps(w) in present for w in wanted if w is not None]
    return int(all(hits) if mode == "ALL" else any(hits))


def array_is_distinct(array: str | None) -> int | None:
    if array is None:
        return None
    seen = [json.dumps(i, sort_keys=True) for i in _items(array)]
    return int(len(seen) == len(set(seen)))


def array_min_max(array: str | None, which: str, code: str) -> Any:
    """ARRAY_MIN / ARRAY_MAX over the non-NULL elements; NaN wins for FLOAT64."""
    if array is None:
        return None
    values = [_value(i, code) for i in _items(array) if i is not None]
    if not values:
        return None
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        return NAN_TEXT  # the stored form of NaN (SQLite would make a NaN float NULL)
    pick = min if which == "MIN" else max
    return pick(values, key=lambda v: _order_key(v, code))


def array_slice(array: str | None, start: int | None, end: int | None) -> str | None:
    """ARRAY_SLICE: inclusive zero-based offsets, negative ones counted from the end, clamped."""
    if array is None or start is None or end is None:
        return None
    items = _items(array)
    n = len(items)
    first = start + n if start < 0 else start
    last = end + n if end < 0 else end
    first, last = max(first, 0), min(last, n - 1)
    return _dump(items[first:last + 1] if first <= last else [])


def generate_date_array(start: str | None, end: str | None, amount: int | None, unit: str) -> str | None:
    """GENERATE_DATE_ARRAY: dates from ``start`` to ``end`` (inclusive) by ``amount`` ``unit``s."""
    if start is None or end is None or amount is None:
        return None
    if amount == 0:
        fail("Sequence step cannot be 0.")
    out: list[str] = []
    day, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    steps = 0
    current = start
    while (day <= last) if amount > 0 else (day >= last):
        out.append(current)
        if len(out) > MAX_GENERATED_ARRAY:
            fail(f"GENERATE_DATE_ARRAY would produce more than {MAX_GENERATED_ARRAY} elements")
        steps += 1
        nxt = time_functions.date_add(start, amount * steps, unit)
        assert nxt is not None
        current, day = nxt, dt.date.fromisoformat(nxt)
    return _dump(out)


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_array_to_string", 5, array_to_string),
    UdfSpec("ls_array_concat", -1, array_concat),
    UdfSpec("ls_array_reverse", 1, array_reverse),
    UdfSpec("ls_array_end", 3, array_end),
    UdfSpec("ls_array_includes", 3, array_includes),
    UdfSpec("ls_array_is_distinct", 1, array_is_distinct),
    UdfSpec("ls_array_min_max", 3, array_min_max),
    UdfSpec("ls_array_slice", 3, array_slice),
    UdfSpec("ls_generate_date_array", 4, generate_date_array),
)
