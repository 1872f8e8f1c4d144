"""``watch``'s health that means something (``/healthz`` judges each table's lag against a bound) and
``watch --until-caught-up`` (a batch step: exit 0 once everything committed before the start is staged).

The lag rule is a pure function of the watcher's figures and ``now`` (tested with a frozen
clock); one test serves it over HTTP for a real watcher with an injected clock, and the
until-caught-up tests run the command as a user runs it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import textwrap
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from tests.conftest import INSTANCE, PROJECT, SINGERS_DDL
from tests.test_cli_commands import CLI, REPO, TIMEOUT, _env
from watcher.cli.health import behind, failed_loops, health

T0 = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)


class _Figures:
    """A watcher as health() sees it: a state, a failure and the figures of its poll loops."""

    def __init__(self, *loops: dict[str, Any], state: str = "running", failure: Any = None) -> None:
        self.state = type("State", (), {"value": state})()
        self.failure = failure
        self.loops = list(loops)

    def poll_stats(self) -> list[dict[str, Any]]:
        return self.loops


def _loop(table: str, watermark: dt.datetime | None, state: str = "running", **more: Any) -> dict[str, Any]:
    return {"table": table, "shard": "all", "state": state, "watermark": watermark, **more}


@freeze_time("2024-05-01T10:10:00Z")
def test_a_table_lagging_past_the_bound_is_503_naming_it_its_lag_and_the_bound() -> None:
    now = dt.datetime.now(dt.UTC)  # frozen: ten minutes after T0
    watcher = _Figures(_loop("Singers", T0), _loop("Albums", now - dt.timedelta(seconds=2)))
    assert health(watcher, now=now, max_lag=300) == (503, "lagging: Singers 600.0 s behind (bound 300 s)")
    assert health(watcher, now=now, max_lag=900) == (200, "ok: 2 table watchers, most lag 600.0 s (bound 900 s)")
    assert health(watcher, now=now) == (200, "ok: 2 table watchers")  # no bound: lag is not judged


def test_an_idle_table_is_not_lagging_but_one_without_a_first_poll_counts_from_the_start() -> None:
    now = T0 + dt.timedelta(hours=1)
    # An idle table's watermark is its last poll's read timestamp, however old its last write.
    idle = _Figures(_loop("Quiet", now - dt.timedelta(seconds=1), last_commit_timestamp=T0))
    assert health(idle, now=now, max_lag=60)[0] == 200
    stuck = _Figures(_loop("Stuck", None))
    assert health(stuck, now=now, max_lag=60, started_at=now - dt.timedelta(seconds=30))[0] == 200
    assert health(stuck, now=now, max_lag=60, started_at=now - dt.timedelta(seconds=90)) == \
        (503, "lagging: Stuck 90.0 s behind (bound 60 s)")


def test_failures_stops_and_ended_tables() -> None:
    now = T0
    assert health(_Figures(failure=RuntimeError("gone")), now=now, max_lag=1) == (503, "failed: gone")
    assert health(_Figures(state="stopped"), now=now) == (503, "stopped")
    one_failed = _Figures(_loop("A", now), _loop("B", None, state="failed", failure="PollError('no index')"))
    assert health(one_failed, now=now) == (503, "failed: B: PollError('no index')")
    assert failed_loops(one_failed) == [("B", "PollError('no index')")]
    dropped = _Figures(_loop("A", now), _loop("Old", T0 - dt.timedelta(days=1), state="dropped"))
    assert health(dropped, now=now, max_lag=60)[0] == 200  # a dropped table delivers nothing more
    assert behind(dropped, now) == []
    assert behind(_Figures(_loop("A", now - dt.timedelta(microseconds=1)), _loop("B", None)), now) == ["A", "B"]


def test_healthz_over_http_turns_503_when_the_clock_passes_the_bound(singers_db) -> None:
    from google.cloud import spanner

    from watcher import TableWatcher
    from watcher.cli.metrics_server import MetricsServer

    with singers_db.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"), [(1, "A", "B", spanner.COMMIT_TIMESTAMP)])
    clock = {"now": dt.datetime.now(dt.UTC)}
    watcher = TableWatcher(singers_db, "Singers", poll_interval=0.05)
    polled = threading.Event()
    watcher.add_poll_listener(lambda record: polled.set())
    watcher.add_callback(lambda change: None)  # a watcher with no consumer does not poll

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"{server.url}{path}", timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    with MetricsServer(None, port=0, max_lag=60, clock=lambda: clock["now"]) as server, watcher:
        server.watcher = watcher
        assert polled.wait(30)
        status, text = get("/healthz")
        assert status == 200 and text.startswith("ok: 1 table watchers"), text
        clock["now"] += dt.timedelta(minutes=10)  # the watcher's watermark stays where its polls put it
        watermark = watcher.stats()["watermark"]
        status, text = get("/healthz")
        lag = (clock["now"] - watermark).total_seconds()
        assert status == 503 and text.strip() == f"lagging: Singers {lag:.1f} s behind (bound 60 s)", text
        assert get("/metrics")[0] == 200


# --- --until-caught-up, end to end -------------------------------------------------------------------

def _config(path: Path, tables: str, extra: str = "") -> Path:
    path.write_text(textwrap.dedent(f"""
        [watch]
        poll_interval = 0.1
        initial_timestamp = "beginning"
        staging_dir = "staging"
        [tables]
        include = {tables}
    """) + textwrap.dedent(extra))
    return path


def _staged_keys(staging: Path, table: str) -> list[int]:
    return sorted(int(json.loads(line)["keys"][0]) for path in (staging / f"table={table}").glob("*.jsonl")
                  for line in path.read_text().splitlines())


def _watch(config: Path, database: Any, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "watch", "--config", str(config), "--quiet", *more, "--project", PROJECT,
                           "--instance", INSTANCE, "--database", database.database_id],
                          env=_env(os.environ["SPANNER_EMULATOR_HOST"]), cwd=REPO, capture_output=True, text=True,
                          timeout=TIMEOUT)


def test_until_caught_up_exits_0_with_every_row_written_before_the_start_staged(make_database, tmp_path: Path) -> None:
    from google.cloud import spanner

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:  # more than one poll's limit, so that catching up takes several polls
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(250)])
    config = _config(tmp_path / "watcher.toml", '["Singers"]', extra="")
    config.write_text(config.read_text().replace("poll_interval = 0.1", "poll_interval = 0.1\nlimit = 100"))
    stop = threading.Event()
    later: list[int] = []

    def keep_writing() -> None:  # rows committed while the command runs: it must not wait for them
        key = 10_000
        while not stop.is_set():
            with database.batch() as batch:
                batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"), [(key, "late", "L", spanner.COMMIT_TIMESTAMP)])
            later.append(key)
            key += 1
            stop.wait(0.05)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        result = _watch(config, database, "--until-caught-up", "--duration", "120")
    finally:
        stop.set()
        writer.join()
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    assert "caught up: every change committed up to" in result.stdout
    staged = _staged_keys(tmp_path / "staging", "Singers")
    assert set(range(250)) <= set(staged)
    assert later and not set(staged) - set(range(250)) - set(later)


def test_until_caught_up_gives_the_failure_code_when_a_table_fails(make_database, tmp_path: Path) -> None:
    from google.cloud import spanner

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"), [(1, "A", "B", spanner.COMMIT_TIMESTAMP)])
    # The hint names an index the table lacks: every poll of the table is refused, so it never catches up.
    config = _config(tmp_path / "watcher.toml", '["Singers"]', extra="""
        [tables.Singers]
        hint = "@{FORCE_INDEX=Idx_NoSuchIndex}"
    """)
    result = _watch(config, database, "--until-caught-up", "--duration", "120")
    assert result.returncode == 1, (result.stdout[-2000:], result.stderr[-2000:])
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("spanner-watcher watch: error: the watcher failed: ") and "Idx_NoSuchIndex" in last, last
    help_text = " ".join(subprocess.run([*CLI, "watch", "--help"], env=_env(), cwd=REPO, capture_output=True,
                                        text=True, timeout=TIMEOUT).stdout.split())
    for code in ("0 stopped as asked", "1 a watcher or a table failed", "2 a problem to fix", "3 --until-caught-up"):
        assert code in help_text, code
