"""What requests say about themselves arrives: tags in SPANNER_SYS's statistics tables; priority,
database role and Data Boost in the local-only request log. Through the official client only."""

from __future__ import annotations

import uuid

import pytest
from google.cloud.spanner_v1 import KeySet, RequestOptions

from tests.conftest import emulator_lacks

pytestmark = emulator_lacks("SPANNER_SYS statistics and the local request log")

DDL = ["CREATE TABLE T (K INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (K)"]


@pytest.fixture
def db(make_database):
    return make_database(DDL)


def _query(db, sql, **params):
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(sql, params=params or None)]


def _log(db, tag):
    """The request log's rows for one request tag, oldest first."""
    return _query(db, "SELECT METHOD, PRIORITY, DATABASE_ROLE, DATA_BOOST_ENABLED, PARTITIONED, TEXT, TRANSACTION_TAG "
                      "FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE REQUEST_TAG = @tag ORDER BY REQUEST_TIME", tag=tag)


def _tag() -> str:
    return f"app=test,id={uuid.uuid4().hex[:8]}"


def test_query_tags_reach_query_stats_and_priority_reaches_the_log(db):
    tag = _tag()
    for _ in range(3):
        with db.snapshot() as snap:
            list(snap.execute_sql("SELECT K FROM T WHERE K > @k", params={"k": 0}, param_types=None,
                                  request_options={"request_tag": tag, "priority": "PRIORITY_LOW"}))
    stats = _query(db, "SELECT INTERVAL_END, REQUEST_TAG, QUERY_TYPE, TEXT, EXECUTION_COUNT, AVG_LATENCY_SECONDS "
                       "FROM spanner_sys.query_stats_top_minute WHERE REQUEST_TAG = @tag", tag=tag)
    # A DBA's query runs as on Spanner; what the local server does not measure is NULL.
    assert [row[1:] for row in stats] == [[tag, "QUERY", "SELECT K FROM T WHERE K > @k", 3, None]]
    assert stats[0][0].second == 0  # intervals end on the minute
    assert [(m, p) for m, p, *_ in _log(db, tag)] == [("ExecuteSql", "LOW")] * 3


def test_untagged_requests_carry_no_tag_and_no_priority(db):
    with db.snapshot() as snap:
        list(snap.execute_sql("SELECT 'untagged-probe'"))
    rows = _query(db, "SELECT REQUEST_TAG, PRIORITY FROM SPANNER_SYS.LOCAL_REQUEST_LOG "
                      "WHERE TEXT = \"SELECT 'untagged-probe'\"")
    assert rows == [[None, None]]


def test_read_tags_reach_read_stats(db):
    tag = _tag()
    with db.snapshot() as snap:
        list(snap.read("T", ["K", "V"], KeySet(all_=True), request_options=RequestOptions(request_tag=tag)))
    stats = _query(db, "SELECT REQUEST_TAG, READ_TYPE, READ_COLUMNS, EXECUTION_COUNT "
                       "FROM SPANNER_SYS.READ_STATS_TOP_MINUTE WHERE REQUEST_TAG = @tag", tag=tag)
    assert stats == [[tag, "READ", ["K", "V"], 1]]


def test_transaction_tags_reach_txn_stats(db):
    tag = _tag()
    for k in (1, 2):
        with db.batch(request_options={"transaction_tag": tag}) as batch:
            batch.insert("T", ["K", "V"], [[k, "x"]])
    db.run_in_transaction(lambda txn: txn.execute_update("UPDATE T SET V = 'y' WHERE K = 1"), transaction_tag=tag)
    stats = _query(db, "SELECT INTERVAL_END, TRANSACTION_TAG, COMMIT_ATTEMPT_COUNT, COMMIT_ABORT_COUNT "
                       "FROM SPANNER_SYS.TXN_STATS_TOP_MINUTE WHERE TRANSACTION_TAG = @tag", tag=tag)
    assert [row[1:] for row in stats] == [[tag, 3, 0]]
    commits = _query(db, "SELECT METHOD, TEXT FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE TRANSACTION_TAG = @tag "
                         "AND METHOD = 'Commit'", tag=tag)
    assert commits == [["Commit", "T"], ["Commit", "T"], ["Commit", None]]  # the DML's commit carries no mutations


def test_the_sessions_database_role_is_on_its_requests(db, instance):
    tag = _tag()
    db.update_ddl(["CREATE ROLE reader"]).result(60)  # a session may only take a role the database has
    as_reader = instance.database(db.database_id, database_role="reader")
    with as_reader.snapshot() as snap:
        list(snap.execute_sql("SELECT 1", request_options={"request_tag": tag}))
    with db.snapshot() as snap:
        list(snap.execute_sql("SELECT 2", request_options={"request_tag": tag}))
    assert [(text, role) for _, _, role, _, _, text, _ in _log(db, tag)] == [("SELECT 1", "reader"), ("SELECT 2", None)]


def test_a_partitioned_query_says_whether_it_asked_for_data_boost(db):
    with db.batch() as batch:
        batch.insert("T", ["K", "V"], [[k, "v"] for k in range(10)])
    for boost in (True, False):
        tag = _tag()
        snapshot = db.batch_snapshot()
        try:
            rows = []
            for part in snapshot.generate_query_batches("SELECT K FROM T", data_boost_enabled=boost, max_partitions=3):
                part["query"]["request_options"] = {"request_tag": tag}
                rows += [r[0] for r in snapshot.process_query_batch(part)]
        finally:
            snapshot.close()
        assert sorted(rows) == list(range(10))
        seen = _log(db, tag)
        assert seen and {(boost_flag, partitioned) for _, _, _, boost_flag, partitioned, _, _ in seen} == {(boost, True)}
        stats = _query(db, "SELECT QUERY_TYPE, EXECUTION_COUNT FROM SPANNER_SYS.QUERY_STATS_TOP_MINUTE "
                           "WHERE REQUEST_TAG = @tag", tag=tag)
        assert stats == [["PARTITIONED_QUERY", len(seen)]]


def test_a_failed_commit_counts_as_an_abort_free_failure(db):
    tag = _tag()
    with db.batch() as batch:
        batch.insert("T", ["K", "V"], [[100, "v"]])
    with pytest.raises(Exception, match="already exists|ALREADY_EXISTS"):
        with db.batch(request_options={"transaction_tag": tag}) as batch:
            batch.insert("T", ["K", "V"], [[100, "again"]])
    assert _query(db, "SELECT STATUS FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE TRANSACTION_TAG = @tag", tag=tag) == \
        [["ALREADY_EXISTS"]]
    assert _query(db, "SELECT COMMIT_ATTEMPT_COUNT, COMMIT_ABORT_COUNT FROM SPANNER_SYS.TXN_STATS_TOP_MINUTE "
                      "WHERE TRANSACTION_TAG = @tag", tag=tag) == [[1, 0]]


def test_a_spanner_sys_table_the_server_lacks_is_refused_by_name(db):
    with pytest.raises(Exception, match="LOCK_STATS_TOP_MINUTE"):
        _query(db, "SELECT * FROM SPANNER_SYS.LOCK_STATS_TOP_MINUTE")
