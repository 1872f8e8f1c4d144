"""Folders named by URL, end to end: watch (sink) -> changelog -> current state with ``file:`` URLs only.

Also the sink's batch atomicity across a crash: a staging process killed in the middle of a
batch leaves nothing the changelog job reads as a batch.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.cloud import spanner

from tests.cli_support import watch_config
from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import wait_until
from watcher import TableWatcher
from watcher.changelog import Changelog, register_views
from watcher.changelog.io.arrow_fs import ArrowFS
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.cli.main import main
from watcher.model import MIN_TIMESTAMP
from watcher.staging import contract
from watcher.staging.sink import StagingSink

pytestmark = pytest.mark.usefixtures("each_engine")

REPO = Path(__file__).resolve().parents[2]
DDL = ["CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(MAX), "
       "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"]


def _write(db, rows) -> None:
    with db.batch() as batch:
        batch.insert_or_update("Items", ("Id", "Name", "Ts"), [(i, name, spanner.COMMIT_TIMESTAMP) for i, name in rows])


def _table(db) -> dict[str, str]:
    with db.snapshot() as snap:
        return {str(i): name for i, name in snap.execute_sql("SELECT Id, Name FROM Items")}


def _in_delta_table(path: Path) -> bool:
    """Inside a Delta table's folder, whose files Delta's writers own (Hadoop's hidden .crc files beside
    them are ignored by every Delta reader)."""
    return any((parent / "_delta_log").is_dir() for parent in path.parents)


def test_watch_and_changelog_take_file_urls_in_every_form(spark, make_database, tmp_path, capsys):
    db = make_database(DDL)
    staging, warehouse = tmp_path / "staging", tmp_path / "warehouse"
    _write(db, [(1, "a"), (2, "b"), (3, "c")])

    # The command line: `watch` into file:///..., `changelog` from file:/... into file:///...
    config = watch_config(tmp_path / "watcher.toml", poll_interval=0.05, staging_dir=f"file://{staging}")
    names = ["--project", PROJECT, "--instance", INSTANCE, "--database", db.database_id]
    assert main(["watch", "--config", str(config), "--duration", "2", "--quiet", *names]) == 0
    assert "3 changes staged" in capsys.readouterr().out
    assert len(list(staging.glob(contract.BATCH_GLOB))) >= 1  # the URL named the local folder
    assert main(["changelog", "--staging", f"file:{staging}", "--warehouse", f"file://{warehouse}", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["changes_written"] == 3 and first["quarantined"] == []

    # The API: a sink on file://localhost/..., the job on file:///... and file:/...
    sink = StagingSink(f"file://localhost{staging}", fsync=False)
    watcher = TableWatcher(db, "Items", poll_interval=0.05, initial_timestamp=MIN_TIMESTAMP,
                           checkpoints=InMemoryCommitTimestampRepository())
    sink.attach(watcher)
    with watcher:
        wait_until(lambda: sink.records_written >= 3, timeout=20)  # the three rows again: de-duplicated below
        _write(db, [(2, "b2"), (4, "d")])
        wait_until(lambda: sink.records_written >= 5, timeout=20)
    again = Changelog(spark).staging(f"file://{staging}").warehouse(f"file:{warehouse}").run()
    assert again.quarantined == [] and again.changes_written == 2 and dict(again.mod_types) == {"UPDATE": 1, "UPSERT": 1}

    register_views(spark, f"file://{warehouse}")
    state = {json.loads(r.keys)["Id"]: json.loads(r.new_values)["Name"]
             for r in spark.sql("SELECT keys, new_values FROM current_state").collect()}
    assert state == _table(db) == {"1": "a", "2": "b2", "3": "c", "4": "d"}
    assert not [p for p in warehouse.rglob("*.crc") if not _in_delta_table(p)] and not (tmp_path / "file:").exists()  # no folder named after the URL


# --- a staging process killed mid-batch ---------------------------------------------------------------

BATCH = 5_000
ROUNDS = 3


def _kill_mid_batch(url: str, folder: Path, round_: int) -> None:
    """Start a staging process and SIGKILL it while a batch is being written (its temporary file exists)."""
    seen = {p.name for p in folder.glob(".*.tmp")} if folder.is_dir() else set()
    whole_before = len(list(folder.glob("*.jsonl"))) if folder.is_dir() else 0
    proc = subprocess.Popen([sys.executable, "-m", "tests.staging.sink_crash_child", url, str(round_), str(BATCH)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"the staging process ended by itself: {proc.stderr.read().decode()[-2000:]}")
            if folder.is_dir() and len(list(folder.glob("*.jsonl"))) >= whole_before + 2:
                temps = {p.name for p in folder.glob(".*.tmp")} - seen
                if temps:
                    proc.send_signal(signal.SIGKILL)  # a batch is on its way: cut it
                    break
            time.sleep(0.0005)
        else:
            raise AssertionError("the staging process never got to write a batch")
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


def test_a_batch_cut_by_a_kill_is_never_read(spark, tmp_path):
    staging = tmp_path / "staging"
    url = f"file://{staging}"
    folder = staging / contract.table_folder("Items")
    for round_ in range(ROUNDS):
        _kill_mid_batch(url, folder, round_)
    leftovers = sorted(p.name for p in folder.glob(".*.tmp"))
    assert leftovers, "no kill landed inside a batch: the test proved nothing"

    # What every reader lists: whole batches only, each with every record of its batch.
    listed = ArrowFS(url).glob(contract.BATCH_GLOB)
    assert listed and not [e for e in listed if e.name.endswith(".tmp")]
    for entry in listed:
        lines = Path(entry.uri.removeprefix("file:")).read_text(encoding="utf-8").splitlines()
        keys = [int(json.loads(line)["keys"][0]) for line in lines]
        assert len(keys) == BATCH and keys == list(range(keys[0], keys[0] + BATCH)), entry.uri

    result = Changelog(spark).staging(url).warehouse(f"file://{tmp_path / 'warehouse'}").run()
    assert result.quarantined == []  # a cut batch would be quarantined as truncated JSON
    assert result.batches_read == len(listed) and result.changes_written == BATCH * len(listed)
    assert sorted(p.name for p in folder.glob(".*.tmp")) == leftovers  # the job left the leftovers alone
