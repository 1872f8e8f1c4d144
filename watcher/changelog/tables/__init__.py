"""The warehouse's tables in Delta Lake: the runtime Spark needs for them, their layout, and the
ledger that makes each run's commits happen exactly once.

- :mod:`.runtime`: Delta's jars and the Spark settings that load them (local, cluster, Connect, spark-submit).
- :mod:`.layout`: the tables (``runs``, ``changelog``, ``current_state``, ``watermarks``), their columns,
  partitioning and properties.
- :mod:`.ledger`: which run each table holds, the run a crash left open, the staged batches consumed.
- :mod:`.readers`: the tables as other engines read them (delta-rs, DuckDB).
"""
