"""The changelog's rules rendered in Python, on staged rows as the driver reads them.

The job computes its rows with Spark SQL (:mod:`..spark.pipeline`); these are the same rules for the
places that need them without Spark: the Kafka sink's change ids and keys (:mod:`watcher.sinks.events`),
and the tests that check both renderings agree (``tests/changelog/test_rules.py``). A staged
line is parsed as Spark reads it (:mod:`...input.staged`, :mod:`...input.spark_json`), each row given its
previous row, duplicate flag, mod_type, old values and change_id (:mod:`.window`).

Example:
    >>> str(Ineligible("a float Spark writes differently", "table=T/b.jsonl"))
    'a float Spark writes differently (table=T/b.jsonl)'
"""

from __future__ import annotations


class Ineligible(Exception):
    """A staged row the Python rendering cannot hold exactly as Spark would."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(f"{reason} ({where})" if where else reason)
        self.reason = reason
        self.where = where
