"""`GET /v1/models` over a registry of many models: pages in name order, each with its aliases."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from guards.registry import register_version
from migrations import upgrade
from monitor.app.daemon._app import create_app
from monitor.app.daemon._common import DaemonState
from monitor.config import parse_config
from monitor.storage import make_engine

TOKEN = {"name": "r", "scopes": ["read"], "token": "secret-read"}


@pytest.mark.slow
def test_the_model_list_pages_in_a_stable_order_with_each_pages_aliases(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"not read")
    names = [f"m{i:02d}" for i in (7, 3, 11, 0, 5)]
    for name in names:
        register_version(engine, name, "1", artifact)
        register_version(engine, name, "2", artifact, activate=name != "m05")
    config = parse_config({"models": [{"name": "m00"}], "api": {"tokens": [TOKEN]}})
    client = TestClient(create_app(DaemonState(engine, config, CollectorRegistry())))

    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        resp = client.get(
            "/v1/models", params=params, headers={"Authorization": "Bearer secret-read"}
        )
        body = resp.json()
        assert resp.status_code == 200 and len(body["models"]) <= 2
        seen += [(m["name"], m["versions"], m["active"]) for m in body["models"]]
        cursor, pages = body["next_cursor"], pages + 1
        if cursor is None:
            break
    assert pages == 3
    assert seen == [(n, ["1", "2"], None if n == "m05" else "2") for n in sorted(names)]
    engine.dispose()
