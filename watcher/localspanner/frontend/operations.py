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

    def list(self, prefix: str) -> list[operations_pb2.Operation]:
        with self._lock:
            return [op for name, op in self._ops.items() if name.startswith(prefix)]


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
