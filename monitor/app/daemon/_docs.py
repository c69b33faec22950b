"""Swagger UI (`/docs`) and ReDoc (`/redoc`) served from packaged assets, never from a CDN.

The JavaScript and CSS come with the `fastapi-offline` package; the pages load them from
`/docs/assets/...` on this daemon, so the docs work offline and in closed production networks.
Swagger UI keeps the bearer token entered under "Authorize" across reloads.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"


def assets_dir() -> Path:
    """Where the packaged Swagger UI and ReDoc files lie."""
    return Path(str(files("fastapi_offline") / "static"))


def install_docs(app: FastAPI) -> None:
    """Mount the assets and the two documentation pages (not part of the API schema)."""
    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")

    def root(request: Request) -> str:
        return str(request.scope.get("root_path", ""))

    @app.get("/docs", include_in_schema=False)
    def swagger(request: Request) -> HTMLResponse:
        base = root(request)
        return get_swagger_ui_html(
            openapi_url=f"{base}{app.openapi_url}",
            title=f"{app.title} - API",
            swagger_js_url=f"{base}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{base}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{base}{ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True},
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        base = root(request)
        return get_redoc_html(
            openapi_url=f"{base}{app.openapi_url}",
            title=f"{app.title} - API",
            redoc_js_url=f"{base}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{base}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
