"""A request whose database went away (PostgreSQL stopped, a connection dropped mid-query) is
answered 503 with Retry-After, under any route, never a 500; liveness answers meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio.to_thread
import httpx
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from migrations import upgrade
from monitor.app.daemon._app import create_app
from monitor.app.daemon._common import DaemonState
from monitor.config import parse_config
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer

TOKEN = {"name": "admin", "scopes": ["admin"], "token": "secret-admin"}


def test_a_write_while_postgresql_is_down_is_503_with_retry_after(
    own_postgres: PostgresServer,
) -> None:
    engine = make_engine(own_postgres.create_database())
    upgrade(engine)
    config = parse_config({"models": [{"name": "fraud"}], "api": {"tokens": [TOKEN]}})
    client = TestClient(create_app(DaemonState(engine, config, CollectorRegistry())))
    own_postgres.pause()
    try:
        answer = client.post(
            "/v1/silences",
            json={"matchers": ["model=fraud"], "author": "test", "comment": "down"},
            headers={"Authorization": "Bearer secret-admin"},
        )
    finally:
        own_postgres.resume()
        engine.dispose()
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "5"
    assert "postgresql://" not in answer.text and "127.0.0.1" not in answer.text


def test_liveness_answers_while_every_worker_thread_is_taken(tmp_path: Path) -> None:
    """Routes that read the database run on the API's worker threads; when all of them wait
    (an unreachable database: each request waits out its connect timeout), /healthz must still
    answer, or a service manager's liveness probe would restart a process that is only riding
    out the outage."""
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    config = parse_config({"models": [{"name": "fraud"}]})
    holder = object()
    answers: list[httpx.Response] = []
    with TestClient(create_app(DaemonState(engine, config, CollectorRegistry()))) as client:

        async def take_every_thread() -> None:
            limiter = anyio.to_thread.current_default_thread_limiter()
            limiter.total_tokens = 1
            await limiter.acquire_on_behalf_of(holder)

        async def give_back() -> None:
            anyio.to_thread.current_default_thread_limiter().release_on_behalf_of(holder)

        portal = client.portal
        assert portal is not None  # the client's event loop, running while in `with`
        portal.call(take_every_thread)
        probe = threading.Thread(target=lambda: answers.append(client.get("/healthz")))
        probe.start()
        probe.join(10)
        while_taken = list(answers)  # a route on a worker thread would still be waiting
        portal.call(give_back)
        probe.join(10)
    engine.dispose()
    assert [a.status_code for a in while_taken] == [200]
