"""The demo's HTML report: what it wrote, what each capture mode saw, and the changelog built from it.

``spanner-watcher demo`` writes it as ``report.html`` into its work folder and prints its path:
the summary table (for ``--mode both`` the two modes side by side, with what the figures mean),
bar charts of the changelog's rows by mod_type and of the lag, and the query to try next, all in
one self-contained page (:mod:`.html_report`). :data:`LABELS` is also what the terminal's
summary table shows.

Example:
    >>> summary = {"mode": "poll", "mutations_written": 90, "changes_captured": 80, "lag_p50_ms": 40.0,
    ...            "lag_p99_ms": 95.5, "changelog_by_mod_type": {"INSERT": 50, "UPDATE": 30}, "seconds": 12.5}
    >>> html = page(summary, "SELECT 1")
    >>> "95.5" in html and "INSERT 50, UPDATE 30" in html and html.count("<svg") == 2
    True
"""

from __future__ import annotations

from typing import Any

from . import html_report as h
from .demo_capture import NOTES, SIDE_BY_SIDE, TITLES

#: The report's file name in the demo's work folder.
REPORT = "report.html"
#: The figures of a one-mode run: summary key -> label (the terminal's table and the report's).
LABELS = {
    "mutations_written": "mutations written", "transactions": "write transactions",
    "keys_written": "distinct keys written", "rows_in_table": "rows in Singers at the end",
    "changes_captured": "changes captured",
    "keys_missing": "keys whose last version was not captured", "lag_p50_ms": "lag p50 (commit to callback, ms)",
    "lag_p99_ms": "lag p99 (ms)", "changelog_by_mod_type": "changelog rows by mod_type",
    "current_state_rows": "current-state rows", "staging": "staging folder", "warehouse": "changelog warehouse",
    "writer_errors": "writer errors", "database": "database", "seconds": "total seconds",
}
#: What a one-mode run adds in change-stream mode.
STREAM_LABELS = {"deletes_written": "rows deleted by the writers", "deletes_captured": "hard deletes captured"}
#: How changes_captured is read, by mode.
CAPTURED = {"change_stream": "every version", "poll": "versions overwritten between polls coalesce"}


def labels(mode: str) -> dict[str, str]:
    """The one-mode summary's rows for ``mode``: key -> label.

    >>> labels("change_stream")["changes_captured"], "deletes_captured" in labels("poll")
    ('changes captured (every version)', False)
    """
    shown = {**LABELS, "changes_captured": f"{LABELS['changes_captured']} ({CAPTURED[mode]})"}
    return {**shown, **STREAM_LABELS} if mode == "change_stream" else shown


def shown(value: Any) -> Any:
    """A figure as a table cell: a count per kind as one line, others as they are.

    >>> shown({"INSERT": 3, "UPDATE": 1200}), shown(7)
    ('INSERT 3, UPDATE 1,200', 7)
    """
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items())
    return value


def page(summary: dict[str, Any], next_query: str) -> str:
    """The report of a finished demo run (:func:`watcher.devtools.demo.run_demo`'s summary)."""
    mode = summary.get("mode", "poll")
    sections = [h.note(f"database {summary.get('database', '-')}; {summary.get('seconds', '-')} s in all")]
    if mode == "both":
        captures = summary["captures"]
        modes = list(captures)
        sections += [h.heading("Both capture modes on one workload"),
                     h.table([(label, *(shown(captures[m].get(key)) for m in modes)) for key, label in SIDE_BY_SIDE.items()],
                             header=("figure", *(TITLES[m] for m in modes))),
                     *(h.note(n) for n in NOTES),
                     h.heading("Workload"),
                     h.table([(label, summary.get(key)) for key, label in LABELS.items()
                              if key in summary and key not in captures[modes[0]]] +
                             [(label, summary.get(key)) for key, label in STREAM_LABELS.items() if key in summary])]
    else:
        captures = {mode: summary}
        sections += [h.heading("Summary"),
                     h.table([(label, shown(summary[key])) for key, label in labels(mode).items() if key in summary],
                             header=("figure", "value"))]
    for m, figures in captures.items():
        title = TITLES.get(m, m)
        sections += [h.heading(f"Changelog rows by mod_type ({title})"), h.bars(figures.get("changelog_by_mod_type", {}))]
    sections += [h.heading("Lag, commit to callback"),
                 h.bars({f"{TITLES.get(m, m)} {q}": f.get(f"lag_{q}_ms") for m, f in captures.items() for q in ("p50", "p99")},
                        unit=" ms")]
    sections += [h.heading("Next"), h.note("query the changelog with Spark (watcher.changelog.views.register_views):"),
                 f"<pre>{h.escape(next_query)}</pre>"]
    return h.page(f"spanner-watcher demo ({'both capture modes' if mode == 'both' else TITLES.get(mode, mode)})", sections)


#: The figures of ``demo --sink kafka``: summary key -> label.
KAFKA_LABELS = {
    "mutations_written": "mutations written", "keys_written": "distinct keys written",
    "rows_in_table": "rows in Singers at the end", "changes_published": "changes published and acknowledged",
    "messages_consumed": "messages a plain consumer read", "keys_missing": "keys whose last version did not arrive",
    "writer_errors": "writer errors", "bootstrap_servers": "Kafka bootstrap servers", "seconds": "total seconds",
}


def kafka_page(summary: dict[str, Any]) -> str:
    """The report of ``demo --sink kafka`` (:func:`watcher.devtools.demo_kafka.run_kafka_demo`'s summary).

    >>> html = kafka_page({"mode": "poll", "changes_published": 1200, "messages_per_topic": {"demo.Singers": 1200},
    ...                    "sample": ['demo.Singers key={"key":["1"]} value={...}']})
    >>> "1,200" in html and "demo.Singers" in html and html.count("<svg") == 1 and "&quot;key&quot;" in html
    True
    """
    mode = summary.get("mode", "poll")
    sample = "\n".join(summary.get("sample", []))
    return h.page(f"spanner-watcher demo into Kafka ({TITLES.get(mode, mode)})", [
        h.heading("Summary"),
        h.table([(label, summary[key]) for key, label in KAFKA_LABELS.items() if key in summary], header=("figure", "value")),
        h.heading("Messages per topic"), h.bars(summary.get("messages_per_topic", {})),
        h.heading("A few messages, as a plain consumer receives them"), f"<pre>{h.escape(sample)}</pre>",
    ])
