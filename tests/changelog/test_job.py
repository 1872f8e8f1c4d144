"""The changelog job on staged batches: dedup, idempotence, incrementality, classification."""

from __future__ import annotations

import json
import os

import pytest

from tests.changelog.support import SINGERS_TYPES, singer
from tests.conftest import AND_AUTO
from watcher.changelog import Changelog, write_marker
from watcher.changelog.io.fs import HadoopFS
from watcher.errors import ConfigurationError

KEY = ["SingerId"]


def run(spark, dirs, engine=None, **soft):
    """A run on ``engine``, or by default on the environment's (``each_engine``'s)."""
    job = Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"])
    if engine is not None:
        job.engine(engine)
    for table, column in soft.items():
        job.soft_delete_column(table, column)
    return job.run()


def changes(spark, table="Singers"):
    rows = spark.sql(f"SELECT keys, mod_type, new_values, old_values, commit_timestamp, change_id FROM changelog "
                     f"WHERE table_name = '{table}' ORDER BY commit_timestamp, keys").collect()
    return [(json.loads(r.keys)["SingerId"], r.mod_type, json.loads(r.new_values), json.loads(r.old_values),
             r.commit_timestamp) for r in rows]


def test_batch_staged_twice_yields_each_change_once(spark, stager, dirs, each_engine):
    rows = [singer(1, "a"), singer(2, "b")]
    stager.stage("Singers", rows, types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    stager.stage("Singers", rows, types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])  # crash before checkpoint
    result = run(spark, dirs)
    assert result.batches_read == 2 and result.records_read == 4
    assert result.changes_written == 2 and result.duplicates_dropped == 2
    assert [(k, m) for k, m, *_ in changes(spark)] == [("1", "UPSERT"), ("2", "UPSERT")]


def test_restaged_change_in_a_later_run_is_dropped(spark, stager, dirs, each_engine):
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    run(spark, dirs)
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    second = run(spark, dirs)
    assert second.batches_read == 1 and second.changes_written == 0 and second.duplicates_dropped == 1
    assert len(changes(spark)) == 1


def test_rerun_changes_nothing_and_reads_no_old_batch(spark, stager, dirs, each_engine):
    first_batch = stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    first = run(spark, dirs)
    before = spark.sql("SELECT * FROM changelog").collect()
    again = run(spark, dirs)
    assert not again.committed and again.version == first.version and again.batches_read == 0
    assert first.changelog_visible_at is not None and again.changelog_visible_at is None  # rows visible from then
    assert sorted(map(str, spark.sql("SELECT * FROM changelog").collect())) == sorted(map(str, before))
    # Incremental: a processed batch is never read again (garbage in it now goes unnoticed).
    with open(first_batch, "w") as f:
        f.write("not json at all\n")
    stager.stage("Singers", [singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[20])
    third = run(spark, dirs)
    assert third.batches_read == 1 and third.records_read == 1 and third.quarantined == []
    assert [k for k, *_ in changes(spark)] == ["1", "2"]


def test_first_sightings_are_upserts_until_the_table_is_complete(spark, stager, dirs, each_engine):
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    run(spark, dirs)
    # A backfill made the state complete as of commit 15 (its rows would be staged first).
    write_marker(HadoopFS(spark, dirs["warehouse"]), "Singers", "2024-05-01T10:00:00.000000015Z")
    stager.stage("Singers", [singer(1, "a2"), singer(2, "b"), singer(3, "c")], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[20, 20, 12])
    run(spark, dirs)
    # Key 3 committed at 12, before the snapshot: it may have existed, so no INSERT claim.
    by_key = {}
    for k, m, *_ in changes(spark):
        by_key.setdefault(k, []).append(m)
    assert by_key == {"1": ["UPSERT", "UPDATE"], "2": ["INSERT"], "3": ["UPSERT"]}
    assert spark.sql("SELECT complete_from FROM watermarks").first()[0] == "2024-05-01T10:00:00.000000015Z"


@pytest.mark.driver_declines("a soft-delete column")
@pytest.mark.usefixtures("each_engine")
def test_soft_delete_and_return_of_a_key(spark, stager, dirs):
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    stager.stage("Singers", [singer(1, "a", deleted=True)], types=SINGERS_TYPES, key_columns=KEY, commits=[20])
    run(spark, dirs, Singers="Deleted")
    assert spark.sql("SELECT count(*) FROM current_state").first()[0] == 0
    stager.stage("Singers", [singer(1, "back")], types=SINGERS_TYPES, key_columns=KEY, commits=[30])
    run(spark, dirs, Singers="Deleted")
    got = changes(spark)
    assert [m for _, m, *_ in got] == ["UPSERT", "DELETE", "INSERT"]
    assert got[1][3] == {"SingerId": "1", "Name": "a", "Deleted": False, "LastUpdated": "2024-05-01T00:00:00.000000000Z"}
    assert got[1][2]["Deleted"] is True
    state = spark.sql("SELECT keys, new_values FROM current_state").collect()
    assert [(json.loads(r.keys), json.loads(r.new_values)["Name"]) for r in state] == [({"SingerId": "1"}, "back")]


@pytest.mark.usefixtures("each_engine")
def test_without_soft_delete_config_a_flag_is_just_an_update(spark, stager, dirs):
    stager.stage("Singers", [singer(1, "a"), singer(1, "a", deleted=True)], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[10, 20])
    run(spark, dirs)
    assert [m for _, m, *_ in changes(spark)] == ["UPSERT", "UPDATE"]


@pytest.mark.usefixtures("each_engine")
def test_history_input_carries_its_mod_types(spark, stager, dirs):
    stager.stage("Singers", [singer(1, "a"), singer(1, "b"), singer(1, "b")], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[10, 20, 30], mod_types=["INSERT", "UPDATE", "DELETE"])
    run(spark, dirs)
    got = changes(spark)
    assert [m for _, m, *_ in got] == ["INSERT", "UPDATE", "DELETE"]
    assert got[1][3] == {"Name": "a"}
    assert got[2][3]["Name"] == "b"  # DELETE: the whole previous row
    assert spark.sql("SELECT count(*) FROM current_state").first()[0] == 0


def test_old_values_hold_exactly_the_changed_columns(spark, stager, dirs, each_engine):
    types = {"Id": "INT64", "A": "STRING(MAX)", "B": "FLOAT64", "C": "ARRAY<INT64>"}
    rows = [{"Id": 1, "A": "x", "B": 1.5, "C": [1, 2]}, {"Id": 1, "A": "x", "B": 2.5, "C": [1, 2]},
            {"Id": 1, "A": None, "B": 2.5, "C": [3]}]
    stager.stage("T", rows[:2], types=types, key_columns=["Id"], commits=[10, 20])
    run(spark, dirs)
    stager.stage("T", rows[2:], types=types, key_columns=["Id"], commits=[30])  # previous row from the state
    run(spark, dirs)
    got = spark.sql("SELECT mod_type, old_values FROM changelog ORDER BY commit_timestamp").collect()
    assert [(r.mod_type, json.loads(r.old_values)) for r in got] == [
        ("UPSERT", {}), ("UPDATE", {"B": 1.5}), ("UPDATE", {"A": "x", "C": ["1", "2"]})]




@AND_AUTO
@pytest.mark.driver_declines("a change that continues a transaction group an earlier run wrote")
def test_transaction_groups_span_tables_and_runs(spark, stager, dirs, each_engine):
    other = {"Id": "INT64", "V": "STRING(MAX)"}
    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 10])
    stager.stage("Albums", [{"Id": 5, "V": "x"}], types=other, key_columns=["Id"], commits=[10])
    stager.stage("Albums", [{"Id": 6, "V": "y"}], types=other, key_columns=["Id"], commits=[20])
    run(spark, dirs)
    stager.stage("Tracks", [{"Id": 7, "V": "z"}], types=other, key_columns=["Id"], commits=[10])  # polled later
    run(spark, dirs)
    rows = spark.sql("SELECT table_name, transaction_group, record_sequence, number_of_records_in_group, run_version "
                     "FROM changelog ORDER BY commit_timestamp, record_sequence").collect()
    group = [r for r in rows if r.transaction_group == rows[0].transaction_group]
    assert [(r.table_name, r.record_sequence) for r in group] == [("Albums", 0), ("Singers", 1), ("Singers", 2),
                                                                    ("Tracks", 3)]
    assert [r.number_of_records_in_group for r in group] == [3, 3, 3, 4]
    assert rows[-1].number_of_records_in_group == 1 and rows[-1].record_sequence == 0
    assert len({r.transaction_group for r in rows}) == 2


@AND_AUTO
@pytest.mark.driver_declines("a change that continues a transaction group an earlier run wrote")
def test_a_group_continues_after_a_run_that_only_had_newer_rows(spark, stager, dirs, each_engine):
    # The second run's rows are all newer than the first's: it does not read the changelog for its
    # groups, yet it must leave the third run (a late poll of the same commit) able to continue them.
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    run(spark, dirs)
    stager.stage("Singers", [singer(2, "b"), singer(3, "c")], types=SINGERS_TYPES, key_columns=KEY, commits=[20, 20])
    run(spark, dirs)
    stager.stage("Albums", [{"Id": 7, "V": "z"}], types={"Id": "INT64", "V": "STRING(MAX)"}, key_columns=["Id"],
                 commits=[20])
    run(spark, dirs)
    rows = spark.sql("SELECT table_name, keys, record_sequence, number_of_records_in_group FROM changelog "
                     "WHERE commit_timestamp > (SELECT min(commit_timestamp) FROM changelog) "
                     "ORDER BY record_sequence").collect()
    assert [(r.table_name, r.record_sequence, r.number_of_records_in_group) for r in rows] == [
        ("Singers", 0, 2), ("Singers", 1, 2), ("Albums", 2, 3)]


@AND_AUTO
@pytest.mark.driver_declines("a change that continues a transaction group an earlier run wrote")
def test_changes_alone_in_their_groups_and_a_later_poll_of_one(spark, stager, dirs, each_engine):
    # A run whose changes each have a commit timestamp of their own (no numbers to join back on
    # Spark), then a run that brings one more row of one of those commits and one alone.
    other = {"Id": "INT64", "V": "STRING(MAX)"}
    stager.stage("Singers", [singer(k, "a") for k in range(4)], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[10, 20, 30, 40])
    stager.stage("Albums", [{"Id": 1, "V": "x"}], types=other, key_columns=["Id"], commits=[50])
    first = run(spark, dirs)
    numbers = "SELECT table_name, keys, record_sequence, number_of_records_in_group FROM changelog"
    assert first.changes_written == 5
    assert {(r.record_sequence, r.number_of_records_in_group) for r in spark.sql(numbers).collect()} == {(0, 1)}
    stager.stage("Albums", [{"Id": 2, "V": "y"}, {"Id": 3, "V": "z"}], types=other, key_columns=["Id"],
                 commits=[20, 60])
    run(spark, dirs)
    got = {(r.table_name, int(*json.loads(r.keys).values()), r.record_sequence, r.number_of_records_in_group)
           for r in spark.sql(numbers).collect()}
    # The row written before keeps the count it was written with; the late one continues its group.
    assert got == {("Singers", 0, 0, 1), ("Singers", 1, 0, 1), ("Singers", 2, 0, 1), ("Singers", 3, 0, 1),
                   ("Albums", 1, 0, 1), ("Albums", 2, 1, 2), ("Albums", 3, 0, 1)}


def test_runs_append_by_table_and_day_and_merge_only_the_changed_keys_into_the_state(spark, stager, dirs, each_engine):
    day = 86_400 * 10**9
    other = {"Id": "INT64", "V": "STRING(MAX)"}
    for n in range(3):  # several batches per table and day: every task sees every table otherwise
        stager.stage("Singers", [singer(10 * n + k, "a") for k in range(5)], types=SINGERS_TYPES, key_columns=KEY,
                     commits=[k * day + n for k in range(5)])
        stager.stage("Albums", [{"Id": 10 * n + k, "V": "x"} for k in range(5)], types=other, key_columns=["Id"],
                     commits=[k * day + n for k in range(5)])
    first = run(spark, dirs)
    stager.stage("Singers", [singer(k, "b") for k in (0, 1, 100, 101)], types=SINGERS_TYPES, key_columns=KEY,
                 commits=[k * day + 100 for k in range(4)])  # two updates, two new keys
    second = run(spark, dirs)
    assert second.mod_types == {"UPDATE": 2, "UPSERT": 2}
    assert {first.engine, second.engine} == {each_engine}
    changelog = os.path.join(dirs["warehouse"], "changelog")
    folders = [os.path.join(changelog, t, d) for t in os.listdir(changelog) if t.startswith("table_name=")
               for d in os.listdir(os.path.join(changelog, t)) if d.startswith("commit_date=")]
    assert len(folders) == 10
    state = os.path.join(dirs["warehouse"], "current_state")
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(state)
            .groupBy("_change_type").count().collect())
    # the first run inserts 30 keys; the second merges its 4 keys only: 2 updated, 2 inserted
    assert {r["_change_type"]: r["count"] for r in feed} == {"insert": 32, "update_preimage": 2, "update_postimage": 2}


@pytest.mark.driver_declines("a batch the job sets aside")
@pytest.mark.usefixtures("each_engine")
def test_corrupt_and_truncated_batches_are_quarantined_by_name(spark, stager, dirs):
    good = stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    cut = stager.stage("Singers", [singer(2, "b"), singer(3, "c")], types=SINGERS_TYPES, key_columns=KEY, commits=[20, 30])
    with open(cut, "rb+") as f:  # a crash mid-write (without the sink's rename) leaves half a line
        f.truncate(os.path.getsize(cut) - 25)
    empty = stager.stage("Singers", [singer(4, "d")], types=SINGERS_TYPES, key_columns=KEY, commits=[40])
    open(empty, "w").close()
    result = run(spark, dirs)
    names = {q.batch.split("/")[-1]: q.reason for q in result.quarantined}
    assert set(names) == {os.path.basename(cut), os.path.basename(empty)}
    assert "1 of 2 lines" in names[os.path.basename(cut)] and "empty" in names[os.path.basename(empty)]
    assert result.changes_written == 1 and os.path.exists(good) and not os.path.exists(cut)
    report = os.path.join(dirs["warehouse"], "_quarantine", "table=Singers", os.path.basename(cut) + ".report.json")
    assert json.load(open(report))["batch"].endswith(os.path.basename(cut))
    assert os.path.exists(report[: -len(".report.json")])
    assert [k for k, *_ in changes(spark)] == ["1"]


@pytest.mark.driver_declines("a batch the job sets aside")
@pytest.mark.usefixtures("each_engine")
def test_batches_with_lines_repeated_or_of_another_table_are_quarantined(spark, stager, dirs):
    three = [singer(1, "a"), singer(2, "b"), singer(3, "c")]
    repeated = stager.stage("Singers", three, types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20, 30])
    lines = open(repeated).read().splitlines()
    with open(repeated, "w") as f:  # the last line lost, the second written twice: still three lines
        f.write("\n".join([lines[0], lines[1], lines[1]]) + "\n")
    mixed = stager.stage("Singers", [singer(4, "d"), singer(5, "e")], types=SINGERS_TYPES, key_columns=KEY, commits=[40, 50])
    lines = open(mixed).read().splitlines()
    with open(mixed, "w") as f:
        f.write("\n".join([lines[0], lines[1].replace('"table":"Singers"', '"table":"Albums"')]) + "\n")
    good = stager.stage("Singers", [singer(6, "f")], types=SINGERS_TYPES, key_columns=KEY, commits=[60])
    result = run(spark, dirs)
    reasons = {q.batch.split("/")[-1]: q.reason for q in result.quarantined}
    assert "lines lost or repeated" in reasons[os.path.basename(repeated)]
    assert "several tables (Albums, Singers)" in reasons[os.path.basename(mixed)]
    assert result.changes_written == 1 and os.path.exists(good)
    assert [k for k, *_ in changes(spark)] == ["6"]


@pytest.mark.driver_declines("a batch the job sets aside")
@pytest.mark.usefixtures("each_engine")
def test_a_line_that_is_not_utf8_sets_its_batch_aside_and_blank_lines_are_not_records(spark, stager, dirs):
    damaged = stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10])
    raw = open(damaged, "rb").read()
    assert raw.count(b'"Name":"a"') == 1
    with open(damaged, "wb") as f:  # the name written in Latin-1: read as UTF-8 it would change silently
        f.write(raw.replace(b'"Name":"a"', b'"Name":"\xe9"'))
    blank = stager.stage("Singers", [singer(2, "b"), singer(3, "c")], types=SINGERS_TYPES, key_columns=KEY,
                         commits=[20, 30])
    lines = open(blank).read().split("\n")
    with open(blank, "w") as f:  # blank lines hold no record: the two records are whole, seq 0 and 1
        f.write(lines[0] + "\n\n  \n" + lines[1] + "\n\n")
    result = run(spark, dirs)
    reasons = {q.batch.split("/")[-1]: q.reason for q in result.quarantined}
    assert list(reasons) == [os.path.basename(damaged)]
    assert "1 of 1 lines are not valid staging records" in reasons[os.path.basename(damaged)]
    assert [(k, v["Name"]) for k, _, v, *_ in changes(spark)] == [("2", "b"), ("3", "c")]


def test_watermark_is_the_slowest_shard(spark, stager, dirs, each_engine):
    stager.stage("Singers", [singer(1, "a")], types=SINGERS_TYPES, key_columns=KEY, commits=[10], shard=1, read_offset=100)
    stager.stage("Singers", [singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[20], shard=2, read_offset=50)
    result = run(spark, dirs)
    assert result.watermarks == {"Singers": "2024-05-01T10:00:00.000000050Z"}
    stager.stage("Singers", [singer(2, "c")], types=SINGERS_TYPES, key_columns=KEY, commits=[60], shard=2, read_offset=200)
    assert run(spark, dirs).watermarks["Singers"] == "2024-05-01T10:00:00.000000100Z"


def test_arguments_are_checked_on_entry(spark, dirs):
    with pytest.raises(ConfigurationError, match="staging is not set"):
        Changelog(spark).warehouse(dirs["warehouse"]).run()
    with pytest.raises(ConfigurationError, match="column"):
        Changelog(spark).soft_delete_column("Singers", "")
    with pytest.raises(ConfigurationError, match="spark must be a SparkSession"):
        Changelog(None)
    with pytest.raises(ConfigurationError, match="source: instance must be a non-empty name"):
        Changelog(spark).source("p", "", "d")


def _stage_partial_update(dirs, batch_id, singer_id, name, commit):
    """A history table's NEW_VALUES update of Name only (a partial row) of one singer."""
    from tests.changelog.support import ts
    from watcher.staging import contract

    record = contract.record(batch_id=batch_id, seq=0, table="Singers", key_columns=KEY, keys=[str(singer_id)],
                             commit_timestamp=ts(commit), read_timestamp=ts(commit + 1_000),
                             values={"SingerId": str(singer_id), "Name": name},
                             types={"SingerId": "INT64", "Name": "STRING(MAX)"},
                             mod_type="UPDATE", version_seq=0, value_capture_type="NEW_VALUES")
    path = os.path.join(dirs["staging"], contract.staged_name("Singers", batch_id))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(contract.batch_text([record]))


@AND_AUTO
@pytest.mark.driver_declines("history-table (partial) records")
@pytest.mark.usefixtures("each_engine")
def test_partial_rows_are_filled_in_the_run_that_first_sees_them_and_after(spark, stager, dirs):
    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    run(spark, dirs)
    _stage_partial_update(dirs, "p1", 1, "a2", 30)
    second = run(spark, dirs)  # the first partial rows of the table: filled all the same
    assert second.changes_written == 1
    _stage_partial_update(dirs, "p2", 2, "b2", 40)
    run(spark, dirs)
    rows = {k: (m, new, old) for k, m, new, old, _ in changes(spark) if m == "UPDATE"}
    whole = {"Deleted": False, "LastUpdated": "2024-05-01T00:00:00.000000000Z"}
    assert rows == {"1": ("UPDATE", {"SingerId": "1", "Name": "a2", **whole}, {"Name": "a"}),
                    "2": ("UPDATE", {"SingerId": "2", "Name": "b2", **whole}, {"Name": "b"})}


@pytest.mark.parametrize("failing", ["changelog", "current_state"])
def test_a_failed_write_leaves_the_run_open_and_the_next_run_finishes_it_once(spark, stager, dirs, monkeypatch, failing):
    """A write failing after its commit (the store went away right after) fails the run with that
    error and leaves it open; the next run finishes it (the tables it has not written) and every
    change is written once. (A SIGKILL at every step: test_job_crashes.py.)"""
    from watcher.changelog.engines.spark.engine import SparkRun
    from watcher.changelog.tables.ledger import Ledger

    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    first = run(spark, dirs, "spark")
    stager.stage("Singers", [singer(1, "a2"), singer(3, "c")], types=SINGERS_TYPES, key_columns=KEY, commits=[30, 40])
    written = SparkRun.write

    def fails_after_writing(self, table):
        written(self, table)
        if table == failing:
            raise OSError(f"disk full writing the {failing} (test)")

    monkeypatch.setattr(SparkRun, "write", fails_after_writing)
    with pytest.raises(OSError, match=f"disk full writing the {failing}"):
        run(spark, dirs, "spark")
    monkeypatch.setattr(SparkRun, "write", written)
    left = Ledger(dirs["warehouse"]).open_run()
    assert left is not None and left.version == first.version + 1 and failing in left.done
    again = run(spark, dirs, "spark")
    assert again.committed and again.version == first.version + 1 and Ledger(dirs["warehouse"]).open_run() is None
    assert [(k, m) for k, m, *_ in changes(spark)] == [("1", "UPSERT"), ("2", "UPSERT"), ("1", "UPDATE"), ("3", "UPSERT")]
    state = spark.sql("SELECT keys, vals FROM current_state").collect()
    assert sorted((json.loads(r.keys)["SingerId"], r.vals["Name"]) for r in state) == [("1", "a2"), ("2", "b"), ("3", "c")]


def test_a_spark_run_frees_the_window_it_kept(spark, stager, dirs):
    persisted = spark.sparkContext._jsc.getPersistentRDDs()
    before = set(persisted.keys())
    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    assert run(spark, dirs, "spark").engine == "spark"
    stager.stage("Singers", [singer(2, "b2")], types=SINGERS_TYPES, key_columns=KEY, commits=[30])
    assert run(spark, dirs, "spark").changes_written == 1
    persisted = spark.sparkContext._jsc.getPersistentRDDs()
    left = {k for k in persisted.keys() if k not in before}
    # Delta keeps each table's log state cached itself (its snapshot cache); the run's own frames are freed
    assert all(persisted.get(k).name().startswith("Delta Table State") for k in left), left


def _state_feed(spark, warehouse):
    """The state's change data feed from its creation, without the commits' times."""
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
            .load(os.path.join(warehouse, "current_state")).drop("_commit_timestamp"))
    return sorted(repr(r.asDict()) for r in feed.collect())


def test_a_first_run_appends_the_state_and_its_change_feed_is_a_merges(spark, stager, dirs, tmp_path, monkeypatch):
    """With no state of its tables yet a run appends the state (no MERGE): the rows and the change
    data feed (inserts) are those of the MERGE it would have run; a later run MERGEs."""
    from delta.tables import DeltaTable

    from watcher.changelog.tables import frames

    rows = [singer(1, "a"), singer(2, "b"), singer(1, "a2"), singer(3, "c")]
    stager.stage("Singers", rows, types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20, 30, 40])
    stager.stage("Singers", rows[:2], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])  # staged twice
    stager.stage("Albums", [{"Id": 1, "V": "x"}], types={"Id": "INT64", "V": "STRING(MAX)"}, key_columns=["Id"],
                 commits=[15])
    appended = run(spark, dirs, "spark")
    merged_dirs = {**dirs, "warehouse": str(tmp_path / "merged")}
    with monkeypatch.context() as patch:  # as if the state held rows of the tables: the MERGE
        patch.setattr(frames, "state_tables", lambda *a, **k: frozenset({"Singers", "Albums"}))
        merged = run(spark, merged_dirs, "spark")
    assert appended.engine == merged.engine == "spark"
    operations = [DeltaTable.forPath(spark, os.path.join(d["warehouse"], "current_state")).history(1).first().operation
                  for d in (dirs, merged_dirs)]
    assert operations == ["WRITE", "MERGE"]
    assert _state_feed(spark, dirs["warehouse"]) == _state_feed(spark, merged_dirs["warehouse"])
    assert {r["_change_type"] for r in spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 0).load(os.path.join(dirs["warehouse"], "current_state")).collect()} == {"insert"}
    stager.stage("Singers", [singer(3, "c2")], types=SINGERS_TYPES, key_columns=KEY, commits=[50])
    run(spark, dirs, "spark")
    table = DeltaTable.forPath(spark, os.path.join(dirs["warehouse"], "current_state"))
    assert table.history(1).first().operation == "MERGE" and table.toDF().count() == 4


def test_changelog_files_keep_statistics_of_the_columns_readers_skip_by(spark, stager, dirs, each_engine):
    """Spark's and delta-rs' writes keep min/max of the changelog's stats columns only, run_version
    and commit_timestamp among them (an export and the group check read those from the log)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from watcher.changelog.tables.layout import CHANGELOG_STATS_COLUMNS

    stager.stage("Singers", [singer(1, "a"), singer(2, "b")], types=SINGERS_TYPES, key_columns=KEY, commits=[10, 20])
    assert run(spark, dirs).engine == each_engine
    actions = pa.table(DeltaTable(os.path.join(dirs["warehouse"], "changelog")).get_add_actions(flatten=True))
    kept = {name.split(".", 1)[1] for name in actions.column_names if name.startswith("max.")}
    assert kept == set(CHANGELOG_STATS_COLUMNS) and actions.num_rows
    assert actions.column("max.run_version").to_pylist() == [1] * actions.num_rows
