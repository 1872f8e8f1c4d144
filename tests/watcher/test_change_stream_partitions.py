"""The partition scheduler (Spanner's order of reading partitions: a child after all its parents) and the progress rows (pure, no server)."""

from __future__ import annotations

import datetime as dt

import pytest

from watcher.capture.change_streams.partitions import PartitionScheduler
from watcher.capture.change_streams.progress import (
    CREATED,
    FINISHED,
    MAX_DELIVERED_IDS,
    RUNNING,
    InMemoryProgressStore,
    PartitionProgress,
    pruned,
)


def tokens(partitions):
    return [p.token for p in partitions]


def test_the_first_partitions_are_ready_at_once_and_handed_out_once():
    s = PartitionScheduler()
    s.add("a", (), 0)
    s.add("b", (), 0)
    assert tokens(s.take_ready()) == ["a", "b"]
    assert s.take_ready() == [] and s.active == ["a", "b"]


def test_a_split_child_starts_when_its_one_parent_finished():
    s = PartitionScheduler()
    s.add("a", (), 0)
    s.take_ready()
    s.add("a1", ("a",), 1)
    s.add("a2", ("a",), 1)
    assert s.take_ready() == [] and s.waiting == ["a1", "a2"]
    s.finish("a")
    assert tokens(s.take_ready()) == ["a1", "a2"]


def test_a_merged_child_starts_only_after_all_its_parents_finished_and_is_read_once():
    s = PartitionScheduler()
    for t in ("a", "b", "c"):
        s.add(t, (), 0)
    s.take_ready()
    assert s.add("abc", ("a", "b", "c"), 1) is True
    assert s.add("abc", ("a", "b", "c"), 1) is False   # reported again by the next parent
    s.finish("a")
    s.finish("b")
    assert s.take_ready() == []
    assert s.add("abc", ("a", "b", "c"), 1) is False
    s.finish("c")
    assert tokens(s.take_ready()) == ["abc"]
    assert s.take_ready() == []


def test_a_child_whose_parent_is_not_known_yet_waits():
    s = PartitionScheduler()
    s.add("a", (), 0)
    s.take_ready()
    s.add("ab", ("a", "b"), 2)            # b's own parent has not reported b yet
    s.finish("a")
    assert s.take_ready() == []
    s.add("b", (), 1)
    assert tokens(s.take_ready()) == ["b"]
    s.finish("b")
    assert tokens(s.take_ready()) == ["ab"]


def test_a_released_partition_is_ready_again_and_a_finished_one_never():
    s = PartitionScheduler()
    s.add("a", (), 0)
    s.add("b", (), 0)
    s.take_ready()
    s.release("a")
    s.finish("b")
    assert tokens(s.take_ready()) == ["a"]
    assert s.finished == ["b"] and not s.done()
    s.finish("a")
    assert s.done() and s.unfinished == []


def test_restored_progress_resumes_unfinished_partitions_and_starts_children_of_finished_parents():
    """The state after a crash: a and b finished, their merged child c CREATED; d (child of x) RUNNING, x finished."""
    s = PartitionScheduler()
    s.restore("a", (), 0, finished=True)
    s.restore("b", (), 0, finished=True)
    s.restore("c", ("a", "b"), 1, finished=False)
    s.restore("x", (), 0, finished=True)
    s.restore("d", ("x",), 1, finished=False)
    s.restore("e", ("d",), 2, finished=False)
    assert tokens(s.take_ready()) == ["c", "d"]
    assert s.waiting == ["e"]


def test_a_forgotten_parent_leaves_its_merged_child_waiting_for_the_other_parent_only():
    s = PartitionScheduler()
    s.add("a", (), 0)
    s.add("b", (), 0)
    s.take_ready()
    s.add("ab", ("a", "b"), 1)
    s.finish("a")
    s.forget("a")
    assert s.partition("ab").parents == ("b",) and s.take_ready() == []
    with pytest.raises(ValueError, match="not finished"):
        s.forget("b")
    s.finish("b")
    s.forget("b")
    assert tokens(s.take_ready()) == ["ab"] and s.forgotten == 2 and s.finished == []


def test_fewer_slots_than_ready_partitions_take_turns_in_line():
    """Slots: the ones never read first, then those that gave up their slot, at the back; a held one
    (waiting at a move-in) is never handed out, and the sources such ones wait for go first."""
    s = PartitionScheduler()
    for t in ("home", "m1", "m2"):
        s.add(t, (), 0)
    assert tokens(s.take_ready(1)) == ["home"]
    s.yield_turn("home")                                # its turn is over: to the back
    assert tokens(s.take_ready(1)) == ["m1"] and tokens(s.ready()) == ["m2", "home"]
    s.yield_turn("m1")
    assert tokens(s.take_ready(1, held={"m2"})) == ["home"]          # m2 waits at a move-in
    s.yield_turn("home")
    assert tokens(s.take_ready(1, held={"m2"}, first={"home"})) == ["home"]  # m2's source goes first
    s.release("home")                                   # stopped, not yielded: keeps its place
    assert tokens(s.take_ready()) == ["m2", "m1", "home"] and s.take_ready() == []


def test_a_forgotten_partition_named_again_is_not_read_again():
    """A partition read again from before a partition start record meets the record again: its
    partitions that finished and were pruned meanwhile are not added (nor read) a second time."""
    s = PartitionScheduler()
    s.add("home", (), 0)
    assert s.add("mover", (), 1)
    s.take_ready()
    s.finish("mover")
    s.forget("mover")
    assert s.add("mover", (), 1) is False and s.take_ready() == [] and s.waiting == []


def test_nothing_known_is_not_done():
    assert not PartitionScheduler().done()


# --- progress rows ----------------------------------------------------------------------------------------------

def test_progress_moves_and_keeps_the_ids_delivered_at_its_watermark():
    p = PartitionProgress("t", (), 10, 10, CREATED)
    p1 = p.moved(20, ["tx1/0", "tx1/1"])
    assert (p1.watermark, p1.state, p1.delivered_at_watermark) == (20, RUNNING, ("tx1/0", "tx1/1"))
    p2 = p1.moved(20, ["tx2/0", "tx1/1"])                  # more records at the same commit timestamp
    assert p2.delivered_at_watermark == ("tx1/0", "tx1/1", "tx2/0")
    p3 = p2.moved(30)                                       # a heartbeat: nothing at 30 delivered yet
    assert p3.delivered_at_watermark == ()
    done = p3.moved(40, ["tx3/0"]).finished()
    assert done.state == FINISHED and done.delivered_at_watermark == () and done.watermark == 40


def test_too_many_ids_at_one_watermark_are_dropped_so_a_restart_repeats_instead_of_storing_them():
    p = PartitionProgress("t", (), 10, 10, RUNNING).moved(20, [f"tx/{i}" for i in range(MAX_DELIVERED_IDS + 1)])
    assert p.delivered_at_watermark == ()


@pytest.fixture(params=["memory", "spanner"])
def store(request):
    """Every progress store: the in-memory one, and the Spanner table (created from migration V004)."""
    if request.param == "memory":
        return InMemoryProgressStore()
    from watcher.capture.change_streams.spanner_progress import SpannerProgressStore

    spanner_store = SpannerProgressStore(request.getfixturevalue("make_database")())
    spanner_store.initialize()
    spanner_store.initialize()  # idempotent
    return spanner_store


def _ts(second):
    return dt.datetime(2024, 1, 1, 0, 0, second, tzinfo=dt.UTC)


def test_a_store_keeps_one_row_per_stream_watcher_and_token(store):
    a = PartitionProgress("a", (), _ts(1), _ts(1), CREATED)
    store.save("S", "w1", [a, PartitionProgress("b", ("a", "x"), _ts(2), _ts(2), CREATED)])
    store.save("S", "w1", [a.moved(_ts(5), ["x/0", "y/1"])])
    store.save("S", "w2", [a])
    store.save("T", "w1", [a.finished()])
    rows = {p.token: p for p in store.load("S", "w1")}
    assert set(rows) == {"a", "b"}
    assert (rows["a"].watermark, rows["a"].state, rows["a"].delivered_at_watermark) == (_ts(5), RUNNING, ("x/0", "y/1"))
    assert rows["b"].parents == ("a", "x") and rows["b"].start == _ts(2)
    assert [p.watermark for p in store.load("S", "w2")] == [_ts(1)]
    assert [p.state for p in store.load("T", "w1")] == [FINISHED]
    assert store.load("S", "nobody") == []


def test_a_prune_deletes_finished_rows_and_rewrites_their_childrens_parents_together(store):
    a, b = PartitionProgress("a", (), _ts(1), _ts(3), FINISHED), PartitionProgress("b", (), _ts(1), _ts(2), RUNNING)
    ab = PartitionProgress("ab", ("a", "b"), _ts(3), _ts(3), CREATED)
    store.save("S", "w", [a, b, ab])
    store.save("S", "other", [a])
    store.prune("S", "w", ["a"], pruned([a, b, ab], ["a"]))
    rows = {p.token: p for p in store.load("S", "w")}
    assert set(rows) == {"b", "ab"} and rows["ab"].parents == ("b",) and rows["ab"].state == CREATED
    assert [p.token for p in store.load("S", "other")] == ["a"]          # another watcher's rows stay


def test_the_spanner_store_without_its_table_says_to_migrate(make_database):
    from watcher.capture.change_streams.spanner_progress import SpannerProgressStore
    from watcher.errors import CheckpointError

    with pytest.raises(CheckpointError, match="WATCHER_CHANGE_STREAM_PARTITIONS does not exist.*spanner-watcher migrate"):
        SpannerProgressStore(make_database(), create_if_missing=False).initialize()


# --- batching: what a partition does with what arrived ----------------------------------------------------------

def _data(ts, txn="tx", seq="00000000", table="T"):
    from watcher.capture.change_streams.records import DataChangeRecord

    return DataChangeRecord(ts, seq, txn, True, table, (), (), "INSERT", "NEW_ROW", 1, 1, "", False)


def test_steps_cut_at_child_partitions_and_end_with_the_query():
    from watcher.capture.change_streams.batching import steps
    from watcher.capture.change_streams.reader import END
    from watcher.capture.change_streams.records import ChildPartition, ChildPartitionsRecord, HeartbeatRecord

    children = ChildPartitionsRecord(9, "00000000", (ChildPartition("c", ("p",)),))
    got = steps([[_data(1), HeartbeatRecord(2)], [_data(3)], [children], [_data(4, "tx2")], END])
    assert [([r.commit_timestamp for r in s.records], s.heartbeat, s.children, s.end) for s in got] == [
        ([1, 3], 2, children, False), ([4], None, None, True)]
    error = RuntimeError("stream broke")
    assert [(len(s.records), s.error) for s in steps([[_data(1)], error])] == [(1, error)]
    assert steps([]) == [] and steps([[]]) == []


def test_key_range_steps_go_in_sequence_order_and_cut_at_partition_records():
    """MUTABLE_KEY_RANGE: what arrived is processed in (timestamp, record_sequence) order; a partition
    start record and a partition event record each end a step; a partition end record ends the partition."""
    from watcher.capture.change_streams.batching import steps
    from watcher.capture.change_streams.key_range_records import (
        PartitionEndRecord,
        PartitionEventRecord,
        PartitionStartRecord,
    )
    from watcher.capture.change_streams.reader import END

    start = PartitionStartRecord(5, "00000000", ("q",))
    move = PartitionEventRecord(5, "00000001", "p", (), ("q",))
    end = PartitionEndRecord(8, "00000001", "p")
    got = steps([[_data(5, "tx", "00000002")], [move], [_data(3), start], [_data(7), end], [_data(9)], END],
                in_sequence_order=True)
    assert [([(r.commit_timestamp, r.record_sequence) for r in s.records], s.starts, s.event, s.end) for s in got] == [
        ([(3, "00000000")], start, None, False), ([], None, move, False), ([(5, "00000002"), (7, "00000000")], None, None, True)]


def test_steps_drop_records_delivered_before_a_restart_and_the_progress_tables_own():
    from watcher.capture.change_streams.batching import steps

    items = [[_data(5, "a"), _data(5, "b"), _data(6, "a"), _data(5, "c", table="WATCHER_CHANGE_STREAM_PARTITIONS")]]
    [step] = steps(items, skip_at=5, skip_ids={"a/00000000"}, ignore_tables=("watcher_change_stream_partitions",))
    assert [(r.commit_timestamp, r.server_transaction_id) for r in step.records] == [(5, "b"), (6, "a")]
    assert steps([[_data(5, table="WATCHER_CHANGE_STREAM_PARTITIONS")]],
                 ignore_tables=("WATCHER_CHANGE_STREAM_PARTITIONS",)) == []
