"""The README's main command, in a short mode, on the run's shared server; its summary checked against the database."""

from __future__ import annotations

import json
import os

from google.cloud import spanner


def test_demo_summary_matches_the_database(_server, tmp_path, spark):
    from watcher.devtools.demo import run_demo

    summary = run_demo(seconds=3, workdir=str(tmp_path / "demo"), writers=2, keys=200, quiet=True,
                       emulator_host=os.environ["SPANNER_EMULATOR_HOST"])
    assert summary["keys_missing"] == 0 and summary["writer_errors"] == 0
    project, instance, database = summary["database"].split("/")[1::2]
    db = spanner.Client(project=project).instance(instance).database(database)
    with db.snapshot() as snap:
        (count,), = list(snap.execute_sql("SELECT COUNT(*) FROM Singers"))
    assert summary["keys_written"] == count == summary["current_state_rows"]
    # The table was backfilled (empty) before writing: each key's first change is an INSERT, the rest UPDATEs.
    assert summary["changelog_by_mod_type"]["INSERT"] == count
    assert sum(summary["changelog_by_mod_type"].values()) == summary["changes_captured"]
    assert summary["changes_captured"] <= summary["mutations_written"]
    assert (tmp_path / "demo" / "warehouse").is_dir() and any((tmp_path / "demo" / "staging").rglob("*.jsonl"))
    json.dumps(summary)  # the summary is plain data
