"""Keys with NULL parts, many rows per commit timestamp, any LIMIT: a TableWatcher delivers
every row exactly once, in (commit timestamp, key) order with NULL first, with the WITH-query
fallback forced on and off, and resumes exactly from a stored position whose key has NULLs.

Deterministic: a fixed list of seeds; each seed draws a table (1-4 nullable INT64/STRING key
columns), rows with random NULL key parts written several per transaction (for odd seeds on
the embedded server, with transactions sharing commit timestamps too), and a LIMIT.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from google.cloud import spanner

from tests.watcher.core_support import Collector, wait_until
from watcher import (
    MIN_TIMESTAMP,
    Checkpoint,
    FixedShardProvider,
    InMemoryCommitTimestampRepository,
    RetryPolicy,
    SpannerCommitTimestampRepository,
    State,
    TableId,
    TableWatcher,
)
from watcher.capture.polling import key_sort_key

SEEDS = list(range(20))
SHARDS = [0, 1, 2]
#: Few values per type, so keys share prefixes and NULLs meet every other value at every depth.
VALUES = {"INT64": [None, -3, 0, 1, 2**62], "STRING(MAX)": [None, "", "a", "b", "é"]}
FAST = RetryPolicy(initial=0.001, maximum=0.01)


@dataclass
class Case:
    seed: int
    table: str
    columns: list[str]
    limit: int
    keys: list[tuple[Any, ...]]               # in delivery order: (commit timestamp, key)
    commit_of: dict[tuple[Any, ...], Any]


def _draw(seed: int) -> tuple[str, list[str], list[str], int, list[list[tuple[Any, ...]]]]:
    rng = random.Random(seed)
    table = f"N{seed}"
    types = [rng.choice(list(VALUES)) for _ in range(rng.randint(1, 4))]
    columns = [f"K{i}" for i in range(len(types))]
    keys: dict[tuple[Any, ...], None] = {}
    for _ in range(rng.randint(20, 45)):
        keys[tuple(rng.choice(VALUES[t]) for t in types)] = None
    pending = list(keys)
    rng.shuffle(pending)
    transactions = []
    while pending:
        size = rng.randint(1, 8)
        transactions.append(pending[:size])
        pending = pending[size:]
    ddl = (f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in zip(columns, types, strict=True))}, "
           "ShardId INT64 NOT NULL, V INT64, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) "
           f"PRIMARY KEY ({', '.join(columns)})")
    return table, columns, [ddl], rng.randint(1, 7), transactions


@pytest.fixture(scope="module")
def cases(instance, _server) -> Any:
    """One database holding one table per seed, filled; dropped after the module.

    On the embedded server, odd seeds are written with shared commit timestamps on, so their
    transactions (blind inserts of distinct keys) share commit timestamps: larger groups.
    """
    drawn = {seed: _draw(seed) for seed in SEEDS}
    db = instance.database(f"nullkeys-{uuid.uuid4().hex[:8]}", ddl_statements=[d for v in drawn.values() for d in v[2]])
    db.create().result(60)
    out: dict[int, Case] = {}
    for seed, (table, columns, _, limit, transactions) in drawn.items():
        rng = random.Random(seed + 1000)
        commit_of = {}
        shared = _server is not None and seed % 2 == 1
        before = shared and _server.clock.share_timestamps
        if shared:
            _server.clock.share_timestamps = True
        try:
            for txn in transactions:
                with db.batch() as batch:
                    batch.insert(table, (*columns, "ShardId", "V", "Ts"),
                                 [(*k, rng.choice(SHARDS), i, spanner.COMMIT_TIMESTAMP) for i, k in enumerate(txn)])
                commit_of.update({k: batch.committed for k in txn})
        finally:
            if shared:
                _server.clock.share_timestamps = before
        if shared and len(transactions) > 1:
            assert len(set(commit_of.values())) < len(transactions)
        order = sorted(commit_of, key=lambda k: (commit_of[k], key_sort_key(k)))
        out[seed] = Case(seed, table, columns, limit, order, commit_of)
    yield db, out
    db.drop()


def _watcher(db: Any, case: Case, *, with_query: bool, **kw: Any) -> TableWatcher:
    kw.setdefault("checkpoints", InMemoryCommitTimestampRepository())
    kw.setdefault("initial_timestamp", MIN_TIMESTAMP)
    # 0 s: always "behind", so every poll without a position inside a group is the WITH query; never
    # (inf) for the simple variant: its first poll starts at MIN_TIMESTAMP, 2,000 years (6e10 s) behind.
    return TableWatcher(db, case.table, shard_provider=FixedShardProvider("ShardId", SHARDS), limit=case.limit,
                        poll_interval=0.005, retry_policy=FAST,
                        fallback_to_with_query_seconds=0 if with_query else math.inf, **kw)


def _collect(w: TableWatcher, got: Collector, n: int) -> None:
    w.add_callback(got)
    w.start()
    try:
        got.wait_for(n, timeout=10)
        time.sleep(0.03)  # a repeat would arrive by now
    finally:
        w.stop(timeout=5)
    assert w.failure is None


@pytest.mark.parametrize("with_query", [True, False], ids=["with-query", "simple"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_key_delivered_once_in_spanner_order(cases, seed, with_query):
    db, all_cases = cases
    case = all_cases[seed]
    got, polls = Collector(), []
    w = _watcher(db, case, with_query=with_query)
    w.add_poll_listener(polls.append)
    _collect(w, got, len(case.keys))
    assert got.keys() == case.keys
    assert [c.commit_timestamp for c in got.changes] == [case.commit_of[k] for k in case.keys]
    # Every poll, from the first (at MIN_TIMESTAMP, 2,000 years behind) on, used the query of its variant.
    assert polls and {p.using_with_query for p in polls} == {with_query}
    assert w.stats()["using_with_query"] is with_query


@pytest.mark.parametrize("with_query", [True, False], ids=["with-query", "simple"])
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_restart_from_a_stored_position_with_null_key_parts_resumes_exactly(cases, seed, with_query):
    """A callback fails at row k; the Spanner checkpoint store holds the key of row k-1 (NULL
    parts included); a new watcher on that store delivers rows k.. exactly once."""
    db, all_cases = cases
    case = all_cases[seed]
    k = random.Random(seed).randint(1, len(case.keys) - 1)
    repo = SpannerCommitTimestampRepository(db, table=f"Checkpoints{seed}{'W' if with_query else 'S'}")

    def fail_at_k(change: Any, index: int) -> None:
        if index == k:
            raise RuntimeError("stop here")

    first = Collector(fail_at_k)
    w = _watcher(db, case, with_query=with_query, checkpoints=repo)
    w.add_callback(first)
    w.start()
    try:
        wait_until(lambda: w.state == State.FAILED, timeout=20)
    finally:
        w.stop(timeout=5)
    assert first.keys() == case.keys[:k]
    stored = repo.get(TableId(case.table), w.shard_value)
    last = case.keys[k - 1]
    assert stored is not None and stored.commit_timestamp == case.commit_of[last]
    assert stored.key in (last, None)  # None: row k-1 closed its commit timestamp's group

    again = Collector()
    w2 = _watcher(db, case, with_query=with_query, checkpoints=repo)
    _collect(w2, again, len(case.keys) - k)
    assert again.keys() == case.keys[k:]


def test_the_spanner_checkpoint_store_keeps_null_key_parts(cases):
    db, _ = cases
    repo = SpannerCommitTimestampRepository(db, table="CheckpointsNull")
    ts = MIN_TIMESTAMP
    for key in [(None,), (None, "a", None), (0, None, "", None), (None, None, None, None)]:
        repo.set(TableId("T"), Checkpoint(ts, key))
        again = SpannerCommitTimestampRepository(db, table="CheckpointsNull").get(TableId("T"))
        assert again == Checkpoint(ts, key)
        assert again is not None and again.key is not None and list(again.key) == list(key)
