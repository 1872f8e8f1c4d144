"""The demo's capture modes: one :class:`Capture` per mode, each with its watcher, its own staging
folder and changelog warehouse, and what its callbacks saw (versions, deletes, lag, each key's
last value), so ``spanner-watcher demo --mode both`` can put the two modes side by side.

Polling sees rows: versions overwritten between two polls coalesce into the newer one, and a
hard delete leaves nothing to see. A change stream sees the log: every version and every
delete at its commit time. The side-by-side table makes that difference visible.

Example:
    >>> percentile([3.0, 1.0, 2.0], 0.5)
    2.0
    >>> MODES
    ('poll', 'change_stream', 'both')
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

#: ``--mode`` values; ``both`` runs the first two side by side on one workload.
MODES = ("poll", "change_stream", "both")
#: The demo's change stream (created when a mode needs it).
STREAM = "SingersStream"
#: Whole new rows and the old values of the changed columns: the changelog gets both as they were.
STREAM_VALUE_CAPTURE = "NEW_ROW_AND_OLD_VALUES"
#: Human names of the modes in the output.
TITLES = {"poll": "polling", "change_stream": "change stream"}


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``values`` (nearest rank); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Capture:
    """One capture mode's watcher and what it delivered (its callbacks run on watcher threads).

    Args:
        mode: ``poll`` or ``change_stream``.
        watcher: the (not yet started) watcher of that mode.
        staging: where its sink stages batches; ``warehouse``: where its changelog goes.
    """

    def __init__(self, mode: str, watcher: Any, staging: Path, warehouse: Path) -> None:
        from ..staging.sink import StagingSink

        self.mode, self.watcher, self.staging, self.warehouse = mode, watcher, staging, warehouse
        self.lock = threading.Lock()
        self.versions = 0
        self.deletes = 0
        self.lags: list[float] = []
        #: SingerId -> the FirstName of its last delivered version (deleted keys removed).
        self.captured: dict[int, str | None] = {}
        self.sink = StagingSink(staging, watcher_id=f"demo-{mode}")
        self.sink.attach(watcher)
        watcher.add_callback(self.on_change)

    def on_change(self, change: Any) -> None:
        from ..model import timestamp_nanos

        lag = time.time() - timestamp_nanos(change.commit_timestamp) / 1e9
        key = change.keys[0]
        with self.lock:
            self.versions += 1
            self.lags.append(lag)
            if change.mod_type == "DELETE":
                self.deletes += 1
                self.captured.pop(key, None)
            else:
                self.captured[key] = change.row.get("FirstName", self.captured.get(key))

    def missing(self, final: dict[int, str]) -> int:
        """Keys whose last version this mode did not deliver; for a change stream also keys
        deleted in the table whose delete it did not deliver (polling cannot see deletes)."""
        with self.lock:
            wrong = sum(1 for k, v in final.items() if self.captured.get(k) != v)
            if self.mode == "change_stream":
                wrong += sum(1 for k in self.captured if k not in final)
        return wrong

    def changelog(self, spark: Any) -> dict[str, Any]:
        """Run the Spark changelog job over this mode's staging folder; its figures."""
        from ..changelog import Changelog

        result = Changelog(spark).staging(str(self.staging)).warehouse(str(self.warehouse)).run()
        by_type = {r["mod_type"]: r["changes"] for r in spark.sql(
            "SELECT mod_type, COUNT(*) AS changes FROM changelog WHERE table_name = 'Singers' GROUP BY mod_type").collect()}
        state = spark.sql("SELECT COUNT(*) AS n FROM current_state WHERE table_name = 'Singers'").collect()[0]["n"]
        return {"changelog_changes_written": result.changes_written, "changelog_duplicates_dropped": result.duplicates_dropped,
                "changelog_seconds": round(result.seconds, 1), "changelog_by_mod_type": dict(sorted(by_type.items())),
                "current_state_rows": state}

    def figures(self, final: dict[int, str]) -> dict[str, Any]:
        """What the callbacks saw: versions, deletes, keys missing, lag percentiles (ms)."""
        with self.lock:
            lags = list(self.lags)
            versions, deletes = self.versions, self.deletes
        return {"changes_captured": versions, "deletes_captured": deletes, "keys_missing": self.missing(final),
                "lag_p50_ms": round(1000 * (percentile(lags, 0.50) or 0), 1),
                "lag_p99_ms": round(1000 * (percentile(lags, 0.99) or 0), 1),
                "staging": str(self.staging), "warehouse": str(self.warehouse)}


def caught_up(captures: list[Capture], final: dict[int, str]) -> bool:
    """Every capture delivered each key's last version (and a stream every delete)."""
    return all(c.missing(final) == 0 for c in captures)


#: Figures of one capture mode shown in the side-by-side table: key -> label.
SIDE_BY_SIDE = {
    "changes_captured": "versions captured",
    "deletes_captured": "hard deletes captured",
    "keys_missing": "keys not at their last state",
    "lag_p50_ms": "lag p50 (ms)",
    "lag_p99_ms": "lag p99 (ms)",
    "changelog_by_mod_type": "changelog by mod_type",
    "current_state_rows": "current-state rows",
    "warehouse": "changelog warehouse",
}
#: What the side-by-side figures mean, printed under the table.
NOTES = ("versions: a change stream delivers every version; polling sees rows, so versions overwritten "
         "between two polls coalesce into the newer one.",
         "deletes: a hard delete leaves no row to poll; the stream reports it at its commit time, so polling's "
         "current state still holds deleted keys.",
         "lag: commit timestamp to callback.")


def print_side_by_side(console: Console, summary: dict[str, Any]) -> None:
    """The two modes' figures in two columns, what they mean, then the workload's."""
    modes = list(summary["captures"])
    table = RichTable(title="spanner-watcher demo: one workload, both capture modes")
    table.add_column("figure")
    for mode in modes:
        table.add_column(TITLES[mode], justify="right")
    for key, label in SIDE_BY_SIDE.items():
        table.add_row(label, *(str(summary["captures"][m][key]) for m in modes))
    console.print(table)
    for note in NOTES:
        console.print(f"  {note}")
    console.print(f"workload: {summary['mutations_written']:,} mutations in {summary['transactions']:,} transactions "
                  f"({summary['deletes_written']:,} deletes) on {summary['keys_written']:,} keys; "
                  f"{summary['rows_in_table']:,} rows in Singers at the end; {summary['writer_errors']} writer errors")
