"""The Spark jobs through Spark Connect: a Connect server started from the pyspark distribution.

The server runs local[2] on 127.0.0.1 with an executor Python that lacks this project
(executor_python.py), so backfill, reconcile and the Spanner export work only because the
library ships itself as a session artifact. Every client is a subprocess (a Connect client
switches pyspark into Connect mode for its whole process): the command line with ``--remote``
(or SPARK_REMOTE) and connect_client.py for the builder API and the views. Local mode's output
over the same input, computed by the test process's classic session, is the reference.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import spanner

from tests.changelog.connect_client import VIEW_COLUMNS
from tests.changelog.support import Stager
from tests.changelog.test_cluster import (
    CHANGE_COLUMNS,
    DDL,
    ROOT,
    STATE_COLUMNS,
    _clean_env,
    _no_checksum_files,
    _rows,
    _stage,
)
from tests.cli_support import run_all
from watcher.changelog import Changelog, register_views
from watcher.changelog.exports import bigquery
from watcher.changelog.spark.jvm import jar
from watcher.changelog.tables import runtime as delta_runtime
from watcher.devtools.spark_cluster import free_port, stop_process
from watcher.spanner_client import database_path

SPARK_SUBMIT = Path(__import__("pyspark").__file__).parent / "bin" / "spark-submit"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: Seconds a client command may take, and the server to start (a JVM on a loaded machine).
COMMAND_TIMEOUT = 300
START_TIMEOUT = 240

pytestmark = pytest.mark.skipif(shutil.which("java") is None or not SPARK_SUBMIT.exists(),
                                reason="needs java and pyspark's spark-submit")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory) -> Iterator[str]:
    """One Spark Connect server (local[2], loopback) for this module; its executors' Python lacks this project."""
    home = tmp_path_factory.mktemp("connect")
    python = home / "executor-python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests/changelog/executor_python.py'} \"$@\"\n")
    python.chmod(0o755)
    port = free_port()
    env = _clean_env(PYSPARK_PYTHON=str(python), SPARK_LOG_DIR=str(home / "logs"))
    argv = [str(SPARK_SUBMIT), "--class", SERVER_CLASS, "--master", "local[2]", "--driver-memory", "1g",
            "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", "spark.sql.session.timeZone=UTC", *delta_runtime.submit_arguments(), "spark-internal"]
    with open(home / "server.log", "wb") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=home)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _listening(port):
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"the Spark Connect server did not start:\n{(home / 'server.log').read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_process(server)


def _cli(*args: str, remote: str | None = None, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    argv = [sys.executable, "-m", "watcher", *args]
    if remote is not None:
        argv += ["--remote", remote]
    return argv, {**_clean_env(), **(env or {})}


def _run(commands: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, subprocess.CompletedProcess]:
    done = run_all(commands, cwd=ROOT, timeout=COMMAND_TIMEOUT)
    for name, proc in done.items():
        assert proc.returncode == 0, f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return done


def _local_views(spark: Any, warehouse: Path) -> dict[str, list[list[Any]]]:
    register_views(spark, str(warehouse))
    return {view: sorted([list(r) for r in spark.table(view).select(*columns).collect()])
            for view, columns in VIEW_COLUMNS.items()}


def _json_lines(folder: Path) -> list[dict[str, Any]]:
    return sorted((json.loads(line) for f in folder.rglob("part-*") for line in f.read_text().splitlines() if line),
                  key=lambda r: json.dumps(r, sort_keys=True))


def test_changelog_backfill_reconcile_export_and_views_through_spark_connect(spark, make_database, tmp_path,
                                                                              connect_url):
    source = Stager(tmp_path / "source")
    remote, local = tmp_path / "remote", tmp_path / "local"
    db = make_database(DDL)
    with db.batch() as batch:
        batch.insert("Items", ("Id", "Name", "Ts"), [(i, f"item {i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 7)])
    target = make_database()
    project, instance_id, database_id = database_path(db.name)
    where = ("--project", project, "--instance", instance_id, "--database", database_id)

    # local mode, the reference: two rounds of staged changes
    local_job = Changelog(spark).staging(str(local / "staging")).warehouse(str(local / "warehouse"))
    for round_ in (0, 1):
        _stage(source, round_)
        shutil.copytree(tmp_path / "source", local / "staging", dirs_exist_ok=True)
        local_job.run()
        if round_ == 0:
            shutil.copytree(tmp_path / "source", remote / "staging")

    # through Connect: round 0 by the command line (file:/ URLs, the server named by SPARK_REMOTE),
    # the backfill by the command line (--remote), side by side
    done = _run({
        "changelog": _cli("changelog", "--staging", f"file:{remote / 'staging'}",
                          "--warehouse", f"file://{remote / 'warehouse'}", "--json", "--spark-only",
                          env={"SPARK_REMOTE": connect_url}),
        "backfill": _cli("backfill", "--table", "Items", "--staging", str(remote / "bf-staging"), "--warehouse",
                         str(remote / "bf"), "--partitions", "3", "--no-checkpoints", *where, remote=connect_url),
    })
    assert "6 rows read" in done["backfill"].stdout
    # round 1 by the builder API on a Connect session, which then reads the views
    shutil.copytree(tmp_path / "source", remote / "staging", dirs_exist_ok=True)
    client = subprocess.run([sys.executable, "-m", "tests.changelog.connect_client", connect_url,
                             str(remote / "staging"), str(remote / "warehouse")],
                            cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert client.returncode == 0, client.stderr[-3000:]
    through_connect = json.loads(client.stdout.strip().splitlines()[-1])
    assert through_connect["result"]["committed"] and through_connect["result"]["version"] == 2
    if jar.find_javac() is not None:  # old values by the JVM function, its jar a Connect artifact
        assert through_connect["jvm_function"] and through_connect["result"]["old_values_by"] == "jvm", client.stderr[-3000:]
        assert json.loads(done["changelog"].stdout)["old_values_by"] == "jvm", done["changelog"].stderr[-3000:]

    # the same changes (ids, values, grouping), the same current state and the same views, row for row
    for table, columns in (("changelog", CHANGE_COLUMNS), ("current_state", STATE_COLUMNS)):
        rows = _rows(spark, remote / "warehouse", table, columns)
        assert rows and rows == _rows(spark, local / "warehouse", table, columns)
    local_views = _local_views(spark, local / "warehouse")
    assert json.loads(json.dumps(local_views, default=str)) == through_connect["views"]

    # reconcile finds a hard delete; the exports write the same rows as local mode's
    with db.batch() as batch:
        batch.delete("Items", spanner.KeySet(keys=[[2]]))
    done = _run({
        "reconcile": _cli("reconcile", "--table", "Items", "--staging", str(remote / "bf-staging"), "--warehouse",
                          str(remote / "bf"), "--partitions", "3", "--run-job", "--json", *where, remote=connect_url),
        "bigquery": _cli("export", "--warehouse", str(remote / "warehouse"), "--format", "bigquery",
                         "--out", str(remote / "bq"), remote=connect_url),
        "spanner": _cli("export", "--warehouse", str(remote / "warehouse"), "--format", "spanner", "--out",
                        target.name, remote=connect_url),
    })
    assert json.loads(done["reconcile"].stdout)["deletes"] == 1
    # the backfill's rows, then reconcile's deletion, reached the current state (the job ran through Connect too)
    state = _rows(spark, remote / "bf", "current_state", ["keys", "new_values", "is_deleted"])
    assert sorted((int(json.loads(keys)["Id"]), json.loads(values)["Name"]) for keys, values, deleted in state
                  if not deleted) == [(i, f"item {i}") for i in (1, 3, 4, 5, 6)]
    assert [int(json.loads(keys)["Id"]) for keys, _, deleted in state if deleted] == [2]

    register_views(spark, str(local / "warehouse"))
    bigquery.write(spark.table("changelog"), str(local / "bq"))
    assert _json_lines(remote / "bq") == _json_lines(local / "bq") != []
    written = len(local_views["changelog"])
    assert f"wrote {written} rows of spanner export" in done["spanner"].stdout
    with target.snapshot() as snap:
        ids = sorted(r[0] for r in snap.execute_sql("SELECT ChangeId FROM SpannerWatcherChangelog"))
    assert ids == sorted(r[0] for r in local_views["changelog"])
    _no_checksum_files(remote)


DELTA_PROBE = """
import sys
from pyspark.sql import SparkSession
from watcher.changelog.tables.ledger import Ledger
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
ledger = Ledger(sys.argv[2])
run = ledger.begin(["b1"])
for _ in range(2):  # a repeat of a committed run's write is skipped
    spark.range(4).write.format("delta").mode("append").options(**ledger.writer_options(run)).save(ledger.uri("changelog"))
print(spark.sql(f"SELECT count(*) FROM delta.`{ledger.uri('changelog')}`").first()[0], ledger.held_version("changelog"))
"""


def test_delta_tables_through_spark_connect(tmp_path, connect_url):
    done = subprocess.run([sys.executable, "-c", DELTA_PROBE, connect_url, str(tmp_path / "warehouse")], cwd=ROOT,
                          env=_clean_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["4", "1"]


def test_remote_and_master_are_one_choice(tmp_path):
    argv, env = _cli("changelog", "--staging", str(tmp_path), "--warehouse", str(tmp_path), "--master", "local[1]",
                     remote="sc://127.0.0.1:1")
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "argument --remote: not allowed with argument --master" in proc.stderr
