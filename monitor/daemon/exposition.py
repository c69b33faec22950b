"""`GET /metrics` in the format the scraper asks for, and the API's request metrics.

Prometheus sends `Accept: application/openmetrics-text;...` when it can read OpenMetrics and
gets that; any other scraper (curl, older Prometheus) gets the text format 0.0.4.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import choose_encoder
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

    The route is the template FastAPI matched (`/v1/gate/{model}/{version}`), so label values
    stay bounded whatever paths clients send; unmatched paths count as `unmatched`.
    """

    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

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
            route = getattr(scope.get("route"), "path", None) or _mounted(scope)
            self.histogram.labels(route=route, method=scope["method"], status=str(status)).observe(
                time.perf_counter() - started
            )


def _mounted(scope: Scope) -> str:
    return "/docs/assets" if str(scope.get("path", "")).startswith("/docs/assets/") else "unmatched"
