"""Retention: what the warehouse and the staging folder may forget, and when it is safe to.

Three independent rules, each off unless configured (:class:`RetentionPolicy`):

- **staging** (``--staging-retention``): a staged batch file is removed once a *complete* run consumed
  it (its ``runs`` row names it and ``watermarks`` holds the run, :mod:`.ledger`) and that run began
  at least the age ago. A batch no run consumed, or only a run a crash left open, always stays: the
  open run is finished from the batches its row names.
- **history** (``--history-retention``): changelog rows whose commit date is older than the age are
  dropped with a Delta DELETE on the ``commit_date`` partitions (whole days: a day goes once all of it
  is older than the age). Only the changelog: ``current_state`` is its own table and keeps every
  key's latest row however old. The job tells a change it already holds from a new one by the
  changelog's rows, so keep history longer than any watcher may lag or re-stage (a watcher restarted
  from an old checkpoint); exports that read the changelog must have read a day before it goes.
- **VACUUM** (``--vacuum-retention``): the files no table version newer than the retention needs are
  deleted from all four tables. Delta's default, 7 days (:data:`DEFAULT_VACUUM`), and a shorter one is
  refused unless forced, as Delta does: a reader or writer still working on an older version would
  find its files gone. After VACUUM, time travel (``versionAsOf``, ``startingVersion`` of the change
  data feed) to a version older than the retention fails: its files are gone, though the log lists it.

Without Spark: the rules run on delta-rs (``DeltaTable.delete``, ``DeltaTable.vacuum``) and pyarrow's
filesystems, so a job can apply them on its driver after its run, and the command line without a
JVM; Delta's optimistic concurrency keeps them safe beside a Spark writer. Time is an input (``now``)
for the staging and history rules; VACUUM compares the files' removal times with the machine's
clock, as delta-rs and Delta do.

Example:
    >>> parse_duration("7d"), parse_duration("36h"), parse_duration("90m")
    (datetime.timedelta(days=7), datetime.timedelta(days=1, seconds=43200), datetime.timedelta(seconds=5400))
    >>> import datetime as dt
    >>> history_cutoff(dt.datetime(2024, 5, 10, 12, tzinfo=dt.UTC), dt.timedelta(days=3))
    datetime.date(2024, 5, 7)
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigurationError
from . import layout
from .ledger import Ledger
from .readers import arrow_table

#: Delta's default retention of removed files (``delta.deletedFileRetentionDuration``): VACUUM keeps
#: at least this much unless forced.
DEFAULT_VACUUM = dt.timedelta(days=7)
#: Units of a duration's text.
UNITS: dict[str, dt.timedelta] = {"s": dt.timedelta(seconds=1), "m": dt.timedelta(minutes=1),
                                   "h": dt.timedelta(hours=1), "d": dt.timedelta(days=1), "w": dt.timedelta(weeks=1)}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_duration(text: str, option: str = "duration") -> dt.timedelta:
    """``<number><unit>`` with unit s, m, h, d or w as a timedelta; ``option`` names it in the error.

    >>> parse_duration("2w")
    datetime.timedelta(days=14)
    >>> parse_duration("soon", "--history-retention")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: --history-retention: expected a duration such as 30d, 36h or 90m (units s, m, h, d, w), got 'soon'
    """
    match = _DURATION.match(text or "")
    if match is None:
        raise ConfigurationError(f"{option}: expected a duration such as 30d, 36h or 90m (units {', '.join(UNITS)}), "
                                 f"got {text!r}")
    return float(match.group(1)) * UNITS[match.group(2)]


def format_duration(age: dt.timedelta) -> str:
    """A duration in the largest unit that divides it, as :func:`parse_duration` reads it.

    >>> format_duration(dt.timedelta(days=14)), format_duration(dt.timedelta(hours=36)), format_duration(dt.timedelta(0))
    ('2w', '36h', '0s')
    """
    seconds = age.total_seconds()
    for unit, size in sorted(UNITS.items(), key=lambda item: -item[1].total_seconds()):
        if seconds and seconds % size.total_seconds() == 0:
            return f"{int(seconds // size.total_seconds())}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True)
class RetentionPolicy:
    """What to forget; None turns a rule off. ``force_vacuum`` allows a VACUUM retention under 7 days.

    >>> RetentionPolicy(vacuum=dt.timedelta(hours=1)).check()
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: --vacuum-retention 1h is shorter than Delta's safe 7 days: a reader or writer still on an older table version would lose its files; give --force-vacuum-retention to do it anyway
    """

    staging: dt.timedelta | None = None
    history: dt.timedelta | None = None
    vacuum: dt.timedelta | None = None
    force_vacuum: bool = False

    def check(self) -> RetentionPolicy:
        for option, age in (("--staging-retention", self.staging), ("--history-retention", self.history),
                            ("--vacuum-retention", self.vacuum)):
            if age is not None and age < dt.timedelta(0):
                raise ConfigurationError(f"{option} must not be negative, got {format_duration(age)}")
        if self.vacuum is not None and self.vacuum < DEFAULT_VACUUM and not self.force_vacuum:
            raise ConfigurationError(f"--vacuum-retention {format_duration(self.vacuum)} is shorter than Delta's safe 7 days: a reader "
                                     "or writer still on an older table version would lose its files; give "
                                     "--force-vacuum-retention to do it anyway")
        return self

    @property
    def active(self) -> bool:
        return any(age is not None for age in (self.staging, self.history, self.vacuum))


@dataclass
class RetentionResult:
    """What :func:`apply` removed."""

    staged_batches_removed: list[str] = field(default_factory=list)
    history_rows_dropped: int = 0
    vacuumed_files: dict[str, int] = field(default_factory=dict)


def removable_batches(ledger: Ledger, age: dt.timedelta, now: dt.datetime) -> list[str]:
    """The staged batches complete runs consumed that began at least ``age`` before ``now``.

    >>> import tempfile
    >>> ledger = Ledger(tempfile.mkdtemp()); ledger.create_tables()
    >>> run = ledger.begin(["b1"], now=dt.datetime(2024, 5, 1, tzinfo=dt.UTC))
    >>> removable_batches(ledger, dt.timedelta(days=1), dt.datetime(2024, 6, 1, tzinfo=dt.UTC))  # run not complete
    []
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    complete = ledger.held_version(layout.WATERMARKS.name)
    try:
        runs = DeltaTable(ledger.uri(layout.RUNS.name), storage_options=ledger.storage_options or None)
    except TableNotFoundError:
        return []
    rows = arrow_table(runs, columns=["run_version", "batches", "started_at"]).to_pylist()
    cutoff = now - age
    return sorted({batch for row in rows if row["run_version"] <= complete and row["started_at"] <= cutoff
                   for batch in row["batches"] or ()})


def remove_staged(staging: str, batches: list[str]) -> list[str]:
    """Delete the named batch files (relative to ``staging``, or full paths/URLs); returns those deleted."""
    import pyarrow.fs as pafs

    from ...storage_urls import open_filesystem

    fs, root, _ = open_filesystem(staging)
    removed = []
    for batch in batches:
        path = batch if batch.startswith("/") else f"{root}/{batch}"
        if "://" in batch:
            fs, path, _ = open_filesystem(batch)
        if fs.get_file_info(path).type == pafs.FileType.File:
            fs.delete_file(path)
            removed.append(batch)
    return removed


def history_cutoff(now: dt.datetime, age: dt.timedelta) -> dt.date:
    """The oldest commit date history retention keeps: days before it are wholly older than ``age``."""
    return (now - age).astimezone(dt.UTC).date()


def drop_history(ledger: Ledger, age: dt.timedelta, now: dt.datetime) -> int:
    """Delete the changelog's rows of commit dates before :func:`history_cutoff`; returns the rows deleted."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(ledger.uri(layout.CHANGELOG.name), storage_options=ledger.storage_options or None)
    except TableNotFoundError:
        return 0
    cutoff = history_cutoff(now, age).isoformat()
    metrics = table.delete(predicate=f"commit_date < '{cutoff}'")
    return int(metrics.get("num_deleted_rows", 0) or 0)


def vacuum(ledger: Ledger, retention: dt.timedelta = DEFAULT_VACUUM, *, force: bool = False) -> dict[str, int]:
    """VACUUM every table of the warehouse keeping ``retention``; returns the files deleted per table."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    RetentionPolicy(vacuum=retention, force_vacuum=force).check()
    hours = math.ceil(retention.total_seconds() / 3600)
    out = {}
    for spec in layout.COMMIT_ORDER:
        try:
            table = DeltaTable(ledger.uri(spec.name), storage_options=ledger.storage_options or None)
        except TableNotFoundError:
            continue
        out[spec.name] = len(table.vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=not force))
    return out


def apply(warehouse: str, staging: str | None, policy: RetentionPolicy, now: dt.datetime, *,
          storage_options: Mapping[str, str] | None = None) -> RetentionResult:
    """Apply ``policy`` to ``warehouse`` (and its ``staging`` folder) as of ``now``; call it after a run committed.

    >>> import tempfile
    >>> apply(tempfile.mkdtemp(), None, RetentionPolicy(), dt.datetime(2024, 5, 1, tzinfo=dt.UTC))
    RetentionResult(staged_batches_removed=[], history_rows_dropped=0, vacuumed_files={})
    """
    policy.check()
    ledger = Ledger(warehouse, storage_options=storage_options)
    result = RetentionResult()
    if policy.staging is not None:
        if staging is None:
            raise ConfigurationError("--staging-retention needs the staging folder (--staging)")
        result.staged_batches_removed = remove_staged(staging, removable_batches(ledger, policy.staging, now))
    if policy.history is not None:
        result.history_rows_dropped = drop_history(ledger, policy.history, now)
    if policy.vacuum is not None:
        result.vacuumed_files = vacuum(ledger, policy.vacuum, force=policy.force_vacuum)
    return result


def summary(result: RetentionResult) -> dict[str, Any]:
    """What :func:`apply` did, for the command line's report."""
    return {"staged_batches_removed": len(result.staged_batches_removed),
            "history_rows_dropped": result.history_rows_dropped, "vacuumed_files": dict(result.vacuumed_files)}
