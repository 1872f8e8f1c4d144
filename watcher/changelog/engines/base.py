"""The engine interface: what computes a run's rows and writes them, table by table, committed as the run.

The run's orchestration (:mod:`..run`) asks the ledger (:mod:`..tables.ledger`) which run to do
and which of its tables are still to write, and an engine does the work:

1. :meth:`Engine.prepare` takes the run (its number and the staged batches the ``runs`` table
   says it consumes, as :class:`..io.files.FileEntry` of the run's batch source) and builds what
   every table's part is computed from: the batches' classified rows against the current state
   *as the tables held it before the run*: when a crashed attempt merged the run into
   ``current_state`` already, the version before that commit (Delta time travel,
   :meth:`..tables.ledger.Ledger.version_before`). So a prepared run is the same whether it is the
   first attempt or a crashed one's repeat. Nothing is written.
2. :meth:`PreparedRun.write` writes one table's part of the run and commits it to that table
   with the run's idempotent settings (Spark's ``txnAppId``/``txnVersion``, the MERGE's session
   settings, delta-rs' commit properties): a repeat of a committed part is skipped by Delta.
   The orchestration calls it for each table of :meth:`..tables.ledger.Run.pending`, in
   :data:`..tables.layout.COMMIT_ORDER` (changelog, current_state, watermarks). What a table's
   part holds depends only on the run's batches and the tables before it in the order.
3. :meth:`PreparedRun.close` frees what :meth:`Engine.prepare` kept (always called, also after
   an error).

After the writes :attr:`PreparedRun.outcome` says what the run did (counts for the report, the
bad batches to set aside). Bad batches are left out of every table's part; they are consumed by
the run all the same (the ``runs`` row names them) and set aside by the orchestration.

Errors: an engine raises :class:`watcher.errors.ChangelogError` for what is wrong with the input
or the warehouse (naming the batch, table or folder); anything else is a failure of the engine
(Spark's, the filesystem's). Either way the tables committed so far stay committed and the run
stays open: the next attempt prepares it again and writes the tables still pending.

Thread-safety: one run at a time per warehouse (the ledger refuses a second), and an engine's
objects are used by one thread, the driver's.

Example:
    >>> sorted(Outcome().summary())[:3]
    ['bad', 'batches', 'counts']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ..tables import layout
from ..tables.ledger import Ledger, Run


@dataclass
class Outcome:
    """What a prepared run found in its batches (filled by :meth:`Engine.prepare` and the writes)."""

    #: Per good batch its stats (:class:`..input.staging_reader.BatchStats`).
    batches: list[Any] = field(default_factory=list)
    #: Bad batch name -> reason (left out of the run's rows).
    bad: dict[str, str] = field(default_factory=dict)
    #: The tally's outcome counts (:class:`.tally.OutcomeCount`).
    counts: list[Any] = field(default_factory=list)
    #: Late rows dropped because the changelog held their version already.
    late_known: int = 0
    #: Change-stream rows that replaced a polled row of an earlier run (table, mod_type) -> rows
    #: counted as duplicates by the tally; and late ones (counted as changes).
    replaced_duplicates: dict[tuple[str, str], int] = field(default_factory=dict)
    replaced_late: int = 0
    #: How updates' old values were computed ("jvm", "sql" or "python").
    old_values_by: str = ""

    def summary(self) -> dict[str, Any]:
        return dict(self.__dict__)


class PreparedRun(ABC):
    """A run's rows, ready to be written table by table (see the module docstring)."""

    outcome: Outcome

    @abstractmethod
    def write(self, table: str) -> None:
        """Write and commit ``table``'s part of the run (committed as the run: a repeat is skipped)."""

    @abstractmethod
    def close(self) -> None:
        """Free what the run kept."""

    def __enter__(self) -> PreparedRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Engine(ABC):
    """Computes runs (see the module docstring for the order, errors and threads)."""

    #: The engine's name in the run's report (``ChangelogResult.engine``).
    name: str = ""

    @abstractmethod
    def prepare(self, run: Run, batches: list[Any]) -> PreparedRun:
        """The run over ``batches`` (the run's, as its batch source lists them) against the state before it."""


def hold(ledger: Ledger, run: Run, table: str) -> None:
    """After a part's write: an empty commit as ``run`` when the write left none (nothing to write or
    merge), so that every table holds every run (:meth:`..tables.ledger.Ledger.held_version`)."""
    if ledger.held_version(table) < run.version:
        ledger.commit_empty(run, table)


def all_newer(ledger: Ledger, firsts: list[str | None]) -> bool:
    """Whether every new row's commit (``firsts``: each batch's earliest, exact texts) is later, by the
    microsecond, than the newest the changelog holds, by the files' statistics in the Delta log (no
    read of the table; False when a statistic is missing): then no earlier run wrote rows of their
    transaction groups."""
    import pyarrow as pa

    from ..tables.watermark_table import timestamp_of

    found = ledger._open(layout.CHANGELOG.name)
    if not firsts or None in firsts or found is None:
        return False
    actions = pa.table(found.get_add_actions(flatten=True))
    newest = actions.column("max.commit_timestamp").to_pylist() if "max.commit_timestamp" in actions.column_names else []
    if not newest or any(value is None for value in newest):
        return False
    return timestamp_of(min(str(f) for f in firsts))[0] > max(newest)
