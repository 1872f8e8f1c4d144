"""Long-running operations: every admin operation of the local server is done when returned.

:class:`OperationRegistry` builds done ``google.longrunning.Operation`` messages with the
metadata and response packed in ``Any`` (whose type URLs the client's
``operation.result()`` checks), and keeps the latest ones for ``GetOperation`` in case a
client polls.

Example:
    >>> from google.protobuf import empty_pb2
    >>> ops = OperationRegistry()
    >>> op = ops.done("projects/p/instances/i", empty_pb2.Empty(), empty_pb2.Empty())
    >>> op.done, ops.get(op.name).name == op.name
    (True, True)
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from typing import Any

from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from .. import errors
from .rpc import Rpc

#: How many finished operations GetOperation can still find.
KEPT_OPERATIONS = 1000


class OperationRegistry:
    """Thread-safe store of the most recent finished operations."""

    def __init__(self, keep: int = KEPT_OPERATIONS) -> None:
        self._lock = threading.Lock()
        self._ops: OrderedDict[str, operations_pb2.Operation] = OrderedDict()
        self._ids = itertools.count(1)
        self._keep = keep

    def done(self, resource: str, metadata: Any, response: Any, operation_id: str = "") -> operations_pb2.Operation:
        """Record and return a finished operation on ``resource``."""
        op = operations_pb2.Operation(done=True)
        op.metadata.CopyFrom(_pack(metadata))
        op.response.CopyFrom(_pack(response))
        return self._keep_op(op, resource, operation_id)

    def failed(self, resource: str, metadata: Any, error: Any, operation_id: str = "") -> operations_pb2.Operation:
        """Record and return an operation on ``resource`` that ended with ``error`` (a google.rpc.Status)."""
        op = operations_pb2.Operation(done=True)
        op.metadata.CopyFrom(_pack(metadata))
        op.error.CopyFrom(error)
        return self._keep_op(op, resource, operation_id)

    def _keep_op(self, op: operations_pb2.Operation, resource: str, operation_id: str) -> operations_pb2.Operation:
        with self._lock:
            op.name = f"{resource}/operations/{operation_id or f'_auto_{next(self._ids)}'}"
            self._ops[op.name] = op
            while len(self._ops) > self._keep:
                self._ops.popitem(last=False)
        return op

    def get(self, name: str) -> operations_pb2.Operation:
        with self._lock:
            op = self._ops.get(name)
        if op is None:
            raise errors.operation_not_found(name)
        return op

    def list(self, prefix: str, filter_: str = "") -> list[operations_pb2.Operation]:
        """The kept operations whose name starts with ``prefix``, oldest first, that match ``filter_``."""
        terms = parse_filter(filter_)
        with self._lock:
            found = [op for name, op in self._ops.items() if name.startswith(prefix)]
        return [op for op in found if all(_FILTER_FIELDS[field](op, value) for field, value in terms)]


#: The filter fields the local server understands: ``field:value`` means the field contains the value.
_FILTER_FIELDS = {
    "name": lambda op, value: value in op.name,
    "metadata.@type": lambda op, value: op.metadata.type_url.endswith(value.rsplit("/", 1)[-1]),
}


def parse_filter(text: str) -> list[tuple[str, str]]:
    """``(name:x) AND (metadata.@type:y)`` (or ``=``) -> [(field, value), ...]; other filters are refused.

    The client's ``Database.list_database_operations`` sends such a filter.

    >>> parse_filter("(name:databases/d/operations/) AND (metadata.@type:type.googleapis.com/a.B)")
    [('name', 'databases/d/operations/'), ('metadata.@type', 'type.googleapis.com/a.B')]
    >>> parse_filter("(metadata.@type=type.googleapis.com/a.B)")
    [('metadata.@type', 'type.googleapis.com/a.B')]
    """
    terms = []
    for raw in (t.strip() for t in text.split(" AND ")) if text.strip() else ():
        term = raw
        while term.startswith("(") and term.endswith(")"):
            term = term[1:-1].strip()
        # ``field=value`` (the instance admin's documented form) is read as ``field:value``.
        cut = min((i for i in (term.find(":"), term.find("=")) if i >= 0), default=-1)
        field, sep, value = (term[:cut], term[cut], term[cut + 1:]) if cut >= 0 else (term, "", "")
        if not sep or field.strip() not in _FILTER_FIELDS or not value.strip():
            raise errors.operation_filter_unsupported(raw)
        terms.append((field.strip(), value.strip().strip('"')))
    return terms


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


class OperationsServicer:
    """``google.longrunning.Operations``: every operation is already done."""

    SERVICE = "google.longrunning.Operations"
    RPCS = (
        Rpc("GetOperation", operations_pb2.GetOperationRequest),
        Rpc("ListOperations", operations_pb2.ListOperationsRequest),
        Rpc("CancelOperation", operations_pb2.CancelOperationRequest),
        Rpc("DeleteOperation", operations_pb2.DeleteOperationRequest),
        Rpc("WaitOperation", operations_pb2.WaitOperationRequest),
    )

    def __init__(self, registry: OperationRegistry) -> None:
        self.registry = registry

    def GetOperation(self, request: Any, context: Any) -> Any:
        return self.registry.get(request.name)

    def WaitOperation(self, request: Any, context: Any) -> Any:
        return self.registry.get(request.name)

    def ListOperations(self, request: Any, context: Any) -> Any:
        return operations_pb2.ListOperationsResponse(operations=self.registry.list(request.name))

    def CancelOperation(self, request: Any, context: Any) -> Any:
        self.registry.get(request.name)  # finished operations cannot be cancelled: nothing to do
        return empty_pb2.Empty()

    def DeleteOperation(self, request: Any, context: Any) -> Any:
        self.registry.get(request.name)
        return empty_pb2.Empty()
