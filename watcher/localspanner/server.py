"""Run the local Spanner server: gRPC services in front of a :class:`LocalSpannerService`.

Example:
    >>> with LocalSpanner() as server:                      # doctest: +SKIP
    ...     os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
    ...     client = spanner.Client(project="p")
"""

from __future__ import annotations

import errno
import gc
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from .change_streams.load import LoadPolicy
from .common.clock import Clock
from .common.limits import DEFAULT_HOST, DEFAULT_PORT  # re-exported: the CLI reads them without importing gRPC
from .frontend.database_admin_service import DatabaseAdminServicer
from .frontend.faults import FaultInjector
from .frontend.instance_admin_service import InstanceAdminServicer
from .frontend.operations import OperationRegistry, OperationsServicer
from .frontend.rpc import generic_handler, unserved_handler
from .frontend.spanner_service import SpannerServicer
from .service import LocalSpannerService

log = logging.getLogger("watcher.localspanner")

#: Enough for 32+ client threads plus long-running streams; a stream holds a worker.
DEFAULT_WORKERS = 64
#: Clients send large batches of mutations; the 4 MiB gRPC default is too small.
MAX_RECEIVE_BYTES = 256 << 20
MAX_SEND_BYTES = 64 << 20
#: Seconds that stop() gives running calls to finish.
DEFAULT_GRACE = 2.0
#: How often row deletion policies delete expired rows (Spanner sweeps in the background, within days).
DEFAULT_ROW_DELETION_SWEEP_SECONDS = 60.0


class ServerStartError(RuntimeError):
    """The server could not listen on the address asked for."""


class LocalSpanner:
    """A local Spanner server on ``host:port`` (port 0 picks a free one).

    Use as a context manager, or call :meth:`start` and :meth:`stop`. ``data_dir=None``
    keeps the databases in a temporary folder that goes away with the server.

    ``shared_commit_timestamps=True`` lets commits share a commit timestamp, as Spanner
    may: a blind-write commit (mutations only, no read or DML in its transaction) that
    writes none of the rows of the previous commit gets that commit's timestamp when no
    read took a timestamp in between. Two guarantees stay: per row, commit timestamps
    strictly increase, and once a strong read at R has returned no later commit gets a
    timestamp <= R. Off by default (every commit timestamp unique); settable while the
    server runs through ``server.clock.share_timestamps``. It is looser than Spanner's
    external consistency (on Spanner only transactions that overlap in time share a
    timestamp), which is what makes it a useful test of code that must not assume
    unique commit timestamps. ``change_stream_partition_churn_seconds`` makes change stream
    partitions split and merge on that period (0: one partition, never churning), so readers
    must follow the child-partition workflow; ``service.change_stream_partition_churn_seconds``
    changes it while serving. ``change_stream_split_rate`` (records per second, 0: off) makes
    partitions follow load instead, as on Spanner: one whose write rate over the last
    ``change_stream_load_window_seconds`` (default 2) is above it splits, and split ones all below
    ``change_stream_merge_rate`` (default a quarter of the split rate) merge back
    (``service.change_stream_load`` changes it while serving). ``now_nanos`` is the wall clock the server reads (tests drive
    time-based rules, such as retention periods, with their own). ``row_deletion_sweep_seconds``
    is how often rows past their table's ROW DELETION POLICY are deleted (0: only when
    ``service.sweep_expired_rows()`` is called).
    """

    def __init__(self, data_dir: str | None = None, *, host: str = DEFAULT_HOST, port: int = 0,
                 max_workers: int = DEFAULT_WORKERS, shared_commit_timestamps: bool = False,
                 change_stream_partition_churn_seconds: float = 0.0, now_nanos: Callable[[], int] = time.time_ns,
                 row_deletion_sweep_seconds: float = DEFAULT_ROW_DELETION_SWEEP_SECONDS,
                 change_stream_split_rate: float = 0.0, change_stream_merge_rate: float | None = None,
                 change_stream_load_window_seconds: float | None = None) -> None:
        self._data_dir = data_dir
        self._churn = change_stream_partition_churn_seconds
        self._load = LoadPolicy.of(change_stream_split_rate, change_stream_merge_rate, change_stream_load_window_seconds)
        if self._load is not None and self._churn:
            raise ValueError("change stream partitions follow either the churn timer or the load, not both: "
                             f"change_stream_partition_churn_seconds={self._churn}, "
                             f"change_stream_split_rate={change_stream_split_rate}")
        self._sweep_seconds = row_deletion_sweep_seconds
        # Created here, not at start(): the switch can be set before and while serving, and
        # a restarted server keeps handing out timestamps above the earlier ones.
        self._clock = Clock(now_nanos, share_timestamps=shared_commit_timestamps)
        self._host = host
        self._requested_port = port
        self._max_workers = max_workers
        self._port = 0
        self._faults = FaultInjector()
        self._service: LocalSpannerService | None = None
        self._server: grpc.Server | None = None
        self._lock = threading.Lock()

    # --- properties ----------------------------------------------------------------------

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        return self._port

    @property
    def emulator_host(self) -> str:
        """The value for ``SPANNER_EMULATOR_HOST``."""
        return f"{self._host}:{self._port}"

    @property
    def service(self) -> LocalSpannerService:
        if self._service is None:
            raise RuntimeError("the local Spanner server is not running; call start() first")
        return self._service

    @property
    def clock(self) -> Clock:
        """The server's clock; ``clock.share_timestamps`` is the shared-commit-timestamps switch."""
        return self._clock

    @property
    def faults(self) -> FaultInjector:
        return self._faults

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> LocalSpanner:
        """Bind, start serving, and return self. Raises :class:`ServerStartError`."""
        with self._lock:
            if self._server is not None:
                return self
            server = grpc.server(
                futures.ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="local-spanner"),
                options=[
                    ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
                    ("grpc.max_send_message_length", MAX_SEND_BYTES),
                    # Without this a second server could silently share the port.
                    ("grpc.so_reuseport", 0),
                ],
            )
            port = _bind(server, self._host, self._requested_port)
            service = LocalSpannerService(self._data_dir, clock=self._clock,
                                          change_stream_partition_churn_seconds=self._churn,
                                          change_stream_load=self._load,
                                          row_deletion_sweep_seconds=self._sweep_seconds)
            try:
                operations = OperationRegistry()
                servicers: list[Any] = [
                    SpannerServicer(service),
                    DatabaseAdminServicer(service, operations),
                    InstanceAdminServicer(service, operations),
                    OperationsServicer(operations),
                ]
                server.add_generic_rpc_handlers(
                    tuple(generic_handler(s.SERVICE, s, s.RPCS, self._faults) for s in servicers) + (unserved_handler(),))
                server.start()
            except BaseException:
                server.stop(None)
                service.close()
                raise
            self._server, self._service, self._port = server, service, port
            log.info("local Spanner server listening on %s", self.emulator_host)
            return self

    def stop(self, grace: float | None = DEFAULT_GRACE) -> None:
        """Stop serving (letting running calls finish for ``grace`` seconds) and close the service."""
        with self._lock:
            server, service = self._server, self._service
            self._server = self._service = None
        if server is not None:
            server.stop(grace).wait()
        if service is not None:
            service.close()

    def __enter__(self) -> LocalSpanner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _bind(server: grpc.Server, host: str, port: int) -> int:
    # Probe first: gRPC only says that binding failed (and logs a line of its own).
    problem = _bind_failure(host, port)
    if problem is not None:
        raise ServerStartError(problem)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if bound:
        return bound
    raise ServerStartError(_bind_failure(host, port) or f"cannot listen on {host}:{port}")


def _bind_failure(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (tried with a plain socket), or None if it can."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"cannot listen on {host}: {exc.strerror or exc}; choose another with --host"
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: TIME_WAIT is no conflict
        try:
            probe.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use; choose another with --port"
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def serve_forever(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, data_dir: str | None = None, *,
                  on_ready: Callable[[LocalSpanner], None] | None = None, shared_commit_timestamps: bool = False,
                  change_stream_partition_churn_seconds: float = 0.0, change_stream_split_rate: float = 0.0,
                  change_stream_merge_rate: float | None = None,
                  change_stream_load_window_seconds: float | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then shut down cleanly.

    ``on_ready`` runs once the server listens (e.g. to print the address).
    Raises :class:`ServerStartError` when the address cannot be used.
    """
    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        with LocalSpanner(data_dir, host=host, port=port, shared_commit_timestamps=shared_commit_timestamps,
                          change_stream_partition_churn_seconds=change_stream_partition_churn_seconds,
                          change_stream_split_rate=change_stream_split_rate,
                          change_stream_merge_rate=change_stream_merge_rate,
                          change_stream_load_window_seconds=change_stream_load_window_seconds) as server:
            # A server process lives for long: its modules, gRPC and protobuf objects never die, yet
            # each full collection would walk them all while holding the GIL, every few seconds under
            # a steady load, and every commit and query would wait. Frozen, collections only walk what came after.
            gc.collect()
            gc.freeze()
            if on_ready is not None:
                on_ready(server)
            while not stop.wait(0.5):
                pass
            log.info("local Spanner server stopping")
    except KeyboardInterrupt:
        pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
