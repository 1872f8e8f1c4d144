"""Request fields the service honours: seqno (DML replay within a transaction) and query_mode PLAN."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from watcher.localspanner.common.requests import Statement, TransactionKind, TransactionOptions, TransactionSelector
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.service import LocalSpannerService

INSTANCE = "projects/p/instances/i"
READ_WRITE = TransactionOptions(kind=TransactionKind.READ_WRITE)
BUMP = Statement("UPDATE T SET V = V + 1 WHERE K = 1")


@pytest.fixture
def svc() -> Iterator[tuple[LocalSpannerService, str]]:
    service = LocalSpannerService()
    service.create_instance(INSTANCE, config="emulator-config")
    db = service.create_database(INSTANCE, "CREATE DATABASE db", ["CREATE TABLE T (K INT64 NOT NULL, V INT64) PRIMARY KEY (K)"])
    session = service.create_session(db.name).name
    txn = service.begin_transaction(session, READ_WRITE)
    service.execute_sql(session, Statement("INSERT INTO T (K, V) VALUES (1, 0)"), TransactionSelector(id=txn.id), seqno=1)
    service.commit(session, [], transaction_id=txn.id)
    yield service, session
    service.close()


def _value(service: LocalSpannerService, session: str) -> str:
    return list(service.execute_sql(session, Statement("SELECT V FROM T WHERE K = 1"), None).rows)[0][0]


def test_a_dml_sent_again_with_its_seqno_is_answered_not_run_again(svc) -> None:
    service, session = svc
    txn = TransactionSelector(id=service.begin_transaction(session, READ_WRITE).id)
    first = service.execute_sql(session, BUMP, txn, seqno=7)
    again = service.execute_sql(session, BUMP, txn, seqno=7)
    other = service.execute_sql(session, BUMP, txn, seqno=8)
    assert (first.row_count_exact, again.row_count_exact, other.row_count_exact) == (1, 1, 1)
    service.commit(session, [], transaction_id=txn.id)
    assert _value(service, session) == "2"


def test_a_different_statement_under_a_used_seqno_runs(svc) -> None:
    service, session = svc
    txn = TransactionSelector(id=service.begin_transaction(session, READ_WRITE).id)
    service.execute_sql(session, BUMP, txn, seqno=1)
    service.execute_sql(session, Statement("UPDATE T SET V = V + 10 WHERE K = 1"), txn, seqno=1)
    service.commit(session, [], transaction_id=txn.id)
    assert _value(service, session) == "11"


def test_without_seqno_every_request_runs(svc) -> None:
    service, session = svc
    txn = TransactionSelector(id=service.begin_transaction(session, READ_WRITE).id)
    service.execute_sql(session, BUMP, txn)
    service.execute_sql(session, BUMP, txn)
    service.commit(session, [], transaction_id=txn.id)
    assert _value(service, session) == "2"


def test_a_batch_sent_again_with_its_seqno_is_answered_not_run_again(svc) -> None:
    service, session = svc
    txn = TransactionSelector(id=service.begin_transaction(session, READ_WRITE).id)
    first = service.execute_batch_dml(session, [BUMP, BUMP], txn, seqno=3)
    again = service.execute_batch_dml(session, [BUMP, BUMP], txn, seqno=3)
    assert first.row_counts == again.row_counts == [1, 1]
    service.commit(session, [], transaction_id=txn.id)
    assert _value(service, session) == "2"


def test_plan_returns_the_fields_and_no_rows_without_running(svc) -> None:
    service, session = svc
    result = service.execute_sql(session, Statement("SELECT K, V * 2 AS W FROM T"), None, plan=True)
    assert [(f.name, f.type) for f in result.fields] == [("K", T.INT64), ("W", T.INT64)]
    assert list(result.rows) == [] and result.query_plan
    txn = TransactionSelector(id=service.begin_transaction(session, READ_WRITE).id)
    dml = service.execute_sql(session, BUMP, txn, plan=True)
    assert list(dml.rows) == [] and dml.row_count_exact is None
    service.commit(session, [], transaction_id=txn.id)
    assert _value(service, session) == "0"


def test_plan_still_checks_the_statement(svc) -> None:
    service, session = svc
    with pytest.raises(SpannerError) as info:
        service.execute_sql(session, Statement("SELECT Nope FROM T"), None, plan=True)
    assert info.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(SpannerError) as info:
        service.execute_sql(session, BUMP, None, plan=True)
    assert info.value.code == Code.INVALID_ARGUMENT
