"""Conversion of a warehouse of the Parquet layout (tests/changelog/fixtures/old_warehouse, written by
the job of that layout) into the Delta tables: the rows its views showed, once, also when killed.

The expected rows are the old views' (fixtures/old_warehouse_expected/*.jsonl); delta-rs and Spark
read the converted tables. make_old_warehouse.py says how the fixture was made.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from watcher.changelog.tables import convert, layout, readers
from watcher.changelog.tables.ledger import Ledger

from . import convert_child

FIXTURES = Path(__file__).with_name("fixtures")
ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("convert_child.py")
#: The old layout's version, and the steps a conversion reports, in order.
VERSION = 4
STEPS = ("runs", "changelog", "current_state", "watermarks", "moved _state/manifest", "moved changelog",
         "moved current_state", "moved _state/processed", "placed runs", "placed current_state", "placed watermarks")


def expected(name: str) -> list[dict[str, Any]]:
    text = (FIXTURES / "old_warehouse_expected" / f"{name}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the fixture warehouse (conversion moves its folders)."""
    return Path(shutil.copytree(FIXTURES / "old_warehouse", tmp_path / "warehouse"))


def _text(when: Any, nanos: int | None) -> str | None:
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"


def as_old(row: dict[str, Any]) -> dict[str, Any]:
    """A Delta row as the old views showed it: the exact timestamp as text, types as a map, no source columns."""
    out = {k: v for k, v in row.items() if not k.startswith("source_") and k != "commit_nanos"}
    out["commit_timestamp"] = _text(row["commit_timestamp"], row["commit_nanos"])
    out["column_types"] = json.loads(row["column_types"]) if row.get("column_types") else row.get("column_types")
    if "commit_date" in out:
        out["commit_date"] = out["commit_date"].isoformat()
    return out


def old_view(row: dict[str, Any]) -> dict[str, Any]:
    """An expected row without the view-only columns (commit_ts, vals) the Delta tables do not keep, and
    its column types as a map (the views showed them so; the state's layers kept the JSON text)."""
    out = {k: v for k, v in row.items() if k not in ("commit_ts", "vals")}
    if isinstance(out.get("column_types"), str):
        out["column_types"] = json.loads(out["column_types"])
    return out


def _order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["table_name"], r["keys"], r["commit_timestamp"]))


def assert_converted(warehouse: Path) -> None:
    """The Delta tables hold exactly the old views' rows (delta-rs), and the ledger run VERSION is complete."""
    changelog = [as_old(r) for r in readers.delta_rs_rows(str(warehouse / "changelog"))]
    assert _order(changelog) == _order([old_view(r) for r in expected("changelog")])
    state = [as_old(r) for r in readers.delta_rs_rows(str(warehouse / "current_state"))]
    assert _order([r for r in state if not r["is_deleted"]]) == _order([old_view(r) for r in expected("current_state")])
    assert _order(state) == _order([old_view(r) for r in expected("state_all")])  # deleted keys kept, flagged
    marks = {r["table_name"]: (_text(r["watermark"], r["watermark_nanos"]), r["loops"], r["complete_from"])
             for r in readers.delta_rs_rows(str(warehouse / "watermarks"))}
    assert marks == {r["table_name"]: (r["watermark"], r["loops"], r["complete_from"]) for r in expected("watermarks")}
    ledger = Ledger(warehouse)
    assert ledger.open_run() is None
    assert {spec.name: ledger.held_version(spec.name) for spec in layout.COMMIT_ORDER} == \
        {spec.name: VERSION for spec in layout.COMMIT_ORDER}
    consumed = json.loads((FIXTURES / "old_warehouse_expected" / "consumed_batches.json").read_text())
    assert sorted(ledger.consumed_batches()) == consumed
    assert not convert.detect_old_layout(str(warehouse))


def test_the_converted_tables_hold_the_old_views_rows(old, tmp_path):
    assert convert.detect_old_layout(str(old))
    done = convert.convert(str(old), source=convert_child.SOURCE)
    assert (done.converted, done.run_version, done.rows) == (True, VERSION, {"runs": 3, "changelog": 11,
                                                                            "current_state": 8, "watermarks": 2})
    assert_converted(old)
    rows = readers.delta_rs_rows(str(old / "changelog"))
    assert {(r["source_project"], r["source_instance"], r["source_database"]) for r in rows} == {convert_child.SOURCE}
    assert sorted(p.name for p in (old / "_old_layout").iterdir()) == ["_state", "changelog", "changelog_superseded",
                                                                         "current_state"]
    assert (old / "_state" / "complete" / "Albums.json").is_file()  # the markers stay where they were

    # the staged batches the old runs consumed are consumed: a run takes only what came after
    staging = Path(shutil.copytree(FIXTURES / "old_staging", tmp_path / "staging"))
    (staging / "table=Singers" / "later.jsonl").write_text("", encoding="utf-8")
    staged = {p.relative_to(staging).as_posix() for p in staging.rglob("*.jsonl")}
    assert staged - Ledger(old).consumed_batches() == {"table=Singers/later.jsonl"}


def test_spark_reads_the_converted_tables(spark, old):
    convert.convert(str(old), source=convert_child.SOURCE)
    exact = "concat(date_format(commit_timestamp, \"yyyy-MM-dd'T'HH:mm:ss.\"), lpad(CAST(commit_nanos AS STRING), 9, '0'), 'Z')"
    changelog = spark.read.format("delta").load(str(old / "changelog"))
    got = changelog.selectExpr("change_id", f"{exact} AS exact", "CAST(commit_date AS STRING) AS day", "run_version",
                               "mod_type").collect()
    assert sorted(tuple(r) for r in got) == sorted(
        (r["change_id"], r["commit_timestamp"], r["commit_date"], r["run_version"], r["mod_type"]) for r in expected("changelog"))
    state = spark.read.format("delta").load(str(old / "current_state")).where("NOT is_deleted")
    assert sorted((r.table_name, r["keys"], r.new_values) for r in state.collect()) == sorted(
        (r["table_name"], r["keys"], r["new_values"]) for r in expected("current_state"))


def test_converting_twice_is_a_no_op(old):
    convert.convert(str(old), source=convert_child.SOURCE)
    versions = {spec.name: readers_version(old / spec.name) for spec in layout.COMMIT_ORDER}
    again = convert.convert(str(old), source=convert_child.SOURCE)
    assert (again.converted, again.rows, again.steps) == (False, {}, [])
    assert {spec.name: readers_version(old / spec.name) for spec in layout.COMMIT_ORDER} == versions
    assert_converted(old)


def readers_version(table: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(table)).version()


class Stopped(Exception):
    """A conversion stopped right after a step (what a crash there leaves on disk: no step cleans up)."""


@pytest.mark.parametrize("step", STEPS)
def test_a_conversion_stopped_after_any_step_and_run_again_gives_the_same(old, step):
    def stop(done: str) -> None:
        if done == step:
            raise Stopped(done)

    with pytest.raises(Stopped):
        convert.convert(str(old), source=convert_child.SOURCE, progress=stop)
    with pytest.raises(convert.OldLayoutError, match=r"convert it once with `spanner-watcher changelog --convert "):
        convert.refuse_old_layout(str(old))  # half converted: still refused
    convert_child.main(str(old))
    assert_converted(old)


def test_a_conversion_killed_in_the_middle_and_run_again_gives_the_same(old):
    """SIGKILL after the changelog's commit, in a process of its own."""
    done = subprocess.run([sys.executable, str(CHILD), str(old), "changelog"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == -9, done.stderr[-2000:]
    assert convert.detect_old_layout(str(old))
    convert_child.main(str(old))
    assert_converted(old)


def test_the_changelog_command_converts_and_then_nothing_is_left_to_convert(old, capsys):
    from watcher.cli.main import main

    assert main(["changelog", "--convert", "--warehouse", str(old)]) == 0
    out = capsys.readouterr().out
    assert f"converted into Delta tables as run {VERSION}" in out and f"{old}/_old_layout" in out
    assert_converted(old)
    assert main(["changelog", "--convert", "--warehouse", str(old), "--remove-old-layout"]) == 0
    assert "nothing to convert" in capsys.readouterr().out
    assert not (old / "_old_layout").exists()  # what the conversion kept is removed when asked
    assert_converted(old)


#: Commands that open a warehouse, with the arguments they need besides it (none gets as far as a database).
COMMANDS = {
    "changelog": ["--staging", "{staging}"],
    "backfill": ["--table", "Singers", "--staging", "{staging}"],
    "reconcile": ["--table", "Singers", "--staging", "{staging}", "--run-job"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_opens_a_warehouse_refuses_the_old_layout_in_one_line(old, tmp_path, command, capsys):
    from watcher.cli.main import main

    (tmp_path / "staging").mkdir()
    argv = [command, *(a.format(staging=tmp_path / "staging") for a in COMMANDS[command]), "--warehouse", str(old)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"spanner-watcher {command}: error: warehouse {old} holds the changelog in its Parquet layout of "
                   "older spanner-watcher versions (_state/manifest, changelog, changelog_superseded, current_state, "
                   f"_state/attempts, _state/processed): convert it once with `spanner-watcher changelog --convert "
                   f"--warehouse {old}`, then run again")
    assert (old / "_state" / "manifest").is_dir() and not (old / "runs").exists()  # nothing was touched


def test_the_job_and_the_views_refuse_the_old_layout(spark, old, tmp_path):
    from watcher.changelog import Changelog
    from watcher.changelog.views import register_views

    with pytest.raises(convert.OldLayoutError, match=r"convert it once with `spanner-watcher changelog --convert"):
        Changelog(spark).staging(str(tmp_path)).warehouse(str(old)).run()
    with pytest.raises(convert.OldLayoutError, match=r"convert it once with `spanner-watcher changelog --convert"):
        register_views(spark, str(old))
    assert not (old / "runs").exists()


@pytest.mark.usefixtures("each_engine")
def test_the_job_goes_on_from_a_converted_warehouse(spark, old, tmp_path):
    """The next run reads only what was staged after the old runs, and continues each key from its converted state."""
    from watcher.changelog import Changelog
    from watcher.model import Change, from_nanos
    from watcher.staging.sink import StagingSink

    convert.convert(str(old), source=convert_child.SOURCE)
    staging = Path(shutil.copytree(FIXTURES / "old_staging", tmp_path / "staging"))
    when = from_nanos(1_714_557_600_000_000_000 + 90 * 1_000_000_000)  # 2024-05-01T10:01:30Z, after every old change
    StagingSink(staging, watcher_id="poller", fsync=False).write(
        [Change("Singers", (1,), {"SingerId": 1, "Name": "Anne", "Score": 1.5}, when, None, when)],
        {"SingerId": "INT64", "Name": "STRING", "Score": "FLOAT64"}, ["SingerId"])
    result = Changelog(spark).staging(str(staging)).warehouse(str(old)).source(*convert_child.SOURCE).views(False).run()
    assert (result.batches_read, result.changes_written, result.version) == (1, 1, VERSION + 1)
    rows = readers.delta_rs_rows(str(old / "changelog"))
    assert len(rows) == len(expected("changelog")) + 1
    new = [r for r in rows if r["run_version"] == VERSION + 1]
    assert [(r["keys"], r["mod_type"], json.loads(r["old_values"])) for r in new] == [
        ('{"SingerId":"1"}', "UPDATE", {"Name": "Anna"})]  # the key's converted state was its previous row

    # retention over the tables Spark wrote to: every consumed batch may go two days on, VACUUM (forced) keeps the rows
    import datetime as dt

    from watcher.changelog.tables import retention

    policy = retention.RetentionPolicy(staging=dt.timedelta(days=1), vacuum=dt.timedelta(0), force_vacuum=True)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    done = retention.apply(str(old), str(staging), policy, later)
    assert len(done.staged_batches_removed) == 8 and not list(staging.rglob("*.jsonl"))
    assert done.vacuumed_files["current_state"] > 0  # MERGE rewrote its files
    assert len(readers.delta_rs_rows(str(old / "changelog"))) == len(expected("changelog")) + 1
    assert spark.read.format("delta").load(str(old / "current_state")).where("NOT is_deleted").count() == \
        len(expected("current_state"))
