"""A sink's figures: changes published and acknowledged, retries, failures and acknowledgement latency.

One :class:`SinkMetrics` per sink, named by the sink (its ``name`` label). A sink (or the
:class:`~watcher.sinks.metered.MeteredSink` wrapped around it) reports through the hook methods,
from any thread:

* :meth:`SinkMetrics.published`: changes handed to the sink (a batch, before it is durable);
* :meth:`SinkMetrics.acknowledged`: changes the sink made durable, and how long that took;
* :meth:`SinkMetrics.failed`: a batch the sink refused (its changes are not acknowledged);
* :meth:`SinkMetrics.retried`: a batch sent again after a failure (or a sink's own retry).

:func:`prometheus_text` prints them in the Prometheus text format, which ``watch
--metrics-port`` serves at ``/metrics`` beside the watcher's own figures (:data:`METRICS`
lists the names).

Example:
    >>> m = SinkMetrics("kafka")
    >>> m.published(3); m.acknowledged(3, 0.02)
    >>> [line for line in prometheus_text([m]).splitlines() if line.startswith("spanner_watcher_sink_ack")][:2]
    ['spanner_watcher_sink_acknowledged_total{sink="kafka"} 3', 'spanner_watcher_sink_ack_latency_seconds_bucket{sink="kafka",le="0.005"} 0']
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["LATENCY_BUCKETS", "METRICS", "SinkMetrics", "prometheus_text"]

#: Upper bounds (seconds) of the acknowledgement latency histogram's buckets (``+Inf`` follows).
LATENCY_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: The counters: metric name, figure, help.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("spanner_watcher_sink_published_total", "published", "Changes handed to the sink."),
    ("spanner_watcher_sink_acknowledged_total", "acknowledged", "Changes the sink made durable (acknowledged)."),
    ("spanner_watcher_sink_retries_total", "retries", "Batches sent again after a failure."),
    ("spanner_watcher_sink_failures_total", "failures", "Batches the sink refused (not acknowledged)."),
)
#: The histogram of seconds from a batch handed to the sink to its acknowledgement.
LATENCY = "spanner_watcher_sink_ack_latency_seconds"


class SinkMetrics:
    """The figures of one sink (thread-safe); see the module docstring for the hooks.

    Args:
        name: the sink's name, the ``sink`` label of its metrics.
    """

    def __init__(self, name: str) -> None:
        if not name:
            raise ValueError("a sink's metrics need a name")
        self.name = name
        self._lock = threading.Lock()
        self._counts = {figure: 0 for _, figure, _ in METRICS}
        self._buckets = [0] * len(LATENCY_BUCKETS)
        self._latency_sum = 0.0
        self._latency_count = 0

    def published(self, changes: int) -> None:
        """``changes`` were handed to the sink (not yet durable)."""
        self._add("published", changes)

    def acknowledged(self, changes: int, seconds: float) -> None:
        """``changes`` are durable, ``seconds`` after they were handed to the sink."""
        with self._lock:
            self._counts["acknowledged"] += changes
            index = bisect.bisect_left(LATENCY_BUCKETS, seconds)
            if index < len(self._buckets):
                self._buckets[index] += 1
            self._latency_sum += seconds
            self._latency_count += 1

    def failed(self) -> None:
        """The sink refused a batch."""
        self._add("failures", 1)

    def retried(self, batches: int = 1) -> None:
        """A batch was sent again after a failure."""
        self._add("retries", batches)

    def _add(self, figure: str, n: int) -> None:
        with self._lock:
            self._counts[figure] += n

    def snapshot(self) -> dict[str, Any]:
        """The figures now: the counters, ``latency_sum``, ``latency_count`` and cumulative ``latency_buckets``.

        >>> m = SinkMetrics("s"); m.published(2); m.failed()
        >>> {k: v for k, v in m.snapshot().items() if k in ("published", "failures", "latency_count")}
        {'published': 2, 'failures': 1, 'latency_count': 0}
        """
        with self._lock:
            cumulative, total = [], 0
            for n in self._buckets:
                total += n
                cumulative.append(total)
            return {"sink": self.name, **self._counts, "latency_sum": self._latency_sum,
                    "latency_count": self._latency_count, "latency_buckets": cumulative}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(sinks: Iterable[SinkMetrics]) -> str:
    """Every sink's figures in the Prometheus text format, one block per metric (empty without sinks)."""
    snapshots = [m.snapshot() for m in sinks]
    if not snapshots:
        return ""
    lines: list[str] = []
    for name, figure, help_text in METRICS:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
        lines += [f'{name}{{sink="{_escape(s["sink"])}"}} {s[figure]}' for s in snapshots]
    lines += [f"# HELP {LATENCY} Seconds from a batch handed to the sink to its acknowledgement.",
              f"# TYPE {LATENCY} histogram"]
    for s in snapshots:
        label = f'sink="{_escape(s["sink"])}"'
        lines += [f'{LATENCY}_bucket{{{label},le="{bound:g}"}} {n}'
                  for bound, n in zip(LATENCY_BUCKETS, s["latency_buckets"], strict=True)]
        lines += [f'{LATENCY}_bucket{{{label},le="+Inf"}} {s["latency_count"]}',
                  f"{LATENCY}_sum{{{label}}} {s['latency_sum']!r}", f"{LATENCY}_count{{{label}}} {s['latency_count']}"]
    return "\n".join(lines) + "\n"
