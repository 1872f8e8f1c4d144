"""RPC tables: which methods a service has, and how they become gRPC method handlers.

Each service module lists its methods as :class:`Rpc` rows; :func:`generic_handler`
wraps every handler with fault injection and error translation (``status.py``) and uses
the raw protobuf classes (no proto-plus wrapping on the hot path). Handlers may return
a protobuf message or bytes that are already serialized.

Example:
    >>> from google.protobuf import empty_pb2
    >>> serialize(b"\\x08\\x01"), serialize(empty_pb2.Empty())
    (b'\\x08\\x01', b'')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import grpc

from .. import errors
from . import status
from .faults import FaultInjector


@dataclass(frozen=True)
class Rpc:
    """One method: its name, its raw protobuf request class, whether it streams answers, and
    whether the statements it runs stop at the call's deadline (``deadlines.py``)."""

    name: str
    request: Any
    streaming: bool = False
    deadline: bool = False


def serialize(message: Any) -> bytes:
    """Serialize a response: bytes pass through, protobuf and proto-plus messages are encoded."""
    if isinstance(message, bytes):
        return message
    to_string = getattr(message, "SerializeToString", None)
    if to_string is not None:
        return to_string()
    return type(message).serialize(message)  # proto-plus message


class _Unserved(grpc.GenericRpcHandler):
    """Every method no table lists: UNIMPLEMENTED naming it (gRPC's own answer says only "Method not found")."""

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method

        def refuse(request: bytes, context: grpc.ServicerContext) -> bytes:
            status.abort(context, errors.rpc_unimplemented(method))

        return grpc.unary_unary_rpc_method_handler(refuse)  # raw bytes in; it never answers


def unserved_handler() -> grpc.GenericRpcHandler:
    """The handler to add after every service's: it refuses the methods they do not serve, by name."""
    return _Unserved()


def generic_handler(service: str, servicer: object, rpcs: Iterable[Rpc], faults: FaultInjector) -> grpc.GenericRpcHandler:
    """A gRPC handler serving ``rpcs`` of ``service`` (full name) with ``servicer``'s methods."""
    handlers = {}
    for rpc in rpcs:
        fn = getattr(servicer, rpc.name)
        if rpc.streaming:
            handlers[rpc.name] = grpc.unary_stream_rpc_method_handler(
                status.guard_stream(rpc.name, fn, faults, deadline=rpc.deadline),
                request_deserializer=rpc.request.FromString,
                response_serializer=serialize,
            )
        else:
            handlers[rpc.name] = grpc.unary_unary_rpc_method_handler(
                status.guard_unary(rpc.name, fn, faults, deadline=rpc.deadline),
                request_deserializer=rpc.request.FromString,
                response_serializer=serialize,
            )
    return grpc.method_handlers_generic_handler(service, handlers)
