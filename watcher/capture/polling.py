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
continuation condition alike (a PostgreSQL database sorts NULL last unless told: its ORDER BY
says ``NULLS FIRST``).

Example:
    >>> from watcher.model import TableId
    >>> from watcher.capture.table_info import TableInfo
    >>> info = TableInfo(TableId("T"), "Ts", ("A", "B"), {"A": "INT64", "B": "STRING(MAX)", "Ts": "TIMESTAMP"})
    >>> print(simple_query(info, "", limit=10).sql)
    SELECT * FROM `T` WHERE `Ts` > @prevCommitTimestamp ORDER BY `Ts`, `A`, `B` LIMIT @limit

The same queries in a PostgreSQL database (the dialect comes with the table's :class:`TableInfo`):
double-quoted names, ``$n`` parameters, ``= ANY($n)`` for an array of shards, the hint as a comment:

    >>> from watcher.dialects import POSTGRESQL
    >>> pg = TableInfo(TableId("t"), "ts", ("a",), {"a": "INT64", "ts": "TIMESTAMP"}, dialect=POSTGRESQL)
    >>> print(simple_query(pg, "@{FORCE_INDEX=idx}", limit=10, shard=FixedShardProvider("s", [1, 2]).shard_filter(POSTGRESQL)).sql)
    SELECT * FROM "t" /*@ FORCE_INDEX=idx */ WHERE "ts" > $1 AND "s" IS NOT NULL AND "s" = ANY($2) ORDER BY "ts" NULLS FIRST, "a" NULLS FIRST LIMIT $3
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from google.cloud.spanner_v1 import param_types

from ..dialects import GOOGLE_SQL, Dialect
from ..dialects.hints import hint_sql
from ..model import Change, Checkpoint
from ..request_settings import RequestSettings, settings_or_default
from ..spanner_client import read_timestamp
from .row_values import bytes_decoder, column_types
from .shards import FixedShardProvider, ShardFilter, with_column_as_spelled
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


def _order_by(info: TableInfo, prefix: str = "") -> str:
    d = info.dialect
    return ", ".join(d.order_key(prefix + d.quote(c)) for c in (info.commit_timestamp_column, *info.key_columns))


def _from(info: TableInfo, hint: str) -> str:
    return info.dialect.table(info.table) + hint_sql(info.dialect, hint)


def _query(info: TableInfo, sql: str, params: dict[str, Any], types: dict[str, Any], continuation: bool = False) -> PollQuery:
    bound = info.dialect.bind(sql, params, types)
    return PollQuery(bound.sql, bound.params, bound.types, continuation)


def simple_query(info: TableInfo, hint: str, *, limit: int, shard: ShardFilter | None = None,
                 since: dt.datetime | None = None, until: Checkpoint | None = None,
                 columns: Sequence[str] | None = None) -> PollQuery:
    """Rows after ``since``; with ``until``, only those at or before that position (a bounded read,
    as the Spark streaming source reads a micro-batch); ``columns`` narrows the select list.

    >>> from watcher.model import TableId
    >>> info = TableInfo(TableId("T"), "Ts", ("A",), {"A": "INT64", "Ts": "TIMESTAMP"})
    >>> print(simple_query(info, "", limit=5, until=Checkpoint(dt.datetime(2024, 1, 1)), columns=["Ts", "A"]).sql)
    SELECT `Ts`, `A` FROM `T` WHERE `Ts` > @prevCommitTimestamp AND `Ts` <= @untilTimestamp ORDER BY `Ts`, `A` LIMIT @limit
    """
    ts = info.dialect.quote(info.commit_timestamp_column)
    shard = shard or ShardFilter("")
    bound, bparams, btypes = _until(info, until)
    sql = (f"SELECT {_select(info.dialect, columns)} FROM {_from(info, hint)} WHERE {ts} > @prevCommitTimestamp{bound}{shard.sql} "
           f"ORDER BY {_order_by(info)} LIMIT @limit")
    params = {"prevCommitTimestamp": since, "limit": limit, **bparams, **shard.params}
    types = {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, **btypes, **shard.types}
    return _query(info, sql, params, types)


def _select(dialect: Dialect, columns: Sequence[str] | None) -> str:
    return ", ".join(dialect.quote(c) for c in columns) if columns else "*"


def _until(info: TableInfo, until: Checkpoint | None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """`` AND`` the row's position (commit timestamp, key) is at or before ``until`` (nothing without one)."""
    if until is None:
        return "", {}, {}
    ts = info.dialect.quote(info.commit_timestamp_column)
    params: dict[str, Any] = {"untilTimestamp": until.commit_timestamp}
    types: dict[str, Any] = {"untilTimestamp": param_types.TIMESTAMP}
    if until.key is None:
        return f" AND {ts} <= @untilTimestamp", params, types
    cond, kparams, ktypes = key_at_or_before_condition(info.key_columns, until.key, info.key_param_types(), "u",
                                                       dialect=info.dialect)
    return (f" AND ({ts} < @untilTimestamp OR ({ts} = @untilTimestamp AND ({cond})))",
            {**params, **kparams}, {**types, **ktypes})


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


def key_join_condition(columns: Sequence[str], left: str = "t", right: str = "c", *, dialect: Dialect = GOOGLE_SQL) -> str:
    """The join of two row sources on the full primary key, NULL parts matching NULL parts.

    >>> key_join_condition(["A"])
    '(t.`A` = c.`A` OR (t.`A` IS NULL AND c.`A` IS NULL))'
    """
    quoted = [dialect.quote(c) for c in columns]
    return " AND ".join(null_safe_equals(f"{left}.{q}", f"{right}.{q}") for q in quoted) or "TRUE"


def _part_equal(column: str, value: Any, param: str) -> str:
    return f"{column} IS NULL" if value is None else f"{column} = @{param}"


def _part_after(column: str, value: Any, param: str) -> str:
    # NULL sorts before every value: after NULL is any value; after a value, NULL never is
    # (``col > @p`` is not TRUE for a NULL col, which is what excludes it).
    return f"{column} IS NOT NULL" if value is None else f"{column} > @{param}"


def key_after_condition(columns: Sequence[str], key: Sequence[Any], types: Sequence[Any], prefix: str = "k", *,
                        dialect: Dialect = GOOGLE_SQL) -> tuple[str, dict[str, Any], dict[str, Any]]:
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
    quoted = [dialect.quote(c) for c in columns]
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


def _part_before(column: str, value: Any, param: str) -> str | None:
    # Nothing sorts before NULL; before a value are the smaller values and NULL.
    return None if value is None else f"({column} < @{param} OR {column} IS NULL)"


def key_at_or_before_condition(columns: Sequence[str], key: Sequence[Any], types: Sequence[Any],
                               prefix: str = "u", *, dialect: Dialect = GOOGLE_SQL) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A condition for "primary key at or before ``key``" in ascending key order, NULL first.

    The mirror of :func:`key_after_condition` (whose negation would not do: a comparison with a
    NULL key part is NULL, and NOT NULL is not TRUE). Returns the SQL, its parameters and their types.

    >>> key_at_or_before_condition(["A", "B"], [1, None], [param_types.INT64, param_types.STRING])[0]
    '((`A` < @u0 OR `A` IS NULL)) OR (`A` = @u0 AND `B` IS NULL)'
    """
    if len(key) != len(columns):
        raise ValueError(f"a key of {len(key)} parts for {len(columns)} key columns")
    quoted = [dialect.quote(c) for c in columns]
    alternatives = []
    for i, value in enumerate(key):
        before = _part_before(quoted[i], value, f"{prefix}{i}")
        if before is not None:
            parts = [_part_equal(quoted[j], key[j], f"{prefix}{j}") for j in range(i)]
            alternatives.append("(" + " AND ".join([*parts, before]) + ")")
    alternatives.append("(" + (" AND ".join(_part_equal(quoted[j], key[j], f"{prefix}{j}") for j in range(len(key)))
                               or "TRUE") + ")")
    params: dict[str, Any] = {}
    ptypes: dict[str, Any] = {}
    for j, value in enumerate(key):
        if value is not None:
            params[f"{prefix}{j}"] = value
            if types[j] is not None:
                ptypes[f"{prefix}{j}"] = types[j]
    return " OR ".join(alternatives), params, ptypes


def key_sort_key(key: Sequence[Any]) -> tuple[tuple[bool, Any], ...]:
    """A Python sort key giving Spanner's ascending key order (NULL before every value).

    >>> sorted([(2, "b"), (None, "a"), (2, None), (1, "z")], key=key_sort_key)
    [(None, 'a'), (1, 'z'), (2, None), (2, 'b')]
    """
    return tuple((v is not None, v) if v is not None else (False, 0) for v in key)


def continuation_query(info: TableInfo, hint: str, *, limit: int, since: Checkpoint, shard: ShardFilter | None = None,
                       until: Checkpoint | None = None, columns: Sequence[str] | None = None) -> PollQuery:
    """The rest of the group at ``since.commit_timestamp``, after ``since.key`` (at or before
    ``until`` when given, as :func:`simple_query`)."""
    assert since.key is not None
    ts = info.dialect.quote(info.commit_timestamp_column)
    shard = shard or ShardFilter("")
    cond, kparams, ktypes = key_after_condition(info.key_columns, since.key, info.key_param_types(), dialect=info.dialect)
    bound, bparams, btypes = _until(info, until)
    keys = ", ".join(info.dialect.order_key(info.dialect.quote(c)) for c in info.key_columns)
    sql = (f"SELECT {_select(info.dialect, columns)} FROM {_from(info, hint)} WHERE {ts} = @prevCommitTimestamp AND ({cond}){bound}"
           f"{shard.sql} ORDER BY {keys} LIMIT @limit")
    params = {"prevCommitTimestamp": since.commit_timestamp, "limit": limit, **kparams, **bparams, **shard.params}
    types = {"prevCommitTimestamp": param_types.TIMESTAMP, "limit": param_types.INT64, **ktypes, **btypes, **shard.types}
    return _query(info, sql, params, types, continuation=True)


def with_query_eligible(provider: Any, limit: int) -> bool:
    return (isinstance(provider, FixedShardProvider) and provider.is_array
            and len(provider.values) <= WITH_QUERY_MAX_SHARDS and limit <= WITH_QUERY_MAX_LIMIT)


def with_query(info: TableInfo, hint: str, *, limit: int, provider: FixedShardProvider, since: dt.datetime) -> PollQuery:
    """One CTE per shard value (each limited), merged, limited, then joined back for the full rows."""
    provider = with_column_as_spelled(provider, info.column_types)
    ts = info.dialect.quote(info.commit_timestamp_column)
    shard_col = info.dialect.quote(provider.column, "shard column")
    keys = [info.dialect.quote(c) for c in info.key_columns]
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
    join = key_join_condition(info.key_columns, dialect=info.dialect)
    order = _order_by(info, "c.")
    sql = (f"WITH {', '.join(ctes)}, changed AS ({' UNION ALL '.join(unions)} ORDER BY {_order_by(info)} LIMIT @limit) "
           f"SELECT t.* FROM changed AS c JOIN {info.dialect.table(info.table)} AS t ON {join} ORDER BY {order}")
    return _query(info, sql, params, types)


@dataclass
class PollResult:
    changes: list[Change]
    read_timestamp: dt.datetime | None
    full: bool  # the query returned `limit` rows: more may be waiting
    #: The columns and types of the poll's result set (empty when it returned no rows).
    column_types: Mapping[str, str] = field(default_factory=dict)


def run_poll(database: Any, info: TableInfo, query: PollQuery, *, limit: int, shard_value: Any = None,
             request_settings: RequestSettings | None = None) -> PollResult:
    """Run one poll query as a strong single-use read and turn its rows into changes.

    The query carries ``request_settings``' request tag and priority (default: the default tag, no priority).
    """
    options = settings_or_default(request_settings).request_options()
    with database.snapshot() as snap:
        results = snap.execute_sql(query.sql, params=query.params, param_types=query.types, request_options=options)
        rows = list(results)
        fields = list(results.fields) if rows else []
        names = [f.name for f in fields]
        read_ts = read_timestamp(results)
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
