"""The daemon as a real process: health, auth, limits, refusal to start, graceful shutdown.

The tests that only ask share one server (`module_server`); the others start their own."""

from __future__ import annotations

from pathlib import Path

import httpx

from monitor.storage import Model, ModelVersion, make_engine, transaction
from tests.conftest import run_cli, run_cli_process
from tests.monitor.app.daemon.conftest import ServerProcess, auth, write_config
from tests.services.postgres import PostgresServer


def test_health_and_metrics_are_open(module_server: ServerProcess) -> None:
    server = module_server
    health = httpx.get(f"{server.url}/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    ready = httpx.get(f"{server.url}/readyz")
    assert ready.status_code == 200, ready.text
    checks = {"database": "ok", "schema": "ok", "scheduler": "ok", "intake": "ok"}
    assert ready.json()["checks"] == checks
    assert ready.json()["intake"]["backlog_requests"] == 0
    metrics = httpx.get(f"{server.url}/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")


def test_v1_requires_a_token_with_the_right_scope(module_server: ServerProcess) -> None:
    server = module_server
    none = httpx.get(f"{server.url}/v1/models")
    assert none.status_code == 401
    assert none.json() == {"error": "unauthorized", "detail": "missing bearer token"}
    assert none.headers["www-authenticate"] == "Bearer"
    wrong = httpx.get(f"{server.url}/v1/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "invalid bearer token"
    ingest_only = httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_INGEST"))
    assert ingest_only.status_code == 403
    assert ingest_only.json()["detail"] == "token 'collector' lacks scope 'read'"
    assert httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_READ")).status_code == 200
    assert httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_ADMIN")).status_code == 200


def test_models_endpoint_lists_registry(module_server: ServerProcess) -> None:
    server = module_server
    engine = make_engine(f"sqlite:///{server.directory / 'mw.db'}")
    with transaction(engine) as s:
        s.add(Model(name="fraud", versions=[ModelVersion(version="1"), ModelVersion(version="2")]))
    body = httpx.get(f"{server.url}/v1/models", headers=auth("MW_T_READ")).json()
    assert body == {
        "models": [
            {
                "name": "fraud",
                "versions": ["1", "2"],
                "active": None,
                "last_known_good": None,
                "settings": {"1": {}, "2": {}},
            }
        ],
        "next_cursor": None,
    }


def test_oversized_body_is_413(module_server: ServerProcess) -> None:
    server = module_server
    resp = httpx.post(f"{server.url}/v1/models", content=b"x" * 70_000, headers=auth("MW_T_ADMIN"))
    assert resp.status_code == 413
    assert resp.json()["error"] == "payload_too_large"


def test_unknown_route_is_json_404_without_trace(module_server: ServerProcess) -> None:
    server = module_server
    resp = httpx.get(f"{server.url}/v1/nothing-here", headers=auth("MW_T_READ"))
    assert resp.status_code == 404
    assert resp.json()["error"] == "not_found"
    assert "Traceback" not in resp.text


def test_secure_by_default_without_tokens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'open.db'}"
    run_cli("db", "upgrade", "--database-url", url)
    cfg = tmp_path / "bare.yaml"
    cfg.write_text(f"database_url: {url}\n")
    proc = ServerProcess(cfg)
    try:
        proc.wait_ready()
        resp = httpx.get(f"{proc.url}/v1/models", headers={"Authorization": "Bearer anything"})
        assert resp.status_code == 401
        assert "no API tokens are configured" in resp.json()["detail"]
        assert httpx.get(f"{proc.url}/healthz").status_code == 200
    finally:
        proc.terminate()


def test_creates_and_migrates_an_embedded_sqlite_database_on_first_start(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'first.db'}")
    proc = ServerProcess(cfg)
    try:
        proc.wait_ready()
        assert httpx.get(f"{proc.url}/readyz").status_code == 200
    finally:
        assert proc.terminate() == 0
    assert (tmp_path / "first.db").stat().st_size > 0


def test_refuses_to_start_when_postgresql_is_not_at_head(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, postgres.create_database())
    proc = ServerProcess(cfg)
    code = proc.proc.wait(60)
    stderr = proc.proc.stderr.read() if proc.proc.stderr else ""
    assert code == 2
    assert "run `modelwatch db upgrade`" in stderr
    assert "Traceback" not in stderr


def test_refuses_to_start_with_invalid_config(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("api:\n  prot: 1\n")
    out = run_cli_process("serve", "--config", str(cfg))
    assert out.returncode == 2
    assert "unknown key 'api.prot'" in out.stderr


def test_sigterm_exits_zero_quickly(server: ServerProcess) -> None:
    # The stop budget is scheduler.shutdown_grace_s (10 s) from the signal; 30 s is the grace a
    # supervisor gives before SIGKILL (and the wait here before killing).
    assert server.terminate(timeout=30) == 0


def test_sigterm_to_the_whole_process_group_exits_zero(server: ServerProcess) -> None:
    # systemd (KillMode=control-group) and container runtimes signal every process at once: the
    # drain worker too. serve used to hang forever in the drain's stop, waiting on a
    # multiprocessing condition whose waiter the signal had killed.
    assert server.terminate(timeout=30, group=True) == 0
