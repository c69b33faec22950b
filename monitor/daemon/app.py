"""The HTTP API (FastAPI). Resources are injected through `DaemonState`; nothing is global."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy.engine import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from migrations import schema_state
from monitor._version import __version__
from monitor.config import Config
from monitor.daemon.alerts_api import router as alerts_router
from monitor.daemon.auth import TokenStore, requires
from monitor.daemon.ingest_api import router as ingest_router
from monitor.daemon.intake import HttpIntake
from monitor.daemon.limits import BodyLimitMiddleware
from monitor.daemon.models_api import router as models_router
from monitor.daemon.release_api import router as release_router
from monitor.daemon.results_api import router as results_router
from monitor.errors import (
    ConflictError,
    InputError,
    ModelwatchError,
    NotFoundError,
    StorageError,
)
from monitor.failures import failing_jobs, redact

if TYPE_CHECKING:
    from guards.events import RollbackListener

log = logging.getLogger(__name__)


@dataclass
class DaemonState:
    """What the API needs from the running service."""

    engine: Engine
    config: Config
    registry: CollectorRegistry
    # name -> callable saying what is wrong with that component (None: healthy)
    components: dict[str, Callable[[], str | None]] = field(default_factory=dict)
    # Told about rollbacks made through the API (gate runs, POST .../rollback), e.g. to notify.
    rollback_listener: RollbackListener | None = None
    # HTTP ingest; None: one on this engine and config (ingestors made on first use).
    intake: HttpIntake | None = None


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    name = HTTPStatus(status).phrase.lower().replace(" ", "_")
    return JSONResponse({"error": name, "detail": detail}, status_code=status, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"field": _field(e["loc"]), "message": e["msg"]} for e in exc.errors()]
        first = errors[0] if errors else {"field": "body", "message": "invalid request"}
        return JSONResponse(
            {
                "error": "validation",
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

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error in API request")
        return _error(500, "internal error; see the server log")


def _install_health(app: FastAPI, state: DaemonState) -> None:
    protect = state.config.api.protect_health
    deps = [Depends(requires("read"))] if protect else []

    @app.get("/healthz", dependencies=deps, tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok", "version": __version__}

    @app.get("/readyz", dependencies=deps, tags=["health"])
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
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    @app.get("/metrics", dependencies=deps, tags=["health"])
    def metrics() -> Response:
        """Prometheus exposition of this process's registry."""
        return Response(generate_latest(state.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(state: DaemonState) -> FastAPI:
    """Build the API around an injected state."""
    app = FastAPI(
        title="modelwatch",
        version=__version__,
        description="Monitoring and regression guards for deployed ML models.",
    )
    app.state.daemon = state
    app.state.tokens = TokenStore(state.config.api.tokens)
    _install_error_handlers(app)
    _install_health(app, state)
    app.state.intake = state.intake or HttpIntake(state.engine, state.config)
    routers = (models_router, ingest_router, results_router, release_router, alerts_router)
    for router in routers:
        app.include_router(router, prefix="/v1")
    app.add_middleware(BodyLimitMiddleware, max_bytes=state.config.api.max_body_bytes)
    return app
