"""Runs over a DataFrame of records (a streaming micro-batch) on the driver engine, against Spark.

A micro-batch of the ``spanner_watcher`` source is a DataFrame whose texts the source made
(``partition_reader.staging_row``). A small one is brought to the driver and done by the driver
engine; these tests build such frames from generated changes (several runs, keys of one and of
two columns, NULL key parts, shared commit timestamps, a change read twice, deletes, a new
column, a late change), run them with the driver engine and with Spark alone into two
warehouses, and compare reports and views row for row.
"""

from __future__ import annotations

import random

import pytest

from tests.changelog.engine_inputs import HARD, KEY_COUNT, KEYS, TYPES, report, table_row, views_of
from tests.changelog.support import ts
from watcher.changelog import Changelog, staging_reader
from watcher.changelog.compaction import Compactor
from watcher.changelog.driver import Ineligible
from watcher.changelog.driver.frame_rows import frame_rows
from watcher.changelog.streaming.partition_reader import json_field, staging_row
from watcher.changelog.typed_json import staged_keys_sql
from watcher.model import Change
from watcher.staging import contract


def _records(rng: random.Random, run: int, *, quirks: bool) -> list[tuple]:
    """One micro-batch's records: two tables, a batch per (table, shard), some changes read twice."""
    base = run * 1_000_000
    late = quirks and run > 1 and rng.random() < 0.3
    new_column = quirks and rng.random() < 0.15
    rows = []
    for table in ("Alpha", "Beta"):
        numbers = range(KEY_COUNT) if run == 0 else rng.sample(range(KEY_COUNT + 3), 6)
        by_shard: dict[int, list[tuple[Change, str | None]]] = {0: [], 1: []}
        for n, k in enumerate(numbers):
            key = (k,) if table == "Alpha" else (k, "p" if run == 0 else rng.choice([None, "p", "é"]))
            for version in range(rng.randrange(1, 3)):
                commit = base + (n % 3) * 1000 + version * 10  # keys share commits within and across tables
                if late:
                    commit, late = base - 1_500_000, False
                added, new_column = new_column, False
                mod = rng.choice([None, None, None, "DELETE", "INSERT"]) if quirks else None
                change = Change(table, key, table_row(rng, table, key, added, False), ts(commit), str(k % 2), ts(base + 5000))
                by_shard[k % 2].append((change, mod))
                if quirks and rng.random() < 0.05:  # read again by the other shard's loop: a duplicate
                    by_shard[1 - k % 2].append((change, mod))
        types = {**TYPES[table], "Added": "STRING(MAX)"}
        for shard, changes in by_shard.items():
            batch_id = f"r{run}-{table}-s{shard}"
            for seq, (change, mod) in enumerate(changes):
                rows.append(staging_row(contract.change_record(change, batch_id=batch_id, seq=seq, types=types,
                                                               key_columns=KEYS[table], watcher_id="w", mod_type=mod)))
    return rows


@pytest.mark.parametrize("seed", [1, 2])
def test_micro_batches_on_the_driver_write_what_spark_writes(spark, tmp_path, seed):
    rng = random.Random(seed)
    engines: dict[str, list[str]] = {"driver": [], "spark": []}
    compactor = Compactor()  # as the streaming writer runs them: merges apart
    try:
        for run in range(6):
            frame = spark.createDataFrame(_records(rng, run, quirks=run > 0), staging_reader.read_schema()).cache()
            on = Changelog(spark).warehouse(str(tmp_path / "on")).views(False).compactor(compactor).run_records(frame)
            off = Changelog(spark).warehouse(str(tmp_path / "off")).views(False).driver_runs(False).run_records(frame)
            again = Changelog(spark).warehouse(str(tmp_path / "on")).views(False).run_records(frame)
            frame.unpersist()
            assert off.engine == "spark" and again.changes_written == 0  # a replayed micro-batch writes nothing
            engines[on.engine].append(on.engine_note)
            assert report(on) == report(off), run
        compactor.close(60)
        assert views_of(spark, str(tmp_path / "on")) == views_of(spark, str(tmp_path / "off"))
    finally:
        compactor.close(60)
    assert len(engines["driver"]) >= 2, engines  # both engines were exercised
    assert engines["spark"], engines


def _frame(**changes):
    import pyarrow as pa

    record = {"table": "T", "key_columns": ["Id"], "keys": '["7"]', "values": '{"Id":"7"}', "types": '{"Id":"INT64"}',
              "commit_timestamp": "2024-05-01T00:00:00.000000001Z", "batch_id": "b", "seq": 0, "v": 1,
              "batch": "table=T/b.jsonl", **changes}
    return pa.Table.from_pylist([record])


def test_keys_are_what_the_jobs_sql_renders_from_the_sources_texts(spark):
    rng = random.Random(5)
    kinds = ["INT64", "STRING(MAX)", "BOOL", "FLOAT64", "TIMESTAMP", "BYTES(MAX)", "NUMERIC", "DATE", None]
    cases = []
    for _ in range(1000):
        columns = [rng.choice(HARD[:9]) + str(n) for n in range(rng.randrange(1, 4))]
        keys = [rng.choice([None, rng.choice(HARD), "12", "NaN", "Infinity", "true"]) for _ in columns]
        types = {c: kind for c in columns if (kind := rng.choice(kinds)) is not None}
        cases.append((columns, json_field(keys), json_field(types)))  # the texts as the source makes them
    got = spark.createDataFrame(cases, "key_columns array<string>, keys string, types string").selectExpr(
        f"{staged_keys_sql('key_columns', 'keys', 'types')} AS rendered").collect()
    for (columns, keys, types), row in zip(cases, got, strict=True):
        mine = frame_rows(_frame(key_columns=columns, keys=keys, types=types))[0].keys
        assert mine == row.rendered, (columns, keys, types)


def test_values_and_types_are_taken_as_the_source_wrote_them():
    values, types = '{"Id":"7","N":1e300,"S":"é\\n"}', '{"Id":"INT64","N":"FLOAT64","S":"STRING(MAX)"}'
    row = frame_rows(_frame(values=values, types=types))[0]
    assert (row.json, row.types_json, row.keys) == (values, types, '{"Id":"7"}')


@pytest.mark.parametrize(("changes", "reason"), [
    ({"version_seq": 1}, "history or change-stream"),
    ({"value_capture_type": "NEW_ROW"}, "history or change-stream"),
    ({"v": 3}, "staging format"),
    ({"values": None}, "required field"),
    ({"commit_timestamp": "2024-05-01T00:00:00Z"}, "timestamp"),
    ({"mod_type": "replace"}, "mod_type"),
    ({"key_columns": ["Id", "Part"], "keys": '[7,"p"]'}, "key array"),
    ({"values": [("Id", "7")]}, "other than text"),
])
def test_records_the_engine_cannot_hold_as_spark_would_leave_the_run_to_spark(changes, reason):
    with pytest.raises(Ineligible, match=reason) as raised:
        frame_rows(_frame(**changes))
    assert "table=T/b.jsonl" in str(raised.value)  # names the batch


def test_a_micro_batch_is_weighed_by_its_records_texts_not_their_number(spark, tmp_path, monkeypatch):
    monkeypatch.setattr("watcher.changelog.driver.engine.MAX_BYTES", 20_000)
    types = {"Id": "INT64", "Name": "STRING(MAX)"}

    def frame(name: str, size: int, at: int):
        changes = [Change("Wide", (k,), {"Id": k, "Name": name * size}, ts(at + k), None, ts(5000)) for k in range(10)]
        rows = [staging_row(contract.change_record(c, batch_id=f"{name}-b", seq=n, types=types, key_columns=["Id"],
                                                   watcher_id="w")) for n, c in enumerate(changes)]
        return spark.createDataFrame(rows, staging_reader.read_schema()).cache()

    narrow, wide = frame("n", 10, 1000), frame("w", 3_000, 2000)  # 10 records each: ~3 KB of texts, and ~32 KB
    job = Changelog(spark).warehouse(str(tmp_path / "w")).views(False)
    small = job.run_records(narrow)
    large = job.run_records(wide)
    assert small.engine == "driver" and small.changes_written == 10
    assert large.engine == "spark" and "more than 20000 bytes" in large.engine_note and large.changes_written == 10
