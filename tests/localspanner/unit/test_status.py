"""Errors become gRPC statuses in one place: codes, RetryInfo on ABORTED, no tracebacks to clients."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2

from watcher.localspanner import errors
from watcher.localspanner.frontend import status
from watcher.localspanner.frontend.faults import FaultInjector


class _Aborted(Exception):
    pass


class FakeContext:
    def __init__(self):
        self.trailing = ()
        self.code = self.details = None

    def set_trailing_metadata(self, metadata):
        self.trailing = metadata

    def abort(self, code, details):
        self.code, self.details = code, details
        raise _Aborted()


def _call(fn, faults=None, method="Commit"):
    context = FakeContext()
    handler = status.guard_unary(method, fn, faults or FaultInjector())
    with pytest.raises(_Aborted):
        handler(object(), context)
    return context


def test_spanner_error_keeps_code_and_message():
    def fail(request, context):
        raise errors.table_not_found("Singers")

    context = _call(fail)
    assert context.code == grpc.StatusCode.NOT_FOUND
    assert context.details == "Table not found: Singers"
    assert context.trailing == ()


def test_aborted_carries_retry_info():
    def fail(request, context):
        raise errors.transaction_aborted("conflict")

    context = _call(fail)
    assert context.code == grpc.StatusCode.ABORTED
    (key, value), = context.trailing
    assert key == status.RETRY_INFO_KEY
    delay = error_details_pb2.RetryInfo.FromString(value).retry_delay
    assert delay.seconds == 0 and delay.nanos == 10_000_000


def test_unexpected_exception_is_short_internal(caplog):
    def fail(request, context):
        raise KeyError("secret internals")

    context = _call(fail, method="ExecuteSql")
    assert context.code == grpc.StatusCode.INTERNAL
    assert "secret" not in context.details and "ExecuteSql" in context.details
    assert "secret internals" in caplog.text  # the traceback stays in the server log


def test_injected_fault_fires_before_the_handler_runs():
    faults = FaultInjector()
    faults.inject("Commit", "UNAVAILABLE")
    ran = []
    context = _call(lambda request, context: ran.append(1), faults)
    assert context.code == grpc.StatusCode.UNAVAILABLE and ran == []
    assert status.guard_unary("Commit", lambda r, c: "ok", faults)(object(), FakeContext()) == "ok"


def test_stream_error_mid_way_ends_with_status():
    def rows(request, context):
        yield 1
        raise errors.sql_runtime_error("SELECT 1/0", "division by zero")

    context = FakeContext()
    got = []
    with pytest.raises(_Aborted):
        for item in status.guard_stream("ExecuteStreamingSql", rows, FaultInjector())(object(), context):
            got.append(item)
    assert got == [1] and context.code == grpc.StatusCode.OUT_OF_RANGE
