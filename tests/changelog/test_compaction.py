"""Compaction after a run: the same rows, runs and change data feed in fewer files, for every reader.

Two warehouses take the same staged batches run by run, one compacting once a partition holds
two small files, the other never; the compacting one must hold exactly what the other holds,
whichever engine wrote it, while later runs update keys whose rows were compacted and add others.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.changelog.support import SINGERS_TYPES, Stager, singer
from watcher.changelog import Changelog
from watcher.changelog.tables import compaction, layout, readers
from watcher.changelog.tables.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]
KEY = ["SingerId"]
RUNS = 3
MIN_FILES = 2
NOW = dt.datetime(2024, 5, 2, tzinfo=dt.UTC)


def _run(spark, staging: Path, warehouse: Path, min_files: int):
    return (Changelog(spark).staging(str(staging)).warehouse(str(warehouse)).clock(lambda: NOW).views(False)
            .compaction(min_files).run())


def _stage(stager: Stager, n: int) -> None:
    """Run ``n``'s batch: keys 1-3 updated (inserted by the first) and a new key."""
    rows = [singer(k, f"v{n}") for k in (1, 2, 3)] + [singer(100 + n, "new")]
    stager.stage("Singers", rows, types=SINGERS_TYPES, key_columns=KEY, commits=[n * 100 + i for i in range(4)])


def _rows(warehouse: Path, table: str) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in readers.delta_rs_rows(str(warehouse / table)))


def _feed(spark, warehouse: Path) -> list[tuple]:
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
            .load(str(warehouse / layout.CURRENT_STATE.name)))
    return sorted((r["keys"], r["new_values"], r["_change_type"], r["run_version"]) for r in feed.collect())


def _small_files_per_partition(warehouse: Path, spec: layout.TableSpec) -> int:
    files = compaction._files(Ledger(warehouse).table(spec.name), spec.partition_by)
    return max(compaction.small_files(files, compaction.DEFAULT_TARGET_SIZE).values(), default=0)


@pytest.mark.usefixtures("each_engine")
def test_compacted_tables_hold_what_uncompacted_ones_hold(spark, tmp_path):
    stager, staging = Stager(tmp_path / "staging"), tmp_path / "staging"
    compacted, plain = tmp_path / "compacted", tmp_path / "plain"
    done: dict[str, int] = {}
    for n in range(1, RUNS + 1):
        _stage(stager, n)
        result = _run(spark, staging, compacted, MIN_FILES)
        assert not _run(spark, staging, plain, 0).compacted
        for table, files in result.compacted.items():
            done[table] = done.get(table, 0) + files
        for spec in layout.COMMIT_ORDER:  # what the policy promises after every run
            assert _small_files_per_partition(compacted, spec) < MIN_FILES, (n, spec.name)

    assert {layout.RUNS.name, layout.CHANGELOG.name} <= set(done)  # the state and watermarks MERGE: few files
    for spec in layout.COMMIT_ORDER:
        assert _rows(compacted, spec.name) == _rows(plain, spec.name), spec.name
        assert Ledger(compacted).held_version(spec.name) == Ledger(plain).held_version(spec.name) == RUNS
        history = Ledger(compacted).table(spec.name).history()
        assert any(h["operation"] == "OPTIMIZE" for h in history) == (spec.name in done), spec.name
    for spec in layout.COMMIT_ORDER:
        files, before = (len(Ledger(w).table(spec.name).file_uris()) for w in (compacted, plain))
        assert files < before if spec.name in (layout.RUNS.name, layout.CHANGELOG.name) else files <= before, spec.name
    # the state's change data feed skips the compactions' commits: the same inserts, updates and deletes
    assert _feed(spark, compacted) == _feed(spark, plain)
    # the views as Spark SQL, delta-rs and DuckDB read them: live keys, newest rows
    changelog = compacted / layout.CHANGELOG.name
    assert spark.sql(f"SELECT count(*) FROM delta.`{changelog}`").first()[0] == RUNS * 4
    duck = readers.duckdb_connection().execute(f"SELECT count(*) FROM delta_scan('{changelog}')").fetchone()[0]
    assert duck == RUNS * 4
    live = {r["keys"]: r["new_values"] for r in readers.delta_rs_rows(str(compacted / "current_state"))
            if not r["is_deleted"]}
    assert len(live) == 3 + RUNS and all(f'"v{RUNS}"' in live[f'{{"SingerId":"{k}"}}'] for k in (1, 2, 3))


def test_a_bad_compaction_option_is_refused_before_any_run(tmp_path, capsys):
    import argparse

    from watcher.cli.commands.warehouse_options import add_arguments
    from watcher.cli.main import main

    (tmp_path / "s").mkdir()
    code = main(["changelog", "--staging", str(tmp_path / "s"), "--warehouse", str(tmp_path / "w"), "--compact-files", "1"])
    assert code == 2 and "--compact-files must be 0 (off) or at least 2, got 1" in capsys.readouterr().err
    assert not (tmp_path / "w" / layout.RUNS.name).exists()
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    wanted = next(a for a in parser._actions if "--compact-files" in a.option_strings)
    assert f"the job's, {compaction.DEFAULT_MIN_FILES};" in wanted.help  # the help names the job's default
    guide = " ".join((ROOT / "docs" / "operating.md").read_text().split())
    assert (f"holds {compaction.DEFAULT_MIN_FILES} files under {compaction.DEFAULT_TARGET_SIZE >> 20} MiB" in guide
            and f"once in {compaction.DEFAULT_MIN_FILES} micro-batches" in guide)  # so does the operators' guide


@pytest.mark.parametrize(("sizes", "min_files", "expected"), [
    ({}, 2, []),
    ({"A": [1, 1]}, 2, ["A"]),
    ({"A": [1]}, 2, []),  # one small file: nothing to pack it with
    ({"A": [1, 100, 100]}, 2, []),  # at the target size a file is not small
    ({"A": [1, 99, 100]}, 2, ["A"]),
    ({"A": [1, 1, 1], "B": [1, 1]}, 3, ["A"]),
    ({"B": [1, 1], "A": [1, 1]}, 2, ["A", "B"]),
])
def test_a_table_is_crowded_by_the_partitions_holding_min_files_small_files(sizes, min_files, expected):
    files = [((p,), size) for p, each in sizes.items() for size in each]
    assert compaction.crowded(files, min_files=min_files, target_size=100) == [(p,) for p in expected]


def test_a_compaction_that_fails_leaves_the_run_committed_and_is_tried_after_the_next(spark, tmp_path, monkeypatch, caplog):
    """A commit conflict cannot be caused on cue here (one writer per warehouse), so delta-rs' compaction
    is made to fail once, as a concurrent writer's commit would make it."""
    from deltalake.exceptions import CommitFailedError
    from deltalake.table import TableOptimizer

    stager, staging, warehouse = Stager(tmp_path / "staging"), tmp_path / "staging", tmp_path / "warehouse"
    real = TableOptimizer.compact
    failures = iter([True])

    def compact_once_failing(self, *args, **kwargs):
        if next(failures, False):
            raise CommitFailedError("a concurrent transaction removed files this one read")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TableOptimizer, "compact", compact_once_failing)
    compacted = []
    for n in (1, 2, 3):
        _stage(stager, n)
        result = Changelog(spark).staging(str(staging)).warehouse(str(warehouse)).engine("driver").views(False) \
            .compaction(2).run()
        assert result.committed and Ledger(warehouse).held_version(layout.WATERMARKS.name) == n
        compacted.append(set(result.compacted))
    assert "compaction of runs failed, tried again after the next run: a concurrent transaction" in caplog.text
    # the runs table, the first crowded (two runs' files after the second run), fails; the others go on
    assert layout.RUNS.name not in compacted[1] and layout.CHANGELOG.name in compacted[1]
    assert layout.RUNS.name in compacted[2], "the next run compacts what the one before could not"
    assert len(readers.delta_rs_rows(str(warehouse / layout.CHANGELOG.name))) == 12
