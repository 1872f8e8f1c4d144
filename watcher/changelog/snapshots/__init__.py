"""Reading Spanner at one timestamp: backfill (an initial snapshot), reconcile (the hard deletes polling cannot
see), the snapshot rows restaged, and the parallel read as Spark partitions.
"""
