"""Partition tokens (PartitionQuery / PartitionRead): disjoint slices of one read-only transaction's result.

A token names the read-only transaction it belongs to, the request it partitions (a
digest of the SQL text, or of the table, index and columns) and its slice ``index`` of
``count``. Every partition runs in that transaction, so all of them read at its one
timestamp; partition ``i`` keeps the rows at positions ``i, i + count, i + 2 * count, ...``
of the result. Within one snapshot a statement runs the same plan over the same data,
so the positions are stable and the slices together hold every row exactly once.

Example:
    >>> tokens = make_tokens(b"t" * 16, "SELECT 1", 3)
    >>> [decode(t, b"t" * 16, "SELECT 1") for t in tokens]
    [(0, 3), (1, 3), (2, 3)]
    >>> list(take_slice(iter(range(10)), 1, 3))
    [1, 4, 7]
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Iterator
from typing import TypeVar

from .. import errors

_MAGIC = b"lsp1"
_LAYOUT = struct.Struct(">16sII8s")  # transaction id, index, count, request digest
#: Partitions handed out when the request sets no max_partitions.
DEFAULT_PARTITIONS = 4
#: The most partitions one request gets, whatever it asks for.
MAX_PARTITIONS = 64

R = TypeVar("R")


def partition_count(max_partitions: int) -> int:
    """How many partitions to hand out for a request's ``max_partitions`` hint (0: no hint).

    >>> partition_count(0), partition_count(2), partition_count(10_000)
    (4, 2, 64)
    """
    return DEFAULT_PARTITIONS if max_partitions <= 0 else min(max_partitions, MAX_PARTITIONS)


def _digest(request: str) -> bytes:
    return hashlib.sha256(request.encode()).digest()[:8]


def make_tokens(txn_id: bytes, request: str, count: int) -> list[bytes]:
    """The ``count`` tokens of ``request`` (a canonical text of what is partitioned) in ``txn_id``."""
    digest = _digest(request)
    return [_MAGIC + _LAYOUT.pack(txn_id.ljust(16, b"\0")[:16], i, count, digest) for i in range(count)]


def decode(token: bytes, txn_id: bytes, request: str) -> tuple[int, int]:
    """``(index, count)`` of a token issued for ``request`` in ``txn_id``; else INVALID_ARGUMENT."""
    if not token.startswith(_MAGIC) or len(token) != len(_MAGIC) + _LAYOUT.size:
        raise errors.partition_token_invalid()
    tid, index, count, digest = _LAYOUT.unpack(token[len(_MAGIC):])
    if tid != txn_id.ljust(16, b"\0")[:16] or digest != _digest(request) or not 0 <= index < count:
        raise errors.partition_token_invalid()
    return index, count


def take_slice(rows: Iterator[R], index: int, count: int) -> Iterator[R]:
    """The rows of partition ``index`` of ``count``."""
    return itertools.islice(rows, index, None, count)
