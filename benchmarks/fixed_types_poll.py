"""The poll path as it was before rows were typed by their own result set, for side-by-side timing only.

On that path a change's values were typed by the table's schema found when the watcher
started (``TableInfo.column_types``): the BYTES columns to decode were fixed then, and a
:class:`~watcher.model.Change` carried no types of its own (a staging sink looked them up by
table). :func:`fixed_types_run_poll` rebuilds that path with the same query, the same
snapshot and the same :class:`~watcher.capture.polling.PollResult`, so that
``watcher_delivery`` can run the watcher with either path in one process against one
server, round by round; :func:`old_typing` swaps it into the poll cycle for one run.
This is benchmark code: the library itself never types rows by a cached schema.

Example:
    >>> byte_kinds({"Id": "INT64", "Picture": "BYTES(MAX)", "Pics": "ARRAY<BYTES(10)>"})
    {'Picture': 1, 'Pics': 2}
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from watcher.capture import poll_cycle
from watcher.capture.polling import PollQuery, PollResult
from watcher.capture.table_info import TableInfo
from watcher.model import Change


def byte_kinds(column_types: Mapping[str, str]) -> dict[str, int]:
    """Column -> 1 for BYTES, 2 for ARRAY<BYTES>, from types as ``SPANNER_TYPE`` prints them."""
    kinds = {}
    for name, spanner_type in column_types.items():
        if spanner_type.startswith("BYTES"):
            kinds[name] = 1
        elif spanner_type.startswith("ARRAY<BYTES"):
            kinds[name] = 2
    return kinds


def _decode(v: Any) -> Any:
    return None if v is None else base64.b64decode(v)


def fixed_types_run_poll(database: Any, info: TableInfo, query: PollQuery, *, limit: int, shard_value: Any = None) -> PollResult:
    """:func:`watcher.capture.polling.run_poll` with BYTES decoded by ``info``'s types and no types on the changes."""
    with database.snapshot() as snap:
        results = snap.execute_sql(query.sql, params=query.params, param_types=query.types)
        rows = list(results)
        names = [f.name for f in results.fields] if rows else []  # positions only; the types come from info
        read_ts = getattr(snap, "_transaction_read_timestamp", None)
    if not rows:
        return PollResult([], read_ts, full=False)
    kinds = byte_kinds(info.column_types)
    decode = [(i, kinds[n]) for i, n in enumerate(names) if n in kinds]
    ts_index = names.index(info.commit_timestamp_column)
    key_index = [names.index(k) for k in info.key_columns]
    table = info.table.table
    changes = []
    for row in rows:
        if decode:
            row = list(row)
            for i, kind in decode:
                if kind == 1:
                    row[i] = _decode(row[i])
                elif row[i] is not None:
                    row[i] = [_decode(v) for v in row[i]]
        changes.append(Change(table, tuple(row[i] for i in key_index), dict(zip(names, row, strict=True)), row[ts_index],
                              shard_value, read_ts))
    return PollResult(changes, read_ts, full=len(changes) >= limit)


@contextlib.contextmanager
def old_typing() -> Iterator[None]:
    """Within the block, watchers poll with :func:`fixed_types_run_poll` (not thread-safe: one run at a time)."""
    new = poll_cycle.run_poll
    poll_cycle.run_poll = fixed_types_run_poll
    try:
        yield
    finally:
        poll_cycle.run_poll = new
