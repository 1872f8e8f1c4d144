"""``spanner-watcher watch`` and ``spanner-watcher bench`` run as a user runs them (subprocesses).

The watch tests use the session's Spanner (SPANNER_EMULATOR_HOST, which the fixtures point
at the embedded server when nothing else is set) through the official client only; the
bench test lets the command start its own local server process, as it does by default.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli_support import run_all
from tests.conftest import INSTANCE, PROJECT, SINGERS_DDL
from tests.report_checks import check_report

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "spanner-watcher"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "watcher"]
TIMEOUT = 180


def _env(emulator: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SPANNER_EMULATOR_HOST"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if emulator:
        env["SPANNER_EMULATOR_HOST"] = emulator
    return env


def _run_all(commands: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, subprocess.CompletedProcess]:
    """Independent command lines (name -> (argv, env)) side by side."""
    return run_all(commands, cwd=REPO, timeout=TIMEOUT)


def _config(path: Path, table: str = "Singers", shards: str = 'shards = { kind = "fixed", column = "ShardId", values = "-18..18" }',
            staging: str = "staging") -> Path:
    path.write_text(textwrap.dedent(f"""
        [watch]
        poll_interval = 0.1
        initial_timestamp = "beginning"
        staging_dir = "{staging}"
        [tables]
        include = ["{table}"]
        [tables.{table}]
        hint = "@{{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}}"
        {shards}
    """))
    return path


def _names(database) -> list[str]:
    return ["--project", PROJECT, "--instance", INSTANCE, "--database", database.database_id]


def _one_line_error(result: subprocess.CompletedProcess, *words: str) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("spanner-watcher "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def singers_with_rows(make_database):
    from google.cloud import spanner

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"First{i}", f"Last{i}", spanner.COMMIT_TIMESTAMP) for i in range(30)])
    return database


def test_watch_stages_every_row_and_bad_input_fails_cleanly(singers_with_rows, tmp_path: Path) -> None:
    host = os.environ["SPANNER_EMULATOR_HOST"]
    names = _names(singers_with_rows)
    good = _config(tmp_path / "good.toml")
    missing_key = _config(tmp_path / "missing.toml", shards='shards = { kind = "fixed", values = "-18..18" }',
                          staging="staging-missing")
    unknown_table = _config(tmp_path / "unknown.toml", table="Singerz", staging="staging-unknown")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: connections are refused
        r = _run_all({
            "good": ([*CLI, "watch", "--config", str(good), "--duration", "3", *names], _env(host)),
            "missing": ([*CLI, "watch", "--config", str(missing_key), *names], _env(host)),
            "unknown": ([*CLI, "watch", "--config", str(unknown_table), "--duration", "1", *names], _env(host)),
            "unreachable": ([*CLI, "watch", "--config", str(good), "--duration", "1"], _env(dead)),
            "no_file": ([*CLI, "watch", "--config", str(tmp_path / "nope.toml")], _env(host)),
            "help": ([*CLI, "watch", "--help"], _env()),
        })
    assert r["good"].returncode == 0, r["good"].stderr[-3000:]
    assert "Traceback" not in r["good"].stderr
    batches = list((tmp_path / "staging" / "table=Singers").glob("*.jsonl"))
    records = [json.loads(line) for path in batches for line in path.read_text().splitlines()]
    assert sorted(int(rec["keys"][0]) for rec in records) == list(range(30))  # INT64 is staged as text
    assert "30 changes staged" in r["good"].stdout
    assert not list(tmp_path.glob("staging/**/.*.tmp"))
    # The checkpoint moved past the rows, in the configured (default) checkpoint table.
    with singers_with_rows.snapshot() as snap:
        stored = list(snap.execute_sql("SELECT COUNT(*) FROM LAST_SEEN_COMMIT_TIMESTAMPS WHERE TABLE_NAME = 'Singers'"))
    assert stored[0][0] == 1

    _one_line_error(r["missing"], "missing.toml", "tables.Singers.shards.column", "missing")
    _one_line_error(r["unknown"], "unknown.toml", "tables.include", "Singerz", "Singers")
    _one_line_error(r["unreachable"], "cannot reach", dead, "SPANNER_EMULATOR_HOST")
    _one_line_error(r["no_file"], "nope.toml", "no such file")
    for name in ("missing", "unknown"):
        assert not (tmp_path / f"staging-{name}").exists(), f"{name}: staging folder left behind"
    help_text = r["help"].stdout
    for option in ("--config", "--duration", "--quiet", "--project", "--instance", "--database", "--data-dir"):
        assert option in help_text


def test_bench_small_run_writes_its_result_and_bad_input_fails_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "bench-out"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _run_all({
            "run": ([*CLI, "bench", "--duration", "5", "--warmup", "1", "--tps", "10", "--mutations-per-transaction", "5",
                     "--update-parallelism", "4", "--watchers", "2", "--poll-interval", "0.2", "--seed", "3",
                     "--output", str(out)], _env()),
            "in_process": ([*CLI, "bench", "--duration", "3", "--warmup", "1", "--tps", "10", "--mutations-per-transaction", "5",
                            "--update-parallelism", "2", "--writer-processes", "0", "--output", str(tmp_path / "in-out")],
                           _env()),
            "postgresql": ([*CLI, "bench", "--dialect", "postgresql", "--duration", "3", "--warmup", "1", "--tps", "10",
                            "--update-parallelism", "2", "--watchers", "2", "--poll-interval", "0.2", "--seed", "3",
                            "--output", str(tmp_path / "pg-out")], _env()),
            "busy": ([*CLI, "bench", "--port", str(port), "--duration", "1", "--output", str(tmp_path / "busy-out")], _env()),
            "bad_processes": ([*CLI, "bench", "--update-parallelism", "2", "--writer-processes", "3"], _env()),
            "watchers": ([*CLI, "bench", "--watchers", "38", "--output", str(tmp_path / "w-out")], _env()),
            "no_shards": ([*CLI, "bench", "--watchers", "2", "--disable-shard-provider", "--output", str(tmp_path / "s-out")],
                          _env()),
            "bad_tps": ([*CLI, "bench", "--tps", "0"], _env()),
            "help": ([*CLI, "bench", "--help"], _env()),
        })
    assert r["run"].returncode == 0, r["run"].stderr[-3000:]
    document = json.loads((out / "result.json").read_text())
    f = document["figures"]
    assert f["transactions"] > 10 and f["mutations"] >= f["transactions"]
    assert f["received_changes"] == f["mutations"] and f["all_captured"] and f["missing_changes"] == 0
    assert f["duplicate_changes"] == 0 and f["write_errors"] == 0
    assert 0 < f["lag_ms"]["p50"] <= f["lag_ms"]["p99"] <= f["lag_ms"]["p100"]
    assert document["options"]["watchers"] == 2 and document["options"]["update_parallelism"] == 4
    assert sum(document["series"]["mutations_written"]) == f["mutations"]
    assert sum(document["series"]["changes_received"]) == f["received_changes"]
    for plot in ("throughput.png", "lag.png", "poll_time.png"):
        assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    check_report(out / "report.html", f"{f['mutations']:,}", f"{f['lag_ms']['p99']:,.1f}", pngs=3)
    assert f"report: {out / 'report.html'}" in r["run"].stdout
    assert "all captured: yes" in r["run"].stdout
    assert document["options"]["writer_processes"] == 1 and "writer_processes_cores" in f
    # The writer threads beside the watchers, in one process, as before writer processes.
    in_process = json.loads((tmp_path / "in-out" / "result.json").read_text())
    assert r["in_process"].returncode == 0, r["in_process"].stderr[-3000:]
    assert in_process["figures"]["all_captured"] and in_process["figures"]["transactions"] > 0
    assert "writer_processes_cores" not in in_process["figures"]
    _one_line_error(r["bad_processes"], "writer processes")
    # A PostgreSQL database: Singers from the DDL helpers, the polls' hint in PostgreSQL, every write captured.
    assert r["postgresql"].returncode == 0, r["postgresql"].stderr[-3000:]
    assert "a PostgreSQL database" in r["postgresql"].stdout
    pg = json.loads((tmp_path / "pg-out" / "result.json").read_text())["figures"]
    assert pg["all_captured"] and pg["transactions"] > 0 and pg["duplicate_changes"] == 0 and pg["write_errors"] == 0

    _one_line_error(r["busy"], str(port))
    assert not (tmp_path / "busy-out").exists()
    _one_line_error(r["watchers"], "watchers")
    _one_line_error(r["no_shards"], "one watcher")
    _one_line_error(r["bad_tps"], "--tps", "more than 0")
    assert not (tmp_path / "w-out").exists() and not (tmp_path / "s-out").exists()
    help_text = r["help"].stdout
    for option in ("--write-transactions-per-second", "--mutations-per-transaction", "--update-parallelism",
                   "--writer-processes", "--watchers",
                   "--disable-shard-provider", "--disable-table-hint", "--poll-interval", "--limit",
                   "--fallback-to-with-query", "--reset-last-seen-timestamps", "--drop-table", "--duration", "--output",
                   "--port", "--dialect"):
        assert option in help_text
