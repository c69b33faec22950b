"""A request whose database went away (PostgreSQL stopped, a connection dropped mid-query) is
answered 503 with Retry-After, under any route, never a 500."""

from __future__ import annotations

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
