"""Every capture mode into the changelog: history tables and change sets, staged like polled tables.

Writes go through the official client (mutations and DML in read/write transactions); the
watchers stage through the one StagingSink, via the API or `spanner-watcher watch`; the
Spark changelog job turns the staging folder into the changelog and the current state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.cloud.spanner_v1 import param_types

from tests.cli_support import watch_config
from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import run_with_history as write
from tests.watcher.core_support import wait_until
from watcher.capture.helper_tables.change_sets import (
    change_set_column_ddl,
    change_sets_table_ddl,
    run_in_change_set_transaction,
)
from watcher.capture.helper_tables.history import HistoryTable, HistoryWatcher
from watcher.changelog import Changelog
from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
from watcher.cli.main import main
from watcher.errors import ConfigurationError
from watcher.model import MIN_TIMESTAMP
from watcher.staging.sink import StagingSink

DOCUMENTS = ("CREATE TABLE Documents (UserId INT64 NOT NULL, DocumentId STRING(36) NOT NULL, Contents STRING(MAX), "
             "Score INT64, Note STRING(MAX)) PRIMARY KEY (UserId, DocumentId)")
COLUMNS = ["UserId", "DocumentId", "Contents", "Score", "Note"]
ORDERS = ["CREATE TABLE Orders (OrderId INT64 NOT NULL, Total INT64) PRIMARY KEY (OrderId)",
          change_sets_table_ddl(), *change_set_column_ddl("Orders")]


@pytest.fixture
def docs(make_database):
    db = make_database([DOCUMENTS, *ORDERS])
    history = HistoryTable.discover(db, "Documents")
    history.create(db)
    return db, history


def stage_history(db, staging, expected, checkpoints=None) -> StagingSink:
    sink = StagingSink(staging, fsync=False)
    watcher = HistoryWatcher(db, "Documents", poll_interval=0.02, initial_timestamp=MIN_TIMESTAMP,
                             checkpoints=checkpoints or InMemoryCommitTimestampRepository())
    sink.attach(watcher)  # the one sink, as for polled tables
    with watcher:
        wait_until(lambda: sink.records_written >= expected, timeout=30)
    assert watcher.failure is None
    return sink


def changelog(spark, dirs):
    return Changelog(spark).staging(dirs["staging"]).warehouse(dirs["warehouse"]).run()


def doc_rows(spark):
    """Changelog rows of Documents per key, in commit and record order: (mod_type, new values, old values)."""
    rows = spark.sql("SELECT keys, mod_type, new_values, old_values, commit_timestamp FROM changelog "
                     "WHERE table_name = 'Documents' ORDER BY commit_timestamp, record_sequence").collect()
    out: dict[tuple[str, str], list] = {}
    for r in rows:
        keys = json.loads(r.keys)
        out.setdefault((keys["UserId"], keys["DocumentId"]), []).append(
            (r.mod_type, json.loads(r.new_values), json.loads(r.old_values), r.commit_timestamp))
    return out


def state(spark, table="Documents"):
    return {tuple(json.loads(r.keys).values()): json.loads(r.new_values)
            for r in spark.sql(f"SELECT keys, new_values FROM current_state WHERE table_name = '{table}'").collect()}


@pytest.mark.driver_declines("history-table records")
@pytest.mark.usefixtures("each_engine")
def test_history_versions_partial_rows_dml_and_deletes_reach_the_changelog(spark, docs, dirs):
    db, history = docs

    def three_versions(h):  # one transaction, one commit timestamp, three versions of one key
        h.insert(COLUMNS, [[1, "a", "v1", 1, "n1"]])
        h.insert_or_update(["UserId", "DocumentId", "Contents"], [[1, "a", "v2"]])
        h.update(["UserId", "DocumentId", "Score"], [[1, "a", 2]])

    t1 = write(db, history, three_versions)
    t2 = write(db, history, lambda h: h.update(["UserId", "DocumentId", "Note"], [[1, "a", "n2"]]))

    def dml(h):
        assert h.execute_update("UPDATE Documents SET Score = Score + 10 WHERE UserId = 1", keys=[(1, "a"), (1, "zz")]) == 1
        h.execute_update("INSERT INTO Documents (UserId, DocumentId, Contents) VALUES (2, 'c', 'by dml')", keys=[(2, "c")])

    t3 = write(db, history, dml)
    stage_history(db, dirs["staging"], 6)
    first = changelog(spark, dirs)
    assert first.changes_written == 6 and first.quarantined == []
    a = doc_rows(spark)[("1", "a")]
    full = {"UserId": "1", "DocumentId": "a"}
    assert [(m, new, old) for m, new, old, _ in a] == [
        ("INSERT", {**full, "Contents": "v1", "Score": "1", "Note": "n1"}, {}),
        ("UPDATE", {**full, "Contents": "v2", "Score": "1", "Note": "n1"}, {"Contents": "v1"}),  # partial, filled
        ("UPDATE", {**full, "Contents": "v2", "Score": "2", "Note": "n1"}, {"Score": "1"}),
        ("UPDATE", {**full, "Contents": "v2", "Score": "2", "Note": "n2"}, {"Note": "n1"}),
        ("UPDATE", {**full, "Contents": "v2", "Score": "12", "Note": "n2"}, {"Score": "2"}),  # DML, whole row read back
    ]
    commits = [ts for *_, ts in a]
    assert commits[0] == commits[1] == commits[2] < commits[3] < commits[4]  # three versions at one commit timestamp
    assert len({t1, t2, t3}) == 3
    assert state(spark) == {("1", "a"): {**full, "Contents": "v2", "Score": "12", "Note": "n2"},
                            ("2", "c"): {"UserId": "2", "DocumentId": "c", "Contents": "by dml", "Score": None,
                                         "Note": None}}

    # A partial update after the job ran is filled from the current state; deletes (mutation and DML) follow.
    def finish(h):
        h.update(["UserId", "DocumentId", "Contents"], [[1, "a", "v3"]])
        h.delete([(1, "a")])
        h.execute_update("DELETE FROM Documents WHERE UserId = 2", keys=[(2, "c")])

    write(db, history, finish)
    replay = InMemoryCommitTimestampRepository()  # a watcher that lost its place stages everything again
    stage_history(db, dirs["staging"], 9, checkpoints=replay)
    second = changelog(spark, dirs)
    assert second.changes_written == 3, second  # the 6 staged again are known: not counted twice
    a = doc_rows(spark)[("1", "a")]
    assert [(m, new.get("Contents"), old) for m, new, old, _ in a[5:]] == [
        ("UPDATE", "v3", {"Contents": "v2"}),
        ("DELETE", None, {**full, "Contents": "v3", "Score": "12", "Note": "n2"}),
    ]
    assert [m for m, *_ in doc_rows(spark)[("2", "c")]] == ["INSERT", "DELETE"]
    assert state(spark) == {}
    assert changelog(spark, dirs).changes_written == 0


def test_dml_history_needs_every_changed_key(docs):
    db, history = docs
    write(db, history, lambda h: h.insert(COLUMNS, [[1, "a", "x", 1, None], [1, "b", "y", 2, None]]))
    with pytest.raises(ConfigurationError, match="changed 2 row"):
        write(db, history, lambda h: h.execute_update("UPDATE Documents SET Score = 0 WHERE UserId = 1", keys=[(1, "a")]))
    with db.snapshot() as snap:  # the transaction was rolled back: nothing unrecorded was written
        assert sorted(snap.execute_sql("SELECT Score FROM Documents")) == [[1], [2]]


@pytest.mark.driver_declines("history-table records")
@pytest.mark.usefixtures("each_engine")
def test_watch_command_stages_history_and_change_sets_into_one_changelog(spark, docs, dirs, tmp_path):
    db, history = docs
    write(db, history, lambda h: h.insert_or_update(COLUMNS, [[7, "d", "one", 1, None]]))
    write(db, history, lambda h: (h.update(["UserId", "DocumentId", "Score"], [[7, "d", 5]]),
                                  h.update(["UserId", "DocumentId", "Contents"], [[7, "d", "two"]])))

    def order(txn, change_set_id, order_id, total):
        txn.insert_or_update("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[order_id, total, change_set_id]])

    run_in_change_set_transaction(db, order, 1, 10)
    run_in_change_set_transaction(db, order, 2, 20)

    def dml_order(txn, change_set_id):
        txn.execute_update("UPDATE Orders SET Total = Total + 1, CHANGE_SET_ID = @cs WHERE OrderId = 1",
                           params={"cs": change_set_id}, param_types={"cs": param_types.STRING})

    run_in_change_set_transaction(db, dml_order)
    config = watch_config(tmp_path / "watcher.toml", """
        [[history]]
        table = "Documents"
        [[change_sets]]
        tables = ["Orders"]
    """, poll_interval=0.05, staging_dir=dirs["staging"])
    names = ["--project", PROJECT, "--instance", INSTANCE, "--database", db.database_id]
    assert main(["watch", "--config", str(config), "--duration", "4", "--quiet", *names]) == 0
    staged = sorted(p.parent.name for p in Path(dirs["staging"]).glob("table=*/*.jsonl"))
    assert set(staged) == {"table=Documents", "table=Orders"}
    result = changelog(spark, dirs)
    # Change sets see rows, not a log: order 1's two change sets coalesce into its latest version.
    assert result.quarantined == [] and result.changes_written == 5
    d = doc_rows(spark)[("7", "d")]
    assert [(m, new["Contents"], new["Score"]) for m, new, _, _ in d] == [
        ("INSERT", "one", "1"), ("UPDATE", "one", "5"), ("UPDATE", "two", "5")]
    orders_state = state(spark, "Orders")
    assert {k: (v["OrderId"], v["Total"]) for k, v in orders_state.items()} == {("1",): ("1", "11"), ("2",): ("2", "20")}
    orders = spark.sql("SELECT keys, mod_type FROM changelog WHERE table_name = 'Orders' ORDER BY commit_timestamp").collect()
    assert [(json.loads(r.keys)["OrderId"], r.mod_type) for r in orders] == [("2", "UPSERT"), ("1", "UPSERT")]


def test_watch_configuration_errors_name_the_file_and_key(docs, tmp_path, capsys):
    db, _ = docs
    names = ["--project", PROJECT, "--instance", INSTANCE, "--database", db.database_id]
    cases = {
        '[[history]]\ntable = "Nope"': "history[0].table",
        '[[history]]\ntable = "Documents"\nhistory_table = "NoHistory"': "history[0].history_table",
        '[[history]]\ntable = "Documents"\n[tables]\ninclude = ["Documents"]': "history[0].table",
        '[[change_sets]]\ntables = ["Documents"]': "change_sets[0].tables",
    }
    for i, (text, key) in enumerate(cases.items()):
        path = tmp_path / f"bad{i}.toml"
        path.write_text(f'[watch]\nstaging_dir = "s{i}"\n' + text)
        assert main(["watch", "--config", str(path), "--duration", "1", *names]) == 2, text
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"bad{i}.toml: {key}:" in err[0], (text, err)
        assert not (tmp_path / f"s{i}").exists()
