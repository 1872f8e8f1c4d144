"""The processed-batches log: committed runs only, merged when long, nothing lost on a crash."""

from __future__ import annotations

import pytest

from watcher.changelog import processed_log
from watcher.changelog.arrow_fs import ArrowFS
from watcher.changelog.fs import HadoopFS
from watcher.changelog.manifest import Manifest


@pytest.fixture(params=["hadoop", "arrow"])
def fs(request, spark, tmp_path):
    """The warehouse through Hadoop's FileSystem (classic sessions) and through pyarrow (Spark Connect)."""
    root = str(tmp_path / "warehouse")
    return HadoopFS(spark, root) if request.param == "hadoop" else ArrowFS(root)


def test_only_committed_runs_count(fs):
    processed_log.append(fs, 1, [("table=T/a.jsonl", "T", 2)])
    processed_log.append(fs, 2, [("table=T/b.jsonl", "T", 1)])  # died before its commit
    processed_log.append(fs, 3, [("table=T/c.jsonl", "T", 5)])
    assert processed_log.load(fs, Manifest(3, aborted=[2])) == {"table=T/a.jsonl", "table=T/c.jsonl"}
    assert processed_log.load(fs, Manifest(1)) == {"table=T/a.jsonl"}
    assert processed_log.load(fs, Manifest.empty()) == set()


def test_many_run_files_are_merged_into_one_without_losing_or_reviving_entries(fs):
    runs = processed_log.MERGE_AFTER + 3
    for v in range(1, runs + 1):
        processed_log.append(fs, v, [(f"table=T/{v}.jsonl", "T", v)])
        if v == processed_log.MERGE_AFTER:
            assert not processed_log.merge(fs, Manifest(v))  # not yet many
    committed = Manifest(runs, aborted=[4])
    expected = {f"table=T/{v}.jsonl" for v in range(1, runs + 1) if v != 4}
    assert processed_log.merge(fs, committed)
    names = fs.list_names(processed_log.PROCESSED_DIR)
    assert names == [f"upto-{runs:012d}.jsonl"]
    assert processed_log.load(fs, committed) == expected
    processed_log.append(fs, runs + 1, [("table=T/new.jsonl", "T", 1)])
    assert processed_log.load(fs, Manifest(runs + 1, aborted=[4])) == expected | {"table=T/new.jsonl"}
