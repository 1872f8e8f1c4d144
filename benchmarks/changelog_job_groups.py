"""The changelog job as :mod:`benchmarks.changelog_job` measures it, on changes in transaction groups.

In :mod:`benchmarks.changelog_job` every change has a commit timestamp of its own, so each is
alone in its transaction group, and the job writes the groups' numbers without joining them
back (:func:`watcher.changelog.rules.grouping.add_grouping`). Here the ten tables' changes of one key
and version share one commit timestamp: 100,000 groups of ten changes, every change's numbers
joined back to its row. The same pairs (plain read + write beside the first run), the same
second run, the same targets, so that the two workloads' figures read side by side.
"""

from __future__ import annotations

from . import Result, RunContext
from .changelog_job import FULL, QUICK, measure

NAME = "changelog_job_groups"
TITLE = "changelog job: 1M staged changes in groups of ten vs plain Spark read+write; 10K-change incremental run"


def run(ctx: RunContext) -> Result:
    result = measure(ctx, {**(QUICK if ctx.quick else FULL), "shared_commits": True}, NAME)
    result.notes.append("The tables' changes of one key and version share a commit timestamp: groups of ten.")
    return result
