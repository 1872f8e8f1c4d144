"""A run's tally: what each batch file held and how many changes each table, date and outcome got.

A run needs two small summaries of the rows it classified: what each batch file held (to
tell a truncated or corrupt file, and for the processed-batches log and the watermarks),
and how many changes each table, commit date and mod_type got (the run's report, and which
changelog partitions late changes must be checked against). An engine aggregates its kept
rows into groups (batch x table x date x outcome; few) and :func:`from_groups` merges them
here, the same for every engine (the Spark engine's aggregation: :mod:`.spark.tally`).

A batch's ``seq`` numbers must be exactly 0..n-1: the groups give the sums
:func:`...rules.batch_seq.seq_ok` compares.

Example:
    >>> merged = merge_batch([{"n": 2, "bad": 0, "min_seq": 0, "max_seq": 1, "sum_seq": 1, "sum_seq2": 1,
    ...                        "max_v": 1, "table_name": "T", "shard": None, "read_ts_ns": 0, "read_method": "cdc",
    ...                        "max_commit_ns": 0}])
    >>> merged["n"], merged["sum_seq2"]
    (2, 1)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


def nanos_text(nanos: int | None) -> str | None:
    """Nanoseconds since the epoch as the job's timestamp text (nine fractional digits).

    Example:
        >>> nanos_text(1_714_521_600_000_001_002)
        '2024-05-01T00:00:00.000001002Z'
    """
    if nanos is None:
        return None
    seconds, fraction = divmod(nanos, 1_000_000_000)
    when = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}Z"


@dataclass(frozen=True)
class OutcomeCount:
    """Changes of one table, commit date, mod_type and fate (duplicate, late) in a run."""

    table_name: str | None
    commit_date: str | None
    mod_type: str | None
    is_dup: bool
    is_late: bool
    count: int
    #: Duplicates that may replace a polled row of an earlier run (:mod:`...rules.supersede`).
    replaces: bool = False


@dataclass
class Tally:
    """What one aggregation over the classified rows found (see the module docstring)."""

    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: list[OutcomeCount] = field(default_factory=list)
    #: Table -> its keys' final rows in the window (the state rows of a whole rewrite).
    state_rows: dict[str, int] = field(default_factory=dict)
    #: Table -> keys whose final row is new (the state rows of a delta).
    new_state_rows: dict[str, int] = field(default_factory=dict)
    #: Tables with partial new rows (:mod:`...rules.partial_rows`).
    partial_tables: set[str] = field(default_factory=set)

    @property
    def tables(self) -> set[str]:
        """The tables the run's new rows name."""
        return {c.table_name for c in self.counts if c.table_name}


def from_groups(groups: Iterable[dict[str, Any]]) -> Tally:
    """Build the tally from the aggregation's groups (plain dicts; tests feed their own)."""
    result = Tally()
    per_batch: dict[str, list[dict[str, Any]]] = {}
    outcomes: dict[tuple[Any, ...], int] = {}
    for g in groups:
        for name, counts in (("finals", result.state_rows), ("new_finals", result.new_state_rows)):
            if g["table_name"] is not None and g[name]:
                counts[g["table_name"]] = counts.get(g["table_name"], 0) + g[name]
        if g["_src"] != 1:
            continue
        if g.get("partials") and g["table_name"] is not None:
            result.partial_tables.add(g["table_name"])
        per_batch.setdefault(g["batch"], []).append(g)
        key = (g["table_name"], g["commit_date"], g["mod_type"], bool(g["_is_dup"]), bool(g["_is_late"]),
               bool(g.get("_replaces")))
        outcomes[key] = outcomes.get(key, 0) + g["n"]
    result.batches = {batch: merge_batch(parts) for batch, parts in per_batch.items()}
    result.counts = [OutcomeCount(table, date, mod, dup, late, n, replaces)
                     for (table, date, mod, dup, late, replaces), n in sorted(outcomes.items(), key=_sort_key)]
    return result


def _sort_key(item: tuple[tuple[Any, ...], int]) -> tuple[str, ...]:
    return tuple("" if v is None else str(v) for v in item[0])


def _total(values: list[Any]) -> Any:
    return None if any(v is None for v in values) else sum(values)


def merge_batch(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One batch's groups merged: counts and sums added, extremes kept, the first names taken."""
    def pick(name: str, choose: Any) -> Any:
        values = [p[name] for p in parts if p.get(name) is not None]
        return choose(values) if values else None

    return {
        "n": sum(p["n"] for p in parts), "bad": sum(p["bad"] or 0 for p in parts),
        "min_seq": pick("min_seq", min), "max_seq": pick("max_seq", max),
        "sum_seq": _total([p["sum_seq"] for p in parts]), "sum_seq2": _total([p["sum_seq2"] for p in parts]),
        "max_v": pick("max_v", max), "table": pick("table_name", min), "tables": sorted({p["table_name"] for p in parts
                                                                                          if p["table_name"]}),
        "shard": pick("shard", min), "read_ts": nanos_text(pick("read_ts_ns", max)), "read_method": pick("read_method", min),
        "max_commit": nanos_text(pick("max_commit_ns", max)), "min_commit": nanos_text(pick("min_commit_ns", min)),
        "stream_mark": nanos_text(pick("stream_mark_ns", max)),
    }
