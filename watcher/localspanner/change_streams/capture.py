"""A commit's row changes turned into the data change records of every stream that tracks them.

Called by the commit path inside the commit's SQLite transaction (so a record exists
exactly when its change committed), and only when some change stream tracks a table
(:func:`tracks_anything`), which keeps writes without streams as cheap as before.

Per stream, a transaction gets one record per (table, mod type, key bucket), in the
order the changes came. What a mod holds follows the stream's ``value_capture_type``
(:data:`CAPTURE_RULES`); columns follow the stream's FOR clause (``FOR T(c1, c2)``: those
and the key; ``FOR T()``: the key only); ``exclude_insert`` / ``exclude_update`` /
``exclude_delete`` drop mods of that type. A transaction sent with
``exclude_txn_from_change_streams`` is left out of the streams with ``allow_txn_exclusion``
(the others still record it); the row deletion policy's deletes are a system transaction
(``is_system_transaction``, tag ``RowDeletionPolicy``) that streams with
``exclude_ttl_deletes`` leave out (:class:`TxnOrigin`). An UPDATE that changed no tracked column
records nothing. Values are JSON as Spanner writes them: INT64 and NUMERIC as strings,
FLOAT64 as numbers, BYTES base64, TIMESTAMP RFC 3339 (the wire form of each type).

Example:
    >>> from watcher.localspanner.datamodel import types as T
    >>> type_json(T.array_of(T.STRING))
    '{"code":"ARRAY","array_element_type":{"code":"STRING"}}'
"""

from __future__ import annotations

import json
import uuid
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..datamodel import values
from ..datamodel.types import NOT_ON_WIRE, SpannerType, TypeCode, schema_type_text
from ..ddl.change_stream_options import retention_seconds
from ..schema.catalog import Catalog, ChangeStream, Table
from ..storage.versions import RowChange
from .records import Record, encode_body, insert, purge

#: value_capture_type -> (new values: "changed" columns or the whole "row", old values kept).
CAPTURE_RULES: dict[str, tuple[str, bool]] = {
    "OLD_AND_NEW_VALUES": ("changed", True),
    "NEW_VALUES": ("changed", False),
    "NEW_ROW": ("row", False),
    "NEW_ROW_AND_OLD_VALUES": ("row", True),
}
#: mod type -> the option that excludes it.
EXCLUDE_OPTION = {"INSERT": "exclude_insert", "UPDATE": "exclude_update", "DELETE": "exclude_delete"}
#: The transaction tag of the row deletion policy's system transactions, as Spanner sets it.
TTL_TRANSACTION_TAG = "RowDeletionPolicy"
#: The key space is split in this many buckets; a split stream reads each in its own partition.
BUCKETS = 2


@dataclass(frozen=True)
class _Tracking:
    """What one stream records of one table: its non-key columns (with types), and the column_types it shows."""

    stream: ChangeStream
    columns: tuple[str, ...]
    column_types: tuple[tuple[str, str, bool, int], ...]
    keys: tuple[str, ...]
    new_rule: str
    keep_old: bool
    types: dict[str, str]  # column -> its type's text, to turn stored values into JSON values when read
    excluded: frozenset[str]  # mod types the stream's exclude_* options drop
    capture_type: str


@dataclass(frozen=True)
class TxnOrigin:
    """Who ran a transaction, as far as change streams care.

    ``excluded``: the client sent ``exclude_txn_from_change_streams``; ``system``: Spanner
    itself ran it (the row deletion policy's deletes).

    >>> TxnOrigin().excluded, TTL_DELETE.system
    (False, True)
    """

    excluded: bool = False
    system: bool = False

    def leaves_out(self, stream: ChangeStream) -> bool:
        """True when ``stream`` records nothing of this transaction."""
        return (self.excluded and stream.option("allow_txn_exclusion") is True) or (
            self.system and stream.option("exclude_ttl_deletes") is True)


USER_TXN = TxnOrigin()
EXCLUDED_TXN = TxnOrigin(excluded=True)
TTL_DELETE = TxnOrigin(system=True)


_plans: weakref.WeakKeyDictionary[Catalog, dict[str, list[_Tracking]]] = weakref.WeakKeyDictionary()


def type_json(t: SpannerType) -> str:
    """The JSON text of a column type as ``column_types[].type`` shows it."""
    return json.dumps(_type_item(t), separators=(",", ":"))


def _type_item(t: SpannerType) -> dict[str, Any]:
    item: dict[str, Any] = {"code": t.code.name}
    if t.proto_fqn:
        item["proto_type_fqn"] = t.proto_fqn
    if t.element is not None:
        item["array_element_type"] = _type_item(t.element)
    return item


def _plan(catalog: Catalog) -> dict[str, list[_Tracking]]:
    """Per table (lower-case name): the streams tracking it, computed once per catalog."""
    found = _plans.get(catalog)
    if found is None:
        found = {}
        for table in catalog.tables:
            for stream in catalog.change_streams:
                tracking = _tracking(stream, table)
                if tracking is not None:
                    found.setdefault(table.name.lower(), []).append(tracking)
        _plans[catalog] = found
    return found


def _tracking(stream: ChangeStream, table: Table) -> _Tracking | None:
    if stream.all:
        names: tuple[str, ...] | None = None
    else:
        tracked = stream.tracked(table.name)
        if tracked is None:
            return None
        names = tracked.columns
    keys = set(table.key_names)
    wanted = None if names is None else {n.lower() for n in names}
    # TOKENLIST columns have no value a record could carry (they are never returned).
    columns = tuple(c.name for c in table.columns if c.name not in keys and (wanted is None or c.name.lower() in wanted)
                    and c.type.code not in NOT_ON_WIRE)
    shown = set(columns) | keys
    types = tuple((c.name, type_json(c.type), c.name in keys, i + 1) for i, c in enumerate(table.columns) if c.name in shown)
    capture_type = str(stream.option("value_capture_type"))
    new_rule, keep_old = CAPTURE_RULES[capture_type]
    excluded = frozenset(mod for mod, option in EXCLUDE_OPTION.items() if stream.option(option) is True)
    return _Tracking(stream, columns, types, table.key_names, new_rule, keep_old,
                     {c.name: schema_type_text(c.type) for c in table.columns if c.name in shown}, excluded, capture_type)


def tracks_anything(catalog: Catalog) -> bool:
    """True when some change stream of ``catalog`` tracks some table (only then is there work at commit)."""
    return bool(catalog.change_streams) and bool(_plan(catalog))


def bucket_of(key: tuple[Any, ...]) -> int:
    """The key-space bucket of a key (stable across restarts)."""
    return zlib.crc32(repr(key).encode()) % BUCKETS


def _values(row: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """Column -> stored value of the columns ``names``.

    The JSON values clients see (INT64 as text, BYTES as base64, TIMESTAMP in RFC 3339...)
    are made when the record is read (:func:`json_values`), which keeps the commit path short.
    """
    return {n: row[n] for n in names}


def json_values(stored: dict[str, Any], types: dict[str, SpannerType]) -> dict[str, Any]:
    """The JSON values of what :func:`_values` kept (BYTES kept as base64 text by older servers stay so)."""
    wire = values.stored_to_wire
    return {n: v if v is None or (types[n].storage_code == TypeCode.BYTES and type(v) is str) else wire(types[n], v)
            for n, v in stored.items()}


def _mod(tracking: _Tracking, change: RowChange) -> list[dict[str, Any]] | None:
    """[keys, new_values, old_values] of one change (stored values), or None when it changed no tracked column."""
    old, new = change.old or {}, change.new or {}
    if change.mod_type == "UPDATE":
        changed = [c for c in tracking.columns if old.get(c) != new.get(c)]
        if not changed:
            return None
    else:
        changed = list(tracking.columns)
    keys = _values(change.new or change.old or {}, tracking.keys)
    if change.mod_type == "DELETE":
        new_values: dict[str, Any] = {}
    else:
        new_values = _values(new, changed if tracking.new_rule == "changed" else tracking.columns)
    old_values = _values(old, changed) if tracking.keep_old and change.mod_type != "INSERT" else {}
    return [keys, new_values, old_values]


def build_records(catalog: Catalog, changes: Sequence[RowChange], commit_nanos: int, tag: str = "",
                  origin: TxnOrigin = USER_TXN) -> list[Record]:
    """The data change records of one commit, for every stream tracking a changed table that
    does not leave the transaction out (``origin``)."""
    plan = _plan(catalog)
    if origin.system:
        tag = TTL_TRANSACTION_TAG
    groups: dict[tuple[str, str, str, int], tuple[_Tracking, list[list[dict[str, Any]]]]] = {}
    for change in changes:
        trackings = plan.get(change.table.lower())
        if not trackings:
            continue
        bucket = bucket_of(change.key)
        for tracking in trackings:
            if change.mod_type in tracking.excluded or origin.leaves_out(tracking.stream):
                continue
            mod = _mod(tracking, change)
            if mod is None:
                continue
            group = (tracking.stream.name, change.table, change.mod_type, bucket)
            groups.setdefault(group, (tracking, []))[1].append(mod)
    if not groups:
        return []
    txn = uuid.uuid4().hex
    per_stream: dict[str, list[tuple[tuple[str, str, str, int], Any]]] = {}
    for group, content in groups.items():
        per_stream.setdefault(group[0], []).append((group, content))
    out: list[Record] = []
    for stream, items in per_stream.items():
        buckets = len({g[3] for g, _ in items})
        for seq, ((_, table_name, mod_type, bucket), (tracking, mods)) in enumerate(items):
            body = encode_body({"table": table_name, "column_types": tracking.column_types, "mods": mods,
                                "types": tracking.types, "mod_type": mod_type, "value_capture_type": tracking.capture_type,
                                "transaction_tag": tag, **({"system": True} if origin.system else {})})
            out.append(Record(stream, commit_nanos, txn, seq, bucket, len(items), buckets, body))
    return out


def write_records(conn: Any, catalog: Catalog, changes: Sequence[RowChange], commit_nanos: int, tag: str = "",
                  origin: TxnOrigin = USER_TXN) -> int:
    """Append the commit's records in its SQLite transaction; returns how many."""
    records = build_records(catalog, changes, commit_nanos, tag, origin)
    if records:
        insert(conn, records)
    return len(records)


def purge_expired(conn: Any, catalog: Catalog, wall_nanos: int) -> int:
    """Delete the records older than their stream's retention period at ``wall_nanos``; returns how many."""
    removed = 0
    for stream in catalog.change_streams:
        seconds = retention_seconds(str(stream.option("retention_period"))) or 86_400
        removed += purge(conn, stream.name, wall_nanos - seconds * 1_000_000_000)
    return removed
