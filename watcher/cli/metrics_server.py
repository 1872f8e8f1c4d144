"""The scrape endpoint of ``spanner-watcher watch --metrics-port``: /metrics and /healthz.

``/metrics`` answers a running watcher's :meth:`~watcher.capture.base.Watcher.prometheus`
text (per table: polls, rows, lag, watermark, failures, retries, running, dropped; for a
database watcher also the tables watched, added and dropped), then each sink's figures (label
``sink``: published, acknowledged, retries, failures, acknowledgement latency; see
:mod:`watcher.sinks.metrics`). ``/healthz`` answers 200 while the watcher runs and 503 with the
reason otherwise: starting, stopped, failed and why, or, with a lag bound (``--max-lag``), a
table lagging more than the bound, named with its lag (the rule is :func:`watcher.cli.health.health`).

A standard-library ``ThreadingHTTPServer`` on a daemon thread: two read-only endpoints do not
justify a web framework, and ``prometheus_client``'s server would need its registry and
collectors wrapped around figures the watcher already prints (see :mod:`watcher.capture.metrics`).
It listens on loopback unless told otherwise, since the figures name tables.

Example::

    with MetricsServer(watcher, port=9464) as server:   # port=0: any free port (server.port)
        ...                                              # curl http://127.0.0.1:9464/metrics
"""

from __future__ import annotations

import datetime as dt
import http.server
import threading
from collections.abc import Callable
from typing import Any, Self

from ..sinks.metrics import SinkMetrics
from ..sinks.metrics import prometheus_text as sink_text
from .health import health

#: Where the endpoint listens unless ``--metrics-host`` says otherwise.
DEFAULT_HOST = "127.0.0.1"
#: The content type Prometheus expects for its text format.
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        path = self.path.split("?", 1)[0]
        watcher = self.server.watcher
        if path == "/metrics":
            body = (watcher.prometheus() if watcher is not None else "") + sink_text(self.server.sinks)
            status, kind = 200, PROMETHEUS_CONTENT_TYPE
        elif path == "/healthz":
            server = self.server
            status, text = health(watcher, now=server.clock(), max_lag=server.max_lag, started_at=server.started_at)
            body, kind = text + "\n", "text/plain; charset=utf-8"
        else:
            status, body, kind = 404, "not found: try /metrics or /healthz\n", "text/plain; charset=utf-8"
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        pass  # a scrape every few seconds would flood the progress output


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    watcher: Any = None
    sinks: list[SinkMetrics] = []  # noqa: RUF012 - replaced per server, never changed in place
    max_lag: float | None = None
    started_at: dt.datetime | None = None
    clock: Callable[[], dt.datetime] = staticmethod(_utcnow)


class MetricsServer:
    """Serves /metrics and /healthz for a watcher until :meth:`stop`.

    Args:
        watcher: the watcher to report on (may be set later through :attr:`watcher`).
        host: the interface to listen on (loopback by default).
        port: the TCP port (0: any free one; :attr:`port` tells which).
        max_lag: ``/healthz`` answers 503 when a table lags more than this many seconds (None: no bound).
        clock: the current time (UTC), what the lag is measured against.
        sinks: the sinks' figures to serve too (may be set later through :attr:`sinks`).

    Raises:
        OSError: the address is taken or cannot be used (from the constructor).
    """

    def __init__(self, watcher: Any = None, host: str = DEFAULT_HOST, port: int = 0, *, max_lag: float | None = None,
                 clock: Callable[[], dt.datetime] = _utcnow, sinks: list[SinkMetrics] | None = None) -> None:
        self._server = _Server((host, port), _Handler)
        self._server.watcher = watcher
        self._server.sinks = list(sinks or [])
        self._server.max_lag = max_lag
        self._server.clock = clock
        self._server.started_at = clock()
        self._thread: threading.Thread | None = None

    @property
    def watcher(self) -> Any:
        return self._server.watcher

    @watcher.setter
    def watcher(self, value: Any) -> None:
        self._server.watcher = value

    @property
    def sinks(self) -> list[SinkMetrics]:
        """The sinks' figures served beside the watcher's (:mod:`watcher.sinks.metrics`)."""
        return self._server.sinks

    @sinks.setter
    def sinks(self, value: list[SinkMetrics]) -> None:
        self._server.sinks = list(value)

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="spanner-watcher-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (waits for the serving thread)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
