"""The driver engine: small runs of the changelog job classified and written without Spark.

A Spark job costs about a second whatever it holds (planning, scheduling, code generation and
the JVM warming up to it), and a run of the job is three: an incremental run of 10,000 changes
took ~3 s, nearly all of it that fixed cost. A small run (:data:`MAX_BYTES` of staged input, at
most :data:`MAX_STATE_ROWS` state rows of its tables) is done here instead, in the driver's Python
with pyarrow: the batch files parsed (:mod:`.staged`), or a DataFrame's records brought to the
driver as Arrow (:mod:`.frame_rows`: a streaming micro-batch), the key's state read, each new row given
its previous row, duplicate flag, mod_type, old values and change_id (:mod:`.window`), the
transaction groups numbered, and the changelog and state delta written as Parquet in Spark's own
types (:mod:`.engine`). The run is committed as any other (:mod:`..run`).

The engine is a second implementation of the job's rules, so it takes only runs where it can
be sure to write exactly the rows Spark would write, byte for byte, and hands every other run to
Spark before it writes anything (:class:`Ineligible` names why): staged text whose JSON Spark would
render differently (:mod:`.spark_json`), a batch Spark would set aside, change-stream, history or
partial rows, late changes, soft-delete columns, an update off the old values' fast path, groups
that continue an earlier run's, a table whose state is rewritten whole. The equivalence is tested
by running generated inputs through both engines (``tests/changelog/test_driver_engine.py``, and
``test_driver_records.py`` for micro-batches).

``Changelog(spark).driver_runs(False)`` or ``SPANNER_WATCHER_DRIVER_RUNS=off`` keeps every run on Spark.

Example:
    >>> str(Ineligible("a float Spark writes differently", "table=T/b.jsonl"))
    'a float Spark writes differently (table=T/b.jsonl)'
"""

from __future__ import annotations

#: Staged input (bytes) up to which a run may be done on the driver.
MAX_BYTES = 16 * 1024 * 1024
#: State rows (the manifest's count over the run's tables' layers) up to which the driver reads them.
MAX_STATE_ROWS = 500_000
#: Set to ``off`` to keep every run on Spark.
SWITCH = "SPANNER_WATCHER_DRIVER_RUNS"


class Ineligible(Exception):
    """The run is not one the driver engine can do exactly: Spark does it."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(f"{reason} ({where})" if where else reason)
        self.reason = reason
        self.where = where
