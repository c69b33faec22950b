"""The HTTP API (FastAPI). Resources are injected through `DaemonState`; nothing is global."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from collectors import HttpIntake
from dashboards.metrics import http_request_histogram
from migrations import schema_state
from monitor._version import __version__
from monitor.app.daemon._alerts_api import router as alerts_router
from monitor.app.daemon._auth import TokenStore, declare_scopes, requires
from monitor.app.daemon._common import DaemonState, error_name, errors
from monitor.app.daemon._dead_letters_api import router as dead_letters_router
from monitor.app.daemon._docs import install_docs
from monitor.app.daemon._exposition import RequestMetricsMiddleware, install_metrics_route
from monitor.app.daemon._fairness_api import router as fairness_router
from monitor.app.daemon._gate_api import router as gate_router
from monitor.app.daemon._guard_api import router as guard_router
from monitor.app.daemon._ingest_api import router as ingest_router
from monitor.app.daemon._latency_api import router as latency_router
from monitor.app.daemon._limits import BodyLimitMiddleware
from monitor.app.daemon._models_api import router as models_router
from monitor.app.daemon._release_api import router as release_router
from monitor.app.daemon._results_api import router as results_router
from monitor.app.daemon._segments_api import router as segments_router
from monitor.app.daemon._shadow_api import router as shadow_router
from monitor.app.daemon._slo_api import router as slo_router
from monitor.app.daemon.canary_api import router as canary_router
from monitor.errors import (
    ConflictError,
    InputError,
    ModelwatchError,
    NotFoundError,
    StorageError,
)
from monitor.failures import failing_jobs, redact

log = logging.getLogger(__name__)


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": error_name(status), "detail": detail}, status_code=status, headers=headers
    )


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's only 400 is a body it cannot decode (not UTF-8): invalid input, as 422.
            return _error(422, f"body: {exc.detail} (expected UTF-8 JSON)")
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"field": _field(e["loc"]), "message": e["msg"]} for e in exc.errors()]
        first = errors[0] if errors else {"field": "body", "message": "invalid request"}
        return JSONResponse(
            {
                "error": error_name(422),
                "detail": f"{first['field']}: {first['message']}",
                "errors": errors[:50],
            },
            status_code=422,
        )

    @app.exception_handler(ModelwatchError)
    async def domain_error(_: Request, exc: ModelwatchError) -> JSONResponse:
        if isinstance(exc, StorageError):
            # The database is down or behind: the request may succeed later.
            return _error(503, str(exc), {"Retry-After": "5"})
        status = 400
        if isinstance(exc, NotFoundError):
            status = 404
        elif isinstance(exc, ConflictError):
            status = 409
        elif isinstance(exc, InputError):
            status = 422
        return _error(status, str(exc))

    @app.exception_handler(OperationalError)
    async def database_away(_: Request, exc: OperationalError) -> JSONResponse:
        # The database went away (a restart, a dropped connection) under any route: the request
        # may succeed later, as for a StorageError. The driver's text names the server only.
        log.warning("API request: the database is unavailable: %s", redact(exc.orig or exc))
        return _error(503, "the database is unavailable; retry later", {"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error in API request")
        return _error(500, "internal error; see the server log")


class Readiness(BaseModel):
    """Whether the daemon is ready, and each check's answer ("ok" or what is wrong)."""

    ready: bool
    checks: dict[str, str]


class Liveness(BaseModel):
    status: str
    version: str


def _install_health(app: FastAPI, state: DaemonState) -> None:
    protect = state.config.api.protect_health
    deps = [Depends(requires("read"))] if protect else []
    common = errors(auth=protect)

    @app.get("/healthz", dependencies=deps, tags=["health"], responses=common)
    async def healthz() -> Liveness:
        """Liveness: the process answers, also while every worker thread waits on an
        unreachable database (answered on the event loop, not by a worker thread)."""
        return Liveness(status="ok", version=__version__)

    ready_doc: dict[int | str, dict[str, Any]] = {
        503: {"model": Readiness, "description": "a check failed (see `checks`)"}
    }

    @app.get(
        "/readyz",
        dependencies=deps,
        tags=["health"],
        response_model=Readiness,
        responses={**common, **ready_doc},
    )
    def readyz() -> JSONResponse:
        """Readiness: database reachable, schema at head, components healthy, no job failing."""
        checks: dict[str, str] = {}
        try:
            db = schema_state(state.engine)
            checks["database"] = "ok"
            checks["schema"] = "ok" if db.at_head else f"at {db.current}, head is {db.head}"
            if db.at_head:
                checks.update(failing_jobs(state.engine, state.config.scheduler.failing_after))
        except ModelwatchError as exc:
            checks["database"] = redact(exc)
        for name, problem in state.components.items():
            checks[name] = problem() or "ok"
        doc: dict[str, Any] = {"checks": checks}
        if state.intake is not None and checks.get("schema") == "ok":
            doc["intake"] = _intake_doc(state.intake, checks)
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, **doc}, status_code=200 if ready else 503)

    install_metrics_route(app, state.registry, deps, common)


def _templates(app: FastAPI) -> list[str]:
    """Every route's path template: the API's (from its schema) and the docs pages'."""
    return [*app.openapi()["paths"], "/docs", "/redoc", "/docs/assets/{path:path}"]


def _intake_doc(intake: HttpIntake, checks: dict[str, str]) -> dict[str, Any]:
    """The HTTP intake backlog (requests and events not yet aggregated) and its check."""
    try:
        checks["intake"] = intake.problem() or "ok"
        backlog = intake.backlog()
    except Exception as exc:  # a failing count must not fail readiness's other checks
        checks["intake"] = redact(exc)
        return {}
    return {
        "backlog_requests": backlog.requests,
        "backlog_events": backlog.events,
        "max_backlog": backlog.bound,
        "oldest_age_s": backlog.oldest_age_s,
        "max_lag_s": backlog.max_lag_s,
    }


def create_app(state: DaemonState) -> FastAPI:
    """Build the API around an injected state."""
    app = FastAPI(
        title="modelwatch",
        version=__version__,
        description="Monitoring and regression guards for deployed ML models.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.daemon = state
    app.state.tokens = TokenStore(state.config.api.tokens)
    if state.intake is None:
        state.intake = HttpIntake(state.engine, state.config)
    _install_error_handlers(app)
    _install_health(app, state)
    install_docs(app)
    app.state.intake = state.intake
    routers = (
        models_router,
        ingest_router,
        dead_letters_router,
        results_router,
        gate_router,
        guard_router,
        release_router,
        alerts_router,
        canary_router,
        slo_router,
        shadow_router,
        latency_router,
        fairness_router,
        segments_router,
    )
    declare_scopes(app)
    for router in routers:
        declare_scopes(router)
        app.include_router(router, prefix="/v1")
    app.add_middleware(BodyLimitMiddleware, max_bytes=state.config.api.max_body_bytes)
    histogram = http_request_histogram(state.registry)
    app.add_middleware(
        RequestMetricsMiddleware, histogram=histogram, templates=lambda: _templates(app)
    )
    return app
