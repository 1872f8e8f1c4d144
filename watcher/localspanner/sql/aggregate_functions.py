"""Aggregates SQLite cannot express: ORDER BY / LIMIT inside the call, HAVING MAX|MIN, ARRAY_CONCAT_AGG, BIT_*.

One SQLite aggregate, ``ls_agg``, collects each row's value with its ordering keys and
HAVING value, then :func:`finish` applies GoogleSQL's steps in order: keep the rows whose
HAVING value is the extreme one, drop repeats (DISTINCT), sort, cut at LIMIT, and reduce
by the aggregate's kind. Arguments of each call:
``(kind, value, type_text, extra, limit, distinct, having, having_value, having_code, key, desc, code, ...)``.

Example:
    >>> rows = [Row("b", (2,), None), Row("a", (1,), None), Row(None, (3,), None)]
    >>> finish("STRING", rows, "STRING", "-", -1, False, "", [(False, "INT64")], "")
    'a-b'
    >>> finish("ARRAY", rows, "STRING", None, 2, False, "", [(True, "INT64")], "")
    '[null, "b"]'
"""

from __future__ import annotations

import decimal
import functools
import json
import sqlite3
import statistics
from dataclasses import dataclass
from typing import Any

from ..datamodel import composite_values, values
from ..datamodel import types as T
from .json_functions import _type

#: Suffix of a kind whose NULL values are left out before anything else (ARRAY_AGG(x IGNORE NULLS)).
IGNORE_NULLS = "_IGNORE_NULLS"


@dataclass
class Row:
    value: Any
    keys: tuple[Any, ...]
    having: Any


def _key(value: Any, code: str) -> Any:
    return decimal.Decimal(value) if code == "NUMERIC" and value is not None else value


def _compare(a: Row, b: Row, orders: list[tuple[bool, str]]) -> int:
    for (desc, code), x, y in zip(orders, a.keys, b.keys, strict=True):
        x, y = _key(x, code), _key(y, code)
        if x == y:
            continue
        if x is None or y is None:  # NULLs first ascending, last descending
            return (-1 if x is None else 1) * (-1 if desc else 1)
        result = -1 if x < y else 1
        return -result if desc else result
    return 0


def _sum(values_: list[Any], code: str) -> Any:
    if code == "NUMERIC":
        return values.canonical_numeric(str(sum(decimal.Decimal(v) for v in values_)))
    return sum(values_)


def _reduce(kind: str, kept: list[Any], type_text: str, extra: Any) -> Any:
    t = _type(type_text) if type_text else None
    present = [v for v in kept if v is not None]
    code = t.storage_code.name if t is not None else ""
    if kind == "ARRAY":
        element = t or T.INT64
        return json.dumps([composite_values.json_item(element, v) for v in kept], ensure_ascii=False)
    if kind == "ARRAY_CONCAT":
        return json.dumps([item for v in present for item in json.loads(v)], ensure_ascii=False)
    if kind == "COUNT":
        return len(present)
    if not present:
        return None
    if kind == "STRING":
        sep = extra if extra is not None else ("," if isinstance(present[0], str) else b",")
        return sep.join(present)
    if kind in ("MIN", "MAX"):
        pick = min if kind == "MIN" else max
        return pick(present, key=lambda v: _key(v, code))
    if kind == "ANY_VALUE":
        return present[0]
    if kind == "SUM":
        return _sum(present, code)
    if kind in ("STDDEV", "VARIANCE"):
        if len(present) < 2:
            return None
        numbers = [float(v) for v in present]
        return statistics.stdev(numbers) if kind == "STDDEV" else statistics.variance(numbers)
    if kind == "AVG":
        if code == "NUMERIC":
            return values.canonical_numeric(str(sum(decimal.Decimal(v) for v in present) / len(present)))
        return sum(present) / len(present)
    bits = {"BIT_AND": lambda a, b: a & b, "BIT_OR": lambda a, b: a | b, "BIT_XOR": lambda a, b: a ^ b}
    return functools.reduce(bits[kind], present)


def finish(kind: str, rows: list[Row], type_text: str, extra: Any, limit: int, distinct: bool, having: str,
           orders: list[tuple[bool, str]], having_code: str) -> Any:
    """The aggregate's result over the collected ``rows`` (see the module docstring for the steps)."""
    if kind.endswith(IGNORE_NULLS):
        kind, rows = kind.removesuffix(IGNORE_NULLS), [r for r in rows if r.value is not None]
    if having:
        marks = [_key(r.having, having_code) for r in rows if r.having is not None]
        if marks:
            extreme = max(marks) if having == "MAX" else min(marks)
            rows = [r for r in rows if r.having is not None and _key(r.having, having_code) == extreme]
    if distinct:
        seen: set[str] = set()
        unique = []
        for r in rows:
            mark = json.dumps(r.value if not isinstance(r.value, bytes) else r.value.hex())
            if mark not in seen:
                seen.add(mark)
                unique.append(r)
        rows = unique
    if orders:
        def compare(a: Row, b: Row) -> int:
            return _compare(a, b, orders)

        rows = sorted(rows, key=functools.cmp_to_key(compare))
    if limit >= 0:
        rows = rows[:limit]
    return _reduce(kind, [r.value for r in rows], type_text, extra)


class OrderedAggregate:
    """The SQLite aggregate ``ls_agg``: collects rows, then :func:`finish`."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.call: tuple[Any, ...] = ()

    def step(self, kind: str, value: Any, type_text: str, extra: Any, limit: int, distinct: int, having: str,
             having_value: Any, having_code: str, *keys: Any) -> None:
        self.call = (kind, type_text, extra, limit, bool(distinct), having,
                     [(bool(keys[i + 1]), keys[i + 2]) for i in range(0, len(keys), 3)], having_code)
        self.rows.append(Row(value, tuple(keys[0::3]), having_value))

    def finalize(self) -> Any:
        if not self.call:
            return None
        kind, type_text, extra, limit, distinct, having, orders, having_code = self.call
        return finish(kind, self.rows, type_text, extra, limit, distinct, having, orders, having_code)


def register_aggregates(conn: sqlite3.Connection) -> None:
    """Install ``ls_agg`` on ``conn`` (errors inside reach the client as SQLite's aggregate error)."""
    conn.create_aggregate("ls_agg", -1, OrderedAggregate)  # type: ignore[arg-type]
