"""The bench app (``spanner-watcher bench``) before and after rows were typed by their own result set, side by side.

Typing every row by its result set's metadata must leave the bench app's figures
unchanged. This runs the recorded headline command of ``java_app`` (RESULTS.md:
``spanner-watcher bench --write-transactions-per-second 55 --mutations-per-transaction 100
--watchers 4 --poll-interval 0.5 --duration 60 --warmup 5``) as a separate process from two
sources, alternating which goes first, :data:`FULL` rounds:

* ``before``: the package of commit :data:`BEFORE_COMMIT` (the parent of the change that gave
  changes their result set's types), taken with ``git archive``;
* ``after``: the package this benchmark runs from.

Only the bench process's package differs: every run gets a fresh local Spanner process of
*this* checkout (its own data folder; the bench reaches it through SPANNER_EMULATOR_HOST), so
that changes to the server since :data:`BEFORE_COMMIT` (row versions, for one, cost writes
about 10%: ``localspanner_versions``) do not pass for a cost of the watcher. Same writer random seed
on both sides; the figures compared are mutations written and changes received per second,
detection lag p50/p99, poll time, and CPU: the bench process (writers and watchers) and the
server, per mutation written. Target: ``after`` receives at least 0.95x ``before``'s changes per
second (median of rounds' ratios) and captures every write.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import ServerProcess

NAME = "java_app_versions"
TITLE = "spanner-watcher bench, headline load: before vs after typing rows by their result set (separate processes)"

#: The commit before "Changes carry the column types their result set named" (3b097f6).
BEFORE_COMMIT = "5cbfc63"
HEADLINE = ["--write-transactions-per-second", "55", "--mutations-per-transaction", "100", "--watchers", "4",
            "--poll-interval", "0.5", "--duration", "60", "--warmup", "5"]
QUICK_ARGS = ["--write-transactions-per-second", "10", "--mutations-per-transaction", "10",
              "--duration", "8", "--warmup", "2"]
FULL = {"rounds": 3}
QUICK = {"rounds": 1}
TARGET_RATIO = 0.95
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The figures of result.json compared (path into "figures"; lag and poll time as p50/p99).
FIGURES = ("mutations_per_second", "received_per_second", "missing_changes", "lag_ms.p50", "lag_ms.p99",
           "poll_ms.p50", "poll_ms.p99", "rows_per_poll_mean", "bench_process_cores", "server_process_cores")


def source_of(commit: str, workdir: str) -> str:
    """The package tree of ``commit`` under ``workdir`` (git archive, no worktree)."""
    target = os.path.join(workdir, f"source-{commit}")
    if not os.path.isdir(os.path.join(target, "watcher")):
        os.makedirs(target, exist_ok=True)
        archive = subprocess.run(["git", "-C", REPO, "archive", commit, "watcher", "ddl"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return target


def _figure(figures: dict[str, Any], path: str) -> Any:
    value: Any = figures
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def run_bench(source: str, args: list[str], output: str, data_dir: str) -> dict[str, Any]:
    """Run ``python -m watcher bench`` from ``source`` (its package first on the path) against a fresh
    local Spanner process of this checkout; its result's figures, with CPU per mutation."""
    with ServerProcess(data_dir) as server:
        env = dict(os.environ, SPANNER_EMULATOR_HOST=server.emulator_host)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "watcher", "bench", *args, "--seed", "1", "--quiet", "--output", output]
        server0 = server.cpu_seconds()
        done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True, timeout=900)
        server_cpu = server.cpu_seconds() - server0
    path = os.path.join(output, "result.json")
    if not os.path.exists(path):
        raise RuntimeError(f"bench from {source} wrote no result (exit {done.returncode}): {done.stderr[-2000:]}")
    with open(path) as f:
        document = json.load(f)
    point = {name: _figure(document["figures"], name) for name in FIGURES}
    written = document["figures"].get("mutations") or 0
    cores, seconds = point["bench_process_cores"], document["figures"].get("seconds_writing")
    if written and cores is not None and seconds:
        point["bench_cpu_us_per_mutation"] = round(cores * seconds / written * 1e6, 1)
    # The server's CPU over the whole command (setup and drain included), per mutation written.
    point["server_cpu_us_per_mutation"] = round(server_cpu / written * 1e6, 1) if written else None
    point["exit_status"] = done.returncode
    point["loadavg_1min"] = round(os.getloadavg()[0], 1)
    return point


def run(ctx: RunContext) -> Result:
    rounds = (QUICK if ctx.quick else FULL)["rounds"]
    args = QUICK_ARGS if ctx.quick else HEADLINE
    sources = {"before": source_of(BEFORE_COMMIT, ctx.workdir), "after": REPO}
    result = Result(settings={"command": "python -m watcher bench " + " ".join(args) + " --seed 1 --quiet --output DIR --data-dir DIR",
                              "rounds": rounds, "before": f"git archive {BEFORE_COMMIT} (separate process)",
                              "after": "this checkout (separate process)", "order": "alternating which side goes first",
                              "server": "python -m watcher local-spanner --port 0 of this checkout, a fresh one per run"})
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for r in range(rounds):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            folder = os.path.join(ctx.workdir, f"app-{side}-{r}")
            point = run_bench(sources[side], args, os.path.join(folder, "output"), os.path.join(folder, "data"))
            point["round"] = r
            runs[side].append(point)
            ctx.log(f"round {r}: {side:<6} {point['mutations_per_second']:>8} mutations/s written, {point['received_per_second']:>8} "
                    f"received/s, lag p50/p99 {point['lag_ms.p50']}/{point['lag_ms.p99']} ms, missing {point['missing_changes']}, "
                    f"CPU us/mutation bench {point.get('bench_cpu_us_per_mutation')}, server {point['server_cpu_us_per_mutation']} "
                    f"(load {point['loadavg_1min']})")
    compared = ("received_per_second", "mutations_per_second", "lag_ms.p99", "bench_cpu_us_per_mutation", "server_cpu_us_per_mutation")
    ratios = {name: [round(a[name] / b[name], 3) for a, b in zip(runs["after"], runs["before"], strict=True)
                     if a.get(name) is not None and b.get(name)] for name in compared}
    result.figures = {"runs": runs, "after_over_before_per_round": ratios,
                      "after_over_before_range": {k: [min(v), max(v)] for k, v in ratios.items() if v}}
    received = statistics.median(ratios["received_per_second"])
    ctx.log(f"after/before per round: {ratios}")
    result.checks.append(check("changes received per second, after / before (median of rounds)", round(received, 3), ">=", TARGET_RATIO))
    result.checks.append(check("writes not captured, after (sum of rounds)", sum(p["missing_changes"] for p in runs["after"]), "<=", 0))
    return result
