"""Schemathesis against the served OpenAPI spec: no generated request gets a 5xx or a status
code the spec does not list for that operation, or goes unanswered for `REQUEST_TIMEOUT`.

Every operation (each route, each documented body media type) gets a bounded number of
schema-conforming and schema-violating requests with an admin token (so requests reach the
handlers rather than stopping at auth), sent with the credentials the spec's security scheme
describes. Afterwards the daemon still answers `/healthz` and counts a good batch of events.
The fuzzing runs on SQLite and, with fewer examples, on PostgreSQL reached with a password
that no answer may show.
`tests/monitor/app/daemon/test_fuzz_ingest.py` sends the ingest routes what a schema does not
describe.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guards.registry import register_version
from migrations import upgrade
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import (
    ReleaseModels,
    ServerProcess,
    auth,
    write_config,
)
from tests.properties import examples
from tests.services.postgres import PostgresServer

EXAMPLES = examples(25)  # per operation: ~20 s for all of them on a 2-core machine
# PostgreSQL: the same operations, fewer examples each (the storage paths differ, not the API).
PG_EXAMPLES = examples(5)
# The password in the PostgreSQL URL (the test cluster trusts 127.0.0.1: any password works).
DB_PASSWORD = "fuzz-db-pa55w0rd"
# The slowest legitimate answer is a `?wait=10` ingest; a request unanswered this long hangs.
REQUEST_TIMEOUT = 20.0


@pytest.fixture(scope="module")
def server(module_server: ServerProcess) -> ServerProcess:
    """One server for the module: the fuzzing test's writes change nothing the others read."""
    return module_server


@pytest.fixture(scope="module")
def pg_server(
    tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer
) -> Iterator[ServerProcess]:
    """`server` on a PostgreSQL database whose URL carries a password."""
    url = postgres.create_database().replace("://postgres@", f"://postgres:{DB_PASSWORD}@")
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    proc = ServerProcess(write_config(tmp_path_factory.mktemp("serve-pg"), url))
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.terminate()


def _schemathesis() -> Any:
    """Schemathesis (and Faker under it: ~4 s of imports), loaded when these tests run, not at
    collection: the fast lane collects this module and runs none of it."""
    return importlib.import_module("schemathesis")


def _documented(spec: dict[str, Any], method: str, path: str) -> set[str]:
    return set(spec["paths"][path][method.lower()]["responses"])


def _no_server_errors(
    server: ServerProcess, operation: object, spec: dict[str, Any], media: set[str], count: int
) -> list[str]:
    """Fuzz one operation with `count` examples; its failures, and the body media types it
    sent into `media`."""
    op: Any = operation
    mode = _schemathesis().GenerationMode
    strategy = st.one_of(op.as_strategy(mode.POSITIVE), op.as_strategy(mode.NEGATIVE))
    failures: list[str] = []
    session = requests.Session()

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def check(case: Any) -> None:
        # Sent with plain requests: schemathesis' own session trips over this urllib3 version.
        kwargs = case.as_transport_kwargs(base_url=server.url, headers=auth("MW_T_ADMIN"))
        if case.media_type:
            media.add(case.media_type)
        try:
            response = session.request(**kwargs, timeout=REQUEST_TIMEOUT)
        except requests.Timeout:
            failures.append(f"no answer in {REQUEST_TIMEOUT:g} s: {case.method} {case.path}")
            return
        except requests.ConnectionError as exc:
            failures.append(f"connection failed: {case.method} {case.path}: {exc}")
            return
        if response.status_code >= 500 or "Traceback" in response.text:
            failures.append(f"{case.method} {case.formatted_path}: {response.status_code}")
        if DB_PASSWORD in response.text:
            failures.append(f"the database password in {case.method} {case.formatted_path}")
        if str(response.status_code) not in _documented(spec, case.method, case.path):
            failures.append(f"undocumented {response.status_code}: {case.method} {case.path}")

    check()
    return failures


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])]
)
def test_no_generated_request_gets_a_server_error(
    backend: str, release_models: ReleaseModels, request: pytest.FixtureRequest
) -> None:
    sqlite = backend == "sqlite"
    server: ServerProcess = request.getfixturevalue("server" if sqlite else "pg_server")
    config = yaml.safe_load((server.directory / "mw.yaml").read_text())
    engine = make_engine(config["database_url"])
    register_version(engine, "fraud", "1", release_models.reference, activate=True)
    engine.dispose()
    spec = httpx.get(f"{server.url}/openapi.json").json()
    schema = _schemathesis().openapi.from_dict(spec)
    operations = [result.ok() for result in schema.get_all_operations()]
    documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert {(op.method.upper(), op.path) for op in operations} == documented
    failures: list[str] = []
    for operation in operations:
        media: set[str] = set()
        failures += _no_server_errors(
            server, operation, spec, media, EXAMPLES if sqlite else PG_EXAMPLES
        )
        body = spec["paths"][operation.path][operation.method.lower()].get("requestBody")
        if body and sqlite:  # every documented body kind was sent (PostgreSQL's few examples
            # per operation need not reach each of them; its storage paths are what it is for)
            assert media == set(body["content"]), (operation.path, media)
        elif body:
            assert media and media <= set(body["content"]), (operation.path, media)
    assert failures == [], failures[:10]
    assert server.proc.poll() is None
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    _counts_a_good_batch(server)


def _counts_a_good_batch(server: ServerProcess) -> None:
    """No fuzzed request left the intake stuck: a good batch is drained and counted."""
    good = [
        {"request_id": f"good-{i}", "model": "fraud", "model_version": "1",
         "timestamp": time.time(), "features": {"amount": 1.5 * i}, "prediction": 0.5}
        for i in range(5)
    ]  # fmt: skip
    response = httpx.post(
        f"{server.url}/v1/events?wait=10", json=good, headers=auth("MW_T_INGEST"), timeout=30
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert (result["events"], result["valid"], result["dead_letters"]) == (5, 5, 0), result


def test_every_v1_endpoint_is_documented_with_typed_models(server: ServerProcess) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    operations = [
        (f"{method.upper()} {path}", op)
        for path, ops in spec["paths"].items()
        if path.startswith("/v1/")
        for method, op in ops.items()
    ]
    assert len(operations) == 24  # + shadow, latency, guard, canary history, fairness, segments
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    for name, op in operations:
        assert op["security"] == [{"bearer": []}], name
        for code in ("413", "503"):
            assert "ErrorBody" in str(op["responses"][code]), name
        ok = next(v for k, v in op["responses"].items() if k.startswith("2"))
        assert "$ref" in ok["content"]["application/json"]["schema"], name
        for code in ("401", "403"):
            error = op["responses"][code]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, name
        if op.get("parameters") or "requestBody" in op:
            assert "422" in op["responses"], name


def test_readyz_documents_its_503(server: ServerProcess) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    ready = spec["paths"]["/readyz"]["get"]["responses"]
    assert ready["503"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Readiness"
    }


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_every_asset_from_the_daemon(server: ServerProcess, page: str) -> None:
    html = httpx.get(f"{server.url}{page}").text
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*'([^']+)'""", html)
    found = [a or b for a, b in urls]
    assert len(found) >= 2, html
    for url in found:
        assert not re.match(r"^(https?:)?//", url), f"{page} loads {url} from off the host"
        answer = httpx.get(f"{server.url}{url}")
        assert answer.status_code == 200, url
        assert len(answer.content) > 0, url
    assert "cdn" not in html.lower()
