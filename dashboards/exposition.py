"""Serving `/metrics` from an injected registry: a WSGI app, an ASGI app, or a small server."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, make_asgi_app, make_wsgi_app, start_http_server

from monitor.errors import ConfigError


def metrics_wsgi_app(registry: CollectorRegistry) -> Any:
    """A WSGI app answering every path with the registry's exposition."""
    return make_wsgi_app(registry)


def metrics_asgi_app(registry: CollectorRegistry) -> Any:
    """An ASGI app for mounting at `/metrics` in the daemon's FastAPI app."""
    return make_asgi_app(registry)


@dataclass
class MetricsServer:
    """A running `/metrics` endpoint; `close()` stops it."""

    server: WSGIServer
    thread: threading.Thread
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and wait for the server thread."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(
    registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 0
) -> MetricsServer:
    """Serve the registry on host:port in a daemon thread (port 0 picks a free port)."""
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(f"metrics port: cannot listen on {host}:{port}: {exc.strerror}") from None
    bound_port = int(server.server_address[1])
    return MetricsServer(server=server, thread=thread, host=host, port=bound_port)
