"""Staged batches in: where a run's records come from (a staging folder or a DataFrame), listing and parsing
staged batches with Spark, and the driver's readers of staged files and of a DataFrame's records.
"""
