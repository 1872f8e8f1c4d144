"""The benchmark's writer processes: thread shares, and a child that cannot start says why.

The full path (children writing through the official client into a server, every write
captured) runs in ``test_cli_watch_bench.py``, as a user runs the command.
"""

from __future__ import annotations

import pytest

from watcher.devtools.bench import BenchOptions
from watcher.devtools.bench_writers import Endpoint, WriterProcesses, thread_shares
from watcher.errors import ConfigurationError


@pytest.mark.parametrize(("threads", "processes"), [(16, 1), (16, 3), (5, 5), (32, 2)])
def test_thread_shares_cover_every_thread_once(threads: int, processes: int) -> None:
    shares = thread_shares(threads, processes)
    assert len(shares) == processes
    assert [i for share in shares for i in share] == list(range(threads))
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_a_writer_process_that_cannot_start_fails_prepare_with_its_reason() -> None:
    procs = WriterProcesses(Endpoint("not-a-database-name", "127.0.0.1:1"),
                            BenchOptions(update_parallelism=2, writer_processes=2))
    with pytest.raises(ConfigurationError, match="not a database's full name"):
        procs.prepare()
    assert all(child.poll() is not None for child in procs._children)  # none is left running


def test_writer_processes_must_fit_the_threads() -> None:
    with pytest.raises(ConfigurationError, match="writer processes"):
        BenchOptions(update_parallelism=2, writer_processes=3)
    assert BenchOptions(update_parallelism=2, writer_processes=0).writer_processes == 0
