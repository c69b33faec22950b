"""`GET /metrics`: the registry in the format the scraper asks for.

Prometheus sends `Accept: application/openmetrics-text;...` when it can read OpenMetrics and
gets that; any other scraper (curl, older Prometheus) gets the text format 0.0.4.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

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
