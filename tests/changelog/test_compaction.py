"""The current state's layers merged apart from the runs (watcher.changelog.compaction).

Runs given a compactor never rewrite a table's whole state because its deltas piled up: the
compactor merges the layers on its own thread and the next run commits the merged base. After
every run the state and the classification must be what they would be without it, also when a
merge is dropped (a run rewrote the table first), fails, or is never adopted (the process died).
"""

from __future__ import annotations

import json
import os
import random
import threading

import pytest

from tests.changelog.support import SINGERS_TYPES, singer
from watcher.changelog import Changelog, compaction, current_state, manifest
from watcher.changelog.fs import HadoopFS

KEY = ["SingerId"]


class Truth:
    """Stages a few changes of Singers per run and knows what the state must be."""

    def __init__(self, stager, seed: int = 3) -> None:
        self.stager, self.rng, self.clock = stager, random.Random(seed), 1_000
        self.rows = {k: singer(k, f"v0-{k}") for k in range(30)}
        stager.stage("Singers", list(self.rows.values()), types=SINGERS_TYPES, key_columns=KEY,
                     commits=[self.clock + k for k in range(30)])

    def change(self, n: int) -> dict[int, str]:
        """Stage a run's changes; returns key -> the mod_type each must get."""
        self.clock += 1_000
        keys = self.rng.sample(sorted(self.rows), 4)
        expected, batch = {}, []
        for i, k in enumerate(keys):
            before = self.rows[k]
            deleted = not before["Deleted"] and i == 0
            row = singer(k, f"v{n}-{k}", deleted=deleted)
            expected[k] = "DELETE" if deleted else "INSERT" if before["Deleted"] else "UPDATE"
            batch.append(row)
            self.rows[k] = row
        self.stager.stage("Singers", batch, types=SINGERS_TYPES, key_columns=KEY,
                          commits=[self.clock + i for i in range(len(batch))])
        return expected

    def check(self, spark, result, expected: dict[int, str]) -> None:
        got = {int(json.loads(r.keys)["SingerId"]): r.mod_type for r in spark.sql(
            f"SELECT keys, mod_type FROM changelog WHERE run_version = {result.version}").collect()}
        assert got == expected, result.summary()
        state = spark.sql("SELECT keys, vals FROM current_state").collect()
        live = {int(json.loads(r.keys)["SingerId"]): r.vals["Name"] for r in state}
        assert len(state) == len(live)  # one row per key
        assert live == {k: r["Name"] for k, r in self.rows.items() if not r["Deleted"]}


def run(spark, dirs, compactor, *, wait: bool = True):
    """One run; with ``wait``, a merge it started finishes before the next run (which adopts it)."""
    result = Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).soft_delete_column(
        "Singers", "Deleted").compactor(compactor).run()
    if compactor is not None and wait:
        compactor.close()
    return result


def held_merges(monkeypatch) -> threading.Event:
    """Merges wait until the returned event is set (while runs go on beside them)."""
    release = threading.Event()
    merge = compaction.merge_layers

    def held(*args, **kwargs):
        release.wait(120)
        return merge(*args, **kwargs)

    monkeypatch.setattr(compaction, "merge_layers", held)
    return release


def singers_entry(spark, dirs) -> dict:
    return manifest.load(HadoopFS(spark, dirs["warehouse"])).tables["Singers"]


@pytest.fixture(params=["deltas", "base"])
def kind(request, monkeypatch):
    """What the compactor merges: a table's newest deltas into one (few, small deltas), or all its
    layers into a base (here forced early by merging for size from the first rows)."""
    if request.param == "base":
        monkeypatch.setattr(compaction, "MIN_MERGE_ROWS", 0)
    return request.param


def test_runs_leave_merging_to_the_compactor_and_adopt_its_merges(spark, stager, dirs, kind):
    truth = Truth(stager)
    compactor = compaction.Compactor()
    run(spark, dirs, compactor)
    first_base = singers_entry(spark, dirs)["state_version"]
    bases, merged = set(), set()
    for n in range(1, 2 * current_state.MAX_DELTAS + 4):
        expected = truth.change(n)
        before = set(compactor.keep())
        result = run(spark, dirs, compactor)
        truth.check(spark, result, expected)
        entry = singers_entry(spark, dirs)
        assert entry["state_version"] != result.version  # no run rewrote the table itself
        bases.add(entry["state_version"])
        merged |= before & set(current_state.layers(entry))
        assert len(current_state.layers(entry)) <= compaction.MAX_DELTAS_MERGED + 2, entry
    stats = compactor.stats()
    assert stats["merges"] >= 2 and stats["adopted"] == stats["merges"] and stats["failures"] == 0, stats
    if kind == "base":
        assert len(bases - {first_base}) >= 2  # merged bases became the table's base
    else:
        assert bases == {first_base} and len(merged) >= 2  # merged deltas took the place of the deltas they merged
    committed = manifest.load(HadoopFS(spark, dirs["warehouse"]))
    assert not set(committed.aborted) & (bases | merged)  # an adopted merge is committed, not abandoned


def test_a_merge_finished_after_a_run_rewrote_the_table_is_dropped(spark, stager, dirs, monkeypatch):
    monkeypatch.setattr(current_state, "MAX_DELTAS", 2)  # the compactor starts a merge at two deltas
    monkeypatch.setattr(current_state, "MAX_DELTAS_APART", 4)  # and runs rewrite the table themselves at four
    truth = Truth(stager)
    compactor = compaction.Compactor()
    release = held_merges(monkeypatch)
    run(spark, dirs, compactor, wait=False)
    claimed = None
    for n in range(1, current_state.MAX_DELTAS + 5):
        expected = truth.change(n)
        result = run(spark, dirs, compactor, wait=False)
        truth.check(spark, result, expected)
        if compactor.stats()["merging"] and claimed is None:
            claimed = max(compactor.keep())
        if singers_entry(spark, dirs)["state_version"] == result.version:
            break  # the deltas piled up past MAX_DELTAS_APART while the merge was held: the run rewrote the table
    else:
        pytest.fail("no run rewrote the table while the merge was held")
    assert claimed is not None
    release.set()
    compactor.close()
    expected = truth.change(99)
    result = run(spark, dirs, compactor)
    truth.check(spark, result, expected)
    assert compactor.stats()["dropped"] == 1 and compactor.stats()["adopted"] == 0
    assert singers_entry(spark, dirs)["state_version"] != claimed
    for n in (100, 101):  # two runs later its folder is gone (pruned like an abandoned run's)
        expected = truth.change(n)
        truth.check(spark, run(spark, dirs, None), expected)
    assert not os.path.exists(os.path.join(dirs["warehouse"], current_state.version_dir(claimed)))


def test_a_merge_never_adopted_is_abandoned_and_pruned(spark, stager, dirs):
    """The process died after the compactor wrote a merged base and before a run adopted it."""
    truth = Truth(stager)
    compactor = compaction.Compactor()
    run(spark, dirs, compactor)
    lost = None
    for n in range(1, current_state.MAX_DELTAS + 3):
        expected = truth.change(n)
        truth.check(spark, run(spark, dirs, compactor), expected)
        if compactor.stats()["waiting"]:
            lost = compactor.take_merged()[0]  # the "dead" process's merge: nobody adopts it
            break
    assert lost is not None and os.path.exists(os.path.join(dirs["warehouse"], current_state.version_dir(lost.version)))
    for n in range(50, 53):  # a new process: runs without that compactor
        expected = truth.change(n)
        truth.check(spark, run(spark, dirs, None), expected)
    committed = manifest.load(HadoopFS(spark, dirs["warehouse"]))
    assert lost.version in committed.aborted
    assert current_state.layers(committed.tables["Singers"])[0] != lost.version
    assert not os.path.exists(os.path.join(dirs["warehouse"], current_state.version_dir(lost.version)))


def test_after_failing_merges_runs_merge_layers_themselves(spark, stager, dirs, monkeypatch):
    truth = Truth(stager)
    compactor = compaction.Compactor()

    def broken(*args, **kwargs):
        raise OSError("disk full (test)")

    monkeypatch.setattr(compaction, "merge_layers", broken)
    run(spark, dirs, compactor)
    rewrote = False
    for n in range(1, current_state.MAX_DELTAS + compaction.MAX_FAILURES + 4):
        expected = truth.change(n)
        result = run(spark, dirs, compactor)
        truth.check(spark, result, expected)
        rewrote |= singers_entry(spark, dirs)["state_version"] == result.version
    stats = compactor.stats()
    assert stats["failures"] == compaction.MAX_FAILURES and "disk full (test)" in stats["last_error"], stats
    assert not compactor.active()
    assert rewrote  # with the compactor stopped, a run merged the layers itself


def test_a_merge_adopted_after_later_runs_keeps_their_deltas(spark, stager, dirs, monkeypatch, kind):
    monkeypatch.setattr(current_state, "MAX_DELTAS", 2)  # a merge starts at two deltas
    if kind == "base":
        monkeypatch.setattr(compaction, "MAX_DELTAS_MERGED", 2)
    truth = Truth(stager)
    compactor = compaction.Compactor()
    release = held_merges(monkeypatch)
    run(spark, dirs, None)
    for n in range(1, 6):  # the merge starts after the second run and is held while three more run
        expected = truth.change(n)
        truth.check(spark, run(spark, dirs, compactor, wait=False), expected)
    merging = max(compactor.keep())
    release.set()
    compactor.close()
    expected = truth.change(6)
    result = run(spark, dirs, compactor)
    truth.check(spark, result, expected)  # the keys changed by the three runs keep their newer rows
    entry = singers_entry(spark, dirs)
    assert compactor.stats()["adopted"] == 1
    later = [v for v in current_state.layers(entry) if v > merging]
    assert len(later) == 4 and later == sorted(later), entry  # the three held runs' deltas and this run's
    assert (entry["state_version"] == merging) == (kind == "base") and current_state.layers(entry)[:-4][-1] == merging


@pytest.mark.parametrize("whole", [False, True], ids=["deltas", "base"])
def test_the_driver_merges_as_spark_does(spark, stager, dirs, monkeypatch, whole):
    """Small layers are merged on the driver with pyarrow (arrow_merge); what it writes must be what
    Spark writes: the same rows, and files of the same Parquet types (read with and without a schema).
    A merge the driver fails (after writing part of it) is Spark's, and nothing of the failed one stays."""
    from pathlib import Path

    from tests.changelog.support import parquet_types
    from watcher.changelog import arrow_merge
    from watcher.changelog.records import STATE_FIELDS

    monkeypatch.setattr(current_state, "MAX_DELTAS", 100)  # no run merges: the deltas pile up
    truth, changed = Truth(stager), []
    run(spark, dirs, None)
    for n in range(1, 6):
        changed.append(set(truth.change(n)))
        run(spark, dirs, None)
    fs = HadoopFS(spark, dirs["warehouse"])
    committed = manifest.load(fs)
    entry = committed.tables["Singers"]
    assert len(entry["state_deltas"]) == 5
    layers = tuple(current_state.layers(entry) if whole else entry["state_deltas"][-4:])
    before = sorted(tuple(r) for r in current_state.load(spark, fs, committed).collect())
    rows = {}
    on_driver = arrow_merge.merge

    def fails_midway(store, table, layers, version, *, base):  # a file left half-written, then an error
        store.write_parquet(store.read_parquet(current_state.version_dir(layers[0][0]) + "/table_name=Singers"
                                               if layers[0][1] else current_state.deltas_dir(layers[0][0])),
                            (current_state.version_dir(version) + "/table_name=Singers/part-x.parquet" if base
                             else current_state.deltas_dir(version) + "/part-x.parquet"))
        raise OSError("no credentials for the store (test)")

    for engine, limit, driver in (("driver", arrow_merge.MAX_ROWS, on_driver), ("spark", -1, on_driver),
                                  ("driver failed, then spark", arrow_merge.MAX_ROWS, fails_midway)):
        monkeypatch.setattr(arrow_merge, "MAX_ROWS", limit)
        monkeypatch.setattr(arrow_merge, "merge", driver)
        version, _ = manifest.claim_version(fs, committed)
        merged = compaction.merge_layers(spark, fs, committed, "Singers", version, layers)
        assert merged.base == whole
        folder = Path(dirs["warehouse"]) / current_state.version_dir(version)
        parquet_types(spark, folder, STATE_FIELDS, ("table_name",), whole=False)
        assert not list(folder.rglob("*.crc")) and not list(folder.rglob("part-x*"))  # nor the failed merge's file
        adopted = compaction.adopt(entry, merged)
        frame = current_state.load(spark, fs, manifest.Manifest(committed.version, tables={"Singers": adopted}))
        rows[engine] = (merged.rows, sorted(tuple(r) for r in frame.collect()))
    assert rows["driver"] == rows["spark"] == rows["driver failed, then spark"]
    assert rows["driver"] == (30 if whole else len(set().union(*changed[1:])), before)  # a key's newest row, once


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="no per-thread CPU priority on this OS")
def test_the_merging_thread_alone_yields_the_cpu_to_the_runs():
    seen = {}

    def merging():
        compaction.background_priority()
        seen["merge"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    thread = threading.Thread(target=merging)
    thread.start()
    thread.join()
    assert seen["merge"] == max(before, compaction.MERGE_NICENESS)  # (a thread cannot raise its priority back)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # the caller (a run) keeps its own
