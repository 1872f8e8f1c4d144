"""The benchmark runner works end to end: ``python -m benchmarks localspanner --quick`` writes its JSON results.

A smoke test of the runner and the local-server benchmarks (small sizes);
the figures of a quick run measure nothing and are not checked, only their shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = ("localspanner_poll", "localspanner_stream", "localspanner_writes")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the benchmarks read /proc")
def test_quick_localspanner_suite_writes_json_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "SPANNER_EMULATOR_HOST"}  # the benchmarks start their own server
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "localspanner", "--quick", "--only", *EXPECTED, "--results", str(results),
         "--workdir", str(tmp_path / "work")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )
    # 1 = a target missed, which quick sizes may do; 2 = a benchmark crashed.
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert sorted(p.stem for p in results.glob("*.json")) == sorted(EXPECTED)  # --only ran these alone
    for name in EXPECTED:
        document = json.loads((results / f"{name}.json").read_text())
        assert document["benchmark"] == name
        assert document["quick"] is True
        assert document["command"].startswith("python -m benchmarks localspanner --quick")
        assert document["machine"]["nproc"] >= 1
        assert document["checks"] and all({"name", "value", "op", "target", "passed"} <= set(c) for c in document["checks"])
        assert document["passed"] == all(c["passed"] for c in document["checks"])
    poll = json.loads((results / "localspanner_poll.json").read_text())["figures"]
    assert poll["small"]["rows_returned"] == poll["large"]["rows_returned"] == 1000
    stream = json.loads((results / "localspanner_stream.json").read_text())["figures"]
    assert stream["rows"] == 10_000 and 0 < stream["largest_message_bytes"] < 4 << 20
    writes = json.loads((results / "localspanner_writes.json").read_text())["figures"]
    assert writes["best_two_processes"]["best_mutations_per_second"] > 0 and not any(p["errors"] for p in writes["curve"])
    assert writes["sqlite_replay_cpu_us_per_mutation"] and all(us > 0 for us in writes["sqlite_replay_cpu_us_per_mutation"])


def test_unknown_benchmark_is_refused(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "benchmarks", "localspanner", "--only", "nope", "--results", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "nope" in run.stderr and not list(tmp_path.iterdir())
