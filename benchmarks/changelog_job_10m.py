"""The changelog job's first run at 10,000,000 staged changes against ten times its 1,000,000 time.

Both inputs are generated the way :mod:`benchmarks.changelog_job` generates its 1M changes
(10 tables, 10 versions of each key, 1,000 changes per batch file), the 10M one with ten times
the keys (100,000 per table), not ten times the versions: the job's cost per change depends on
the shape of each key's window (its rows are sorted and compared with the previous one), and
more keys keep that shape (10 rows per key) while the volume grows, as a growing database
does; more versions would make every key's window ten times longer, a different workload.
(The commits of keys past 86,400 spill into the next day: 11 commit dates instead of 10.)

In one Spark session (local[2], the same settings), warmed up on a tiny data set: the first
run over 1M changes, then the first run over 10M changes, each into an empty warehouse.
Target: first(10M) <= 1.2 x 10 x first(1M), cost that grows linearly, not worse.
The staged files are written in two spawned processes; each input is deleted after its run
(the 10M input is about 4.5 GB of JSON).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from . import Result, RunContext, check
from .changelog_job import FULL, QUICK, _job, _session, generate

NAME = "changelog_job_10m"
TITLE = "changelog job: first run over 10M staged changes vs ten times the 1M first run"

SCALE = 10
TARGET_LINEARITY = 1.2


def _du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _first_run(ctx: RunContext, spark: Any, root: str, s: dict[str, Any], label: str) -> dict[str, Any]:
    staging, warehouse = os.path.join(root, label, "staging"), os.path.join(root, label, "warehouse")
    started = time.perf_counter()
    total = generate(staging, s, day=0, versions=range(s["versions"]), keys=range(s["keys_per_table"]), tag="a",
                     workers=2)
    staged_seconds = time.perf_counter() - started
    staged_bytes = _du(staging)
    ctx.log(f"{label}: staged {total} changes ({staged_bytes / 2**30:.2f} GiB) in {staged_seconds:.1f} s")
    load = round(os.getloadavg()[0], 2)
    seconds, result = _job(spark, staging, warehouse)
    ctx.log(f"{label}: first run {seconds:.1f} s ({result.changes_written} changes), load {load} -> "
            f"{os.getloadavg()[0]:.2f}; phases {result.phases}")
    out = {"changes": total, "staged_bytes": staged_bytes, "staging_seconds": round(staged_seconds, 1),
           "first_run_seconds": round(seconds, 2), "changes_written": result.changes_written,
           "warehouse_bytes": _du(warehouse), "phases": result.phases, "load_1min_at_start": load,
           "load_1min_at_end": round(os.getloadavg()[0], 2)}
    shutil.rmtree(os.path.join(root, label), ignore_errors=True)
    return out


def run(ctx: RunContext) -> Result:
    small = QUICK if ctx.quick else FULL
    large = {**small, "keys_per_table": small["keys_per_table"] * SCALE}
    root = os.path.join(ctx.workdir, NAME)
    shutil.rmtree(root, ignore_errors=True)
    spark = _session()

    warm = os.path.join(root, "warmup")
    tiny = {**QUICK, "keys_per_table": 20}
    generate(os.path.join(warm, "staging"), tiny, day=0, versions=range(2), keys=range(20), tag="w")
    _job(spark, os.path.join(warm, "staging"), os.path.join(warm, "warehouse"))
    shutil.rmtree(warm, ignore_errors=True)
    ctx.log("warmed up")

    one = _first_run(ctx, spark, root, small, "x1")
    ten = _first_run(ctx, spark, root, large, f"x{SCALE}")
    spark.stop()

    linearity = ten["first_run_seconds"] / (SCALE * one["first_run_seconds"])
    result = Result(settings={"small": small, "large": large, "scaled_by": "keys_per_table", "master": "local[2]",
                              "shuffle_partitions": 4})
    result.figures = {"first_run_1x": one, f"first_run_{SCALE}x": ten,
                      "seconds_per_million_1x": round(one["first_run_seconds"] / one["changes"] * 1e6, 2),
                      f"seconds_per_million_{SCALE}x": round(ten["first_run_seconds"] / ten["changes"] * 1e6, 2),
                      "large_vs_ten_small": round(linearity, 3)}
    result.checks = [check(f"first run {SCALE}x / ({SCALE} x first run 1x)", round(linearity, 3), "<=", TARGET_LINEARITY),
                     check(f"changes written {SCALE}x", ten["changes_written"], ">=", ten["changes"])]
    result.notes.append("Generated staging files (StagingSink format); both first runs in one Spark session, "
                        "the 10x input has 10x the keys (same 10 versions per key).")
    return result
