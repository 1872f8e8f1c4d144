"""Placing tables in the per-key window's partitions: balanced plans, rows where planned, few files per folder."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.changelog.support import SINGERS_TYPES, singer
from watcher.changelog import Changelog, placement, run
from watcher.changelog.session import temporary_conf


def test_the_hash_is_sparks(spark):
    rng = random.Random(7)
    values = [0, 1, -1, 42, 2**31 - 1, -(2**31)] + [rng.randint(-(2**31), 2**31 - 1) for _ in range(3000)]
    frame = spark.createDataFrame([(v,) for v in values], "v int")
    assert {r.v: r.h for r in frame.selectExpr("v", "hash(v) AS h").collect()} == {
        v: placement.spark_hash_int(v) for v in values}


@pytest.mark.parametrize("seed", range(40))
def test_plans_are_balanced_and_keep_small_tables_whole(seed):
    rng = random.Random(seed)
    partitions = rng.choice([1, 2, 3, 4, 8, 200])
    weights = {f"T{i}": rng.choice([0, 1, 10, 1_000, 1_000_000, rng.randint(1, 10**9)])
               for i in range(rng.randint(1, 90))}
    placed = placement.plan(weights, partitions)
    assert set(placed.pieces) <= set(weights)
    assert len(placed.pieces) == min(len(weights), placement.MAX_PLACED)
    share = sum(placed.weights.values()) / partitions
    largest_piece = 0
    for table, parts in placed.pieces.items():
        assert len(set(parts)) == len(parts) and all(0 <= p < partitions for p in parts)
        if placed.weights[table] <= share:
            assert len(parts) == 1  # a table no larger than a partition's share stays whole
        largest_piece = max(largest_piece, placed.weights[table] // len(parts))
    loads = placed.loads()
    assert max(loads) - min(loads) <= largest_piece
    whole = placement.plan(weights, partitions, split=False)
    assert all(len(parts) == 1 for parts in whole.pieces.values())


def test_the_largest_tables_are_the_ones_placed():
    weights = {f"T{i:03d}": i for i in range(placement.MAX_PLACED + 10)}
    placed = placement.plan(weights, 4)
    assert set(placed.pieces) == {f"T{i:03d}": i for i in range(10, placement.MAX_PLACED + 10)}.keys()
    with pytest.raises(ValueError, match="at least 1"):
        placement.plan(weights, 0)


def test_rows_land_in_the_partitions_planned(spark):
    partitions = 3
    placed = placement.plan({"Big": 900, "Small": 50, "Odd 'name'": 40}, partitions)
    assert len(placed.pieces["Big"]) == 3 and len(placed.pieces["Small"]) == 1
    rows = [(table, f'{{"Id":"{k}"}}') for table, n in (("Big", 300), ("Small", 20), ("Odd 'name'", 20),
                                                         ("Unplanned", 60)) for k in range(n)]
    frame = spark.createDataFrame(rows + rows, "table_name string, keys string")  # each key twice
    with temporary_conf(spark, {"spark.sql.shuffle.partitions": str(partitions),
                                "spark.sql.adaptive.enabled": "false"}):
        assert placement.shuffle_partitions(spark) == partitions
        landed = (frame.selectExpr("*", f"CAST({placed.sql()} AS INT) AS {placement.COLUMN}")
                  .repartition(placement.COLUMN).selectExpr("table_name", "keys", "spark_partition_id() AS p").collect())
    where: dict[tuple[str, str], set[int]] = {}
    for r in landed:
        where.setdefault((r.table_name, r.keys), set()).add(r.p)
    assert all(len(ps) == 1 for ps in where.values())  # a key's rows meet in one partition
    by_table: dict[str, set[int]] = {}
    for (table, _), ps in where.items():
        by_table.setdefault(table, set()).update(ps)
    assert by_table["Big"] == set(placed.pieces["Big"])
    assert by_table["Small"] == set(placed.pieces["Small"])
    assert by_table["Odd 'name'"] == set(placed.pieces["Odd 'name'"])
    assert len(by_table["Unplanned"]) > 1  # spread by key, as without a plan


def _files(folder: Path) -> dict[str, int]:
    return {str(d.relative_to(folder)): len(list(d.glob("*.parquet")))
            for d in folder.glob("table_name=*/commit_date=*")}


def test_a_first_run_writes_one_file_per_folder_of_a_small_table(spark, stager, dirs, monkeypatch):
    """On Spark (not a small run), a table smaller than a partition's share is written by one task;
    the large table is spread over the partitions, and the changelog holds every change once."""
    monkeypatch.setattr(run, "SMALL_RUN_BYTES", 0)  # the run as a large one: tables placed by size
    key = ["SingerId"]
    stager.stage("Singers", [singer(i, f"s{i}") for i in range(400)], types=SINGERS_TYPES, key_columns=key,
                 commits=list(range(400)))
    for table in ("Albums", "Venues", "Labels"):
        stager.stage(table, [singer(i, f"{table}{i}") for i in range(12)], types=SINGERS_TYPES, key_columns=key,
                     commits=[1_000 + i for i in range(12)])
    with temporary_conf(spark, {"spark.sql.shuffle.partitions": "2"}):
        result = Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).driver_runs(False).run()
    assert result.engine == "spark" and result.changes_written == 436
    files = _files(Path(dirs["warehouse"]) / "changelog")
    assert {f: n for f, n in files.items() if not f.startswith("table_name=Singers")} == {
        f"table_name={t}/commit_date=2024-05-01": 1 for t in ("Albums", "Venues", "Labels")}
    assert files["table_name=Singers/commit_date=2024-05-01"] == 2
    counts = {r.table_name: r.n for r in spark.sql(
        "SELECT table_name, count(DISTINCT change_id) AS n FROM changelog GROUP BY table_name").collect()}
    assert counts == {"Singers": 400, "Albums": 12, "Venues": 12, "Labels": 12}
