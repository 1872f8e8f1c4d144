"""Change streams: the second capture mode (Spanner's partition workflow), through the client's public API only.

:mod:`.records` turns result rows into records and Changes, :mod:`.values` types their
values, :mod:`.partitions` decides which partition to read when, :mod:`.progress` (with
:mod:`.spanner_progress`) stores where each partition stands, :mod:`.reader` runs one
partition's query, :mod:`.stream_info` reads the stream's schema, and :mod:`.watcher` is
:class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher`.
"""
