"""The current state kept as a base and delta layers, across many incremental runs.

Each run changes a few keys (updates, soft deletes, keys coming back, a late change, a batch
staged twice); after every run the state, the changelog's classification and old values must
be what a single full rewrite would give, and the layers must stay bounded.
"""

from __future__ import annotations

import json
import random

import pytest
from pyspark.sql import functions as F

from tests.changelog.support import SINGERS_TYPES, singer
from watcher.changelog import Changelog, current_state, manifest
from watcher.changelog import run as changelog_run
from watcher.changelog.fs import HadoopFS

KEY = ["SingerId"]
RUNS = current_state.MAX_DELTAS + 2


@pytest.fixture(params=["shuffle-by-table", "shuffle-by-key", "broadcast"])
def state_filter(request, monkeypatch):
    """Each way a run finds the state of its keys: dropped after the shuffle (small states), with
    rows shuffled by table (a small run) or by key (larger runs; forced by a zero size), or the new
    keys sent to the state scan (large states; forced here by a zero threshold)."""
    if request.param != "shuffle-by-table":
        monkeypatch.setattr(changelog_run, "SMALL_RUN_BYTES", 0)
    if request.param == "broadcast":
        monkeypatch.setattr(current_state, "SHUFFLE_FILTER_ROWS", 0)
    return request.param


def run(spark, dirs):
    return Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).soft_delete_column(
        "Singers", "Deleted").run()


def test_layers_give_the_state_and_classification_of_a_full_rewrite(spark, stager, dirs, state_filter):
    rng = random.Random(7)
    truth: dict[int, dict] = {}  # key -> latest row (Deleted flag included)
    clock = 1_000
    rows = [singer(k, f"v0-{k}") for k in range(40)]
    stager.stage("Singers", rows, types=SINGERS_TYPES, key_columns=KEY, commits=[clock + k for k in range(40)])
    truth.update({r["SingerId"]: r for r in rows})
    clock += 1_000
    run(spark, dirs)
    layer_counts = []
    for n in range(1, RUNS + 1):
        keys = rng.sample(sorted(truth), 5)
        batch, commits, expected = [], [], {}
        for i, k in enumerate(keys):
            before = truth[k]
            deleted = not before["Deleted"] and i == 0  # one soft delete per run; a deleted key comes back
            row = singer(k, f"v{n}-{k}", deleted=deleted)
            batch.append(row)
            commits.append(clock + i)
            expected[k] = ("DELETE" if deleted else "INSERT" if before["Deleted"] else "UPDATE",
                           {} if deleted and before["Deleted"] else
                           ({"Name": before["Name"]} if not deleted and not before["Deleted"] else None))
            truth[k] = row
        path = stager.stage("Singers", batch, types=SINGERS_TYPES, key_columns=KEY, commits=commits)
        if n % 3 == 0:  # the same poll staged twice (a crash before the checkpoint moved)
            stager.stage("Singers", batch, types=SINGERS_TYPES, key_columns=KEY, commits=commits)
        clock += 1_000
        result = run(spark, dirs)
        assert result.changes_written == len(batch), (n, result.summary())
        got = {int(json.loads(r.keys)["SingerId"]): (r.mod_type, json.loads(r.old_values)) for r in spark.sql(
            f"SELECT keys, mod_type, old_values FROM changelog WHERE run_version = {result.version}").collect()}
        for k, (mod_type, old) in expected.items():
            assert got.get(k, (None,))[0] == mod_type, (n, k, got, expected, result.summary())
            if mod_type == "UPDATE":
                assert got[k][1] == old, (n, k, got[k])  # the previous run's value, from whichever layer held it
        state = spark.sql("SELECT keys, vals FROM current_state WHERE table_name = 'Singers'").collect()
        live = {int(json.loads(r.keys)["SingerId"]): r.vals["Name"] for r in state}
        assert live == {k: r["Name"] for k, r in truth.items() if not r["Deleted"]}, n
        assert len(state) == len(live), n  # one row per key, whatever the layers hold
        info = manifest.load(HadoopFS(spark, dirs["warehouse"])).tables["Singers"]
        layer_counts.append(len(current_state.layers(info)))
        assert path is not None
    assert max(layer_counts) <= current_state.MAX_DELTAS + 1
    assert 1 in layer_counts[1:], layer_counts  # the layers were merged into a new base on the way
    assert layer_counts[0] == 2  # the first incremental run wrote a delta, not the whole table


def test_a_late_change_against_a_delta_layer_is_an_upsert_and_keeps_the_newer_state(spark, stager, dirs,
                                                                                     state_filter):
    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    run(spark, dirs)
    stager.stage("Singers", [singer(1, "c")], types=SINGERS_TYPES, key_columns=KEY, commits=[100])
    run(spark, dirs)  # key 1's state is now in a delta layer, at commit 100
    stager.stage("Singers", [singer(1, "late")], types=SINGERS_TYPES, key_columns=KEY, commits=[50])
    result = run(spark, dirs)
    assert result.late_changes == 1 and result.mod_types == {"UPSERT": 1}
    live = {int(json.loads(r.keys)["SingerId"]): r.vals["Name"] for r in spark.sql("SELECT keys, vals FROM current_state")
            .collect()}
    assert live == {1: "c", 2: "b"}


def test_tables_merged_and_kept_as_deltas_in_the_same_runs_keep_their_states(spark, stager, dirs):
    other = {"Id": "INT64", "V": "STRING(MAX)"}
    truth: dict[str, dict[int, str]] = {"Singers": {}, "Albums": {}}
    kinds = []
    for n in range(RUNS + 1):
        # Albums starts a run later: its layers are merged in other runs than Singers' are.
        for table, keys in (("Singers", range(10) if n == 0 else [n % 10]), ("Albums", range(10) if n == 1 else [n % 7])):
            if table == "Albums" and n == 0:
                continue
            rows = ([singer(k, f"{table}-{n}-{k}") for k in keys] if table == "Singers"
                    else [{"Id": k, "V": f"{table}-{n}-{k}"} for k in keys])
            stager.stage(table, rows, types=SINGERS_TYPES if table == "Singers" else other,
                         key_columns=KEY if table == "Singers" else ["Id"], commits=[1_000 * n + k for k in keys])
            truth[table].update({k: f"{table}-{n}-{k}" for k in keys})
        result = run(spark, dirs)
        tables = manifest.load(HadoopFS(spark, dirs["warehouse"])).tables
        kinds.append({t: "base" if tables[t]["state_version"] == result.version else "delta" for t in tables})
        got: dict[str, dict[int, str]] = {"Singers": {}, "Albums": {}}
        for r in spark.sql("SELECT table_name, keys, vals FROM current_state").collect():
            key = json.loads(r.keys)
            got[r.table_name][int(key.get("SingerId", key.get("Id")))] = r.vals.get("Name", r.vals.get("V"))
        assert got == truth, (n, kinds[-1])
    assert {"Singers": "base", "Albums": "delta"} in kinds and {"Singers": "delta", "Albums": "base"} in kinds, kinds


def test_prune_keeps_the_state_layers_of_the_manifest_a_run_started_from(tmp_path):
    """A reader that loaded the previous manifest just before a run committed still finds its state."""
    from watcher.changelog.arrow_fs import ArrowFS

    fs = ArrowFS(str(tmp_path))
    for v in (1, 2, 3):
        fs.write_text(f"{current_state.version_dir(v)}/part-0.parquet", "x")
    first = manifest.Manifest(2, aborted=[], tables={"Singers": {"state_version": 1, "state_deltas": [2]}})
    second = manifest.Manifest(3, aborted=[], tables={"Singers": {"state_version": 3}})
    assert current_state.prune(fs, second, first) == []
    assert sorted(fs.list_names(current_state.STATE_DIR)) == ["v000000000001", "v000000000002", "v000000000003"]
    assert sorted(current_state.prune(fs, second)) == ["v000000000001", "v000000000002"]
    assert fs.list_names(current_state.STATE_DIR) == ["v000000000003"]


def test_deltas_read_in_one_scan_carry_their_own_layers(spark, stager, dirs):
    """Several deltas are read in one scan: each row's layer comes from its own folder, so the
    newest layer still decides between rows of one key with the same commit timestamp."""
    stager.stage("Singers", [singer(k, f"a{k}") for k in range(4)], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[10, 11, 12, 13])
    run(spark, dirs)
    for n, key in enumerate((1, 2, 3), start=1):
        stager.stage("Singers", [singer(key, f"b{key}")], types=SINGERS_TYPES, key_columns=KEY, commits=[100 + n])
        run(spark, dirs)
    fs = HadoopFS(spark, dirs["warehouse"])
    committed = manifest.load(fs)
    info = committed.tables["Singers"]
    assert len(info["state_deltas"]) == 3, info
    scans = current_state._delta_scans({(v, False): ["Singers"] for v in info["state_deltas"]}, {"Singers": info["state_version"]})
    assert scans == [(False, [(info["state_deltas"], ["Singers"])])]  # one scan for the three deltas
    layered = current_state.load_layers(spark, fs, committed)
    by_key = {(json.loads(r.keys)["SingerId"], int(r[current_state.LAYER])) for r in layered.select("keys", current_state.LAYER).collect()}
    base, deltas = info["state_version"], info["state_deltas"]
    assert by_key == {("0", base), ("1", base), ("2", base), ("3", base), ("1", deltas[0]), ("2", deltas[1]), ("3", deltas[2])}
    # The same key and commit timestamp in two layers (the base, and the delta read in that one scan):
    # the later layer's row is the state.
    tied = (layered.where("keys LIKE '%\"1\"%'").withColumn("commit_timestamp", F.lit("2024-01-01T00:00:00.000000000Z"))
            .withColumn("new_values", F.expr(f"CASE WHEN {current_state.LAYER} = {current_state.layer_sql(deltas[0])} THEN 'newer' ELSE 'older' END")))
    assert [r.new_values for r in current_state.latest(tied).collect()] == ["newer"]
