"""The Spark engine: a run's rows by the job's DataFrame pipeline (the per-key window kept, the tally), written
to the Delta tables committed as the run.
"""
