"""ChangeStreamWatcher on a MUTABLE_KEY_RANGE stream: per-key commit order across key-range moves.

The embedded server moves key ranges out of a long-lived partition into new ones and back
under churn. The new partitions are made slow (their callbacks sleep), so without the wait at
a move-in the long-lived partition would deliver the newer versions of keys that moved back
before the new partition delivered their older ones. With fewer slots than live partitions they
take turns, and none waits at a move-in for a source that has no slot.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest

from watcher import ChangeStreamWatcher, InMemoryProgressStore

from .core_support import Collector
from .test_change_stream_watcher import STREAMS, TABLES, by_key, ident, write_versions


def test_a_partition_waits_at_a_move_in_until_its_slow_source_caught_up(make_database, churn):
    db = make_database(TABLES + [STREAMS["MUTABLE_KEY_RANGE"]])
    first: list[str] = []

    def action(change, _index) -> None:
        if not first:
            first.append(change.partition_token)
        if change.partition_token != first[0]:
            time.sleep(0.02)

    got = Collector(action)
    w = ChangeStreamWatcher(db, "S", heartbeat=dt.timedelta(seconds=1), progress=InMemoryProgressStore(),
                            max_batch_rows=2)
    w.add_callback(got)
    with w:
        written = write_versions(db, 1.2, keys=4)
        total = sum(map(len, written.values()))
        got.wait_for(total, timeout=30)
        time.sleep(0.3)
    assert len({c.partition_token for c in got.changes}) >= 2, "no key range moved"
    assert by_key(got.changes) == written
    assert len({ident(c) for c in got.changes}) == len(got.changes) == total


@pytest.mark.parametrize("trigger", ["churn", "load_splits"])
def test_one_slot_for_two_live_partitions_still_delivers_every_change_once_in_key_order(make_database, request,
                                                                                        trigger):
    """max_concurrent_partitions=1 while key ranges move between two live partitions (by the timer or by the
    write load): the partitions take turns on the one slot, one waiting at a move-in gives it up to its
    source, and every change still comes once, each key's in commit order."""
    request.getfixturevalue(trigger)
    db = make_database(TABLES + [STREAMS["MUTABLE_KEY_RANGE"]])
    w = ChangeStreamWatcher(db, "S", heartbeat=dt.timedelta(seconds=1), progress=InMemoryProgressStore(),
                            max_concurrent_partitions=1, max_batch_rows=5)
    got = Collector()
    w.add_callback(got)
    with w:
        written = write_versions(db, 1.5)
        total = sum(map(len, written.values()))
        got.wait_for(total, timeout=20)
        time.sleep(0.3)  # nothing more may come
        assert w.failure is None
    assert len({c.partition_token for c in got.changes}) >= 2, "no key range moved"
    assert by_key(got.changes) == written
    assert len({ident(c) for c in got.changes}) == len(got.changes) == total
