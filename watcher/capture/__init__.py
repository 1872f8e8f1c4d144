"""Capture: watchers that see changes in Spanner and hand them on, one at a time per table, in commit order.

Polling (commit-timestamp columns): :mod:`.table_watcher`, :mod:`.database_watcher`, the poll queries
(:mod:`.polling`), what a watcher knows of a table (:mod:`.table_info`), shard providers (:mod:`.shards`),
retry and backoff (:mod:`.retry`), metrics (:mod:`.metrics`) and the hand-off to an iterating consumer
(:mod:`.handoff`). Variants that read a helper table the application writes live in :mod:`.helper_tables`; the second
capture mode, reading Spanner change streams, in :mod:`.change_streams`.
"""
