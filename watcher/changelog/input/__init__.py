"""Staged batches in: where a run's records come from (a staging folder or a DataFrame), listing and parsing
staged batches with Spark, and the driver's readers of staged files and of a DataFrame's records.

Example:
    >>> str(Ineligible("a float Spark writes differently", "table=T/b.jsonl"))
    'a float Spark writes differently (table=T/b.jsonl)'
"""

from __future__ import annotations


class Ineligible(Exception):
    """A staged row the driver's readers cannot hold exactly as Spark would read it (the run goes to Spark)."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(f"{reason} ({where})" if where else reason)
        self.reason = reason
        self.where = where
