"""The command line, run as a user runs it: ``spanner-watcher local-spanner`` and ``demo`` in subprocesses."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "spanner-watcher"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "watcher"]

# A client in its own process, so that it talks to the server under test and nothing else.
CLIENT_SCRIPT = textwrap.dedent("""
    from google.cloud import spanner
    client = spanner.Client(project="cli-project")
    inst = client.instance("cli-inst", configuration_name="projects/cli-project/instanceConfigs/emulator-config",
                           node_count=1)
    inst.create().result(30)
    db = inst.database("cli-db", ddl_statements=[
        "CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"])
    db.create().result(30)
    with db.batch() as b:
        b.insert("T", ("Id", "Ts"), [(1, spanner.COMMIT_TIMESTAMP), (2, spanner.COMMIT_TIMESTAMP)])
    with db.snapshot() as snap:
        print("rows", [list(r) for r in snap.execute_sql("SELECT Id FROM T ORDER BY Id")])
""")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SPANNER_EMULATOR_HOST"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(port: int, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "local-spanner", "--port", str(port), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)


def _host_line(proc: subprocess.Popen, timeout: float = 30) -> str:
    """The SPANNER_EMULATOR_HOST value the server prints once it listens."""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"SPANNER_EMULATOR_HOST=(\S+)", line)
        if m:
            return m.group(1)
    proc.kill()
    raise AssertionError(f"no SPANNER_EMULATOR_HOST line; stderr: {proc.stderr.read() if proc.stderr else ''}")


def _stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def _run_all(commands: dict[str, list[str]], timeout: float = 300) -> dict[str, subprocess.CompletedProcess]:
    """Run independent CLI invocations side by side (each pays the interpreter start-up once)."""
    procs = {name: subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
             for name, args in commands.items()}
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=timeout)
        results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return results


def test_help_bad_arguments_busy_port_and_demo_options():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _run_all({
            "help": [*CLI, "local-spanner", "--help"],
            "top_help": [*CLI, "--help"],
            "bad_port": [*CLI, "local-spanner", "--port", "70000"],
            "busy": [*CLI, "local-spanner", "--port", str(port)],
            # The demo itself runs in tests/test_demo.py (in-process, on the run's server and Spark session).
            "demo_help": [*CLI, "demo", "--help"],
            "demo_bad": [*CLI, "demo", "--seconds", "0"],
            "load_bad": [*CLI, "local-spanner", "--change-stream-split-rate", "10", "--change-stream-merge-rate", "20"],
            "load_and_churn": [*CLI, "local-spanner", "--change-stream-split-rate", "10",
                               "--change-stream-partition-churn-seconds", "1"],
        })
    assert r["help"].returncode == 0
    for option in ("--host", "--port", "--data-dir"):
        assert option in r["help"].stdout
    assert r["top_help"].returncode == 0 and "local-spanner" in r["top_help"].stdout and "demo" in r["top_help"].stdout

    assert r["bad_port"].returncode == 2 and "70000" in r["bad_port"].stderr

    busy_lines = [line for line in r["busy"].stderr.splitlines() if line.strip()]
    assert r["busy"].returncode == 2
    assert len(busy_lines) == 1, r["busy"].stderr
    assert str(port) in busy_lines[0]

    assert r["demo_help"].returncode == 0
    for option in ("--seconds", "--writers", "--keys", "--workdir"):
        assert option in r["demo_help"].stdout
    assert r["demo_bad"].returncode == 2 and "--seconds" in r["demo_bad"].stderr
    assert r["load_bad"].returncode == 2 and "merge rate" in r["load_bad"].stderr
    assert r["load_and_churn"].returncode == 2 and "exclude each other" in r["load_and_churn"].stderr
    assert "--change-stream-split-rate" in r["help"].stdout
    for result in r.values():
        assert "Traceback" not in result.stderr


def test_local_spanner_serves_a_client_stops_on_sigterm_and_holds_its_port():
    port = _free_port()
    proc = _start(port)
    try:
        host = _host_line(proc)
        assert host == f"127.0.0.1:{port}"
        # Meanwhile a second server on the same port must be refused, not share it.
        second = subprocess.Popen([*CLI, "local-spanner", "--port", str(port)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
        client = subprocess.run([sys.executable, "-c", CLIENT_SCRIPT], capture_output=True, text=True,
                                env=_env(SPANNER_EMULATOR_HOST=host), timeout=120)
        assert client.returncode == 0, client.stderr[-2000:]
        assert "rows [[1], [2]]" in client.stdout
        _, second_err = second.communicate(timeout=60)
        assert second.returncode == 2 and str(port) in second_err
    finally:
        code = _stop(proc)
    assert code == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr
