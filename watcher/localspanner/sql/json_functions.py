"""JSON functions over stored JSON (canonical JSON text): paths, extractors, converters, mutators.

A JSONPath is the subset GoogleSQL documents for Spanner: ``$``, ``.name``, ``."quoted"``,
``['name']`` and ``[index]``. Extractors give NULL for a path that selects nothing;
the strict converters (BOOL, INT64, FLOAT64, STRING) fail on a JSON value of another type,
the LAX_ ones give NULL. :func:`to_json` turns a stored value of any type into JSON.

Example:
    >>> json_value('{"a":{"b":[1,"x"]}}', "$.a.b[1]")
    'x'
    >>> json_keys('{"a":{"b":1},"c":2}', None)
    '["a", "a.b", "c"]'
    >>> convert('"10"', "LAX_INT64"), convert('1.5', "LAX_INT64")
    (10, 2)
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from ..datamodel import composite_values, scalar_values, values
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from .udf import UdfSpec, fail

_MISSING = object()
_STEP = re.compile(r"\.([A-Za-z_][\w]*)|\.\"([^\"]*)\"|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _canonical(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _path(path: str) -> list[str | int]:
    """Steps of a JSONPath ('$.a.b[0]', "$['a b']")."""
    if not path.startswith("$"):
        fail(f"JSONPath must start with '$': {path!r}")
    steps: list[str | int] = []
    pos = 1
    for m in _STEP.finditer(path, 1):
        if m.start() != pos:
            break
        key, quoted, index, sq, dq = m.groups()
        steps.append(int(index) if index is not None else next(v for v in (key, quoted, sq, dq) if v is not None))
        pos = m.end()
    if pos != len(path):
        fail(f"Invalid JSONPath {path!r} at position {pos}")
    return steps


def _walk(node: Any, steps: list[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return _MISSING
    return node


def _select(text: str | None, path: str | None) -> Any:
    if text is None or path is None:
        return _MISSING
    return _walk(json.loads(text), _path(path))


def _scalar_text(node: Any) -> str | None:
    if node is None or isinstance(node, (dict, list)):
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    return node if isinstance(node, str) else json.dumps(node)


# --- extractors -------------------------------------------------------------------------------------

def json_value(text: str | None, path: str | None) -> str | None:
    node = _select(text, path)
    return None if node is _MISSING else _scalar_text(node)


def json_query(text: str | None, path: str | None) -> str | None:
    node = _select(text, path)
    return None if node is _MISSING else _canonical(node)


def json_subscript(text: str | None, key: str | int | None) -> str | None:
    """``json.member``, ``json['member']``, ``json[index]``: the member or element, NULL when there is none."""
    if text is None or key is None:
        return None
    node = _walk(json.loads(text), [key])
    return None if node is _MISSING else _canonical(node)


def json_query_array(text: str | None, path: str | None) -> str | None:
    """JSON_QUERY_ARRAY: the elements of the selected array, each as JSON text."""
    node = _select(text, path)
    if not isinstance(node, list):
        return None
    return json.dumps([_canonical(e) for e in node], ensure_ascii=False)


def json_value_array(text: str | None, path: str | None) -> str | None:
    """JSON_VALUE_ARRAY: the selected array of scalars as strings (JSON null: NULL); NULL for other arrays."""
    node = _select(text, path)
    if not isinstance(node, list) or any(isinstance(e, (dict, list)) for e in node):
        return None
    return json.dumps([_scalar_text(e) for e in node], ensure_ascii=False)


def json_type(text: str | None) -> str | None:
    if text is None:
        return None
    node = json.loads(text)
    for kind, test in (("null", lambda v: v is None), ("boolean", lambda v: isinstance(v, bool)),
                       ("number", lambda v: isinstance(v, (int, float))), ("string", lambda v: isinstance(v, str)),
                       ("array", lambda v: isinstance(v, list))):
        if test(node):
            return kind
    return "object"


def _key_text(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z_]\w*", key) else json.dumps(key)


def json_keys(text: str | None, max_depth: int | None) -> str | None:
    """JSON_KEYS: the object keys as dotted paths, sorted, down to ``max_depth`` levels (arrays not entered)."""
    if text is None:
        return None
    if max_depth is not None and max_depth <= 0:
        fail("JSON_KEYS: max_depth must be positive")
    out: set[str] = set()

    def visit(node: Any, prefix: str, depth: int) -> None:
        if not isinstance(node, dict) or (max_depth is not None and depth > max_depth):
            return
        for key, value in node.items():
            path = prefix + _key_text(key)
            out.add(path)
            visit(value, path + ".", depth + 1)

    visit(json.loads(text), "", 1)
    return json.dumps(sorted(out), ensure_ascii=False)


# --- converters ---------------------------------------------------------------------------------------

_WORDS = {"true": True, "false": False}


def _lax_number(node: Any) -> Decimal | None:
    if isinstance(node, bool) or node is None or isinstance(node, (dict, list)):
        return None
    if isinstance(node, (int, float)):
        return Decimal(str(node)) if isinstance(node, float) else Decimal(node)
    try:
        return Decimal(node.strip())
    except InvalidOperation:
        return None


def _round_half_away(d: Decimal) -> int:
    return int(d.to_integral_value(rounding="ROUND_HALF_UP"))


def _strict(node: Any, want: str) -> Any:
    if want == "BOOL" and isinstance(node, bool):
        return int(node)
    if want == "STRING" and isinstance(node, str):
        return node
    if want in ("INT64", "FLOAT64") and isinstance(node, (int, float)) and not isinstance(node, bool):
        if want == "FLOAT64":
            return float(node)
        if float(node).is_integer() and -(2**63) <= int(node) < 2**63:
            return int(node)
        fail(f"The provided JSON number {node} cannot be converted to an INT64")
    article = "an" if want[0] in "AEIOU" else "a"
    fail(f"The provided JSON input is not {article} {want.lower() if want == 'BOOL' else want}: {_canonical(node)}")


def _lax(node: Any, want: str) -> Any:
    if want == "BOOL":
        if isinstance(node, bool):
            return int(node)
        if isinstance(node, str):
            word = _WORDS.get(node.lower())
            return None if word is None else int(word)
        number = _lax_number(node)
        return None if number is None else int(number != 0)
    if want == "STRING":
        if isinstance(node, str):
            return node
        return None if node is None or isinstance(node, (dict, list)) else _scalar_text(node)
    if want == "INT64" and isinstance(node, bool):
        return int(node)
    number = None if isinstance(node, bool) else _lax_number(node)
    if number is None or not number.is_finite():
        if want == "FLOAT64" and isinstance(node, str) and node.strip().lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
            number_text = node.strip().lower().replace("infinity", "inf")
            return "NaN" if number_text == "nan" else float(number_text)  # NaN's stored form is its text
        return None
    if want == "FLOAT64":
        return float(number)
    value = _round_half_away(number)
    return value if -(2**63) <= value < 2**63 else None


def convert(text: str | None, mode: str) -> Any:
    """BOOL / INT64 / FLOAT64 / STRING of JSON (``mode`` the name), and their LAX_ forms."""
    if text is None:
        return None
    node = json.loads(text)
    if mode.startswith("LAX_"):
        return _lax(node, mode.removeprefix("LAX_"))
    return _strict(node, mode)


_ELEMENTS = {"BOOL_ARRAY": T.BOOL, "INT64_ARRAY": T.INT64, "FLOAT64_ARRAY": T.FLOAT64, "FLOAT32_ARRAY": T.FLOAT32,
             "STRING_ARRAY": T.STRING}


def convert_array(text: str | None, mode: str) -> str | None:
    """BOOL_ARRAY, INT64_ARRAY, FLOAT64_ARRAY, FLOAT32_ARRAY, STRING_ARRAY of a JSON array, as a stored ARRAY."""
    if text is None:
        return None
    node = json.loads(text)
    if not isinstance(node, list):
        fail(f"The provided JSON input is not an array: {_canonical(node)}")
    element = _ELEMENTS[mode]
    base = element.code.name if element.code != TypeCode.FLOAT32 else "FLOAT64"
    stored = [_strict(e, base) for e in node]
    if element.code == TypeCode.FLOAT32:
        stored = [scalar_values.round_float32(v) for v in stored]
    return json.dumps([composite_values.json_item(element, v) for v in stored], ensure_ascii=False)


def _contains(a: Any, b: Any) -> bool:
    if isinstance(b, dict):
        return isinstance(a, dict) and all(k in a and _contains(a[k], v) for k, v in b.items())
    if isinstance(b, list):
        return isinstance(a, list) and all(any(_contains(x, y) for x in a) for y in b)
    if isinstance(a, list):
        return any(_contains(x, b) for x in a)
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                             and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def json_contains(text: str | None, candidate: str | None) -> int | None:
    """JSON_CONTAINS: objects by their members, arrays by their elements (any order), scalars by value."""
    if text is None or candidate is None:
        return None
    return int(_contains(json.loads(text), json.loads(candidate)))


def _array_edit(text: str | None, pairs: tuple[Any, ...], insert: bool) -> str | None:
    if text is None:
        return None
    node = json.loads(text)
    for path, value in zip(pairs[::2], pairs[1::2], strict=True):
        if path is None:
            fail(f"A JSONPath of JSON_ARRAY_{'INSERT' if insert else 'APPEND'} cannot be NULL")
        steps = _path(path)
        new = json.loads(value)
        items = new if isinstance(new, list) else [new]
        if insert:
            if not steps or not isinstance(steps[-1], int):
                continue
            parent = _walk(node, steps[:-1])
            if isinstance(parent, list):
                while len(parent) < steps[-1]:
                    parent.append(None)
                parent[steps[-1]:steps[-1]] = items
        else:
            target = _walk(node, steps)
            if isinstance(target, list):
                target.extend(items)
    return _canonical(node)


def json_array_append(text: str | None, *pairs: Any) -> str | None:
    """JSON_ARRAY_APPEND(json, path, value, ...): a SQL ARRAY value appends each element."""
    return _array_edit(text, pairs, insert=False)


def json_array_insert(text: str | None, *pairs: Any) -> str | None:
    """JSON_ARRAY_INSERT(json, path, value, ...): inserted before the path's index (padded with nulls)."""
    return _array_edit(text, pairs, insert=True)


# --- constructors and mutators --------------------------------------------------------------------------

@lru_cache(maxsize=512)
def _type(text: str) -> SpannerType:
    return T.parse_type(text)


def _json_of(t: SpannerType, stored: Any) -> Any:
    if stored is None:
        return None
    code = t.storage_code
    if code == TypeCode.ARRAY:
        assert t.element is not None
        items = json.loads(stored) if isinstance(stored, str) else stored
        return [_json_of(t.element, composite_values.from_json_item(t.element, i)) for i in items]
    if code == TypeCode.STRUCT:
        items = json.loads(stored) if isinstance(stored, str) else stored
        return {name: _json_of(ft, composite_values.from_json_item(ft, i)) for (name, ft), i in zip(t.fields, items, strict=True)}
    if code == TypeCode.JSON:
        return json.loads(stored)
    wire = values.stored_to_wire(t, stored)
    if code == TypeCode.INT64:
        return int(wire)
    if code == TypeCode.NUMERIC:
        d = Decimal(wire)
        return int(d) if d == d.to_integral_value() else float(d)
    if code in (TypeCode.FLOAT64, TypeCode.FLOAT32) and isinstance(wire, float) and not math.isfinite(wire):
        return "NaN" if math.isnan(wire) else ("Infinity" if wire > 0 else "-Infinity")
    return wire


def to_json(stored: Any, type_text: str | None, sort: int) -> str:
    """TO_JSON (``sort`` 1: canonical, keys sorted) and TO_JSON_STRING (field order kept) of a stored value."""
    node = None if type_text is None else _json_of(_type(type_text), stored)
    return _canonical(node) if sort else json.dumps(node, separators=(",", ":"), ensure_ascii=False)


def json_array(*parts: str) -> str:
    """JSON_ARRAY of values already turned into JSON text."""
    return _canonical([json.loads(p) for p in parts])


def json_object(*pairs: Any) -> str:
    """JSON_OBJECT of key, JSON text, key, JSON text...; the first of repeated keys wins."""
    out: dict[str, Any] = {}
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        if key is None:
            fail("A key of JSON_OBJECT cannot be NULL")
        out.setdefault(key, json.loads(value))
    return _canonical(out)


def _set(node: Any, steps: list[str | int], value: Any) -> Any:
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    if isinstance(step, str):
        if node is None:
            node = {}
        if not isinstance(node, dict):
            return node  # a path through a scalar changes nothing
        node[step] = _set(node.get(step), rest, value)
        return node
    if node is None:
        node = []
    if not isinstance(node, list):
        return node
    while len(node) <= step:
        node.append(None)
    node[step] = _set(node[step], rest, value)
    return node


def json_set(text: str | None, *pairs: Any) -> str | None:
    """JSON_SET(json, path, value_json, ...): each path set to the value, missing members created."""
    if text is None:
        return None
    node = json.loads(text)
    for path, value in zip(pairs[::2], pairs[1::2], strict=True):
        if path is None:
            fail("A JSONPath of JSON_SET cannot be NULL")
        node = _set(node, _path(path), json.loads(value))
    return _canonical(node)


def json_remove(text: str | None, *paths: str | None) -> str | None:
    """JSON_REMOVE(json, path, ...): each selected member or element removed ('$' is an error)."""
    if text is None:
        return None
    node = json.loads(text)
    for path in paths:
        if path is None:
            fail("A JSONPath of JSON_REMOVE cannot be NULL")
        steps = _path(path)
        if not steps:
            fail("JSON_REMOVE cannot remove the whole document: the JSONPath '$'")
        parent = _walk(node, steps[:-1])
        last = steps[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            parent.pop(last, None)
        elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
            del parent[last]
    return _canonical(node)


def _strip(node: Any, arrays: bool, empty: bool) -> Any:
    if isinstance(node, dict):
        kept = {k: _strip(v, arrays, empty) for k, v in node.items()}
        kept = {k: v for k, v in kept.items() if v is not None and not (empty and v in ({}, []))}
        return kept
    if isinstance(node, list):
        kept_items = [_strip(v, arrays, empty) for v in node]
        if arrays:
            kept_items = [v for v in kept_items if v is not None and not (empty and v in ({}, []))]
        return kept_items
    return node


def json_strip_nulls(text: str | None, path: str | None, include_arrays: int | None, remove_empty: int | None) -> str | None:
    """JSON_STRIP_NULLS: JSON nulls removed from objects (and arrays unless include_arrays is FALSE)."""
    if text is None:
        return None
    node = json.loads(text)
    steps = _path(path or "$")
    target = _walk(node, steps)
    if target is _MISSING:
        return _canonical(node)
    stripped = _strip(target, include_arrays is None or bool(include_arrays), bool(remove_empty))
    return _canonical(_set(node, steps, stripped) if steps else stripped)


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_json_value", 2, json_value),
    UdfSpec("ls_json_query", 2, json_query),
    UdfSpec("ls_json_subscript", 2, json_subscript),
    UdfSpec("ls_json_query_array", 2, json_query_array),
    UdfSpec("ls_json_value_array", 2, json_value_array),
    UdfSpec("ls_json_type", 1, json_type),
    UdfSpec("ls_json_keys", 2, json_keys),
    UdfSpec("ls_json_convert", 2, convert),
    UdfSpec("ls_json_convert_array", 2, convert_array),
    UdfSpec("ls_json_contains", 2, json_contains),
    UdfSpec("ls_json_array_append", -1, json_array_append),
    UdfSpec("ls_json_array_insert", -1, json_array_insert),
    UdfSpec("ls_to_json", 3, to_json),
    UdfSpec("ls_json_array", -1, json_array),
    UdfSpec("ls_json_object", -1, json_object),
    UdfSpec("ls_json_set", -1, json_set),
    UdfSpec("ls_json_remove", -1, json_remove),
    UdfSpec("ls_json_strip_nulls", 4, json_strip_nulls),
)
