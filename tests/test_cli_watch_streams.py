"""``spanner-watcher watch`` with ``[[change_streams]]``: a change stream and a polled table in one
process, staged by one sink, shown on /metrics and /healthz; stopped by SIGTERM, started again,
it resumes from the progress table (the shared server, through the official client only)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from google.cloud import spanner

from tests.cli_support import watch_config
from tests.conftest import SINGERS_DDL
from tests.test_cli_watch_bench import CLI, REPO, _env, _names, _one_line_error, _run_all
from watcher.schema_tools.ddl import create_change_stream

EVENTS = "CREATE TABLE Events (Id INT64 NOT NULL, Body STRING(MAX)) PRIMARY KEY (Id)"


class _Watch:
    """A running ``watch`` process whose output lines are collected as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
        self.lines: list[str] = []
        self.err: list[str] = []
        self._threads = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def line(self, prefix: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in self.lines if line.startswith(prefix)]
            if found:
                return found[0]
            assert self.proc.poll() is None, "".join(self.err)[-3000:]
            time.sleep(0.1)
        raise AssertionError(f"no line starting {prefix!r}: {''.join(self.lines)}{''.join(self.err)[-2000:]}")

    def finish(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        return code


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _staged(staging: Path, table: str) -> list[dict]:
    return [json.loads(line) for path in sorted((staging / f"table={table}").glob("*.jsonl"))
            for line in path.read_text().splitlines()]


def _wait_staged(staging: Path, table: str, n: int, watch: _Watch, timeout: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert watch.proc.poll() is None, "".join(watch.err)[-3000:]
        records = _staged(staging, table) if (staging / f"table={table}").exists() else []
        if len(records) >= n:
            return records
        time.sleep(0.2)
    raise AssertionError(f"{table}: fewer than {n} records staged in {timeout} s")


def _write_events(db, ids: range, body: str) -> None:
    db.run_in_transaction(lambda t: t.insert_or_update("Events", ("Id", "Body"), [(i, f"{body}{i}") for i in ids]))


def _now(db):
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


@pytest.fixture
def mixed_db(make_database):
    db = make_database([*SINGERS_DDL, EVENTS, create_change_stream("EventsStream", {"Events": None})])
    return db


def test_watch_runs_a_change_stream_beside_polling_and_resumes_after_sigterm(mixed_db, tmp_path: Path) -> None:
    import os

    host = os.environ["SPANNER_EMULATOR_HOST"]
    start = _now(mixed_db)
    config = watch_config(tmp_path / "watch.toml", f"""
        [tables]
        include = ["Singers"]
        [[change_streams]]
        stream = "EventsStream"
        heartbeat = 1
        start = "{start.isoformat().replace('+00:00', 'Z')}"
        max_concurrent_partitions = 4
        progress_table = "EVENTS_PROGRESS"
    """, poll_interval=0.1, watcher_id="cli-test")
    staging = tmp_path / "staging"
    _write_events(mixed_db, range(5), "a")                     # 5 INSERTs
    _write_events(mixed_db, range(2), "b")                     # 2 UPDATEs of rows 0, 1
    mixed_db.run_in_transaction(lambda t: t.delete("Events", spanner.KeySet(keys=[[4]])))  # a hard delete
    with mixed_db.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(3)])
    argv = [*CLI, "watch", "--config", str(config), "--metrics-port", "0", "--quiet", *_names(mixed_db)]

    first = _Watch(argv, _env(host))
    url = first.line("metrics at ").split()[2].rsplit("/", 1)[0]
    assert "change stream EventsStream" in first.line("watching ")
    events = _wait_staged(staging, "Events", 8, first)
    _wait_staged(staging, "Singers", 3, first)
    status, health = _get(f"{url}/healthz")
    assert status == 200 and health.startswith("ok"), health
    status, metrics = _get(f"{url}/metrics")
    assert status == 200
    assert 'spanner_watcher_rows_total{table="EventsStream",shard="all"} 8' in metrics
    assert 'spanner_watcher_rows_total{table="Singers",shard="all"} 3' in metrics
    assert 'spanner_watcher_change_stream_partitions_active{stream="EventsStream"}' in metrics
    assert metrics.count("# TYPE spanner_watcher_rows_total ") == 1      # one family for every member
    first.proc.send_signal(signal.SIGTERM)
    assert first.finish() == 0, "".join(first.err)[-3000:]
    assert any("EventsStream: 8 changes staged" in line for line in first.lines), first.lines
    # Every version, as the stream gives it (OLD_AND_NEW_VALUES): updates with old values, the hard delete.
    assert [(r["keys"][0], r["mod_type"]) for r in events].count(("4", "DELETE")) == 1
    assert sorted(r["mod_type"] for r in events) == ["DELETE"] + ["INSERT"] * 5 + ["UPDATE"] * 2
    assert {r["read_method"] for r in events} == {"change_stream"} and all(r["server_transaction_id"] for r in events)
    assert sorted((r["old_values"]["Body"], r["values"]["Body"]) for r in events if r["mod_type"] == "UPDATE") == [
        ("a0", "b0"), ("a1", "b1")]
    with mixed_db.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT STREAM_NAME, WATCHER_ID, COUNT(*) FROM EVENTS_PROGRESS "
                                     "GROUP BY STREAM_NAME, WATCHER_ID"))
    assert [(r[0], r[1]) for r in rows] == [("EventsStream", "cli-test")] and rows[0][2] >= 2

    # Stopped: more versions are committed; the next run stages exactly those, from the stored progress.
    _write_events(mixed_db, range(3), "c")
    second = _Watch([*argv[:-len(_names(mixed_db))], "--duration", "6", *_names(mixed_db)], _env(host))
    assert second.finish() == 0, "".join(second.err)[-3000:]
    events = _staged(staging, "Events")
    bodies = sorted(r["values"]["Body"] for r in events if r["mod_type"] == "UPDATE")
    assert bodies == ["b0", "b1", "c0", "c1", "c2"]
    assert len(events) == 11                                     # nothing staged twice across the restart
    assert not list(staging.glob("**/table=EVENTS_PROGRESS")) and not list(staging.glob("**/table=LAST_SEEN*"))
    assert len(_staged(staging, "Singers")) == 3                 # the polled table resumed from its checkpoint too


def test_watch_names_an_unknown_stream_before_starting(mixed_db, tmp_path: Path) -> None:
    import os

    config = tmp_path / "bad.toml"
    config.write_text('[[change_streams]]\nstream = "NoSuchStream"\n[watch]\nstaging_dir = "staging-bad"\n')
    r = _run_all({"bad": ([*CLI, "watch", "--config", str(config), "--duration", "1", *_names(mixed_db)],
                          _env(os.environ["SPANNER_EMULATOR_HOST"]))})
    _one_line_error(r["bad"], "bad.toml", "change_streams[0].stream", "NoSuchStream", "ddl change-stream")
    assert not (tmp_path / "staging-bad").exists()


def _started(db, watch: _Watch, timeout: float = 60) -> None:
    """Wait until the stream watcher stored its first partitions (its start time is behind us)."""
    from google.api_core import exceptions as gexc

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert watch.proc.poll() is None, "".join(watch.err)[-3000:]
        try:
            with db.snapshot() as snap:
                if list(snap.execute_sql("SELECT COUNT(*) FROM WATCHER_CHANGE_STREAM_PARTITIONS"))[0][0] >= 2:
                    return
        except gexc.GoogleAPICallError:  # the progress table is not created yet
            pass
        time.sleep(0.2)
    raise AssertionError("the change stream watcher did not start")


def test_watch_mode_change_stream_reads_the_named_stream_only(mixed_db, tmp_path: Path) -> None:
    import os

    config = tmp_path / "mode.toml"
    config.write_text('[watch]\nmode = "change_stream"\nchange_stream = "EventsStream"\n')
    with mixed_db.batch() as batch:   # a table with a commit-timestamp column: polled by default, not in this mode
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(1, "F", "L", spanner.COMMIT_TIMESTAMP)])
    watch = _Watch([*CLI, "watch", "--config", str(config), "--quiet", *_names(mixed_db)],
                   _env(os.environ["SPANNER_EMULATOR_HOST"]))
    try:
        assert watch.line("watching ").startswith("watching change stream EventsStream in ")
        _started(mixed_db, watch)
        _write_events(mixed_db, range(3), "a")
        _write_events(mixed_db, range(1), "b")
        events = _wait_staged(tmp_path / "staging", "Events", 4, watch)
    finally:
        watch.proc.send_signal(signal.SIGTERM)
    assert watch.finish() == 0, "".join(watch.err)[-3000:]
    assert sorted(r["mod_type"] for r in events) == ["INSERT"] * 3 + ["UPDATE"]
    assert {r["read_method"] for r in events} == {"change_stream"}
    assert not (tmp_path / "staging" / "table=Singers").exists()


def test_watch_mode_change_stream_names_its_key_for_an_unknown_stream(mixed_db, tmp_path: Path) -> None:
    import os

    config = tmp_path / "bad-mode.toml"
    config.write_text('[watch]\nmode = "change_stream"\nchange_stream = "NoSuchStream"\nstaging_dir = "st"\n')
    r = _run_all({"bad": ([*CLI, "watch", "--config", str(config), "--duration", "1", *_names(mixed_db)],
                          _env(os.environ["SPANNER_EMULATOR_HOST"]))})
    _one_line_error(r["bad"], "bad-mode.toml", "watch.change_stream", "NoSuchStream")
    assert not (tmp_path / "st").exists()
