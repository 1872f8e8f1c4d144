"""The Spark changelog job and its exports (see :mod:`watcher.changelog.job`).

Example:
    >>> from watcher.changelog import Changelog          # doctest: +SKIP
    >>> Changelog(spark).staging("s/").warehouse("w/").run()   # doctest: +SKIP
"""

from __future__ import annotations

from .job import Changelog, ChangelogResult
from .rules.completeness import read_markers, write_marker
from .views import register_views

__all__ = ["Changelog", "ChangelogResult", "read_markers", "register_views", "write_marker"]
