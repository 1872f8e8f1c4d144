"""``migrate``, ``ddl``, ``backfill``, ``changelog``, ``export`` and ``reconcile`` run as a user runs them.

Every command is a subprocess (``python -m watcher ...``); the tests check its exit status, its
output and its effect. The Spanner side is read back through the official client only: the
session's server (SPANNER_EMULATOR_HOST, which the fixtures point at the embedded server when
nothing else is set), or, for the embedded default, a ``spanner-watcher local-spanner`` started on
the command's data folder. Spark commands start a JVM each, so the pipeline is one test, and the
bad-input cases (which must fail before Spark starts) run side by side.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import run_all
from tests.conftest import INSTANCE, PROJECT
from watcher.schema_tools.migration_files import default_migrations

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "watcher"]
TIMEOUT = 300
ENV_HOST = "SPANNER_EMULATOR_HOST"

ITEMS_V001 = """
CREATE TABLE Items (
  Id INT64 NOT NULL,
  Name STRING(100),
  LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true),
) PRIMARY KEY (Id);
"""
WATCHER_TABLES = {"LAST_SEEN_COMMIT_TIMESTAMPS", "CHANGE_SETS", "WATCHER_CHANGELOG", "SPANNER_WATCHER_MIGRATIONS",
                  "WATCHER_CHANGE_STREAM_PARTITIONS"}
#: How many files the library's own migration folder (ddl/watcher) holds.
PACKAGED = len(default_migrations().files)


# --- helpers ------------------------------------------------------------------------------------------

def _env(emulator: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_HOST}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if emulator:
        env[ENV_HOST] = emulator
    return env


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=TIMEOUT)


def _run_all(commands: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, subprocess.CompletedProcess]:
    """Independent CLI invocations (name -> (arguments, env)) side by side."""
    return run_all({name: ([*CLI, *args], env) for name, (args, env) in commands.items()}, cwd=REPO, timeout=TIMEOUT)


def _ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.args, result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result.stdout


def _one_line_error(result: subprocess.CompletedProcess, *words: str) -> str:
    """Exit status 2 and one line on stderr (Spark's start-up noise aside) naming the problem."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.args, result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert len(lines) == 1, result.stderr  # the bad input is caught before Spark (and its log) starts
    assert lines[0].startswith("spanner-watcher "), lines[0]
    assert ": error: " in lines[0], lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def _names(database_id: str) -> list[str]:
    return ["--project", PROJECT, "--instance", INSTANCE, "--database", database_id]


def _query(database: Any, sql: str) -> list[list[Any]]:
    with database.snapshot() as snap:
        return [list(row) for row in snap.execute_sql(sql)]


def _tables(database: Any) -> set[str]:
    return {r[0] for r in _query(database, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES "
                                           "WHERE TABLE_CATALOG = '' AND TABLE_SCHEMA = ''")}


def _records(folder: Path, pattern: str = "*.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(folder.glob(pattern)) for line in path.read_text().splitlines()]


@contextlib.contextmanager
def _served(data_dir: Path) -> Iterator[Any]:
    """``spanner-watcher local-spanner`` on ``data_dir``; yields a client's database ``spanner-watcher/local/watcher``."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import spanner

    proc = subprocess.Popen([*CLI, "local-spanner", "--port", "0", "--data-dir", str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)
    try:
        first = proc.stdout.readline().strip()  # export SPANNER_EMULATOR_HOST=host:port
        assert first.startswith(f"export {ENV_HOST}="), (first, proc.stderr.read() if proc.poll() is not None else "")
        host = first.split("=", 1)[1]
        # The client prefers SPANNER_EMULATOR_HOST over api_endpoint, and the run's shared server may have set it.
        previous = os.environ.get(ENV_HOST)
        os.environ[ENV_HOST] = host
        try:
            client = spanner.Client(project="spanner-watcher", credentials=AnonymousCredentials(),
                                    client_options={"api_endpoint": host}, disable_builtin_metrics=True)
            yield client.instance("local").database("watcher")
        finally:
            if previous is None:
                os.environ.pop(ENV_HOST, None)
            else:
                os.environ[ENV_HOST] = previous
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture
def host(instance) -> str:
    """The session server's address (the ``instance`` fixture has set it up)."""
    return os.environ[ENV_HOST]


@pytest.fixture
def fresh_id(instance) -> Iterator[str]:
    """A database id no other test uses; the database (if a command created it) is dropped afterwards."""
    database_id = f"cli-{uuid.uuid4().hex[:12]}"
    yield database_id
    with contextlib.suppress(Exception):
        instance.database(database_id).drop()


# --- migrate -----------------------------------------------------------------------------------------

def test_migrate_on_the_embedded_default_keeps_its_data_dir_and_runs_once(tmp_path: Path) -> None:
    data = tmp_path / "spanner-data"
    dry = _ok(_run("migrate", "--dry-run", "--embedded", "--data-dir", str(data), env=_env()))  # --data-dir alone implies it
    assert f"0 applied, {PACKAGED} pending" in dry and "dry run: nothing was changed" in dry
    assert "CREATE TABLE" in dry  # --dry-run shows the statements it would run

    first = _ok(_run("migrate", "--data-dir", str(data), env=_env()))
    assert f"0 applied, {PACKAGED} pending" in first, first  # the dry run applied nothing
    assert "embedded local Spanner" in first and f"done: {PACKAGED} file(s) applied" in first

    second = _ok(_run("migrate", "--data-dir", str(data), env=_env()))
    assert f"{PACKAGED} applied, 0 pending" in second and "up to date: nothing to apply" in second
    assert "applied V0" not in second

    with _served(data) as database:
        assert WATCHER_TABLES <= _tables(database)
        versions = _query(database, "SELECT COUNT(*) FROM SPANNER_WATCHER_MIGRATIONS")
        assert versions == [[PACKAGED]]


def test_migrate_on_the_shared_server_then_again_and_dry_run(instance, host: str, fresh_id: str) -> None:
    dry = _ok(_run("migrate", "--dry-run", *_names(fresh_id), env=_env(host)))
    assert "on the emulator at" in dry and "dry run: nothing was changed" in dry
    database = instance.database(fresh_id)
    assert not WATCHER_TABLES & _tables(database)  # the database was created, nothing applied to it

    first = _ok(_run("migrate", *_names(fresh_id), env=_env(host)))
    assert f"done: {PACKAGED} file(s) applied" in first
    assert WATCHER_TABLES <= _tables(database)
    again = _ok(_run("migrate", *_names(fresh_id), env=_env(host)))
    assert "up to date: nothing to apply" in again
    assert _query(database, "SELECT COUNT(*) FROM SPANNER_WATCHER_MIGRATIONS") == [[PACKAGED]]


# --- ddl ---------------------------------------------------------------------------------------------

def test_ddl_output_is_a_migration_that_migrate_applies(instance, host: str, fresh_id: str, tmp_path: Path) -> None:
    folder = tmp_path / "orders"
    folder.mkdir()
    r = _run_all({
        "table": (["ddl", "table", "Orders", "--column", "OrderId:INT64:not_null", "--column", "Customer:STRING(100)",
                   "--primary-key", "OrderId", "--source", "Customer"], _env()),
        "prune": (["ddl", "prune", "Orders", "--template"], _env()),
    })
    table_ddl = _ok(r["table"])
    assert "CREATE TABLE" in table_ddl and "FARM_FINGERPRINT" in table_ddl and "NULL_FILTERED" in table_ddl
    (folder / "V001__orders.sql").write_text(table_ddl)
    applied = _ok(_run("migrate", "--dir", str(folder), *_names(fresh_id), env=_env(host)))
    assert "done: 1 file(s) applied" in applied
    database = instance.database(fresh_id)
    columns = {r[0] for r in _query(database, "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS "
                                              "WHERE TABLE_NAME = 'Orders'")}
    assert {"OrderId", "Customer", "LastUpdated", "ShardId"} <= columns
    indexes = _query(database, "SELECT INDEX_NAME FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_NAME = 'Orders' "
                               "AND INDEX_TYPE = 'INDEX'")
    assert indexes == [["Idx_Orders_ShardId_LastUpdated"]]
    assert "UPDATE `Orders` SET `LastUpdated` = NULL" in _ok(r["prune"])


def test_ddl_prune_is_bounded_by_the_oldest_checkpoint(instance, host: str, make_database) -> None:
    import datetime as dt

    from watcher.checkpoints import SpannerCommitTimestampRepository
    from watcher.model import Checkpoint, TableId

    other = "CREATE TABLE Other (Id INT64 NOT NULL, LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"
    database = make_database([ITEMS_V001.strip().rstrip(";"), other])
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    ago = {name: now - dt.timedelta(minutes=minutes) for name, minutes in
           (("old", 180), ("middle", 90), ("checkpoint", 60), ("recent", 30), ("newest_checkpoint", 10))}
    with database.batch() as batch:
        batch.insert("Items", ("Id", "Name", "LastUpdated"), [(1, "old", ago["old"]), (2, "middle", ago["middle"]),
                                                             (3, "recent", ago["recent"])])
    repo = SpannerCommitTimestampRepository(database)  # two shards' watchers; the slower one bounds the pruning
    repo.set(TableId("Items"), Checkpoint(ago["checkpoint"]), shard=[0])
    repo.set(TableId("Items"), Checkpoint(ago["newest_checkpoint"]), shard=[1])
    names, env = _names(database.database_id), _env(host)

    def last_updated() -> dict[str, Any]:
        return {name: ts for name, ts in _query(database, "SELECT Name, LastUpdated FROM Items")}

    r = _run_all({
        "print": (["ddl", "prune", "Items", "--retention", "1h", *names], env),
        "none": (["ddl", "prune", "Other", "--retention", "1h", *names], env),
        "no_table": (["ddl", "prune", "Items", "--checkpoint-table", "NOPE", *names], env),
        "help": (["ddl", "prune", "--help"], env),
    })
    printed = _ok(r["print"])
    cutoff = (ago["checkpoint"] - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
    assert f"-- Oldest checkpoint of table Items in LAST_SEEN_COMMIT_TIMESTAMPS: " \
           f"{ago['checkpoint'].strftime('%Y-%m-%dT%H:%M:%S.000000000Z')}" in printed
    statement = f"UPDATE `Items` SET `LastUpdated` = NULL WHERE `LastUpdated` < TIMESTAMP '{cutoff}';"
    assert statement in printed.splitlines()
    assert all(value is not None for value in last_updated().values())  # printing changed nothing
    _one_line_error(r["none"], "no checkpoint for table Other", "LAST_SEEN_COMMIT_TIMESTAMPS")
    _one_line_error(r["no_table"], "--checkpoint-table NOPE")
    usage = " ".join(_ok(r["help"]).split())
    for option in ("--retention DURATION", "--checkpoint-table NAME", "--execute", "oldest checkpoint"):
        assert option in usage, option

    executed = _ok(_run("ddl", "prune", "Items", "--retention", "1h", "--execute", *names, env=env))
    assert f"-- Pruned 1 row(s) of Items with LastUpdated before {cutoff}" in executed
    assert last_updated() == {"old": None, "middle": ago["middle"], "recent": ago["recent"]}
    # With no retention the cutoff is the oldest checkpoint itself: what came after it stays in the index.
    _ok(_run("ddl", "prune", "Items", "--execute", *names, env=env))
    assert last_updated() == {"old": None, "middle": None, "recent": ago["recent"]}



def test_ddl_prune_writes_and_runs_a_postgresql_databases_own_statement(instance, host: str, make_database) -> None:
    import datetime as dt

    from google.cloud.spanner_admin_database_v1 import DatabaseDialect

    from watcher.checkpoints import SpannerCommitTimestampRepository
    from watcher.model import Checkpoint, TableId

    database = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    database.update_ddl(['CREATE TABLE "Items" ("Id" bigint NOT NULL, "Name" varchar, '
                         '"LastUpdated" spanner.commit_timestamp, PRIMARY KEY ("Id"))']).result(60)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    ago = {name: now - dt.timedelta(minutes=minutes) for name, minutes in (("old", 180), ("checkpoint", 60), ("recent", 30))}
    with database.batch() as batch:
        batch.insert("Items", ("Id", "Name", "LastUpdated"), [(1, "old", ago["old"]), (2, "recent", ago["recent"])])
    SpannerCommitTimestampRepository(database).set(TableId("Items"), Checkpoint(ago["checkpoint"]))
    names, env = _names(database.database_id), _env(host)
    r = _run_all({
        "print": (["ddl", "prune", "Items", "--retention", "1h", *names], env),
        "wrong": (["ddl", "prune", "Items", "--retention", "1h", "--dialect", "googlesql", *names], env),
    })
    cutoff = (ago["checkpoint"] - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
    statement = f"UPDATE \"Items\" SET \"LastUpdated\" = NULL WHERE \"LastUpdated\" < CAST('{cutoff}' AS timestamptz);"
    assert statement in _ok(r["print"]).splitlines()
    _one_line_error(r["wrong"], "--dialect googlesql", "is a PostgreSQL database")

    executed = _ok(_run("ddl", "prune", "Items", "--retention", "1h", "--execute", *names, env=env))
    assert f"-- Pruned 1 row(s) of Items with LastUpdated before {cutoff}" in executed
    assert dict(_query(database, 'SELECT "Name", "LastUpdated" FROM "Items"')) == {"old": None, "recent": ago["recent"]}


# --- the pipeline: backfill, watch, changelog, export, reconcile ----------------------------------------

def _watch_config(path: Path, database_id: str) -> Path:
    path.write_text(textwrap.dedent(f"""
        [database]
        project = "{PROJECT}"
        instance = "{INSTANCE}"
        database = "{database_id}"
        [watch]
        poll_interval = 0.1
        initial_timestamp = "beginning"
        staging_dir = "staging"
        [tables]
        include = ["Items"]
        [tables.Items]
        hint = "@{{FORCE_INDEX=Idx_Items_ShardId_LastUpdated}}"
        shards = {{ kind = "fixed", column = "ShardId", values = "-18..18" }}
    """))
    return path


@pytest.mark.usefixtures("each_engine")
def test_pipeline_backfill_watch_changelog_reconcile(instance, host: str, fresh_id: str, tmp_path: Path,
                                                     spark) -> None:
    from google.cloud import spanner

    env = _env(host)
    names = _names(fresh_id)
    staging, warehouse = tmp_path / "staging", tmp_path / "warehouse"
    folders = ["--staging", str(staging), "--warehouse", str(warehouse)]
    shards = ["--shard-column", "ShardId", "--shard-values=-18..18", "--per-partition", "37"]

    # Schema: a table with a commit-timestamp column, then what `ddl setup` prints for it.
    migrations = tmp_path / "items"
    migrations.mkdir()
    (migrations / "V001__items.sql").write_text(ITEMS_V001)
    setup = _ok(_run("ddl", "setup", "Items", "--source", "Name", env=env))
    (migrations / "V002__items_shard.sql").write_text(setup)
    _ok(_run("migrate", "--dir", str(migrations), *names, env=env))
    database = instance.database(fresh_id)
    with database.batch() as batch:
        batch.insert("Items", ("Id", "Name", "LastUpdated"), [(i, f"n{i}", spanner.COMMIT_TIMESTAMP) for i in range(20)])

    # backfill: a marker, staged batches with every row, the watchers' checkpoint at the read timestamp.
    r = _run("backfill", "--table", "Items", *folders, *shards, "--json", *names, env=env)
    result = json.loads(_ok(r))
    assert result["rows"] == 20 and result["marker_written"] and result["batches"]
    backfilled = _records(staging / "table=Items", "*backfill*.jsonl")
    assert sorted(int(rec["keys"][0]) for rec in backfilled) == list(range(20))
    assert json.loads((warehouse / "_state" / "complete" / "Items.json").read_text())
    checkpoint = _query(database, "SELECT LAST_SEEN_COMMIT_TIMESTAMP FROM LAST_SEEN_COMMIT_TIMESTAMPS "
                                  "WHERE TABLE_NAME = 'Items'")
    assert len(checkpoint) == 1

    # watch: goes on from the backfill's checkpoint, so it stages only what came after.
    with database.batch() as batch:
        batch.insert("Items", ("Id", "Name", "LastUpdated"),
                     [(i, f"n{i}", spanner.COMMIT_TIMESTAMP) for i in range(20, 25)])
        batch.update("Items", ("Id", "Name", "LastUpdated"), [(1, "changed", spanner.COMMIT_TIMESTAMP)])
    config = _watch_config(tmp_path / "watcher.toml", fresh_id)
    out = _ok(_run("watch", "--config", str(config), "--duration", "3", "--quiet", env=env))
    assert "6 changes staged" in out, out
    watched = [rec for path in (staging / "table=Items").glob("*.jsonl") if "backfill" not in path.name
               for rec in _records(path.parent, path.name)]
    assert sorted(int(rec["keys"][0]) for rec in watched) == [1, 20, 21, 22, 23, 24]

    # changelog: backfilled rows are UPSERTs (state not complete before R), later changes INSERT/UPDATE.
    summary = json.loads(_ok(_run("changelog", *folders, "--json", env=env)))
    assert summary["version"] == 1 and summary["changes_written"] == 26
    assert summary["mod_types"] == {"UPSERT": 20, "INSERT": 5, "UPDATE": 1}
    assert list((warehouse / "changelog" / "table_name=Items").rglob("*.parquet"))

    # reconcile: a hard delete polling cannot see is found and applied by the changelog job.
    with database.batch() as batch:
        batch.delete("Items", spanner.KeySet(keys=[[3]]))
    r = _run("reconcile", "--table", "Items", *folders, *shards, "--run-job", "--json", *names, env=env)
    result = json.loads(_ok(r))  # with --json, stdout is only the result
    assert result["deletes"] == 1 and result["restaged"] == 0 and result["rows"] == 24
    assert "changelog version 2: 1 changes {'DELETE': 1}" in r.stderr
    deletes = (spark.read.parquet(str(warehouse / "changelog")).where("table_name = 'Items' AND mod_type = 'DELETE'")
               .select("keys").collect())
    assert [json.loads(row["keys"]) for row in deletes] == [{"Id": "3"}]  # INT64 keys are typed JSON text


def test_export_in_each_format_of_what_the_changelog_command_wrote(make_database, host: str, tmp_path: Path) -> None:
    """The three formats side by side over the warehouse `changelog` wrote; a table the changelog does not
    hold is refused in one line before Spark starts. (The export does not depend on the engine that
    wrote the warehouse: the pipeline above runs on each.)"""
    from tests.changelog.support import Stager

    database = make_database([ITEMS_V001.strip().rstrip(";")])
    env, staging, warehouse = _env(host), tmp_path / "staging", tmp_path / "warehouse"
    types, when = {"Id": "INT64", "Name": "STRING(100)", "LastUpdated": "TIMESTAMP"}, dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    stager = Stager(staging)
    stager.stage("Items", [{"Id": i, "Name": f"n{i}", "LastUpdated": when} for i in range(5)], types=types,
                 key_columns=["Id"], commits=list(range(10, 15)))
    stager.stage("Items", [{"Id": 1, "Name": "changed", "LastUpdated": when}], types=types, key_columns=["Id"],
                 commits=[20])
    summary = json.loads(_ok(_run("changelog", "--staging", str(staging), "--warehouse", str(warehouse), "--json",
                                  env=env)))
    assert summary["changes_written"] == 6

    target = f"projects/{PROJECT}/instances/{INSTANCE}/databases/{database.database_id}"
    export = ["export", "--warehouse", str(warehouse), "--format"]
    r = _run_all({
        "bigquery": ([*export, "bigquery", "--out", str(tmp_path / "bq")], env),
        "datastream": ([*export, "datastream", "--out", str(tmp_path / "ds")], env),
        "spanner": ([*export, "spanner", "--out", target], env),
        "unknown": ([*export, "bigquery", "--table", "Nope", "--out", str(tmp_path / "bq-nope")], env),
    })
    assert "wrote bigquery export of version 1" in _ok(r["bigquery"])
    rows = _records(tmp_path / "bq", "increment=000001/*/*/*/table_name=Items/part-*")  # one export, one increment
    assert len(rows) == 6 and {row["_CHANGE_TYPE"] for row in rows} == {"UPSERT"}
    assert next(row for row in rows if row["Id"] == "1" and row["Name"] == "changed")
    events = _records(tmp_path / "ds", "increment=000001/*/*/*/object=Items/part-*")
    assert len(events) == 6 and {event["object"] for event in events} == {"Items"}
    assert "wrote 6 rows of spanner export" in _ok(r["spanner"])
    assert _query(database, "SELECT COUNT(*) FROM SpannerWatcherChangelog WHERE TableName = 'Items'") == [[6]]
    _one_line_error(r["unknown"], "--table Nope", "not in the changelog", "Items")
    assert not (tmp_path / "bq-nope").exists()


# --- bad input ----------------------------------------------------------------------------------------

def test_bad_input_is_one_line_exit_2_and_leaves_nothing(instance, host: str, make_database, tmp_path: Path) -> None:
    database = make_database([ITEMS_V001.strip().rstrip(";")])
    names = _names(database.database_id)
    afile = tmp_path / "a-file"
    afile.write_text("not a folder")
    (tmp_path / "empty-staging").mkdir()
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text('[watch]\nstaging_dir = "watch-staging"\n[tables.Items]\nshards = { kind = "fixed" }\n')

    def p(name: str) -> str:
        return str(tmp_path / name)

    with socket.socket() as closed, socket.socket() as busy:
        closed.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: connections are refused
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        busy_port = str(busy.getsockname()[1])
        env, unreachable, embedded = _env(host), _env(dead), _env()
        snapshot = ["--table", "Items", "--staging", p("s"), "--warehouse", p("w")]
        r = _run_all({
            "migrate_no_dir": (["migrate", "--dir", p("no-such-dir"), *names], env),
            "migrate_unreachable": (["migrate", *names], unreachable),
            "migrate_data_dir_file": (["migrate", "--data-dir", str(afile)], embedded),
            "migrate_folder_id": (["migrate", "--folder-id", "x", *names], env),
            "ddl_bad_name": (["ddl", "setup", "bad name", "--source", "Name"], env),
            "ddl_shards": (["ddl", "setup", "Items", "--source", "Name", "--shards", "0"], env),
            "ddl_no_source": (["ddl", "setup", "Items"], env),
            "watch_missing_key": (["watch", "--config", str(bad_config), *names], env),
            "backfill_unknown": (["backfill", "--table", "Nope", "--staging", p("s1"), "--warehouse", p("w1"), *names],
                                 env),
            "backfill_unreachable": (["backfill", *snapshot, *names], unreachable),
            "backfill_staging_file": (["backfill", "--table", "Items", "--staging", str(afile),
                                       "--warehouse", p("w2"), *names], env),
            "backfill_shard_column": (["backfill", *snapshot, "--shard-column", "Nope", "--shard-values=1..2", *names],
                                      env),
            "backfill_negative": (["backfill", *snapshot, "--shard-column", "ShardId", "--shard-values", "-18..18",
                                   *names], env),
            "backfill_half_shards": (["backfill", *snapshot, "--shard-column", "ShardId", *names], env),
            "changelog_no_staging": (["changelog", "--staging", p("no-staging"), "--warehouse", p("w3")], env),
            "changelog_warehouse_file": (["changelog", "--staging", p("empty-staging"), "--warehouse", str(afile)], env),
            "changelog_soft_delete": (["changelog", "--staging", p("empty-staging"), "--warehouse", p("w4"),
                                       "--soft-delete", "Items"], env),
            "export_no_warehouse": (["export", "--warehouse", p("no-wh"), "--format", "bigquery", "--out", p("o1")], env),
            "export_format": (["export", "--warehouse", p("no-wh"), "--format", "csv", "--out", p("o2")], env),
            "export_bad_target": (["export", "--warehouse", p("empty-staging"), "--format", "spanner", "--out", "bogus"],
                                  env),
            "export_no_database": (["export", "--warehouse", p("empty-staging"), "--format", "spanner", "--out",
                                    f"projects/{PROJECT}/instances/{INSTANCE}/databases/no-such-db"], env),
            "export_unreachable": (["export", "--warehouse", p("empty-staging"), "--format", "spanner", "--out",
                                    f"projects/{PROJECT}/instances/{INSTANCE}/databases/x"], unreachable),
            "reconcile_unknown": (["reconcile", "--table", "Nope", "--staging", p("s5"), "--warehouse", p("w5"),
                                   *names], env),
            "reconcile_unreachable": (["reconcile", *snapshot, *names], unreachable),
            "local_spanner_busy": (["local-spanner", "--port", busy_port, "--data-dir", p("ls-data")], embedded),
            "local_spanner_port": (["local-spanner", "--port", "70000"], embedded),
        })

    _one_line_error(r["migrate_no_dir"], "--dir", "no-such-dir", "no such folder")
    for name in ("migrate_unreachable", "backfill_unreachable", "reconcile_unreachable", "export_unreachable"):
        _one_line_error(r[name], "cannot reach", dead, ENV_HOST, "local-spanner")
    _one_line_error(r["migrate_data_dir_file"], "--data-dir", "not a folder")
    _one_line_error(r["migrate_folder_id"], "--folder-id", "--dir")
    _one_line_error(r["ddl_bad_name"], "bad name")
    _one_line_error(r["ddl_shards"], "shard count")
    _one_line_error(r["ddl_no_source"], "--source")
    _one_line_error(r["watch_missing_key"], "bad.toml", "tables.Items.shards")
    for name in ("backfill_unknown", "reconcile_unknown"):
        _one_line_error(r[name], "--table Nope", "not found", "Items")
    _one_line_error(r["backfill_staging_file"], "--staging", "not a folder")
    _one_line_error(r["backfill_shard_column"], "--shard-column Nope", "LastUpdated")
    _one_line_error(r["backfill_negative"], "--shard-values", "--option=VALUE")
    _one_line_error(r["backfill_half_shards"], "--shard-column and --shard-values")
    _one_line_error(r["changelog_no_staging"], "--staging", "no-staging")
    _one_line_error(r["changelog_warehouse_file"], "--warehouse", "not a folder")
    _one_line_error(r["changelog_soft_delete"], "--soft-delete", "TABLE=COLUMN")
    _one_line_error(r["export_no_warehouse"], "--warehouse", "spanner-watcher changelog")
    _one_line_error(r["export_format"], "--format", "bigquery")
    _one_line_error(r["export_bad_target"], "projects/P/instances/I/databases/D")
    _one_line_error(r["export_no_database"], "no-such-db", "create it first")
    _one_line_error(r["local_spanner_busy"], busy_port)
    _one_line_error(r["local_spanner_port"], "--port", "65535")

    assert afile.read_text() == "not a folder"
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == ["a-file", "bad.toml", "empty-staging"], left  # no staging, warehouse, output or data folder
    assert not list((tmp_path / "empty-staging").iterdir())
    assert _tables(database) == {"Items"}  # no checkpoint or migrations table created by a failed command
