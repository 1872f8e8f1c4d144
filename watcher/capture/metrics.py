"""Watcher figures in the Prometheus text exposition format.

Example:
    >>> print(prometheus_text([{"table": "Singers", "shard": "all", "polls": 3, "rows": 10,
    ...                          "last_poll_seconds": 0.01, "lag_seconds": 1.5, "failures": 0,
    ...                          "retries": 0, "watermark_seconds": 1.7e9, "running": 1}]).splitlines()[2])
    spanner_watcher_polls_total{table="Singers",shard="all"} 3

Written by hand rather than with ``prometheus_client``: its collector API saves a few
lines here but prints every value as a float (``3.0``; a row count above 2**53 loses digits)
and sorts the labels (``shard`` before ``table``), which scrapers accept but people and the
tests that read this text do not expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: metric name, stats key, type, help
METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("spanner_watcher_polls_total", "polls", "counter", "Polls run."),
    ("spanner_watcher_rows_total", "rows", "counter", "Changed rows delivered to callbacks."),
    ("spanner_watcher_last_poll_duration_seconds", "last_poll_seconds", "gauge", "Duration of the last poll."),
    ("spanner_watcher_lag_seconds", "lag_seconds", "gauge", "Now minus the watermark."),
    ("spanner_watcher_watermark_timestamp_seconds", "watermark_seconds", "gauge", "Every change up to this time was delivered."),
    ("spanner_watcher_failures_total", "failures", "counter", "Polls or checkpoint writes that failed."),
    ("spanner_watcher_retries_total", "retries", "counter", "Retries after transient errors."),
    ("spanner_watcher_running", "running", "gauge", "1 while the watcher runs."),
    ("spanner_watcher_table_dropped", "dropped", "gauge", "1 when the table was dropped and its watcher ended."),
)

#: The table set of a DatabaseWatcher (no labels): metric name, database_stats key, type, help.
DATABASE_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("spanner_watcher_tables_watched", "tables_watched", "gauge", "Tables watched now."),
    ("spanner_watcher_tables_added_total", "tables_added", "counter", "Tables created while watching that joined."),
    ("spanner_watcher_tables_dropped_total", "tables_dropped", "counter", "Watched tables that were dropped."),
    ("spanner_watcher_table_discoveries_total", "discoveries", "counter", "Looks for created and dropped tables."),
)


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(samples: Iterable[Mapping[str, Any]]) -> str:
    """One block per metric; each sample is a stats dict with ``table`` and ``shard`` labels."""
    samples = list(samples)
    lines: list[str] = []
    for name, key, kind, help_text in METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for s in samples:
            value = s.get(key)
            if value is None:
                continue
            labels = f'table="{_escape(s.get("table", ""))}",shard="{_escape(s.get("shard", ""))}"'
            # repr keeps every digit: ':g' would round a Unix-time watermark to 1.7e+09.
            lines.append(f"{name}{{{labels}}} {value!r}" if isinstance(value, float) else f"{name}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def database_text(stats: Mapping[str, Any]) -> str:
    """The figures of a DatabaseWatcher's table set (its ``database_stats()``), one unlabelled sample each.

    >>> print(database_text({"tables_watched": 2, "tables_added": 1}).splitlines()[2])
    spanner_watcher_tables_watched 2
    """
    lines: list[str] = []
    for name, key, kind, help_text in DATABASE_METRICS:
        if stats.get(key) is None:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {stats[key]}"]
    return "\n".join(lines) + "\n" if lines else ""


#: A ChangeStreamWatcher's own figures (label ``stream``): metric name, stats key, type, help.
STREAM_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("spanner_watcher_change_stream_partitions_active", "partitions_active", "gauge", "Partitions being read."),
    ("spanner_watcher_change_stream_partitions_waiting", "partitions_waiting", "gauge",
     "Partitions known but not yet read (parents still running)."),
    ("spanner_watcher_change_stream_partitions_finished", "partitions_finished", "gauge", "Partitions read to their end."),
    ("spanner_watcher_change_stream_records_total", "records", "counter", "Data change records read."),
    ("spanner_watcher_change_stream_heartbeats_total", "heartbeats", "counter", "Heartbeat records read."),
)


def stream_text(stats: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> str:
    """The partition and record figures of change stream watchers' ``stats()`` (one or several).

    >>> print(stream_text({"stream": "S", "partitions_active": 2}).splitlines()[2])
    spanner_watcher_change_stream_partitions_active{stream="S"} 2
    """
    samples = [stats] if isinstance(stats, Mapping) else list(stats)
    lines: list[str] = []
    for name, key, kind, help_text in STREAM_METRICS:
        values = [(s.get("stream", ""), s[key]) for s in samples if s.get(key) is not None]
        if not values:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [f'{name}{{stream="{_escape(stream)}"}} {value}' for stream, value in values]
    return "\n".join(lines) + "\n" if lines else ""
