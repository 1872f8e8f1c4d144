"""The Spark engine's tally: one aggregation over a run's classified rows, merged by :mod:`..tally`.

Its groups are few (batches x dates x outcomes), so they are collected and merged in Python.
"""

from __future__ import annotations

from typing import Any

from ...spark.connect import default_parallelism
from ...spark.session import temporary_conf
from ..tally import Tally, from_groups


def _nanos_sql(column: str) -> str:
    """SQL: a timestamp text (nine fractional digits) as nanoseconds since the epoch; a long, so
    that Spark can aggregate it by hash (a text maximum would make it sort all rows)."""
    micros = f"unix_micros(try_cast({column} AS TIMESTAMP))"
    return f"try_add(try_multiply({micros}, 1000), coalesce(try_cast(substring({column}, 27, 3) AS INT), 0))"


#: Groups: a new row's batch and outcome; state rows (``_src = 0``) only count per table.
#: A batch's shard and read method are the same for all its records: as group keys they cost a
#: hash, where as aggregates of text they would make Spark sort all rows.
_GROUP_SQL = (
    ("_src", "_src"),
    ("batch", "CASE WHEN _src = 1 THEN batch END"),
    ("table_name", "table_name"),
    ("commit_date", "CASE WHEN _src = 1 THEN commit_date END"),
    ("mod_type", "CASE WHEN _src = 1 THEN mod_type END"),
    ("_is_dup", "coalesce(_is_dup, FALSE)"),
    ("_is_late", "coalesce(_is_late, FALSE)"),
    ("shard", "CASE WHEN _src = 1 THEN shard END"),
    ("read_method", "CASE WHEN _src = 1 THEN read_method END"),
    ("_replaces", "coalesce(_replaces, FALSE)"),
)
#: Per group, all fixed-width (so Spark aggregates by hash). Seq squares are summed only while
#: they cannot overflow (else the sum is null: bad); the newest read and commit timestamps are
#: kept as nanoseconds since the epoch (exact up to the year 2262; past it a row adds nothing,
#: so a watermark can only be lower, never ahead).
_AGGREGATES_SQL = (
    ("n", "count(1)"),
    ("bad", "sum(CAST(_bad AS INT))"),
    ("min_seq", "min(seq)"),
    ("max_seq", "max(seq)"),
    ("sum_seq", "try_sum(seq)"),
    ("sum_seq2", "try_sum(CASE WHEN seq BETWEEN 0 AND 2000000000 THEN seq * seq END)"),
    ("max_v", "max(v)"),
    ("read_ts_ns", f"max(CASE WHEN _src = 1 THEN {_nanos_sql('read_timestamp')} END)"),
    ("max_commit_ns", f"max(CASE WHEN _src = 1 AND NOT _bad THEN {_nanos_sql('commit_timestamp')} END)"),
    ("min_commit_ns", f"min(CASE WHEN _src = 1 AND NOT _bad THEN {_nanos_sql('commit_timestamp')} END)"),
    ("stream_mark_ns", f"max(CASE WHEN _src = 1 AND NOT _bad THEN {_nanos_sql('_stream.stream_watermark')} END)"),
    ("finals", "count_if(_is_final)"),
    ("new_finals", "count_if(_is_final AND _src = 1)"),
    ("partials", "count_if(coalesce(_partial, FALSE))"),
)


def tally(rows: Any) -> Tally:
    """Aggregate the per-key window's kept rows (one Spark job).

    The kept rows are built by the aggregation's own tasks, as they read them: adaptive execution
    would build a kept frame first, as a stage of its own, and then read it back for the
    aggregation (a pass over every row of the run), so it is off for this one query. Its groups
    are few: a shuffle partition per core.
    """
    from pyspark.sql import functions as F

    # One Column operation per column (an alias inside the SQL text, not a second operation): each
    # costs several calls into the driver's JVM (sql_steps). Not a SQL query over a temporary view:
    # dropping the view afterwards would uncache the rows, which the later steps read.
    grouped = rows.groupBy(*[F.col(name) if sql == name else F.expr(f"{sql} AS {name}") for name, sql in _GROUP_SQL])
    aggregated = grouped.agg(*[F.expr(f"{sql} AS {name}") for name, sql in _AGGREGATES_SQL])
    settings = {"spark.sql.adaptive.enabled": "false",
                "spark.sql.shuffle.partitions": str(default_parallelism(rows.sparkSession))}
    with temporary_conf(rows.sparkSession, settings):
        collected = aggregated.collect()
    return from_groups(row.asDict() for row in collected)
