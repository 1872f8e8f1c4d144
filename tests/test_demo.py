"""The README's main command, in a short mode, on the run's shared server; its summary checked against the database."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from google.cloud import spanner

from tests.report_checks import check_report


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
    check_report(Path(summary["report"]), f"{summary['changes_captured']:,}",
                 f"INSERT {summary['changelog_by_mod_type']['INSERT']:,}", f"{summary['lag_p99_ms']:,.1f}")
    json.dumps(summary)  # the summary is plain data


def test_demo_both_modes_side_by_side(_server, tmp_path, spark):
    """One workload (with deletes), both capture modes: the stream has every version and every delete,
    polling the coalesced rows; each changelog matches what its watcher delivered."""
    from watcher.devtools.demo import run_demo

    summary = run_demo(seconds=3, workdir=str(tmp_path / "both"), writers=2, keys=60, quiet=True, mode="both",
                       delete_share=0.2, emulator_host=os.environ["SPANNER_EMULATOR_HOST"])
    poll, stream = summary["captures"]["poll"], summary["captures"]["change_stream"]
    assert summary["writer_errors"] == 0 and poll["keys_missing"] == 0 and stream["keys_missing"] == 0
    assert summary["deletes_written"] > 0 and 0 < stream["deletes_captured"] <= summary["deletes_written"]
    assert poll["deletes_captured"] == 0
    assert stream["changes_captured"] > poll["changes_captured"]   # with 60 keys, versions overwrite each other
    # Each changelog holds what its watcher delivered; only the stream's current state knows the deletes.
    assert sum(stream["changelog_by_mod_type"].values()) == stream["changes_captured"]
    assert stream["changelog_by_mod_type"]["DELETE"] == stream["deletes_captured"]
    assert sum(poll["changelog_by_mod_type"].values()) == poll["changes_captured"]
    assert stream["current_state_rows"] == summary["rows_in_table"]
    assert poll["current_state_rows"] == summary["keys_written"]     # polling keeps deleted keys
    assert 0 < stream["lag_p50_ms"] <= stream["lag_p99_ms"] and 0 < poll["lag_p50_ms"] <= poll["lag_p99_ms"]
    for mode in ("poll", "change_stream"):
        assert any((tmp_path / "both" / mode / "staging").rglob("*.jsonl"))
    check_report(Path(summary["report"]), "change stream", f"{stream['changes_captured']:,}", f"{poll['changes_captured']:,}")
    json.dumps(summary)



def test_demo_on_a_postgresql_database(_server, tmp_path, spark):
    """The default demo on a PostgreSQL database: Singers from the DDL helpers, the writers' mutations,
    the backfill and the changelog unchanged."""
    from watcher.devtools.demo import run_demo
    from watcher.dialects import POSTGRESQL, dialect_of

    summary = run_demo(seconds=2, workdir=str(tmp_path / "pg"), writers=2, keys=60, quiet=True,
                       emulator_host=os.environ["SPANNER_EMULATOR_HOST"], dialect=POSTGRESQL)
    assert summary["dialect"] == "PostgreSQL" and summary["writer_errors"] == 0 and summary["keys_missing"] == 0
    project, instance, database = summary["database"].split("/")[1::2]
    db = spanner.Client(project=project).instance(instance).database(database)
    assert dialect_of(db) is POSTGRESQL
    with db.snapshot(multi_use=True) as snap:
        (count,), = list(snap.execute_sql('SELECT COUNT(*) FROM "Singers"'))
        applied = [r[0] for r in snap.execute_sql("SELECT folder_id FROM spanner_watcher_migrations")]
    assert applied == ["watcher"] * 4  # the watcher's own tables, from the PostgreSQL default set
    assert summary["keys_written"] == count == summary["current_state_rows"]
    assert summary["changelog_by_mod_type"]["INSERT"] == count
    assert sum(summary["changelog_by_mod_type"].values()) == summary["changes_captured"]
    json.dumps(summary)


def test_demo_dialect_option(capsys):
    from watcher.cli.main import main

    with pytest.raises(SystemExit):
        main(["demo", "--dialect", "mysql"])
    assert "invalid choice: 'mysql'" in capsys.readouterr().err
