"""What ``/healthz`` answers, and when ``watch --until-caught-up`` is done: pure functions of a
watcher's figures and the time.

A table's lag is ``now`` minus its watermark, the time up to which every change was delivered
(``stats()["watermark"]``). A poll that finds nothing advances the watermark to its read
timestamp, so an idle table is not lagging; a table whose first poll has not finished has no
watermark yet and counts from ``started_at`` (when the command started), so a watcher stuck
before its first poll shows too.

Example:
    >>> import datetime as dt
    >>> t = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
    >>> class W:  # a running watcher with one table, 400 s behind
    ...     state, failure = type("S", (), {"value": "running"})(), None
    ...     def poll_stats(self):
    ...         return [{"table": "Singers", "shard": "all", "state": "running", "watermark": t}]
    >>> health(W(), now=t + dt.timedelta(seconds=400), max_lag=300)
    (503, 'lagging: Singers 400.0 s behind (bound 300 s)')
    >>> health(W(), now=t + dt.timedelta(seconds=20), max_lag=300)
    (200, 'ok: 1 table watchers, most lag 20.0 s (bound 300 s)')
"""

from __future__ import annotations

import datetime as dt
from typing import Any

#: Poll loops in these states deliver nothing more and are not judged by their lag.
ENDED_STATES = ("dropped", "stopped")


def loop_name(stats: dict[str, Any]) -> str:
    """A poll loop's name for people: the table, and its shard when it is one of several.

    >>> loop_name({"table": "Singers", "shard": "all"}), loop_name({"table": "Singers", "shard": "-18..-1"})
    ('Singers', 'Singers (shard -18..-1)')
    """
    shard = stats.get("shard")
    return f"{stats['table']} (shard {shard})" if shard not in (None, "all") else str(stats["table"])


def lag_seconds(stats: dict[str, Any], now: dt.datetime, started_at: dt.datetime | None = None) -> float | None:
    """``now`` minus the loop's watermark; without one, minus ``started_at`` (None: unknown)."""
    mark = stats.get("watermark")
    since = mark if mark is not None else started_at
    return None if since is None else max(0.0, (now - since).total_seconds())


def health(watcher: Any, *, now: dt.datetime | None = None, max_lag: float | None = None,
           started_at: dt.datetime | None = None) -> tuple[int, str]:
    """The HTTP status and text of ``/healthz`` for ``watcher`` (None: not built yet).

    503 while starting, once stopped or failed (the watcher or one table, with why), and when ``max_lag`` is given and a
    running table lags more than that many seconds (naming each such table, its lag and the
    bound); 200 otherwise. ``now`` is needed with ``max_lag``.

    >>> health(None)
    (503, 'starting')
    """
    if watcher is None:
        return 503, "starting"
    if watcher.failure is not None:
        return 503, f"failed: {watcher.failure}"
    state = watcher.state.value
    if state != "running":
        return 503, state
    failed = failed_loops(watcher)
    if failed:  # a table that failed alone while the others go on
        return 503, "failed: " + "; ".join(f"{name}: {why}" for name, why in failed)
    loops = watcher.poll_stats()
    if max_lag is None:
        return 200, f"ok: {len(loops)} table watchers"
    if now is None:
        raise ValueError("health() needs now to judge the lag against max_lag")
    lags = [(loop_name(s), lag_seconds(s, now, started_at)) for s in loops if s.get("state") not in ENDED_STATES]
    behind = [(name, lag) for name, lag in lags if lag is not None and lag > max_lag]
    if behind:
        return 503, "lagging: " + "; ".join(f"{name} {lag:.1f} s behind" for name, lag in behind) + \
            f" (bound {max_lag:g} s)"
    known = [lag for _, lag in lags if lag is not None]
    most = f", most lag {max(known):.1f} s" if known else ""
    return 200, f"ok: {len(loops)} table watchers{most} (bound {max_lag:g} s)"


def behind(watcher: Any, target: dt.datetime) -> list[str]:
    """The poll loops of ``watcher`` that have not delivered every change up to ``target`` yet
    (empty: caught up). A dropped or stopped loop delivers nothing more and is not waited for.

    >>> t = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
    >>> class W:
    ...     def poll_stats(self):
    ...         return [{"table": "A", "state": "running", "watermark": t},
    ...                 {"table": "B", "state": "running", "watermark": None}]
    >>> behind(W(), t)
    ['B']
    """
    return [loop_name(s) for s in watcher.poll_stats()
            if s.get("state") not in ENDED_STATES and (s.get("watermark") is None or s["watermark"] < target)]


def failed_loops(watcher: Any) -> list[tuple[str, str]]:
    """(name, why) of each poll loop of ``watcher`` that failed (a table fails alone; the others go on).

    >>> class W:
    ...     def poll_stats(self):
    ...         return [{"table": "A", "state": "failed", "failure": "PollError('no index')"}, {"table": "B", "state": "running"}]
    >>> failed_loops(W())
    [('A', "PollError('no index')")]
    """
    return [(loop_name(s), str(s.get("failure") or "failed")) for s in watcher.poll_stats() if s.get("state") == "failed"]
