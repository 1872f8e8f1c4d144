"""Change-stream partitions that follow load on the embedded server, through the official client.

Under ``load_splits`` a partition whose write rate stays above the split rate splits and the
split ones merge back once cold, told in each partition mode as it tells the churn timer's
splits: child partitions records, or partition start, event and end records.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict

import pytest

from tests.change_stream_reader import query, read_stream
from tests.localspanner.test_change_streams import _EXTERNAL, _database, _now
from tests.localspanner.test_mutable_key_range import MUTABLE, _read_all
from tests.localspanner.test_mutable_key_range import TABLES as MUTABLE_TABLES
from watcher.localspanner.change_streams.load import TIMELINES_SUFFIX, LoadPolicy

TABLES = ["CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX)) PRIMARY KEY (SingerId)"]


def _write(db, key: int, value: str) -> None:
    db.run_in_transaction(lambda t: t.insert_or_update("Singers", ("SingerId", "FirstName"), [(key, value)]))


def _load_then_rest(db, policy: LoadPolicy) -> tuple[object, object, dict[str, list[str]]]:
    """Slow writes (below the merge rate), then writers on many keys for a while, then rest; returns when the
    load began, the end, and key -> values in commit order. A last slow write after the rest has the server
    look at the load again with nothing else to wake it."""
    expected: dict[str, list[str]] = defaultdict(list)
    for n in range(3):  # a few records over more than a window: no split
        _write(db, 100 + n, f"slow{n}")
        expected[str(100 + n)].append(f"slow{n}")
        time.sleep(policy.window_seconds / 2)
    loaded = _now(db)
    lock = threading.Lock()

    def writer(w: int) -> None:
        deadline, n = time.monotonic() + 1.0, 0
        while time.monotonic() < deadline:
            key = w * 50 + n % 50
            _write(db, key, f"w{w}-{n}")  # one writer per key range: its order is the commit order
            with lock:
                expected[str(key)].append(f"w{w}-{n}")
            n += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(policy.window_seconds * 2)
    _write(db, 999, "last")
    expected["999"].append("last")
    time.sleep(0.2)
    return loaded, _now(db), expected


def test_load_splits_a_hot_partition_into_children_that_merge_back_when_cold(make_database, load_splits):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    loaded, end, expected = _load_then_rest(db, load_splits)
    records = read_stream(db, "S", start, end)
    seen: dict[str, list[str]] = defaultdict(list)
    for r in records:
        for m in r["mods"]:
            seen[m["keys"]["SingerId"]].append(m["new_values"]["FirstName"])
    assert seen == expected
    # The first partition split in two (one parent each) only once the load began; they merged into one child.
    [root] = query(db, "S", start, end, None)[0][2][0][2]
    split = [cp for rec in query(db, "S", start, end, root[0]) for cp in rec[2]]
    assert len(split) == 1 and split[0][0] > loaded, "the partition split before any load, or never"
    halves = split[0][2]
    assert [parents for _, parents in halves] == [[root[0]], [root[0]]]
    merged = [cp for token, _ in halves for rec in query(db, "S", split[0][0], end, token) for cp in rec[2]]
    assert len(merged) == 2 and merged[0][2] == merged[1][2] and len(merged[0][2]) == 1, "the halves never merged"
    assert sorted(merged[0][2][0][1]) == sorted(token for token, _ in halves)


def test_load_moves_key_ranges_out_of_a_hot_partition_and_back(make_database, load_splits):
    db = make_database(MUTABLE_TABLES + [MUTABLE])
    start = _now(db)
    loaded, end, expected = _load_then_rest(db, load_splits)
    parts = _read_all(db, start, end)
    assert len(parts) == 2, "one split and merge: the long-lived partition and one that a key range moved into"
    starts = [r.partition_start_record for recs in parts.values() for r in recs
              if r.WhichOneof("record") == "partition_start_record"]
    [new] = starts
    assert new.start_timestamp.ToDatetime().timestamp() > loaded.timestamp(), "a key range moved before any load"
    ended = [token for token, recs in parts.items() if recs[-1].WhichOneof("record") == "partition_end_record"]
    assert ended == list(new.partition_tokens), "the key range never moved back"
    seen: dict[str, list[str]] = defaultdict(list)
    for recs in parts.values():
        for r in recs:
            if r.WhichOneof("record") == "data_change_record":
                d = r.data_change_record
                for mod in d.mods:
                    seen[mod.keys[0].value.string_value].append((d.commit_timestamp.ToNanoseconds(),
                                                                 mod.new_values[0].value.string_value))
    assert {k: [v for _, v in sorted(vs)] for k, vs in seen.items()} == expected


def test_no_split_without_load(make_database, load_splits):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    for n in range(6):
        _write(db, n, f"v{n}")
        time.sleep(load_splits.window_seconds / 3)
    end = _now(db)
    [root] = query(db, "S", start, end, None)[0][2][0][2]
    records = query(db, "S", start, end, root[0])
    assert [len(r[0]) for r in records] == [1] * 6 and not any(r[2] for r in records)


def test_a_restarted_server_keeps_the_partitions_load_made(tmp_path, monkeypatch):
    """The partitions are history readers rely on (their tokens are in progress tables): a restart keeps them."""
    from watcher.localspanner.server import LocalSpanner

    if _EXTERNAL:
        pytest.skip("starts its own local server; SPANNER_EMULATOR_HOST is set")
    data_dir = str(tmp_path / "data")
    options = {"change_stream_split_rate": 40.0, "change_stream_merge_rate": 10.0, "change_stream_load_window_seconds": 0.3}
    with LocalSpanner(data_dir=data_dir, **options) as server:
        db = _database(server, monkeypatch, create=True)
        start = _now(db)
        _, end, _ = _load_then_rest(db, server.service.change_stream_load)
        before = read_stream(db, "S", start, end)
    assert len({r["partition_token"] for r in before}) >= 3, "load split nothing"
    with LocalSpanner(data_dir=data_dir, **options) as server:
        db = _database(server, monkeypatch, create=False)
        after = read_stream(db, "S", start, end)
        assert _timeline_files(data_dir), "the partitions were not kept beside the database"
        db.drop()
        assert not _timeline_files(data_dir), "dropping the database left its partitions behind"
    assert after == before


def _timeline_files(folder: str) -> list[str]:
    return [name for _, _, names in os.walk(folder) for name in names if name.endswith(TIMELINES_SUFFIX)]


@pytest.mark.parametrize("kwargs, message", [
    ({"split_rate": 10, "merge_rate": 10}, "merge rate"),
    ({"split_rate": 10, "merge_rate": 1, "window_seconds": 0}, "window"),
])
def test_bad_load_options_are_errors_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LoadPolicy(**kwargs)
