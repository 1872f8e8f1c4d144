"""Exports of the changelog: BigQuery CDC rows, Datastream-style JSON events, a changelog table in Spanner.

Every export reads the committed ``changelog`` Delta table of a warehouse and is incremental by
the job's runs (:mod:`.rows`): a target records the last run it holds, and the next export takes
the runs after it, up to the newest of one pinned Delta version; a change reaching the
changelog in a later run is exported once, whatever its commit timestamp, and an export with no
new run writes nothing.

- :mod:`.selection`: which rows (source database, tables, commit time); :func:`source_filter` for views.
- :mod:`.rows`: the Delta snapshot and an increment's rows, in the changelog view's columns.
- :mod:`.progress`: what a target holds (format, selection, changelog table, last run, increments).
- :mod:`.folder_target`: ``bigquery`` and ``datastream`` into a folder, one folder per increment.
- :mod:`.spanner_target`: ``spanner`` into a table, its progress in the same database.
- :mod:`.bigquery`, :mod:`.datastream`, :mod:`.spanner_table`: the formats, over any frame of the view's columns.
- :mod:`.errors`: every error an export shows.

Example:
    >>> from watcher.changelog.exports.bigquery import compare_sequence_numbers
    >>> compare_sequence_numbers("FFF/ABC", "ABC")
    1
    >>> Selection(database="d").where_sql()
    "source_database = 'd'"
"""

from __future__ import annotations

from .selection import Selection, source_filter

#: Export formats by name (the ``export`` command's --format).
FORMATS = {
    "bigquery": "watcher.changelog.exports.bigquery",
    "datastream": "watcher.changelog.exports.datastream",
    "spanner": "watcher.changelog.exports.spanner_table",
}

__all__ = ["FORMATS", "Selection", "source_filter"]
