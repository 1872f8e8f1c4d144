"""Whether a staged batch arrived whole: its records' ``seq`` numbers are exactly 0..n-1.

The check compares count, min, max, sum and sum of squares with those of 0..n-1 (cheap sums
that an aggregation yields, instead of an exact distinct count; lines lost and repeated at once
would have to match two power sums to slip through). Both engines summarise a batch into these
fields (``n``, ``min_seq``, ``max_seq``, ``sum_seq``, ``sum_seq2``) and ask this one rule.

Example:
    >>> seq_ok({"n": 3, "min_seq": 0, "max_seq": 2, "sum_seq": 3, "sum_seq2": 5})
    True
    >>> seq_ok({"n": 3, "min_seq": 0, "max_seq": 2, "sum_seq": 2, "sum_seq2": 4})  # 0, 0, 2
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def seq_ok(batch: Mapping[str, Any]) -> bool:
    """The batch's seq numbers are exactly 0..n-1 (by count, min, max and the first two power sums)."""
    n = batch["n"]
    return (batch["min_seq"] == 0 and batch["max_seq"] == n - 1 and batch["sum_seq"] == n * (n - 1) // 2
            and batch["sum_seq2"] == (n - 1) * n * (2 * n - 1) // 6)
