"""The benchmark application's HTML report: its summary figures, options and plots in one file.

:func:`page` turns the document :func:`watcher.devtools.bench_report.report` gives (and the
PNG plots written beside it) into a self-contained page (:mod:`.html_report`); ``spanner-watcher
bench`` writes it as ``report.html`` into its output folder and prints its path.

Example:
    >>> doc = {"figures": {"mutations": 1500, "all_captured": True, "lag_ms": {"p50": 120.0, "p99": 480.5}},
    ...        "options": {"watchers": 2}, "command": "spanner-watcher bench", "database": "local"}
    >>> html = page(doc, [])
    >>> "1,500" in html and "480.5" in html and "<h1>spanner-watcher bench" in html
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import html_report as h

#: The summary table: (label, key in ``figures``, key within it or None), in the order shown.
SUMMARY: tuple[tuple[str, str, str | None], ...] = (
    ("transactions written", "transactions", None),
    ("mutations written", "mutations", None),
    ("mutations / s after the warm-up", "mutations_per_second", None),
    ("changes received", "received_changes", None),
    ("changes received / s", "received_per_second", None),
    ("every write captured", "all_captured", None),
    ("writes not captured", "missing_changes", None),
    ("duplicate changes", "duplicate_changes", None),
    ("write errors", "write_errors", None),
    ("lag p50, ms (commit to callback)", "lag_ms", "p50"),
    ("lag p95, ms", "lag_ms", "p95"),
    ("lag p99, ms", "lag_ms", "p99"),
    ("lag max, ms", "lag_ms", "p100"),
    ("caught up, s after the writes", "caught_up_seconds_after_writes", None),
    ("polls", "polls", None),
    ("poll time p50, ms", "poll_ms", "p50"),
    ("poll time p99, ms", "poll_ms", "p99"),
    ("rows per poll (mean)", "rows_per_poll_mean", None),
    ("polls with the WITH query", "with_query_polls", None),
    ("rows in the table before the run", "initial_table_rows", None),
)
#: The plots' captions, by file name (bench_report.PLOTS).
CAPTIONS = {
    "throughput.png": "Throughput: mutations written and changes received per second",
    "lag.png": "Detection lag over time (commit to callback)",
    "poll_time.png": "Poll time against the table's size",
}


def summary_rows(figures: dict[str, Any]) -> list[tuple[str, Any]]:
    """The summary table's rows, for the figures the run has.

    >>> summary_rows({"mutations": 10, "lag_ms": {"p99": 5.0}})
    [('mutations written', 10), ('lag p99, ms', 5.0)]
    """
    rows = []
    for label, key, part in SUMMARY:
        value = figures.get(key)
        if part is not None:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            rows.append((label, value))
    return rows


def page(document: dict[str, Any], plots: Sequence[Path]) -> str:
    """The report page of a finished run: the summary, the plots, the options and where it ran."""
    figures, options = document.get("figures", {}), document.get("options", {})
    title = f"spanner-watcher bench, {document['started_at']}" if document.get("started_at") else "spanner-watcher bench"
    sections = [h.note(f"command: {document.get('command') or '-'}; database: {document.get('database') or '-'}")]
    if document.get("failure"):
        sections.append(h.note(f"the run failed: {document['failure']}"))
    sections += [h.heading("Summary"), h.table(summary_rows(figures), header=("figure", "value"))]
    for path in plots:
        sections += [h.heading(CAPTIONS.get(path.name, path.stem)), h.png(path.read_bytes(), CAPTIONS.get(path.name, path.stem))]
    sections += [h.heading("Options"), h.table(sorted(options.items()), header=("option", "value"))]
    machine = document.get("machine")
    if machine:
        sections += [h.heading("Machine"), h.table(sorted(machine.items()))]
    return h.page(title, sections)
