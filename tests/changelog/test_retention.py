"""Retention removes only what is safe: consumed batches of complete runs, whole days of changelog
history, and files VACUUM may drop; time is an input (``now``), not the clock.

The runs here are written through the ledger with delta-rs, as the job commits them: the runs row
with the batches (begun at an injected time), the changelog rows, the state, the watermarks.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from watcher.changelog.tables import layout, readers, retention
from watcher.changelog.tables.ledger import Ledger
from watcher.errors import ConfigurationError

SOURCE = {"source_project": "p", "source_instance": "i", "source_database": "d"}
T0 = dt.datetime(2024, 5, 1, 9, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


def stage(staging: Path, name: str, changes: list[tuple[str, int, dt.datetime]]) -> None:
    """A staged batch ``table=<T>/<name>.jsonl`` of (table, key, commit time) changes (one table per batch)."""
    folder = staging / f"table={changes[0][0]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jsonl").write_text("".join(json.dumps({"table": t, "key": k, "commit": c.isoformat()}) + "\n"
                                                  for t, k, c in changes), encoding="utf-8")


def staged(staging: Path) -> set[str]:
    return {p.relative_to(staging).as_posix() for p in staging.rglob("*.jsonl")}


def begin(ledger: Ledger, staging: Path, now: dt.datetime):
    ledger.create_tables()
    return ledger.begin(sorted(staged(staging) - ledger.consumed_batches()), now=now)


def finish(ledger: Ledger, staging: Path, run) -> None:
    """Write the run's changelog rows, its keys' state (appended: one version per key here) and watermarks."""
    changes = [json.loads(line) for batch in run.batches for line in (staging / batch).read_text().splitlines()]
    rows = []
    for c in changes:
        when = dt.datetime.fromisoformat(c["commit"])
        rows.append({**SOURCE, "change_id": f"{c['table']}/{c['key']}/{c['commit']}", "table_name": c["table"],
                     "keys": json.dumps({"id": c["key"]}), "mod_type": "UPSERT", "new_values": json.dumps({"id": c["key"]}),
                     "commit_timestamp": when, "commit_nanos": when.microsecond * 1000, "commit_date": when.date(),
                     "is_deleted": False, "run_version": run.version})
    props = ledger.commit_properties(run)
    for spec in (layout.CHANGELOG, layout.CURRENT_STATE):
        table = pa.Table.from_pylist([{n: r.get(n) for n, _, _ in spec.fields} for r in rows], schema=spec.arrow_schema())
        write_deltalake(ledger.uri(spec.name), table, mode="append", commit_properties=props)
    marks = [{**SOURCE, "table_name": t, "watermark": max(r["commit_timestamp"] for r in rows if r["table_name"] == t),
              "watermark_nanos": 0, "run_version": run.version} for t in sorted({r["table_name"] for r in rows})]
    write_deltalake(ledger.uri("watermarks"), pa.Table.from_pylist(
        [{n: m.get(n) for n, _, _ in layout.WATERMARKS.fields} for m in marks], schema=layout.WATERMARKS.arrow_schema()),
        mode="append", commit_properties=props)


def changelog_keys(ledger: Ledger) -> list[tuple[str, int]]:
    return sorted((r["table_name"], json.loads(r["keys"])["id"]) for r in readers.delta_rs_rows(ledger.uri("changelog")))


def test_only_consumed_batches_of_complete_runs_go_and_a_later_run_still_gets_every_change(tmp_path):
    staging, ledger = tmp_path / "staging", Ledger(tmp_path / "warehouse")
    stage(staging, "b1", [("Singers", 1, T0), ("Singers", 2, T0)])
    finish(ledger, staging, begin(ledger, staging, T0))                    # run 1: b1, complete
    stage(staging, "b2", [("Singers", 3, T0 + DAY)])
    open_run = begin(ledger, staging, T0 + DAY)                             # run 2: b2, begun, not finished
    stage(staging, "b3", [("Albums", 1, T0 + DAY)])                          # no run consumed it yet
    policy = retention.RetentionPolicy(staging=2 * DAY)

    assert retention.apply(str(ledger.warehouse), str(staging), policy, T0 + DAY).staged_batches_removed == []  # too young
    later = T0 + 30 * DAY
    assert retention.apply(str(ledger.warehouse), str(staging), policy, later).staged_batches_removed == \
        ["table=Singers/b1.jsonl"]
    assert staged(staging) == {"table=Singers/b2.jsonl", "table=Albums/b3.jsonl"}  # the open run's, the unconsumed

    finish(ledger, staging, open_run)                                       # the crashed run is finished from its batches
    finish(ledger, staging, begin(ledger, staging, later))                 # run 3: b3
    assert changelog_keys(ledger) == [("Albums", 1), ("Singers", 1), ("Singers", 2), ("Singers", 3)]
    assert retention.apply(str(ledger.warehouse), str(staging), policy, later + 2 * DAY).staged_batches_removed == \
        ["table=Albums/b3.jsonl", "table=Singers/b2.jsonl"]


def test_history_goes_by_whole_days_and_the_state_keeps_every_key(tmp_path):
    staging, ledger = tmp_path / "staging", Ledger(tmp_path / "warehouse")
    stage(staging, "b1", [("Singers", 1, T0), ("Singers", 2, T0 + dt.timedelta(hours=14))])  # 2024-05-01 09:00 and 23:00
    stage(staging, "b2", [("Singers", 3, T0 + 2 * DAY)])                                       # 2024-05-03
    finish(ledger, staging, begin(ledger, staging, T0 + 2 * DAY))
    state_before = readers.delta_rs_rows(ledger.uri("current_state"))
    policy = retention.RetentionPolicy(history=2 * DAY)

    # 2024-05-02 22:00 minus two days is 2024-04-30 22:00: no day is wholly older yet
    assert retention.apply(str(ledger.warehouse), None, policy, T0 + dt.timedelta(hours=37)).history_rows_dropped == 0
    assert retention.apply(str(ledger.warehouse), None, policy, T0 + 3 * DAY).history_rows_dropped == 2
    assert changelog_keys(ledger) == [("Singers", 3)]
    assert readers.delta_rs_rows(ledger.uri("current_state")) == state_before
    assert ledger.open_run() is None and ledger.held_version("changelog") == 1  # the DELETE is not a run

    stage(staging, "b3", [("Singers", 4, T0 + 3 * DAY)])                      # a later run goes on as before
    finish(ledger, staging, begin(ledger, staging, T0 + 3 * DAY))
    assert changelog_keys(ledger) == [("Singers", 3), ("Singers", 4)] and ledger.held_version("watermarks") == 2


def test_vacuum_keeps_seven_days_unless_forced_and_time_travel_past_it_is_gone(tmp_path):
    staging, ledger = tmp_path / "staging", Ledger(tmp_path / "warehouse")
    stage(staging, "b1", [("Singers", 1, T0), ("Singers", 2, T0 + 2 * DAY)])
    finish(ledger, staging, begin(ledger, staging, T0))
    before_delete = DeltaTable(ledger.uri("changelog")).version()
    retention.drop_history(ledger, DAY, T0 + 2 * DAY)                        # removes the 2024-05-01 file
    with pytest.raises(ConfigurationError, match=r"--vacuum-retention 1h is shorter than Delta's safe 7 days"):
        retention.vacuum(ledger, dt.timedelta(hours=1))
    assert retention.vacuum(ledger) == {"runs": 0, "changelog": 0, "current_state": 0, "watermarks": 0}  # removed just now
    assert len(readers.delta_rs_rows(ledger.uri("changelog"), version=before_delete)) == 2  # time travel still works

    assert retention.vacuum(ledger, dt.timedelta(0), force=True)["changelog"] == 1
    assert changelog_keys(ledger) == [("Singers", 2)]                        # the current version is whole
    with pytest.raises(OSError, match="not found|No such file"):            # the version before the DELETE is gone
        readers.delta_rs_rows(ledger.uri("changelog"), version=before_delete)


@pytest.mark.parametrize(("text", "age"), [("30d", 30 * DAY), ("36h", dt.timedelta(hours=36)), ("1.5w", 10.5 * DAY)])
def test_durations(text, age):
    assert retention.parse_duration(text) == age


def test_the_changelog_command_refuses_a_bad_retention_before_it_starts(tmp_path, capsys):
    from watcher.cli.main import main

    (tmp_path / "staging").mkdir()
    argv = ["changelog", "--staging", str(tmp_path / "staging"), "--warehouse", str(tmp_path / "warehouse")]
    assert main([*argv, "--vacuum-retention", "2d"]) == 2
    assert "--vacuum-retention 2d is shorter than Delta's safe 7 days" in capsys.readouterr().err
    assert main([*argv, "--history-retention", "forever"]) == 2
    assert "--history-retention: expected a duration such as 30d" in capsys.readouterr().err
    assert not (tmp_path / "warehouse").exists()
