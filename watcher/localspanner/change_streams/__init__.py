"""Change streams of the local Spanner: capture of data change records at commit, and their reading.

* :mod:`.records`: the hidden records table (one row per data change record) and its queries.
* :mod:`.capture`: a commit's :class:`~watcher.localspanner.storage.versions.RowChange` list turned into
  the records of every stream that tracks the changed tables, written in the commit's SQLite transaction.
* :mod:`.partitions`: the partitions of a stream over time and their tokens; :mod:`.timeline` says
  when each generation starts (on the churn timer, or where :mod:`.load` split or merged them by write load).
* :mod:`.read_function`: ``SELECT ChangeRecord FROM READ_<stream>(...)`` recognised and its arguments checked.
* :mod:`.reader`: the records, heartbeats and child partitions one query returns, as result rows.
* ``MUTABLE_KEY_RANGE`` streams: :mod:`.key_ranges` (long-lived partitions and the key-range moves
  between them), :mod:`.key_range_reads` (their rows), :mod:`.proto_records` and :mod:`.proto_wire`
  (the ChangeStreamRecord protobuf, encoded without protobuf below the gRPC edge); :mod:`.read_plan`
  is what both modes hand the reading loop.
"""
