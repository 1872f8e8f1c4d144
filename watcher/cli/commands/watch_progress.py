"""What ``spanner-watcher watch`` shows while it runs, and how it waits: signals, progress, the run loop."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...capture.base import Watcher

#: Seconds between progress lines when the output is not a terminal.
PLAIN_PROGRESS_EVERY = 10.0


@contextlib.contextmanager
def stop_on_signals(event: threading.Event) -> Iterator[None]:
    """Set ``event`` on SIGINT or SIGTERM while the context is open (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: event.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Progress:
    """Counts staged changes per table (a batch callback) and renders the status."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.staged: dict[str, int] = {}
        self.batches = 0

    def on_batch(self, changes: list[Any]) -> None:
        self.count(changes[0].table, len(changes))

    def on_stream_batch(self, watcher: Any) -> Any:
        """A batch callback counting a change stream watcher's changes under its stream's name (its stats' ``table``)."""
        return lambda changes: self.count(watcher.name, len(changes))

    def count(self, name: str, n: int) -> None:
        with self.lock:
            self.staged[name] = self.staged.get(name, 0) + n
            self.batches += 1

    def rows(self, watcher: Watcher) -> list[tuple[str, int, int, str, str]]:
        out = []
        for stats in watcher.poll_stats():
            lag = stats.get("lag_seconds")
            out.append((stats["table"], self.staged.get(stats["table"], 0), stats["polls"],
                        f"{lag:.1f} s" if lag is not None else "-", stats["state"]))
        return out

    def line(self, watcher: Watcher, elapsed: float) -> str:
        parts = [f"{t}: {n:,} staged, lag {lag}" for t, n, _, lag, _ in self.rows(watcher)]
        return f"[{elapsed:6.0f} s] {sum(self.staged.values()):,} changes staged; " + "; ".join(parts)

    def table(self, watcher: Watcher, elapsed: float, staging: Path | str) -> Any:
        """The live table; ``staging``: the staging folder, or a text saying where the batches go."""
        from rich.table import Table

        where = f"under {staging}" if isinstance(staging, Path) else f"({staging})"
        table = Table(title=f"spanner-watcher watch: {elapsed:.0f} s, {sum(self.staged.values()):,} changes staged "
                            f"in {self.batches:,} batches {where}", title_justify="left")
        for column in ("table", "staged", "polls", "lag", "state"):
            table.add_column(column, justify="left" if column in ("table", "state") else "right")
        for t, n, polls, lag, state in self.rows(watcher):
            table.add_row(t, f"{n:,}", f"{polls:,}", lag, state)
        return table


def run_until(watcher: Watcher, stop: threading.Event, deadline: float | None, progress: Progress, staging: Path | str,
              quiet: bool, finished: Callable[[], bool] | None = None) -> float:
    """Show progress until stopped, failed, past ``deadline`` or ``finished()``; returns the seconds it ran."""
    from rich.console import Console
    from rich.live import Live

    from ...capture.base import State

    started = time.monotonic()
    console = Console(stderr=True)

    def done() -> bool:
        return (stop.is_set() or watcher.state == State.FAILED or (deadline is not None and time.monotonic() >= deadline)
                or (finished is not None and finished()))

    if quiet or not console.is_terminal:
        next_line = started + PLAIN_PROGRESS_EVERY
        while not done():
            stop.wait(0.2)
            if not quiet and time.monotonic() >= next_line:
                print(progress.line(watcher, time.monotonic() - started), flush=True)
                next_line += PLAIN_PROGRESS_EVERY
        return time.monotonic() - started
    with Live(progress.table(watcher, 0, staging), console=console, refresh_per_second=4, transient=True) as live:
        while not done():
            stop.wait(0.25)
            live.update(progress.table(watcher, time.monotonic() - started, staging))
    return time.monotonic() - started
