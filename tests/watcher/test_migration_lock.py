"""Two migrate runs at once never apply a file twice: the migration lock, through the official client."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli_support import run_all
from tests.conftest import INSTANCE, PROJECT
from watcher.errors import MigrationError, MigrationLockedError
from watcher.schema_tools import migrations as m
from watcher.schema_tools.migration_lock import LOCK_ID, MigrationLock
from watcher.schema_tools.migrations import MigrationSet, Migrator

REPO = Path(__file__).resolve().parents[2]
LOCK_TABLE = m.MIGRATIONS_TABLE + "_LOCK"


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "app"
    path.mkdir()
    write(path, "V001__singers.sql", "CREATE TABLE Singers (Id INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (Id);\n"
                                     "CREATE INDEX SingersByName ON Singers (Name);\n")
    # DML that would show a second run: run twice, it would fail on the duplicate key.
    write(path, "V002__seed.sql", "INSERT INTO Singers (Id, Name) VALUES (1, 'Ann');\n")
    write(path, "V003__albums.sql", "CREATE TABLE Albums (Id INT64 NOT NULL) PRIMARY KEY (Id)")
    return path


def query(database, sql: str) -> list[list]:
    with database.snapshot() as snap:
        return [list(row) for row in snap.execute_sql(sql)]


def records(database) -> list[tuple[str, int]]:
    return [(r[0], r[1]) for r in query(database, f"SELECT FOLDER_ID, VERSION FROM {m.MIGRATIONS_TABLE} ORDER BY 1, 2")]


def lock_rows(database) -> list[list]:
    return query(database, f"SELECT LOCK_ID, OWNER FROM {LOCK_TABLE}")


def test_two_runs_at_once_apply_each_file_once_and_the_second_waits(make_database, folder):
    database = make_database([])
    messages: dict[str, list[str]] = {"a": [], "b": []}
    b_waiting = threading.Event()

    def progress(name: str):
        def say(line: str) -> None:
            messages[name].append(line)
            if "waiting for the migration lock" in line:
                b_waiting.set()
            elif "applied V001" in line:
                # Whoever applies first holds the lock until the other one is seen waiting for it.
                assert b_waiting.wait(30), "the other run never waited for the lock"
        return say

    reports, failures = {}, []

    def run(name: str) -> None:
        try:
            reports[name] = Migrator(database, progress=progress(name)).migrate(MigrationSet.from_directory(folder))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in messages]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures
    applied = sorted(f.version for report in reports.values() for _, f, _ in report.applied)
    assert applied == [1, 2, 3]                                    # each file exactly once, over both runs
    assert [len(r.applied) for r in reports.values()].count(0) == 1  # the waiting run found everything applied
    assert records(database) == [("app", 1), ("app", 2), ("app", 3)]
    assert query(database, "SELECT Id, Name FROM Singers") == [[1, "Ann"]]
    waiter = next(name for name, lines in messages.items() if any("waiting for the migration lock" in x for x in lines))
    assert not any("applied V" in line for line in messages[waiter])
    assert lock_rows(database) == []                               # released at the end


def test_a_run_that_must_not_wait_stops_with_a_message_naming_the_holder(make_database, folder):
    database = make_database([])
    migrator = Migrator(database, lock_wait=0)
    migrator.ensure_table()
    with migrator.lock() as held:
        held.acquire()
        with pytest.raises(MigrationLockedError) as info:
            migrator.migrate(MigrationSet.from_directory(folder))
        assert held.owner in str(info.value) and "another migrate run holds the migration lock" in str(info.value)
        assert "Nothing was applied" in str(info.value)
        assert records(database) == []
        assert lock_rows(database) == [[LOCK_ID, held.owner]]     # the holder keeps it
    assert lock_rows(database) == []
    assert len(migrator.migrate(MigrationSet.from_directory(folder)).applied) == 3


def test_a_crashed_runs_lock_is_taken_over_once_it_expires(make_database, folder):
    database = make_database([])
    Migrator(database).ensure_table()
    now = dt.datetime.now(dt.UTC)
    crashed = "crashed-host:4242:0badc0ffee00"
    with database.batch() as batch:   # what a run leaves behind when it dies holding the lock
        batch.insert(LOCK_TABLE, ("LOCK_ID", "OWNER", "ACQUIRED_AT", "EXPIRES_AT"),
                     [(LOCK_ID, crashed, now - dt.timedelta(minutes=1), now + dt.timedelta(seconds=1.5))])
    with pytest.raises(MigrationLockedError, match=crashed):
        Migrator(database, lock_wait=0).migrate(MigrationSet.from_directory(folder))   # not expired yet
    lines: list[str] = []
    started = time.monotonic()
    report = Migrator(database, progress=lines.append).migrate(MigrationSet.from_directory(folder))
    assert time.monotonic() - started >= 0.5                       # it waited for the expiry
    assert len(report.applied) == 3 and records(database) == [("app", 1), ("app", 2), ("app", 3)]
    assert any(line.startswith(f"took over the migration lock from {crashed}") for line in lines), lines
    assert lock_rows(database) == []


def test_a_holder_renews_its_lock_and_a_run_that_lost_it_records_nothing(make_database):
    database = make_database([])
    Migrator(database).ensure_table()
    first = MigrationLock(database, LOCK_TABLE, timeout=0.6)
    first.acquire()
    try:
        time.sleep(1.5)                                              # longer than the timeout: renewed meanwhile
        assert MigrationLock(database, LOCK_TABLE, timeout=0.6).try_acquire().owner == first.owner
    finally:
        first.release()
    stalled = MigrationLock(database, LOCK_TABLE, timeout=5)
    assert stalled.try_acquire() is None                             # taken, but never renewed (no renewer thread)
    with database.batch() as batch:                                  # another run took it over meanwhile
        batch.update(LOCK_TABLE, ("LOCK_ID", "OWNER"), [(LOCK_ID, "other-host:1:abc")])
    with pytest.raises(MigrationError, match="lost its migration lock: the migration lock is now held by other-host:1:abc"):
        database.run_in_transaction(stalled.check)


def test_two_commands_at_once_apply_each_file_once(instance, folder):
    database_id = f"lock-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-m", "watcher", "migrate", "--dir", str(folder), "--project", PROJECT,
            "--instance", INSTANCE, "--database", database_id]
    database = instance.database(database_id)
    database.create().result(60)
    try:
        results = run_all({"a": (argv, env), "b": (argv, env)}, cwd=REPO, timeout=120)
        for r in results.values():
            assert r.returncode == 0 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
        assert records(database) == [("app", 1), ("app", 2), ("app", 3)]
        assert query(database, "SELECT COUNT(*) FROM Singers") == [[1]]
        applied = [line for r in results.values() for line in r.stdout.splitlines() if line.startswith("app: applied")]
        assert sorted(line.split()[2] for line in applied) == ["V001__singers.sql", "V002__seed.sql", "V003__albums.sql"]
        outs = sorted(r.stdout for r in results.values())
        # The later run either found nothing pending, waited for the lock, or took it just after the
        # other released it and found the files applied meanwhile: each way it said so.
        assert any("up to date" in out or "waiting for the migration lock" in out
                   or "another migrate run applied the others meanwhile" in out for out in outs), outs
    finally:
        database.drop()


def test_lock_options_on_the_command_line():
    out = subprocess.run([sys.executable, "-m", "watcher", "migrate", "--help"], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert "--lock-timeout SECONDS" in out and "--lock-wait SECONDS" in out
    bad = subprocess.run([sys.executable, "-m", "watcher", "migrate", "--lock-timeout", "-3"], capture_output=True,
                         text=True, cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert bad.returncode == 2 and "--lock-timeout" in bad.stderr


def test_the_lock_of_a_postgresql_database_is_its_lower_case_table(make_database, tmp_path: Path):
    from google.cloud.spanner_admin_database_v1 import DatabaseDialect

    database = make_database([], database_dialect=DatabaseDialect.POSTGRESQL)
    pg = tmp_path / "pg"
    pg.mkdir()
    write(pg, "V001__singers.sql", "CREATE TABLE singers (id bigint NOT NULL, name varchar, PRIMARY KEY (id))")
    migrator = Migrator(database, lock_wait=0)
    migrator.ensure_table()
    with migrator.lock() as held:
        held.acquire()
        with pytest.raises(MigrationLockedError, match=held.owner):
            Migrator(database, lock_wait=0).migrate(MigrationSet.from_directory(pg))
        assert query(database, 'SELECT lock_id, owner FROM "spanner_watcher_migrations_lock"') == [[LOCK_ID, held.owner]]
        held.renew()
        held.check()
    assert lock_rows(database) == []
    assert len(Migrator(database).migrate(MigrationSet.from_directory(pg)).applied) == 1
