"""Benchmarks of spanner-watcher: suites of scenarios, each writing one JSON result.

Benchmarks are not tests: they measure, compare ratios taken side by side in one run,
and write their figures to ``benchmarks/results/<name>.json``; ``RESULTS.md`` quotes
them with the command that produced them.

Run a suite with ``python -m benchmarks <suite> [--quick] [--only NAME ...]``. A suite
is a row of :data:`SUITES`: its benchmark modules, run in order. A benchmark module
provides

* ``NAME``: the result's name (``<NAME>.json``),
* ``TITLE``: one line saying what it measures,
* ``run(ctx: RunContext) -> Result``.

To add a suite, write its modules and add a row here.

Example:
    >>> "localspanner" in SUITES
    True
    >>> check("ratio", 1.2, "<=", 1.5).passed
    True
"""

from __future__ import annotations

import json
import operator
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

#: Suite name -> benchmark modules, in the order they run.
SUITES: dict[str, tuple[str, ...]] = {
    "app": (
        "benchmarks.java_app",
    ),
    "app-versions": (
        "benchmarks.java_app_versions",
    ),
    "java": (
        "benchmarks.java_side_by_side",
    ),
    "kafka": (
        "benchmarks.kafka_delivery",
    ),
    "debezium": (
        "benchmarks.debezium_side_by_side",
    ),
    "changelog": (
        "benchmarks.changelog_job",
        "benchmarks.changelog_job_groups",
        "benchmarks.changelog_job_10m",
    ),
    "ddl": (
        "benchmarks.ddl_index_poll",
    ),
    "localspanner": (
        "benchmarks.localspanner_poll",
        "benchmarks.localspanner_stream",
        "benchmarks.localspanner_writes",
        "benchmarks.localspanner_change_streams",
        "benchmarks.localspanner_versions",
    ),
    "streaming": (
        "benchmarks.streaming_freshness",
        "benchmarks.streaming_freshness_cluster",
    ),
    "watcher": (
        "benchmarks.watcher_delivery",
        "benchmarks.watcher_lag",
        "benchmarks.capture_modes",
    ),
}

#: Results format version, so later readers can tell what they read.
FORMAT_VERSION = 1

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


@dataclass(frozen=True)
class Check:
    """One target: ``value <op> target`` (e.g. latency ratio <= 1.5)."""

    name: str
    value: float
    op: str
    target: float
    passed: bool


def check(name: str, value: float, op: str, target: float) -> Check:
    """A :class:`Check` of ``value`` against ``target``."""
    return Check(name, value, op, target, _COMPARE[op](value, target))


@dataclass
class RunContext:
    """What a benchmark gets from the runner.

    ``workdir`` is a folder shared by the suite's benchmarks for this run (a benchmark
    may leave data there for the next one, e.g. a loaded table); ``quick`` asks for
    small sizes (a smoke test of the runner, not a measurement).
    """

    quick: bool
    workdir: str
    log: Callable[[str], None] = print


@dataclass
class Result:
    """A benchmark's outcome: settings it ran with, figures it measured, targets it checked."""

    settings: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


#: Rounds of :func:`speed_probe_ms`' fixed loop.
PROBE_ROUNDS = 2_000_000


def speed_probe_ms(tries: int = 3) -> float:
    """Milliseconds one core takes for a fixed Python loop (best of ``tries``). On a virtual machine
    the host's other guests slow every core at times (the load average does not show it, nor does
    steal time here): runs are comparable where this figure is.

    >>> speed_probe_ms(1) > 0
    True
    """
    best = float("inf")
    for _ in range(tries):
        started, total = time.perf_counter(), 0
        for i in range(PROBE_ROUNDS):
            total += i * i
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def machine() -> dict[str, Any]:
    """The machine a result was measured on."""
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            mem_kib = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
    except (OSError, StopIteration, ValueError):
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / (1 << 20), 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        # Other work on the machine skews timings: say how busy it was when the result was written.
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "speed_probe_ms": speed_probe_ms(),
    }


def result_document(name: str, title: str, command: str, quick: bool, seconds: float, result: Result) -> dict[str, Any]:
    """The JSON document written for one benchmark run."""
    return {
        "format_version": FORMAT_VERSION,
        "benchmark": name,
        "title": title,
        "command": command,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "quick": quick,
        "machine": machine(),
        "seconds": round(seconds, 1),
        "passed": result.passed,
        "checks": [asdict(c) for c in result.checks],
        "settings": result.settings,
        "figures": result.figures,
        "notes": result.notes,
    }


def write_result(directory: str, document: dict[str, Any]) -> str:
    """Write ``document`` to ``<directory>/<benchmark>.json``; returns the path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{document['benchmark']}.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(document, f, indent=2, sort_keys=False, default=str)
        f.write("\n")
    os.replace(tmp, path)
    return path


def command_line(argv: list[str] | None = None) -> str:
    """How this run was started, as a user would type it."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m benchmarks", *args])
