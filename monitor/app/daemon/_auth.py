"""Bearer tokens with scopes, compared in constant time. No token configured means 401."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import FastAPI, HTTPException, Request, Security
from fastapi.routing import APIRoute, APIRouter
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from monitor.config import TokenConfig

ADMIN = "admin"
# The OpenAPI extension naming the scope an operation demands (read, ingest, admin).
SCOPE_KEY = "x-scope"
_SCOPE_ATTR = "modelwatch_scope"

# Declares the bearer scheme in the OpenAPI spec (Swagger UI's "Authorize" button); the check
# itself is `authenticate`, so the 401 body and challenge stay ours.
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A token from api.tokens; scopes: read, ingest, admin (admin implies all).",
)


@dataclass(frozen=True)
class Principal:
    """Who called: the token's configured name and scopes."""

    name: str
    scopes: frozenset[str]

    def allows(self, scope: str) -> bool:
        return ADMIN in self.scopes or scope in self.scopes


class TokenStore:
    """Looks up a presented token among the configured ones without early exit."""

    def __init__(self, tokens: Sequence[TokenConfig]) -> None:
        self._entries: list[tuple[bytes, Principal]] = []
        for t in tokens:
            secret = t.secret()
            if secret:
                self._entries.append((secret.encode(), Principal(t.name, frozenset(t.scopes))))

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, presented: str) -> Principal | None:
        found: Principal | None = None
        candidate = presented.encode()
        for secret, principal in self._entries:
            if hmac.compare_digest(secret, candidate):
                found = principal
        return found


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def authenticate(store: TokenStore, request: Request, scope: str) -> Principal:
    """The caller's principal, or 401/403 as an HTTPException."""
    return authenticate_token(store, bearer(request), scope)


def authenticate_token(store: TokenStore, token: str | None, scope: str) -> Principal:
    """The principal of a presented token (None: none presented), or 401/403."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if len(store) == 0:
        raise HTTPException(401, "no API tokens are configured (api.tokens)", headers=challenge)
    if token is None:
        raise HTTPException(401, "missing bearer token", headers=challenge)
    principal = store.lookup(token)
    if principal is None:
        raise HTTPException(401, "invalid bearer token", headers=challenge)
    if not principal.allows(scope):
        raise HTTPException(403, f"token '{principal.name}' lacks scope '{scope}'")
    return principal


Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]


def requires(scope: str) -> Callable[..., Awaitable[Principal]]:
    """A FastAPI dependency demanding `scope` (admin implies every scope).

    Async: the check is a few comparisons, and a sync dependency would cost every request a
    round trip through the threadpool."""

    async def dependency(request: Request, _: Credentials = None) -> Principal:
        store: TokenStore = request.app.state.tokens
        return authenticate(store, request, scope)

    setattr(dependency, _SCOPE_ATTR, scope)  # read back by `declare_scopes`
    return dependency


def declare_scopes(app: FastAPI | APIRouter) -> None:
    """Name each route's scope in the OpenAPI document (`x-scope`), as `requires` demands it.

    Routes that check their token themselves (the ingest fast path, Flagger's webhook) declare
    `x-scope` in their own `openapi_extra`."""
    for route in app.routes:
        if not isinstance(route, APIRoute):
            continue
        for dependency in route.dependant.dependencies:
            scope = getattr(dependency.call, _SCOPE_ATTR, None)
            if isinstance(scope, str):
                route.openapi_extra = {**(route.openapi_extra or {}), SCOPE_KEY: scope}
