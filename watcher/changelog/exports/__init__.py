"""Exports of the changelog: BigQuery CDC rows and Datastream-style JSON events.

Example:
    >>> from watcher.changelog.exports.bigquery import compare_sequence_numbers
    >>> compare_sequence_numbers("FFF/ABC", "ABC")
    1
"""

from __future__ import annotations

#: Export formats by name (the ``export`` command's --format).
FORMATS = {
    "bigquery": "watcher.changelog.exports.bigquery",
    "datastream": "watcher.changelog.exports.datastream",
    "spanner": "watcher.changelog.exports.spanner_table",
}
