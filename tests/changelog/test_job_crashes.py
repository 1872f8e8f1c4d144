"""The real changelog job killed (SIGKILL) before, between and after its commits: the next run
finishes the open run, and every Delta table then equals the one an uncrashed run wrote.

The input of the killed run holds what a run must get right once only: a batch staged twice, a
late row (older than the key's state), an update of a key an earlier run wrote, a soft delete,
and a bad batch (quarantined by the run that finishes).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.changelog.crash_points import STEPS
from tests.changelog.job_crash_child import SOFT_DELETE
from tests.changelog.support import SINGERS_TYPES, Stager, singer
from watcher.changelog import Changelog
from watcher.changelog.tables import layout, readers
from watcher.changelog.tables.ledger import Ledger

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("the killed run's input: a bad batch, a soft-delete column, a late change")]

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("job_crash_child.py")
KEY = ["SingerId"]
#: Columns that differ between two runs of the same input (when the run began).
VARYING = {"started_at"}


def _run(spark, staging: Path, warehouse: Path):
    return Changelog(spark).staging(str(staging)).warehouse(str(warehouse)).soft_delete_column(*SOFT_DELETE).run()


def _second_input(stager: Stager, staging: Path) -> None:
    stager.stage("Singers", [singer(1, "a2"), singer(4, "d")], types=SINGERS_TYPES, key_columns=KEY, commits=[30, 40])
    stager.stage("Singers", [singer(1, "a2"), singer(4, "d")], types=SINGERS_TYPES, key_columns=KEY, commits=[30, 40])
    stager.stage("Singers", [singer(2, "b", deleted=True), singer(3, "late")], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[50, 5])
    bad = stager.stage("Singers", [singer(9, "x")], types=SINGERS_TYPES, key_columns=KEY, commits=[60])
    Path(bad).write_text("not json\n")


@pytest.fixture(scope="module")
def warehouses(spark, tmp_path_factory):
    """The warehouse after a first run (a copy per test), and after an uncrashed second run (the truth)."""
    root = tmp_path_factory.mktemp("crashes")
    stager = Stager(root / "staging")
    stager.stage("Singers", [singer(k, name) for k, name in ((1, "a"), (2, "b"), (3, "c"))], types=SINGERS_TYPES,
                 key_columns=KEY, commits=[10, 20, 25])
    _run(spark, root / "staging", root / "first")
    shutil.copytree(root / "first", root / "truth")
    shutil.copytree(root / "staging", root / "staging-first")
    _second_input(stager, root / "staging")
    shutil.copytree(root / "staging", root / "staging-second")
    _run(spark, root / "staging", root / "truth")
    return root


def _tables(warehouse: Path) -> dict[str, list]:
    out = {}
    for spec in layout.COMMIT_ORDER:
        rows = readers.delta_rs_rows(str(warehouse / spec.name))
        out[spec.name] = sorted(repr({k: v for k, v in r.items() if k not in VARYING}) for r in rows)
    return out


def _kill_then_finish(spark, staging: Path, warehouse: Path, truth: Path, step: str) -> None:
    """Kill a run over ``staging`` into ``warehouse`` at ``step``; the next run leaves the tables of ``truth``."""
    argv = [sys.executable, str(CHILD), str(staging), str(warehouse), step]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stderr[-3000:]
    assert (Ledger(warehouse).open_run() is None) == (step in ("before:runs", "after:watermarks"))

    result = _run(spark, staging, warehouse)
    assert result.committed == (step != "after:watermarks") and Ledger(warehouse).open_run() is None
    assert _tables(warehouse) == _tables(truth)
    # the bad batch is set aside by the run that completes (killed after its last commit: left in the staging folder)
    assert [p.name for p in (warehouse / "_quarantine").rglob("*.jsonl")] == \
        ([] if step == "after:watermarks" else [p.name for p in (truth / "_quarantine").rglob("*.jsonl")])
    again = _run(spark, staging, warehouse)
    assert not again.committed and _tables(warehouse) == _tables(truth)


@pytest.mark.parametrize("step", STEPS)
def test_a_run_killed_at_any_step_is_finished_once_by_the_next(spark, warehouses, tmp_path, step):
    staging, warehouse = tmp_path / "staging", tmp_path / "warehouse"
    shutil.copytree(warehouses / "staging-second", staging)
    shutil.copytree(warehouses / "first", warehouse)
    _kill_then_finish(spark, staging, warehouse, warehouses / "truth", step)


@pytest.fixture(scope="module")
def first_run(spark, warehouses):
    """All the input in one run into an empty warehouse, uncrashed (the truth of a killed first run)."""
    shutil.copytree(warehouses / "staging-second", warehouses / "staging-once")
    _run(spark, warehouses / "staging-once", warehouses / "once")
    return warehouses / "once"


@pytest.mark.parametrize("step", ["after:runs", "after:changelog", "after:current_state"])
def test_a_first_run_killed_between_its_commits_is_finished_once(spark, warehouses, first_run, tmp_path, step):
    """A first run appends the state (no state yet): killed before that commit, the next run appends it
    once; killed after it, the next run finishes the watermarks only."""
    staging = tmp_path / "staging"
    shutil.copytree(warehouses / "staging-second", staging)
    _kill_then_finish(spark, staging, tmp_path / "warehouse", first_run, step)
