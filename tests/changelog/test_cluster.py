"""The Spark commands on a standalone cluster (one master, one worker, loopback only).

The executors run a Python that has the dependencies but not this project (executor_python.py
hides it), so backfill works only because the library ships itself. Every cluster run is a
command-line subprocess: the test process keeps its one local Spark session (used here only to
read the results). Local mode's output over the same staged input is the reference.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import spanner

from tests.changelog.support import SINGERS_TYPES, Stager, singer
from tests.cli_support import run_all
from watcher.changelog import Changelog
from watcher.changelog.spark.jvm import jar
from watcher.changelog.tables import frames, layout
from watcher.devtools.spark_cluster import StandaloneCluster, spark_class
from watcher.spanner_client import database_path

ROOT = Path(__file__).resolve().parents[2]
SPARK_CLASS = spark_class()
DDL = ["""CREATE TABLE Items (
    Id INT64 NOT NULL, Name STRING(MAX), Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"""]
#: Seconds a cluster command may take (a driver and an executor JVM start: slow on a loaded machine).
COMMAND_TIMEOUT = 420

pytestmark = pytest.mark.skipif(shutil.which("java") is None or not SPARK_CLASS.exists(),
                                reason="needs java and pyspark's spark-class")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of every process of these tests: loopback Spark, no source tree on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_SUBMIT_ARGS", "MASTER")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1", **extra)
    return env


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[dict[str, str]]:
    """One standalone master and one worker (2 cores, 1g) on 127.0.0.1; the executors' Python lacks this project."""
    home = tmp_path_factory.mktemp("cluster")
    python = home / "executor-python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests/changelog/executor_python.py'} \"$@\"\n")
    python.chmod(0o755)
    probe = subprocess.run([str(python), "-c", "import watcher"], capture_output=True, text=True, cwd=ROOT)
    assert probe.returncode != 0 and "No module named 'watcher'" in probe.stderr  # the shipping is really needed
    # The executors' Python must not find this source tree: PYTHONPATH is left out of the cluster's env.
    with StandaloneCluster(home, memory="1g", drop_env=("PYTHONPATH",)) as running:
        yield {"url": running.url, "python": str(python)}


def _cli(*args: str, master: str, python: str | None = None, conf: tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
    argv = [sys.executable, "-m", "watcher", *args, "--master", master]
    for setting in conf:
        argv += ["--conf", setting]
    if python is not None:  # the executors' Python (the driver's is this one)
        argv += ["--conf", f"spark.pyspark.python={python}", "--conf", "spark.cores.max=1",
                 "--conf", "spark.executor.memory=512m"]
    return argv, _clean_env()


def _run(commands: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, subprocess.CompletedProcess]:
    done = run_all(commands, cwd=ROOT, timeout=COMMAND_TIMEOUT)
    for name, proc in done.items():
        assert proc.returncode == 0, f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return done


def _stage(stager: Stager, round_: int) -> None:
    """Two rounds of Singers changes; round 0 has two keys in one commit (record_sequence 0 and 1)."""
    types, keys = SINGERS_TYPES, ["SingerId"]
    if round_ == 0:
        stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=types, key_columns=keys, commits=[100, 100])
        stager.stage("Singers", [singer(3, "c"), singer(1, "a2")], types=types, key_columns=keys, commits=[200, 300])
    else:
        stager.stage("Singers", [singer(2, "b2"), singer(4, "d"), singer(5, "e")], types=types, key_columns=keys,
                     commits=[400, 500, 500])
        stager.stage("Singers", [singer(3, "c", deleted=True)], types=types, key_columns=keys, commits=[600])


def _rows(spark: Any, warehouse: Path, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The committed changelog or current state of ``warehouse``, as the job's readers see it."""
    frame = frames.read(spark, str(warehouse), table)
    return sorted(tuple(r) for r in frame.select(*columns).collect())


def _in_delta_table(path: Path) -> bool:
    """Inside a Delta table's folder, whose files Delta's writers own (a SQL MERGE writes through Hadoop's
    checksummed local filesystem, and every Delta reader ignores the hidden .crc files it leaves)."""
    return any((parent / "_delta_log").is_dir() for parent in path.parents)


def _no_checksum_files(*folders: Path) -> None:
    crc = [str(p) for folder in folders for p in folder.rglob("*.crc") if not _in_delta_table(p)]
    assert crc == []


CHANGE_COLUMNS = ["change_id", "table_name", "keys", "mod_type", "new_values", "old_values", "commit_timestamp",
                  "transaction_group", "record_sequence", "number_of_records_in_group"]
STATE_COLUMNS = ["table_name", "keys", "new_values", "commit_timestamp", "is_deleted", "change_id"]


def test_changelog_and_backfill_on_a_cluster_match_local_mode(spark, make_database, tmp_path, cluster):
    source = Stager(tmp_path / "source")
    on_cluster, local, bf = tmp_path / "cluster", tmp_path / "local", tmp_path / "bf"
    db = make_database(DDL)
    with db.batch() as batch:
        batch.insert("Items", ("Id", "Name", "Ts"), [(i, f"item {i}", spanner.COMMIT_TIMESTAMP) for i in range(1, 13)])
    project, instance_id, database_id = database_path(db.name)
    where = ("--project", project, "--instance", instance_id, "--database", database_id)
    # The reference: local mode.
    local_job = Changelog(spark).staging(str(local / "staging")).warehouse(str(local / "warehouse"))
    for round_ in (0, 1):  # local mode (the reference) runs twice: the types must not change from run to run
        _stage(source, round_)
        shutil.copytree(tmp_path / "source", local / "staging", dirs_exist_ok=True)
        local_job.run()
    shutil.copytree(tmp_path / "source", on_cluster / "staging")
    # Two applications side by side on the cluster, one core each. Every URL form Hadoop takes:
    # file:/p and file:///p for the changelog, plain paths for the backfill.
    done = _run({
        "cluster changelog": _cli("changelog", "--staging", f"file:{on_cluster / 'staging'}",
                                  "--warehouse", f"file://{on_cluster / 'warehouse'}", "--json", "--spark-only",
                                  master=cluster["url"],
                                  python=cluster["python"]),
        "cluster backfill": _cli("backfill", "--table", "Items", "--staging", str(bf / "staging"), "--warehouse",
                                 str(bf / "warehouse"), "--partitions", "3", "--no-checkpoints", *where,
                                 master=cluster["url"], python=cluster["python"]),
    })

    if jar.find_javac() is not None:  # old values by the JVM function: its jar reached the cluster's executors
        assert json.loads(done["cluster changelog"].stdout)["old_values_by"] == "jvm", done["cluster changelog"].stderr
    # the same changes (ids, values, mod types, grouping) and the same current state, row for row
    for table, columns in (("changelog", CHANGE_COLUMNS), ("current_state", STATE_COLUMNS)):
        cluster_rows = _rows(spark, on_cluster / "warehouse", table, columns)
        assert cluster_rows == _rows(spark, local / "warehouse", table, columns)
        assert cluster_rows
    sequences = _rows(spark, local / "warehouse", "changelog", ["record_sequence", "run_version"])
    assert set(sequences) == {(0, 1), (1, 1), (0, 2), (1, 2)}  # both local runs wrote groups of two
    for warehouse in (on_cluster / "warehouse", local / "warehouse"):
        for spec in (layout.CHANGELOG, layout.CURRENT_STATE):  # the Delta tables' types, as the layout says
            types = dict(spark.read.format("delta").load(str(warehouse / spec.name)).dtypes)
            assert types == {name: kind.lower() for name, kind, _ in spec.fields}
    _no_checksum_files(on_cluster, local, bf)

    # the backfill read Spanner from the executors (which lack this package) and staged every row
    assert "12 rows read" in done["cluster backfill"].stdout
    result = Changelog(spark).staging(str(bf / "staging")).warehouse(str(bf / "warehouse")).run()
    assert result.changes_written == 12
    state = frames.read(spark, str(bf / "warehouse"), "current_state").select("keys", "new_values").collect()
    assert sorted((json.loads(r.keys)["Id"], json.loads(r.new_values)["Name"]) for r in state) == sorted(
        (str(i), f"item {i}") for i in range(1, 13))


def test_executors_missing_a_dependency_give_one_line(make_database, tmp_path, cluster):
    db = make_database(DDL)
    project, instance_id, database_id = database_path(db.name)
    argv, env = _cli("backfill", "--table", "Items", "--staging", str(tmp_path / "staging"), "--warehouse",
                     str(tmp_path / "warehouse"), "--no-checkpoints", "--project", project,
                     "--instance", instance_id, "--database", database_id, master=cluster["url"],
                     python=cluster["python"], conf=("spark.executorEnv.HIDE_MODULES=google", "spark.task.maxFailures=1"))
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "watcher/cli" not in proc.stderr  # no traceback of the command (Spark's own ERROR log may show the task's)
    assert proc.stderr.strip().splitlines()[-1] == (
        "spanner-watcher backfill: error: the Spark executors' Python cannot import google: install "
        "google-cloud-spanner (and this package's other dependencies) on every worker, or point spark.pyspark.python "
        "at a Python that has them")


def test_the_master_comes_from_sparks_own_configuration():
    probe = ("from watcher.changelog.spark.session import get_session; import sys, tempfile; "
             "s = get_session(conf=dict(a.split('=', 1) for a in sys.argv[1:])); p = tempfile.mkdtemp() + '/t'; "
             "s.range(3).write.format('delta').save(p); "  # Delta's jars and extension loaded at the JVM's launch
             "print(s.sparkContext.master, s.conf.get('spark.sql.shuffle.partitions'), "
             "s.sql(f'SELECT count(*) FROM delta.`{p}`').first()[0])")
    python = [sys.executable, "-c", probe]
    done = _run({
        "submit args": (python, _clean_env(PYSPARK_SUBMIT_ARGS="--master local[3] --conf spark.sql.shuffle.partitions=5 "
                                                               "pyspark-shell")),
        "conf": ([*python, "spark.master=local[2]"], _clean_env()),
        "nothing": (python, _clean_env()),
    })
    assert done["submit args"].stdout.split() == ["local[3]", "5", "3"]  # neither the master nor the user's setting replaced
    assert done["conf"].stdout.split() == ["local[2]", "8", "3"]
    assert done["nothing"].stdout.split() == ["local[*]", "8", "3"]
