"""What the benchmark application shows and writes: the live status line, the figures, the plots.

The status line follows the Java application's (duration, transactions, mutations, received
changes, change-notification latency, average poll time and polls in the last minute, and a
warning while the WITH query is in use). At the end :func:`report` gives a JSON-ready
document and :func:`write_outputs` writes it with three PNG plots (matplotlib): throughput
over time, detection lag over time, and poll time against the table's size, and an HTML
report holding the figures and the plots in one file.

Example:
    >>> percentiles([0.1, 0.2, 0.3, 0.4], (50, 100))
    {'p50': 250.0, 'p100': 400.0}
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import bench_page, html_report
from .bench import Run

#: Seconds of history behind the status line's rate and poll figures.
RATE_WINDOW = 5.0
POLL_WINDOW = 60.0
PLOTS = ("throughput.png", "lag.png", "poll_time.png")
#: The page that shows the figures and the plots together (:mod:`.bench_page`).
REPORT = "report.html"


def percentiles(seconds: Sequence[float], qs: Sequence[float] = (50, 95, 99, 100)) -> dict[str, float]:
    """Percentiles of durations given in seconds, in milliseconds (linear interpolation)."""
    import numpy as np

    if len(seconds) == 0:
        return {}
    values = np.percentile(np.asarray(seconds, dtype=float), list(qs)) * 1000.0
    return {f"p{q:g}": round(float(v), 1) for q, v in zip(qs, values, strict=True)}


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def status_line(run: Run, now: float | None = None) -> str:
    """One line like the Java application's simple status."""
    now = time.time() if now is None else now
    log = run.writers.log
    with log.lock:
        transactions, mutations = len(log.mutations), sum(log.mutations)
        recent = [m for t, m in zip(reversed(log.committed_at), reversed(log.mutations), strict=False) if now - t <= RATE_WINDOW]
    newest = max((r.committed[-1] for _, r in run.watchers if len(r.committed)), default=None)
    latency = f"{now - newest:.1f} s" if newest is not None else "-"
    polls = [(t, s, with_query) for _, r in run.watchers for t, s, _, with_query in list(r.poll_log) if now - t <= POLL_WINDOW]
    avg_poll = f"{sum(s for _, s, _ in polls) / len(polls) * 1000:.0f} ms" if polls else "-"
    with_query = run.using_with_query()
    return (f"{_clock(now - run.started)} | {transactions:,} tx | {mutations:,} mutations "
            f"({sum(recent) / RATE_WINDOW:,.0f}/s) | {run.received:,} changes received | latency {latency} | "
            f"avg poll {avg_poll}, {len(polls):,} polls last minute" + (" | falling back to WITH query!" if with_query else ""))


def report(run: Run, *, initial_rows: int = 0, command: str = "", where: str = "") -> dict[str, Any]:
    """The figures of a finished run, JSON-ready (times in ms unless named otherwise)."""
    import numpy as np

    o, log = run.options, run.writers.log
    measured_from = run.started + o.warmup
    committed_at = np.asarray(log.committed_at, dtype=float)
    mutations = np.asarray(log.mutations, dtype=np.int64)
    arrived = np.concatenate([np.asarray(r.arrived, dtype=float) for _, r in run.watchers]) if run.watchers else np.array([])
    committed = np.concatenate([np.asarray(r.committed, dtype=float) for _, r in run.watchers]) if run.watchers else np.array([])
    lag = arrived - committed
    measured = committed >= measured_from
    window = max(run.writes_end - measured_from, 1e-9)
    written_keys = set(log.keys)
    received_keys = np.concatenate([np.asarray(r.keys, dtype=np.int64) for _, r in run.watchers]) if run.watchers else np.array([])
    unique_received = set(received_keys.tolist())
    polls = [(t, s, rows, wq) for _, r in run.watchers for t, s, rows, wq in r.poll_log]
    poll_seconds = [s for _, s, _, _ in polls]
    total_mutations = int(mutations.sum())
    in_window = (committed_at >= measured_from) & (committed_at <= run.writes_end)
    figures = {
        "seconds_writing": round(run.writes_end - run.started, 2),
        "seconds_measured": round(window, 2),
        "transactions": int(len(mutations)),
        "mutations": total_mutations,
        "write_errors": len(log.errors),
        "write_error_examples": log.errors[:3],
        "mutations_per_second": round(float(mutations[in_window].sum()) / window, 1),
        "transactions_per_second": round(float(in_window.sum()) / window, 1),
        "received_changes": int(len(received_keys)),
        "received_per_second": round(float(((arrived >= measured_from) & (arrived <= run.writes_end)).sum()) / window, 1),
        "missing_changes": len(written_keys - unique_received),
        "duplicate_changes": int(len(received_keys) - len(unique_received)),
        "all_captured": bool(written_keys) and written_keys <= unique_received,
        "caught_up_seconds_after_writes": round(max(float(arrived.max()) - run.writes_end, 0.0), 2) if len(arrived) else None,
        "lag_ms": percentiles(lag[measured]),
        "lag_ms_all": percentiles(lag),
        "commit_ms": percentiles(log.commit_seconds),
        "writer_late_vs_schedule_ms": percentiles(log.late_seconds),
        "polls": len(polls),
        "poll_ms": percentiles(poll_seconds),
        "rows_per_poll_mean": round(sum(r for _, _, r, _ in polls) / len(polls), 1) if polls else 0,
        "with_query_polls": sum(1 for *_, wq in polls if wq),
        "initial_table_rows": initial_rows,
        **run.cpu,
    }
    return {
        "benchmark": "java_app",
        "command": command,
        "database": where,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.started)) if run.started else None,
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]},
        "options": o.as_dict(),
        "expected_mutations_per_second": o.mutations_per_second,
        "drained": run.drained,
        "failure": run.failure,
        "figures": figures,
        "series": series(run, committed_at, mutations, arrived, lag, polls, initial_rows),
    }


def series(run: Run, committed_at: Any, mutations: Any, arrived: Any, lag: Any, polls: list[tuple[float, float, int, bool]],
           initial_rows: int) -> dict[str, list[Any]]:
    """Per-second figures from the start of the writes to the end of the run, for the plots."""
    import numpy as np

    seconds = int(np.ceil(max(run.finished - run.started, 1.0)))
    edges = run.started + np.arange(seconds + 1)
    written, _ = np.histogram(committed_at, bins=edges, weights=mutations)
    received, _ = np.histogram(arrived, bins=edges)
    slot = np.clip(((arrived - run.started) // 1).astype(int), 0, seconds - 1) if len(arrived) else np.array([], dtype=int)
    lag_p50: list[float | None] = []
    lag_p99: list[float | None] = []
    lag_max: list[float | None] = []
    order = np.argsort(slot, kind="stable")
    bounds = np.searchsorted(slot[order], np.arange(seconds + 1))
    for i in range(seconds):
        chunk = lag[order[bounds[i]:bounds[i + 1]]]
        if len(chunk):
            p50, p99 = np.percentile(chunk, [50, 99])
            lag_p50.append(round(float(p50) * 1000, 1))
            lag_p99.append(round(float(p99) * 1000, 1))
            lag_max.append(round(float(chunk.max()) * 1000, 1))
        else:
            lag_p50.append(None)
            lag_p99.append(None)
            lag_max.append(None)
    cumulative = np.concatenate([[0], np.cumsum(mutations)]) if len(mutations) else np.array([0])
    rows_at_poll = [int(initial_rows + cumulative[np.searchsorted(committed_at, t, side="right")]) for t, *_ in polls]
    return {
        "second": list(range(seconds)),
        "mutations_written": [int(x) for x in written],
        "changes_received": [int(x) for x in received],
        "lag_ms_p50": lag_p50, "lag_ms_p99": lag_p99, "lag_ms_max": lag_max,
        "poll_at_second": [round(t - run.started, 2) for t, *_ in polls],
        "poll_ms": [round(s * 1000, 2) for _, s, _, _ in polls],
        "poll_rows": [r for _, _, r, _ in polls],
        "poll_table_rows": rows_at_poll,
    }


def write_outputs(folder: str | Path, document: dict[str, Any]) -> list[Path]:
    """Write ``result.json``, the PNG plots and ``report.html`` (all of it in one page) into ``folder``; the paths,
    the report's last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "result.json"
    tmp = folder / ".result.json.tmp"
    tmp.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    plots = plot(folder, document)
    return [path, *plots, html_report.write(folder / REPORT, bench_page.page(document, plots))]


def plot(folder: Path, document: dict[str, Any]) -> list[Path]:
    """Throughput and lag over time, poll time against table size (PNG, matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s, o = document["series"], document["options"]
    title = (f"{o['write_transactions_per_second']:g} tx/s x 1..{2 * o['mutations_per_transaction']} mutations, "
             f"{o['watchers']} watcher(s), poll {o['poll_interval']:g} s")
    out = []

    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot(s["second"], s["mutations_written"], label="mutations written / s")
    ax.plot(s["second"], s["changes_received"], label="changes received / s", alpha=0.8)
    ax.axvline(o["duration"], color="grey", linestyle=":", label="writers stop")
    ax.set(xlabel="seconds since the writers started", ylabel="per second", title=f"Throughput: {title}")
    ax.legend()
    ax.grid(alpha=0.3)
    out.append(_save(fig, folder / PLOTS[0]))

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for key, label in (("lag_ms_max", "max"), ("lag_ms_p99", "p99"), ("lag_ms_p50", "p50")):
        ax.plot(s["second"], [v / 1000 if v is not None else float("nan") for v in s[key]], label=f"lag {label}")
    ax.axvline(o["warmup"], color="grey", linestyle=":", label="end of warm-up")
    ax.set(xlabel="seconds since the writers started (by arrival)", ylabel="commit to callback, seconds",
           title=f"Detection lag: {title}")
    ax.legend()
    ax.grid(alpha=0.3)
    out.append(_save(fig, folder / PLOTS[1]))

    fig, ax = plt.subplots(figsize=(9, 4.5))
    label = "without the index hint" if o["disable_table_hint"] else "with FORCE_INDEX on the shard index"
    ax.scatter(s["poll_table_rows"], s["poll_ms"], s=6, alpha=0.6, label=f"polls {label}")
    ax.set(xlabel="rows in the table", ylabel="poll time, ms", title=f"Poll time against table size: {title}")
    ax.legend()
    ax.grid(alpha=0.3)
    out.append(_save(fig, folder / PLOTS[2]))
    return out


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
