"""Fault injection: make the next N calls of an RPC fail, to test client retry paths for real.

Example:
    >>> from watcher.localspanner.errors import Code
    >>> faults = FaultInjector()
    >>> faults.inject("Commit", Code.ABORTED, count=1)
    >>> faults.take("Commit").code.name
    'ABORTED'
    >>> faults.take("Commit") is None
    True
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from .. import errors
from ..errors import Code, SpannerError

#: Only these codes are injectable: the ones a client is expected to retry or surface.
INJECTABLE = frozenset({Code.ABORTED, Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.INTERNAL, Code.RESOURCE_EXHAUSTED})


@dataclass
class _Fault:
    code: Code
    remaining: int


class FaultInjector:
    """Thread-safe queue of pending faults per RPC method name (e.g. ``"Commit"``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str, deque[_Fault]] = {}
        self.fired: dict[str, int] = {}

    def inject(self, method: str, code: Code | str, count: int = 1) -> None:
        """Make the next ``count`` calls of ``method`` fail with ``code``."""
        code = Code[code] if isinstance(code, str) else code
        if code not in INJECTABLE:
            raise ValueError(f"cannot inject {code.name}; choose one of {sorted(c.name for c in INJECTABLE)}")
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._faults.setdefault(method, deque()).append(_Fault(code, count))

    def take(self, method: str) -> SpannerError | None:
        """The error to raise for this call of ``method``, or None; consumes one fault."""
        with self._lock:
            queue = self._faults.get(method)
            if not queue:
                return None
            fault = queue[0]
            fault.remaining -= 1
            if fault.remaining == 0:
                queue.popleft()
            self.fired[method] = self.fired.get(method, 0) + 1
            return errors.injected_fault(fault.code, method)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
