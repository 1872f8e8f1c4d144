"""Poll queries (pure builders) and the execution of one poll.

Three query shapes, all ordered by commit timestamp then primary key (ascending), which
is the order changes are delivered in:

* **simple**: rows after the checkpoint's timestamp;
  ``SELECT * FROM `T`<hint> WHERE `ts` > @prevCommitTimestamp <shard filter> ORDER BY `ts`, `k1`, ... LIMIT @limit``
* **continuation**: when the previous poll's LIMIT cut through a group of rows sharing a
  commit timestamp, the rest of that group, after the last delivered key (instead of the
  Java library's OFFSET, which can skip rows when the group is read again after a restart);
* **WITH**: one common table expression per shard value, each limited, merged and joined
  back on the full primary key (a NULL key part matches a NULL part): cheaper when far behind on many shards.

Keys order as on Spanner: ascending, NULL before every value, in ORDER BY and in the
continuation condition alike.

Example:
    >>> from watcher.model import TableId
    >>> from watcher.capture.table_info import TableInfo
    >>> info = TableInfo(TableId("T"), "Ts", ("A", "B"), {"A": "INT64", "B": "STRING(MAX)", "Ts": "TIMESTAMP"})
    >>> print(simple_query(info, "", limit=10).sql)
    SELECT * FROM `T` WHERE `Ts` > @prevCommitTimestamp ORDER BY `Ts`, `A`, `B` LIMIT @limit
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from google.cloud.spanner_v1 import param_types

from ..model import Change, Checkpoint
from ..sqlnames import quote_identifier
from .row_values import bytes_decoder, column_types
from .shards import FixedShardProvider, ShardFilter
from .table_info import TableInfo

#: The WITH variant is used only within these bounds (as in the Java library).
WITH_QUERY_MAX_SHARDS = 100
WITH_QUERY_MAX_LIMIT = 100_000


@dataclass(frozen=True)
class PollQuery:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)
    continuation: bool = False


def _order_by(info: TableInfo) -> str:
    return ", ".join(quote_identifier(c) for c in (info.commit_timestamp_column, *info.key_columns))


def _from(info: TableInfo, hint: str) -> str:
    return info.table.sql + (hint or "")


def simple_query(info: TableInfo, hint: str, *, limit: int, shard: ShardFilter | None = None,
                 since: dt.datetime | None = None) -> PollQuery:
    ts = quote_identifier(info.commit_timestamp_column)
    shard = shard or ShardFilter("")
    sql = (f"SELECT * FROM {_from(info, hint)} WHERE {ts} > @prevCommitTimestamp{shard.sql} "
           f"ORDER BY {_order_by(info)} LIMIT @limit")
    params = {"prevCommitTimestamp": since, "limit": limit, **shard.params}
    types = {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, **shard.types}
    return PollQuery(sql, params, types)


#: Spanner's limit on primary-key columns; the key conditions below are built for any of them.
MAX_KEY_COLUMNS = 16


def null_safe_equals(left: str, right: str) -> str:
    """SQL that is TRUE when two expressions are equal or both NULL, and not TRUE otherwise.

    ``=`` alone is never true for a NULL key part, so a join on it would drop rows whose
    key has NULL parts. Built from ``=``, ``OR`` and ``IS NULL`` only (not ``IS NOT DISTINCT
    FROM``), which Spanner, the official emulator and the local server all accept.

    >>> null_safe_equals("t.`A`", "c.`A`")
    '(t.`A` = c.`A` OR (t.`A` IS NULL AND c.`A` IS NULL))'
    """
    return f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))"


def key_join_condition(columns: Sequence[str], left: str = "t", right: str = "c") -> str:
    """The join of two row sources on the full primary key, NULL parts matching NULL parts.

    >>> key_join_condition(["A"])
    '(t.`A` = c.`A` OR (t.`A` IS NULL AND c.`A` IS NULL))'
    """
    quoted = [quote_identifier(c) for c in columns]
    return " AND ".join(null_safe_equals(f"{left}.{q}", f"{right}.{q}") for q in quoted) or "TRUE"


def _part_equal(column: str, value: Any, param: str) -> str:
    return f"{column} IS NULL" if value is None else f"{column} = @{param}"


def _part_after(column: str, value: Any, param: str) -> str:
    # NULL sorts before every value: after NULL is any value; after a value, NULL never is
    # (``col > @p`` is not TRUE for a NULL col, which is what excludes it).
    return f"{column} IS NOT NULL" if value is None else f"{column} > @{param}"


def key_after_condition(columns: Sequence[str], key: Sequence[Any], types: Sequence[Any], prefix: str = "k") -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A condition for "primary key after ``key``" in ascending key order, NULL first (Spanner's order).

    Lexicographic: the first ``i`` parts equal (a NULL part matches only NULL), part ``i``
    after the key's. NULL key values are never bound as parameters (``IS NULL`` instead),
    so the SQL is valid GoogleSQL for Spanner, the official emulator and the local server.
    Returns the SQL, its parameters and their types.

    >>> key_after_condition(["A", "B"], [1, None], [param_types.INT64, param_types.STRING])[0]
    '(`A` > @k0) OR (`A` = @k0 AND `B` IS NOT NULL)'
    >>> key_after_condition(["A", "B"], [None, "x"], [param_types.INT64, param_types.STRING])[0]
    '(`A` IS NOT NULL) OR (`A` IS NULL AND `B` > @k1)'
    """
    if len(key) != len(columns):
        raise ValueError(f"a key of {len(key)} parts for {len(columns)} key columns")
    quoted = [quote_identifier(c) for c in columns]
    alternatives = []
    for i, value in enumerate(key):
        parts = [_part_equal(quoted[j], key[j], f"{prefix}{j}") for j in range(i)]
        parts.append(_part_after(quoted[i], value, f"{prefix}{i}"))
        alternatives.append("(" + " AND ".join(parts) + ")")
    params: dict[str, Any] = {}
    ptypes: dict[str, Any] = {}
    for j, value in enumerate(key):
        if value is not None:
            params[f"{prefix}{j}"] = value
            if types[j] is not None:
                ptypes[f"{prefix}{j}"] = types[j]
    return " OR ".join(alternatives) or "FALSE", params, ptypes


def key_sort_key(key: Sequence[Any]) -> tuple[tuple[bool, Any], ...]:
    """A Python sort key giving Spanner's ascending key order (NULL before every value).

    >>> sorted([(2, "b"), (None, "a"), (2, None), (1, "z")], key=key_sort_key)
    [(None, 'a'), (1, 'z'), (2, None), (2, 'b')]
    """
    return tuple((v is not None, v) if v is not None else (False, 0) for v in key)


def continuation_query(info: TableInfo, hint: str, *, limit: int, since: Checkpoint, shard: ShardFilter | None = None) -> PollQuery:
    """The rest of the group at ``since.commit_timestamp``, after ``since.key``."""
    assert since.key is not None
    ts = quote_identifier(info.commit_timestamp_column)
    shard = shard or ShardFilter("")
    cond, kparams, ktypes = key_after_condition(info.key_columns, since.key, info.key_param_types())
    keys = ", ".join(quote_identifier(c) for c in info.key_columns)
    sql = (f"SELECT * FROM {_from(info, hint)} WHERE {ts} = @prevCommitTimestamp AND ({cond}){shard.sql} "
           f"ORDER BY {keys} LIMIT @limit")
    params = {"prevCommitTimestamp": since.commit_timestamp, "limit": limit, **kparams, **shard.params}
    types = {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, **ktypes, **shard.types}
    return PollQuery(sql, params, types, continuation=True)


def with_query_eligible(provider: Any, limit: int) -> bool:
    return (isinstance(provider, FixedShardProvider) and provider.is_array
            and len(provider.values) <= WITH_QUERY_MAX_SHARDS and limit <= WITH_QUERY_MAX_LIMIT)


def with_query(info: TableInfo, hint: str, *, limit: int, provider: FixedShardProvider, since: dt.datetime) -> PollQuery:
    """One CTE per shard value (each limited), merged, limited, then joined back for the full rows."""
    ts = quote_identifier(info.commit_timestamp_column)
    shard_col = quote_identifier(provider.column)
    keys = [quote_identifier(c) for c in info.key_columns]
    narrow = ", ".join([*keys, ts])
    ctes, unions = [], []
    params: dict[str, Any] = {"prevCommitTimestamp": since, "limit": limit}
    types: dict[str, Any] = {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64}
    for i, value in enumerate(provider.values):
        ctes.append(f"shard{i} AS (SELECT {narrow} FROM {_from(info, hint)} WHERE {ts} > @prevCommitTimestamp "
                    f"AND {shard_col} = @shard{i} ORDER BY {_order_by(info)} LIMIT @limit)")
        unions.append(f"SELECT * FROM shard{i}")
        params[f"shard{i}"] = value
        types[f"shard{i}"] = provider.element_type
    join = key_join_condition(info.key_columns)
    order = ", ".join(f"c.{c}" for c in [ts, *keys])
    sql = (f"WITH {', '.join(ctes)}, changed AS ({' UNION ALL '.join(unions)} ORDER BY {_order_by(info)} LIMIT @limit) "
           f"SELECT t.* FROM changed AS c JOIN {info.table.sql} AS t ON {join} ORDER BY {order}")
    return PollQuery(sql, params, types)


@dataclass
class PollResult:
    changes: list[Change]
    read_timestamp: dt.datetime | None
    full: bool  # the query returned `limit` rows: more may be waiting
    #: The columns and types of the poll's result set (empty when it returned no rows).
    column_types: Mapping[str, str] = field(default_factory=dict)


def run_poll(database: Any, info: TableInfo, query: PollQuery, *, limit: int, shard_value: Any = None) -> PollResult:
    """Run one poll query as a strong single-use read and turn its rows into changes."""
    with database.snapshot() as snap:
        results = snap.execute_sql(query.sql, params=query.params, param_types=query.types)
        rows = list(results)
        fields = list(results.fields) if rows else []
        names = [f.name for f in fields]
        read_ts = getattr(snap, "_transaction_read_timestamp", None)
    if not rows:
        return PollResult([], read_ts, full=False)
    ts_index = names.index(info.commit_timestamp_column)
    key_index = [names.index(k) for k in info.key_columns]
    table = info.table.table
    # Typed by this result set, never by the schema found at start: one mapping per poll, shared by its rows.
    types = MappingProxyType(column_types(fields))
    decode = bytes_decoder(fields)  # the fields' types read once per result set, not per row
    changes = []
    for row in rows:
        row = decode(row)
        changes.append(Change(table, tuple(row[i] for i in key_index), dict(zip(names, row, strict=True)), row[ts_index],
                              shard_value, read_ts, column_types=types))
    return PollResult(changes, read_ts, full=len(changes) >= limit, column_types=types)
