"""Schema tools: the DDL that makes polling scale (:mod:`.ddl`), versioned migrations
(:mod:`.migrations`) and index pruning (:mod:`.pruning`). Not to be confused with capture's
:mod:`watcher.capture.table_info` (what a watcher reads of a table) or the top-level ``ddl/`` folder
(the migration files themselves)."""
