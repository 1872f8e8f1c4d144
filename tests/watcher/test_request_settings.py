"""RequestSettings reach Spanner: the priority of polls, the request tag of every statement, the
transaction tag of checkpoint writes, the session's database role, Data Boost on snapshot reads.

What arrived is read back through the official client from SPANNER_SYS (the statistics tables
Spanner has, and the local server's request log for what Spanner shows nowhere)."""

from __future__ import annotations

import pytest
from google.cloud import spanner

from tests.conftest import emulator_lacks
from tests.watcher.core_support import T_DDL, Collector, insert_t, run_with_history, wait_until
from watcher import (
    MIN_TIMESTAMP,
    ChangeSetWatcher,
    ChangeStreamWatcher,
    DatabaseWatcher,
    HistoryTable,
    HistoryWatcher,
    RequestSettings,
    RetryPolicy,
    SpannerCommitTimestampRepository,
    TableWatcher,
    change_set_batch,
)
from watcher.capture.helper_tables.change_sets import change_set_column_ddl, change_sets_table_ddl
from watcher.checkpoints.java_table import DEFAULT_TABLE, create_table_ddl
from watcher.errors import ConfigurationError
from watcher.model import Checkpoint, TableId
from watcher.request_settings import DEFAULT_REQUEST_TAG, DEFAULT_TRANSACTION_TAG

FAST = RetryPolicy(initial=0.001, maximum=0.01)
needs_request_log = emulator_lacks("SPANNER_SYS statistics and the local request log")


def _query(db, sql, **params):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params or None)]


def _requests(db, where: str, **params):
    """(METHOD, REQUEST_TAG, TRANSACTION_TAG, PRIORITY, DATABASE_ROLE, TEXT) of the logged requests matching
    ``where``, leaving out the test's own queries of SPANNER_SYS."""
    return [tuple(r) for r in _query(db, "SELECT METHOD, REQUEST_TAG, TRANSACTION_TAG, PRIORITY, DATABASE_ROLE, TEXT "
                                         f"FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE ({where}) "
                                         "AND IFNULL(TEXT, '') NOT LIKE '%SPANNER_SYS%' ORDER BY REQUEST_TIME", **params)]


def _polls(db):
    return _requests(db, "TEXT LIKE '%prevCommitTimestamp%'")


@pytest.fixture
def t_db(make_database):
    return make_database([T_DDL])


def _watch_until_delivered(w, db, rows: int = 3):
    got = Collector()
    w.add_callback(got)
    with w:
        insert_t(db, range(rows))
        got.wait_for(rows)
        wait_until(lambda: w.stats()["polls"] >= 3)
    return got


# --- settings ----------------------------------------------------------------------------------------

def test_settings_are_checked_where_they_are_given():
    with pytest.raises(ConfigurationError, match="priority 'urgent'"):
        RequestSettings(priority="urgent")
    with pytest.raises(ConfigurationError, match="transaction_tag is 51 characters"):
        RequestSettings(transaction_tag="t" * 51)
    with pytest.raises(ConfigurationError, match="data_boost"):
        RequestSettings(data_boost="yes")  # type: ignore[arg-type]


def test_the_client_takes_the_options_as_given(t_db):
    # The dict form of request_options is what the client builds its RequestOptions from, on any server.
    settings = RequestSettings(priority="low", request_tag="probe")
    with t_db.snapshot() as snap:
        assert list(snap.execute_sql("SELECT 1", request_options=settings.request_options())) == [[1]]
    with t_db.batch(request_options=settings.commit_options()) as batch:
        batch.insert("T", ["Id", "Name"], [[1, "x"]])
    assert _query(t_db, "SELECT Id, Name FROM T") == [[1, "x"]]


# --- polling ------------------------------------------------------------------------------------------

@needs_request_log
def test_polls_carry_the_priority_and_tag_and_checkpoint_writes_the_transaction_tag(t_db):
    settings = RequestSettings(priority="LOW", request_tag="t-poll", transaction_tag="t-checkpoint")
    w = TableWatcher(t_db, "T", poll_interval=0.005, retry_policy=FAST, request_settings=settings)
    _watch_until_delivered(w, t_db)
    polls = _polls(t_db)
    assert len(polls) >= 3
    assert {(method, tag, priority) for method, tag, _, priority, _, _ in polls} == {("ExecuteSql", "t-poll", "LOW")}
    # Schema discovery and checkpoint reads carry the tag but not the priority: they are not polls.
    others = _requests(t_db, "REQUEST_TAG = 't-poll' AND TEXT NOT LIKE '%prevCommitTimestamp%'")
    assert others and {priority for *_, priority, _, _ in others} == {None}
    assert any("INFORMATION_SCHEMA" in text for *_, text in others)
    assert any(method == "Read" for method, *_ in others)  # the checkpoint read by key
    commits = _requests(t_db, "METHOD = 'Commit' AND TRANSACTION_TAG = 't-checkpoint'")
    assert commits and {text for *_, text in commits} == {"LAST_SEEN_COMMIT_TIMESTAMPS"}
    stats = _query(t_db, "SELECT TRANSACTION_TAG, COMMIT_ATTEMPT_COUNT FROM SPANNER_SYS.TXN_STATS_TOP_MINUTE "
                         "WHERE TRANSACTION_TAG = 't-checkpoint'")
    assert sum(count for _, count in stats) == len(commits)
    poll_stats = _query(t_db, "SELECT SUM(EXECUTION_COUNT) FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE "
                              "WHERE REQUEST_TAG = 't-poll'")
    assert poll_stats[0][0] >= len(polls)


@needs_request_log
def test_without_settings_requests_carry_the_default_tags_and_no_priority(t_db):
    w = TableWatcher(t_db, "T", poll_interval=0.005, retry_policy=FAST)
    _watch_until_delivered(w, t_db)
    polls = _polls(t_db)
    assert polls and {(tag, priority) for _, tag, _, priority, _, _ in polls} == {(DEFAULT_REQUEST_TAG, None)}
    commits = _requests(t_db, "METHOD = 'Commit' AND TEXT = 'LAST_SEEN_COMMIT_TIMESTAMPS'")
    assert commits and {txn_tag for _, _, txn_tag, *_ in commits} == {DEFAULT_TRANSACTION_TAG}


@needs_request_log
def test_a_database_watcher_gives_its_settings_to_its_table_watchers(make_database):
    db = make_database([T_DDL, T_DDL.replace("TABLE T ", "TABLE U ")])
    settings = RequestSettings(priority="MEDIUM", request_tag="db-watch")
    got = Collector()
    w = DatabaseWatcher(db, poll_interval=0.005, retry_policy=FAST, request_settings=settings)
    w.add_callback(got)
    with w:
        insert_t(db, range(2))
        got.wait_for(2)
        wait_until(lambda: len(_polls(db)) >= 4)
    polls = _polls(db)
    assert {(tag, priority) for _, tag, _, priority, _, _ in polls} == {("db-watch", "MEDIUM")}
    assert any("`U`" in text or " U " in text for *_, text in polls)  # both tables' watchers polled
    discovery = _requests(db, "TEXT LIKE '%allow_commit_timestamp%' AND TEXT NOT LIKE '%@table%'")
    assert discovery and {tag for _, tag, *_ in discovery} == {"db-watch"}


@needs_request_log
def test_the_database_role_of_the_watchers_database_is_on_its_requests(t_db, instance):
    # The role reads T and keeps its checkpoints in a table made for it beforehand.
    t_db.update_ddl([create_table_ddl(), "CREATE ROLE watcher_role", "GRANT SELECT ON TABLE T TO ROLE watcher_role",
                     f"GRANT SELECT, INSERT, UPDATE ON TABLE {DEFAULT_TABLE} TO ROLE watcher_role"]).result(60)
    as_watcher = instance.database(t_db.database_id, database_role="watcher_role")
    w = TableWatcher(as_watcher, "T", poll_interval=0.005, retry_policy=FAST,
                     request_settings=RequestSettings(request_tag="role-check"))
    _watch_until_delivered(w, t_db, rows=1)
    roles = {role for _, _, _, _, role, _ in _requests(t_db, "REQUEST_TAG = 'role-check'")}
    assert roles == {"watcher_role"}


@needs_request_log
def test_the_checkpoint_store_tags_reads_and_writes(t_db):
    repo = SpannerCommitTimestampRepository(t_db, request_settings=RequestSettings(request_tag="ckpt-r",
                                                                                   transaction_tag="ckpt-w"))
    repo.initialize()
    table = TableId("T")
    ts = _query(t_db, "SELECT CURRENT_TIMESTAMP()")[0][0]
    repo.set(table, Checkpoint(ts))
    assert repo.get(table) == Checkpoint(ts)
    assert repo.oldest(table) == ts
    assert [m for m, *_ in _requests(t_db, "TRANSACTION_TAG = 'ckpt-w'")] == ["Commit"]
    reads = _requests(t_db, "REQUEST_TAG = 'ckpt-r'")
    assert {"Read", "ExecuteSql"} <= {m for m, *_ in reads} and {p for _, _, _, p, _, _ in reads} == {None}


def _now(db):
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def _tags_sent(db, since):
    """The request tags of the database's queries and reads since ``since`` (None: a request of the test's own)."""
    return {tag for method, tag, *_ in _requests(db, "METHOD IN ('ExecuteSql', 'Read') AND REQUEST_TIME > @since",
                                                 since=since)}


# --- change streams and helper tables -----------------------------------------------------------------

@needs_request_log
def test_change_stream_reads_carry_the_priority_and_progress_writes_the_transaction_tag(make_database):
    db = make_database([T_DDL, "CREATE CHANGE STREAM S FOR T"])
    settings = RequestSettings(priority="LOW", request_tag="cs-read", transaction_tag="cs-progress")
    start = _now(db)
    got = Collector()
    w = ChangeStreamWatcher(db, "S", heartbeat=1, start=start, request_settings=settings)
    w.add_callback(got)
    with w:
        insert_t(db, range(2))
        got.wait_for(2)
    reads = _requests(db, "TEXT LIKE '%READ_S%'")
    assert reads and {(tag, priority) for _, tag, _, priority, _, _ in reads} == {("cs-read", "LOW")}
    assert _tags_sent(db, start) - {None} == {"cs-read"}
    progress = _requests(db, "METHOD = 'Commit' AND TEXT = 'WATCHER_CHANGE_STREAM_PARTITIONS'")
    assert progress and {txn_tag for _, _, txn_tag, *_ in progress} == {"cs-progress"}


@needs_request_log
def test_change_set_and_history_watchers_tag_every_statement(make_database):
    db = make_database([change_sets_table_ddl(), "CREATE TABLE Orders (OrderId INT64 NOT NULL, Total FLOAT64) "
                        "PRIMARY KEY (OrderId)", *change_set_column_ddl("Orders"), T_DDL])
    history = HistoryTable.discover(db, "T")
    history.create(db)
    settings = RequestSettings(priority="HIGH", request_tag="helpers")
    got = Collector()
    cs = ChangeSetWatcher(db, ["Orders"], poll_interval=0.005, request_settings=settings)
    hw = HistoryWatcher(db, "T", poll_interval=0.005, initial_timestamp=MIN_TIMESTAMP, request_settings=settings)
    cs.add_callback(got)
    hw.add_callback(got)
    started = _now(db)
    with cs, hw:
        with change_set_batch(db) as (batch, change_set_id):
            batch.insert("Orders", ["OrderId", "Total", "CHANGE_SET_ID"], [[1, 2.5, change_set_id]])
        run_with_history(db, history, lambda h: h.insert(["Id", "Name"], [[1, "a"]]))
        got.wait_for(2)
    assert _tags_sent(db, started) - {None} == {"helpers"}
    polls = _requests(db, "TEXT LIKE '%prevCommitTimestamp%' OR TEXT LIKE '%IN UNNEST(@ids)%'")
    assert {p for _, _, _, p, _, _ in polls} == {"HIGH"}


# --- backfill and reconcile (Spark) ------------------------------------------------------------------------

ITEMS_DDL = ("CREATE TABLE Items (Id INT64 NOT NULL, Name STRING(MAX), "
             "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")


def _snapshot_reads(db, tag):
    """(METHOD, DATA_BOOST_ENABLED, PARTITIONED, PRIORITY, DATABASE_ROLE) of the queries of the table's snapshot reads."""
    return _query(db, "SELECT METHOD, DATA_BOOST_ENABLED, PARTITIONED, PRIORITY, DATABASE_ROLE "
                      "FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE REQUEST_TAG = @tag AND TEXT LIKE 'SELECT * FROM `Items`%' "
                      "AND METHOD = 'ExecuteSql'", tag=tag)


@needs_request_log
def test_snapshot_reads_run_on_data_boost_when_asked(spark, make_database, instance, tmp_path):
    # Backfill and reconcile read through the same snapshot step: one boosted run, one plain.
    from watcher.changelog.snapshots.backfill import Backfill
    from watcher.changelog.snapshots.reconcile import Reconcile

    db = make_database([ITEMS_DDL])
    with db.batch() as batch:
        batch.insert("Items", ["Id", "Name", "Ts"], [[i, f"n{i}", spanner.COMMIT_TIMESTAMP] for i in range(12)])
    with pytest.raises(ConfigurationError, match="request_settings needs a RequestSettings"):
        Backfill(spark, db).request_settings({"data_boost": True})
    db.update_ddl(["CREATE ROLE etl", "GRANT SELECT ON TABLE Items TO ROLE etl"]).result(60)
    as_role = instance.database(db.database_id, database_role="etl")
    boosted = RequestSettings(priority="LOW", request_tag="backfill-boost", data_boost=True)
    result = (Backfill(spark, as_role).table("Items").staging(str(tmp_path / "s")).warehouse(str(tmp_path / "w"))
              .partitions(2).request_settings(boosted).run())
    assert result.rows == 12 and result.partitions == 2
    reads = _snapshot_reads(db, "backfill-boost")
    # Every partition of every Spark partition's query asked for Data Boost, at LOW priority, as the role.
    assert len(reads) >= 2 and {tuple(r) for r in reads} == {("ExecuteSql", True, True, "LOW", "etl")}

    plain = RequestSettings(request_tag="reconcile-plain")
    result = (Reconcile(spark, db).table("Items").staging(str(tmp_path / "s")).warehouse(str(tmp_path / "w"))
              .partitions(2).request_settings(plain).run())
    assert result.rows == 12 and result.deletes == 0
    assert {tuple(r) for r in _snapshot_reads(db, "reconcile-plain")} == {("ExecuteSql", False, False, None, None)}


# --- the Spark streaming source (its reader called as Spark would, no Spark) --------------------------------

def test_the_streaming_source_reads_its_request_options():
    from watcher.changelog.streaming.options import StreamOptions

    base = {"database": "projects/p/instances/i/databases/d", "table": "T"}
    o = StreamOptions.parse({**base, "priority": "low", "request_tag": "stream", "database_role": "reader"}, environ={})
    assert (o.request_settings.priority, o.request_settings.request_tag, o.location.database_role) == \
        ("LOW", "stream", "reader")
    cs = StreamOptions.parse({"database": base["database"], "change_stream": "S", "priority": "high"}, environ={})
    assert (cs.request_settings.priority, cs.request_settings.request_tag) == ("HIGH", DEFAULT_REQUEST_TAG)
    with pytest.raises(ConfigurationError, match="spanner_watcher source: Request priority 'soon'"):
        StreamOptions.parse({**base, "priority": "soon"}, environ={})


@needs_request_log
def test_the_streaming_source_tags_its_planning_and_its_reads(make_database):
    import pickle

    from watcher.changelog.streaming.options import StreamOptions
    from watcher.changelog.streaming.source import SpannerStreamReader

    db = make_database([T_DDL, "CREATE ROLE streamer", "GRANT SELECT ON TABLE T TO ROLE streamer"])
    options = StreamOptions.parse({"database": db.name, "table": "T", "priority": "low", "request_tag": "stream-t",
                                   "database_role": "streamer"})
    reader = SpannerStreamReader(options)
    started = _now(db)
    offset = reader.initialOffset()
    insert_t(db, range(3))
    end = reader.latestOffset(offset)
    rows = [row for partition in pickle.loads(pickle.dumps(reader.partitions(offset, end)))
            for row in reader.read(partition)]
    assert len(rows) == 3
    assert _tags_sent(db, started) - {None} == {"stream-t"}
    tagged = _requests(db, "REQUEST_TAG = 'stream-t'")
    assert {role for *_, role, _ in tagged} == {"streamer"}
    polls = [r for r in tagged if "prevCommitTimestamp" in r[-1]]
    assert polls and {priority for _, _, _, priority, _, _ in polls} == {"LOW"}
