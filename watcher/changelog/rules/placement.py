"""Which partition of the per-key window a row goes to: by its table and key.

The per-key window (:mod:`..engines.spark.pipeline`) shuffles its rows by one INT column, :data:`COLUMN`, so
that a key's rows meet in one partition; the transaction groups join back to the rows on it
(:mod:`.grouping`), which spares moving the wide rows a second time.

Example:
    >>> COLUMN, SPREAD_SQL
    ('_p', 'hash(table_name, keys)')
"""

from __future__ import annotations

#: The column the window's rows are shuffled by (an INT).
COLUMN = "_p"
#: SQL of a row's placement: its table and key hashed (Spark's murmur3, as its shuffle uses).
SPREAD_SQL = "hash(table_name, keys)"
