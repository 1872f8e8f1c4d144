"""AddSplitPoints: split points as data, and Spanner's checks of them.

A split point names a table, or an index (with, optionally, that index's own table), one or
more keys, and when the points expire. Each key is a prefix of the target's key: the table's
primary key, or an index's key columns followed by its table's primary key columns not among
them, each value typed as its column. ``expire_time`` may be at most :data:`MAX_EXPIRY_DAYS`
days ahead (a past one expires at once); without one the points expire in
:data:`DEFAULT_EXPIRY_DAYS` days. The local server keeps all rows in one file, so accepted split
points change nothing but are checked as Spanner checks them.

Example:
    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> t = C.Table("T", (C.Column("K", T.INT64, not_null=True),), (C.KeyPart("K"),))
    >>> check(C.Catalog(tables=(t,)), [SplitPoint(table="T", keys=[["10"], ["20"]])], now_nanos=0)[0].expire_time_nanos
    864000000000000
    >>> check(C.Catalog(tables=(t,)), [SplitPoint(table="T", keys=[["x"]])], now_nanos=0)
    Traceback (most recent call last):
    ...
    watcher.localspanner.errors.base.SpannerError: Split point 0 (on table T) has an invalid key: Invalid value for column K in table T: expected INT64, got 'x'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..datamodel import values
from ..schema.catalog import Catalog, Column, Table
from ..storage.mutations import stored_key

#: How long split points live when the request gives no expire_time, and the longest it may ask (Spanner's).
DEFAULT_EXPIRY_DAYS = 10
MAX_EXPIRY_DAYS = 30
_DAY_NANOS = 86_400 * 1_000_000_000


@dataclass(frozen=True)
class SplitPoint:
    """One ``SplitPoints`` entry: ``keys`` hold wire values; ``expire_time_nanos`` None when not given."""

    table: str = ""
    index: str = ""
    keys: list[list[Any]] = field(default_factory=list)
    expire_time_nanos: int | None = None


def check(catalog: Catalog, points: Sequence[SplitPoint], *, now_nanos: int) -> list[SplitPoint]:
    """The split points if Spanner would take them (expiry filled in); INVALID_ARGUMENT naming the first fault."""
    if not points:
        raise errors.split_points_none()
    return [_check_one(catalog, i, p, now_nanos) for i, p in enumerate(points)]


def _check_one(catalog: Catalog, position: int, point: SplitPoint, now_nanos: int) -> SplitPoint:
    table, key_columns, target = _target(catalog, position, point)
    if not point.keys:
        raise errors.split_point_without_keys(position, target)
    for key in point.keys:
        if not key:
            raise errors.split_key_invalid(position, target, errors.SPLIT_KEY_EMPTY)
        try:
            stored_key(table, key_columns, key, prefix_ok=True)
        except errors.SpannerError as exc:
            raise errors.split_key_invalid(position, target, exc.message) from None
    latest = now_nanos + MAX_EXPIRY_DAYS * _DAY_NANOS
    expire = point.expire_time_nanos
    if expire is None:
        expire = now_nanos + DEFAULT_EXPIRY_DAYS * _DAY_NANOS
    elif expire > latest:
        raise errors.split_points_expire_too_late(position, values.nanos_to_rfc3339(expire), values.nanos_to_rfc3339(latest))
    return dataclasses.replace(point, expire_time_nanos=expire)


def _target(catalog: Catalog, position: int, point: SplitPoint) -> tuple[Table, list[Column], str]:
    """The table whose rows the point splits, the key columns its keys follow, and how errors name it."""
    table = None
    if point.table:
        table = catalog.table(point.table)
        if table is None:
            raise errors.split_point_table_not_found(position, point.table)
    if not point.index:
        if table is None:
            raise errors.split_point_needs_table_or_index(position)
        return table, list(table.key_columns), f"table {table.name}"
    index = catalog.index(point.index)
    if index is None:
        raise errors.split_point_index_not_found(position, point.index)
    base = catalog.table(index.table)
    assert base is not None  # an index's table exists while the index does
    if table is not None and table is not base:
        raise errors.split_point_index_of_other_table(position, index.name, base.name, table.name)
    in_index = {p.column.lower() for p in index.key}
    names = [p.column for p in index.key] + [c.name for c in base.key_columns if c.name.lower() not in in_index]
    columns = [c for c in (base.column(n) for n in names) if c is not None]
    return base, columns, f"index {index.name}"
