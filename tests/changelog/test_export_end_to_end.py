"""The job and the exports together: job run -> export -> a later run with a late row -> export again.

Staged batches go through the real changelog job into the warehouse's Delta tables; each export
takes the runs its folder does not hold, so the late row (a commit older than one already
exported) reaches the second increment, once, and BigQuery's order per key stays commit order.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from tests.conftest import AND_AUTO
from watcher.changelog import Changelog
from watcher.changelog.exports import rows
from watcher.changelog.exports.bigquery import compare_sequence_numbers
from watcher.changelog.exports.folder_target import FolderExport
from watcher.errors import ChangelogError

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("a late change (the second run's row is older than its key's state)")]

TYPES = {"Id": "INT64", "V": "STRING(MAX)"}


def _delta_warehouse(warehouse: str) -> None:
    try:
        rows.snapshot(warehouse)
    except ChangelogError:
        pytest.skip("the changelog job writes its changelog as a Delta table only from the Delta layout on")


@AND_AUTO
def test_job_export_late_row_export(spark, stager, dirs, tmp_path):
    out = tmp_path / "bq"
    stager.stage("T", [{"Id": 1, "V": "a"}, {"Id": 2, "V": "b"}, {"Id": 1, "V": "c"}], types=TYPES, key_columns=["Id"],
                 commits=[100, 200, 300])
    Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    _delta_warehouse(dirs["warehouse"])
    first = FolderExport(spark, dirs["warehouse"], str(out), "bigquery").run()
    assert first.written is not None and first.written.rows == {"T": 3}

    stager.stage("T", [{"Id": 1, "V": "late"}, {"Id": 3, "V": "d"}], types=TYPES, key_columns=["Id"], commits=[250, 400])
    Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()
    second = FolderExport(spark, dirs["warehouse"], str(out), "bigquery").run()
    assert second.written is not None and second.written.rows == {"T": 2}
    assert FolderExport(spark, dirs["warehouse"], str(out), "bigquery").run().written is None

    lines = [json.loads(line) for f in sorted(Path(out).glob("increment=*/*/*/*/table_name=T/part-*"))
             for line in f.read_text().splitlines()]
    assert sorted(line["V"] for line in lines) == ["a", "b", "c", "d", "late"]
    key1 = sorted((line for line in lines if line["Id"] == "1"), key=functools.cmp_to_key(
        lambda a, b: compare_sequence_numbers(a["_CHANGE_SEQUENCE_NUMBER"], b["_CHANGE_SEQUENCE_NUMBER"])))
    assert [line["V"] for line in key1] == ["a", "late", "c"]
