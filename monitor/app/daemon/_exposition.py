"""`GET /metrics` in the format the scraper asks for, and the API's request metrics.

Prometheus sends `Accept: application/openmetrics-text;...` when it can read OpenMetrics and
gets that; any other scraper (curl, older Prometheus) gets the text format 0.0.4.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import choose_encoder
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_FORMATS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header asks",
        "content": {
            "text/plain; version=0.0.4; charset=utf-8": {"schema": {"type": "string"}},
            "application/openmetrics-text; version=1.0.0; charset=utf-8": {
                "schema": {"type": "string"}
            },
        },
    }
}


def exposition(registry: CollectorRegistry, accept: str | None) -> tuple[bytes, str]:
    """The registry's exposition and its content type, chosen by the `Accept` header."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


def install_metrics_route(
    app: FastAPI,
    registry: CollectorRegistry,
    dependencies: list[Any],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """Add `/metrics` (behind `dependencies`, e.g. a read token when health is protected)."""

    @app.get(
        "/metrics",
        dependencies=dependencies,
        tags=["health"],
        responses={**responses, **_FORMATS},
        response_class=Response,
    )
    def metrics(request: Request) -> Response:
        """Prometheus exposition of this process's registry."""
        body, content_type = exposition(registry, request.headers.get("accept"))
        return Response(body, media_type=content_type)


class RequestMetricsMiddleware:
    """Observes each API request's duration by route template, method and status code.

    The route is the app's path template that the request path matches
    (`/v1/gate/{model}/{version}`), so label values stay bounded whatever paths clients send;
    a path matching no route counts as `unmatched`.
    """

    def __init__(
        self, app: ASGIApp, histogram: Histogram, templates: Callable[[], Iterable[str]]
    ) -> None:
        self.app = app
        self.histogram = histogram
        self._source = templates
        self._templates: list[tuple[re.Pattern[str], str]] | None = None

    def template(self, path: str) -> str:
        """The route template `path` falls under (computed once the app is complete)."""
        if self._templates is None:
            self._templates = [(compile_path(t)[0], t) for t in self._source()]
        for regex, template in self._templates:
            if regex.match(path):
                return template
        return "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = self.template(str(scope.get("path", "")))
            labels = (route, scope["method"], str(status))
            self.histogram.labels(*labels).observe(time.perf_counter() - started)
