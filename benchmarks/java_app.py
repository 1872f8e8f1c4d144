"""The Java library's benchmark application, scaled up: ``python -m benchmarks app``.

A thin wrapper over :mod:`watcher.devtools.bench` (the same code as ``spanner-watcher bench``): the
local Spanner server runs as a separate process, the writer threads in another (as the command
runs them by default, :mod:`watcher.devtools.bench_writers`), the watchers in this one.
The Java application's defaults (1 transaction/s of 1..10 mutations, one watcher, poll
interval 1 s) are raised to the headline load of :data:`HEADLINE`: 55 transactions/s of
1..200 mutations (about 5,500 mutations/s), 4 watchers splitting the 37 shard values, poll
interval 0.5 s; every other option keeps its Java default (32 writer threads, FORCE_INDEX on
the shard index, limit 10,000, WITH-query fallback after 60 s).

Targets: at least 5,000 mutations per second written, every one captured by the
watchers, detection lag (commit to callback) p99 under 2 s. The plots and the full result
(with per-second series) go to ``benchmarks/plots/java_app/``.
"""

from __future__ import annotations

import os
from typing import Any

from watcher.devtools.bench import BenchOptions, prepare_table, run_benchmark
from watcher.devtools.bench_report import report, write_outputs
from watcher.devtools.bench_server import ServerProcess

from . import Result, RunContext, check

NAME = "java_app"
TITLE = "the Java benchmark application scaled up: >= 5,000 mutations/s captured, detection lag p99 < 2 s"

HEADLINE: dict[str, Any] = {"write_transactions_per_second": 55.0, "mutations_per_transaction": 100,
                            "watchers": 4, "poll_interval": 0.5, "duration": 60.0, "warmup": 5.0}
QUICK: dict[str, Any] = {"write_transactions_per_second": 10.0, "mutations_per_transaction": 10,
                         "duration": 8.0, "warmup": 2.0}
TARGET_MUTATIONS_PER_SECOND = 5_000.0
TARGET_P99_MS = 2_000.0
PLOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", NAME)


def run(ctx: RunContext) -> Result:
    from watcher.cli.connection import open_database

    options = BenchOptions(**(QUICK if ctx.quick else HEADLINE), seed=1)
    previous = os.environ.pop("SPANNER_EMULATOR_HOST", None)
    try:
        with ServerProcess(data_dir=os.path.join(ctx.workdir, "java-app-data")) as server:
            os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
            with open_database(database="java_app") as target:
                prepare_table(target.database, options, log=ctx.log)
                ctx.log(f"writing about {options.mutations_per_second:,.0f} mutations/s for {options.duration:g} s")
                finished = run_benchmark(target.database, options, server_cpu=server.cpu_seconds)
                document = report(finished, command="python -m benchmarks app", where=target.describe())
    finally:
        os.environ.pop("SPANNER_EMULATOR_HOST", None)
        if previous is not None:
            os.environ["SPANNER_EMULATOR_HOST"] = previous
    folder = os.path.join(ctx.workdir, "java_app") if ctx.quick else PLOTS
    paths = write_outputs(folder, document)
    f = document["figures"]
    result = Result(settings=document["options"], figures={k: v for k, v in f.items()})
    result.figures["plots"] = [os.path.relpath(p, os.path.dirname(PLOTS)) for p in paths]
    result.figures["failure"] = document["failure"]
    result.checks = [
        check("mutations written per second", f["mutations_per_second"], ">=", TARGET_MUTATIONS_PER_SECOND),
        check("writes not captured", f["missing_changes"], "<=", 0),
        check("detection lag p99 ms", f["lag_ms"].get("p99", float("inf")), "<", TARGET_P99_MS),
    ]
    return result
