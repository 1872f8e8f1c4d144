"""The one place where errors become gRPC statuses.

Every handler runs inside :func:`guard_unary` or :func:`guard_stream`: they fire an
armed fault first, turn a :class:`SpannerError` into its status (ABORTED with RetryInfo,
so the client retries at once instead of backing off), and turn anything else into a
short INTERNAL status while the traceback goes to the server log only.

Example:
    >>> from watcher.localspanner import errors
    >>> grpc_code(errors.table_not_found("T")).name
    'NOT_FOUND'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import grpc
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2

from .. import errors
from ..common import deadlines
from ..errors import SpannerError
from .faults import FaultInjector

log = logging.getLogger("watcher.localspanner")

#: Trailing metadata key the Spanner client reads its retry delay from.
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"

_GRPC_CODES = {code.value[0]: code for code in grpc.StatusCode}

UnaryFn = Callable[[Any, grpc.ServicerContext], Any]
StreamFn = Callable[[Any, grpc.ServicerContext], Iterator[Any]]


def grpc_code(error: SpannerError) -> grpc.StatusCode:
    """The gRPC status code of an error (the numbers are google.rpc.Code's)."""
    return _GRPC_CODES.get(int(error.code), grpc.StatusCode.UNKNOWN)


def status_pb(error: SpannerError) -> status_pb2.Status:
    """The ``google.rpc.Status`` of an error, for a long-running operation that ended with it.

    >>> status_pb(errors.table_not_found("T")).code
    5
    """
    return status_pb2.Status(code=int(error.code), message=error.message)


def retry_info(delay_seconds: float) -> bytes:
    """A serialized ``google.rpc.RetryInfo`` asking the client to retry after the delay.

    >>> error_details_pb2.RetryInfo.FromString(retry_info(0.25)).retry_delay.nanos
    250000000
    """
    seconds = int(delay_seconds)
    nanos = int(round((delay_seconds - seconds) * 1e9))
    return error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=seconds, nanos=nanos)).SerializeToString()


def as_spanner_error(exc: BaseException, method: str) -> SpannerError:
    """The client-visible error for an exception raised while serving ``method``."""
    if isinstance(exc, SpannerError):
        return exc
    log.error("unexpected error in %s", method, exc_info=exc)
    return errors.unexpected_server_error(method)


def abort(context: grpc.ServicerContext, error: SpannerError) -> NoReturn:
    """End the call with the error's status (raises, as ``context.abort`` does)."""
    if error.code == errors.Code.ABORTED and error.retry_delay is not None:
        context.set_trailing_metadata(((RETRY_INFO_KEY, retry_info(error.retry_delay)),))
    context.abort(grpc_code(error), error.message)
    raise AssertionError("context.abort returned")  # pragma: no cover - abort always raises


def call_deadline(context: grpc.ServicerContext) -> float | None:
    """The call's deadline as a ``time.monotonic()`` value; None when the client set none."""
    remaining = context.time_remaining()
    return None if remaining is None else time.monotonic() + remaining


def guard_unary(method: str, fn: UnaryFn, faults: FaultInjector, *, deadline: bool = False) -> UnaryFn:
    """Wrap a unary handler: injected faults first, then errors to statuses; with ``deadline``,
    its statements stop at the call's deadline."""

    def handler(request: Any, context: grpc.ServicerContext) -> Any:
        # Every call sets its thread's deadline (None without one): nothing it runs sees another call's.
        with deadlines.until(call_deadline(context) if deadline else None):
            try:
                fault = faults.take(method)
                if fault is not None:
                    _end_aborted_transaction(fault, fn, request)
                    raise fault
                return fn(request, context)
            except Exception as exc:  # noqa: BLE001 - every failure must become a status
                abort(context, as_spanner_error(exc, method))

    return handler


def _end_aborted_transaction(fault: SpannerError, fn: UnaryFn, request: Any) -> None:
    """An injected ABORTED on a call naming a transaction (Commit) ends that transaction, as a
    real abort does; otherwise its locks would stall the client's retry of the same work."""
    transaction_id = getattr(request, "transaction_id", b"")
    service = getattr(getattr(fn, "__self__", None), "service", None)
    if fault.code != errors.Code.ABORTED or not transaction_id or not hasattr(service, "rollback"):
        return
    try:
        service.rollback(request.session, transaction_id)
    except Exception:  # noqa: BLE001 - already gone: nothing to release
        log.debug("no transaction to end after an injected abort", exc_info=True)


def guard_stream(method: str, fn: StreamFn, faults: FaultInjector, *, deadline: bool = False) -> StreamFn:
    """Wrap a server-streaming handler; an error mid-stream ends the stream with its status. With
    ``deadline``, its statements stop at the call's deadline (gRPC consumes the stream on the
    handler's thread, where :func:`deadlines.until` keeps it)."""

    def handler(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        with deadlines.until(call_deadline(context) if deadline else None):
            try:
                fault = faults.take(method)
                if fault is not None:
                    raise fault
                yield from fn(request, context)
            except Exception as exc:  # noqa: BLE001 - every failure must become a status
                abort(context, as_spanner_error(exc, method))

    return handler
